/**
 * The process's metrics, created before anything that reports to them: one
 * registry, the counters and histograms every part is handed as a plain
 * value, and the gauges a scrape reads from the pipelines once they are
 * attached. A gauge is a read at scrape time (controller/metrics.ts), so it
 * reads whatever is attached then; the HTTP server serves scrapes only after
 * `startController` has returned, by which time the pipeline is.
 *
 * In hub mode (ADR 0019) every cluster's pipeline is handed a view of the
 * shared metrics bound to its cluster (`clusterMetrics`), so each of its
 * series carries `cluster` and the pipeline's code never names a cluster; a
 * cluster that leaves has its series removed (`forgetCluster`). A
 * controller of one cluster is handed the view of `undefined`: no label,
 * series as before hub mode (ADR 0027).
 */
import type { Counter, Histogram, Registry } from 'prom-client';
import type { Clock } from '../clock.ts';
import type { ClockSkew } from '../clock-skew.ts';
import type { ClusterView } from '../cache/cluster-view.ts';
import { createFleetMetrics, type ClusterFleetMetrics, type FleetMetrics } from '../fleet/metrics.ts';
import {
  CLUSTER_LABEL, createMetrics, createWorkqueueMetrics, type ClusterControllerMetrics, type ClusterReading, type ControllerMetrics, type CounterHandle,
  type HistogramHandle, type WorkqueueHooks, type WorkqueueMetrics,
} from '../metrics.ts';
import type { WorkQueue } from '../queue.ts';
import type { Reconciler } from '../reconciler.ts';
import { createWriteBackMetrics, type WriteBackMetrics } from '../writeback/metrics.ts';

/** The `name` label of the workqueue metrics. */
export const WORKQUEUE_NAME = 'workloads';

/** Every metric of the process. */
export interface ProcessMetrics {
  readonly controller: ControllerMetrics;
  readonly fleet: FleetMetrics;
  readonly writeBack: WriteBackMetrics;
  /** What a cluster's workqueue reports as it works. */
  readonly workqueue: WorkqueueMetrics;
}

/** What one cluster's pipeline reports to: every series bound to its cluster. */
export interface PipelineMetrics {
  readonly controller: ClusterControllerMetrics;
  readonly fleet: ClusterFleetMetrics;
  readonly writeBack: { readonly fallbacks: CounterHandle<'cause'> };
  readonly workqueue: WorkqueueHooks;
}

/** What a pipeline shows the gauges: O(1) reads only. */
export interface GaugedPipeline {
  readonly view: ClusterView;
  readonly queue: WorkQueue;
  readonly reconciler: Pick<Reconciler, 'restartingCount' | 'breakerOpen'>;
  readonly skew: ClockSkew;
}

/**
 * What the gauges read: the pipelines (one, or one per cluster in hub mode) and the leader election, attached
 * once they exist. Before that a gauge reads as empty (nothing queued, nothing cached, not the leader), which
 * no scrape can see. Each reading is per cluster; two pipelines under one name (two Argo CD clusters named
 * alike) read as one: a count is their sum and an age their largest.
 */
export class GaugeSources {
  readonly #clock: Clock;
  /** Each attached pipeline and its cluster (`undefined`: the one cluster, no label). */
  readonly #pipelines = new Map<GaugedPipeline, string | undefined>();
  #isLeader: () => boolean = () => false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Attaches a pipeline, of `cluster` in hub mode; `isLeader` reads the election (always true without one). */
  attach(pipeline: GaugedPipeline, isLeader: () => boolean, cluster?: string): void {
    this.#pipelines.set(pipeline, cluster);
    this.#isLeader = isLeader;
  }

  /** Detaches a pipeline that stopped (a cluster removed in hub mode): its gauges' series go with it. */
  detach(pipeline: GaugedPipeline): void {
    this.#pipelines.delete(pipeline);
  }

  /** One reading per cluster, `combine` folding two pipelines of one name. */
  #per<T>(read: (pipeline: GaugedPipeline) => T, combine: (a: T, b: T) => T): ClusterReading<T>[] {
    const byCluster = new Map<string | undefined, T>();
    for (const [pipeline, cluster] of this.#pipelines) {
      const value = read(pipeline);
      const previous = byCluster.get(cluster);
      byCluster.set(cluster, byCluster.has(cluster) ? combine(previous as T, value) : value);
    }
    return [...byCluster].map(([cluster, value]) => ({ cluster, value }));
  }

  #sum(read: (pipeline: GaugedPipeline) => number): ClusterReading[] {
    return this.#per(read, (a, b) => a + b);
  }

  #max(read: (pipeline: GaugedPipeline) => number): ClusterReading[] {
    return this.#per(read, Math.max);
  }

  queueDepth(): ClusterReading[] {
    return this.#sum((p) => p.queue.depth);
  }

  queueOldestSeconds(): ClusterReading[] {
    return this.#max((p) => p.queue.oldestWaitMs() / 1000);
  }

  unfinishedWorkSeconds(): ClusterReading[] {
    return this.#sum((p) => p.queue.unfinishedWorkSeconds());
  }

  longestRunningSeconds(): ClusterReading[] {
    return this.#max((p) => p.queue.longestRunningSeconds());
  }

  restartsInProgress(): ClusterReading[] {
    return this.#sum((p) => p.reconciler.restartingCount);
  }

  breakerOpen(): ClusterReading[] {
    return this.#max((p) => (p.reconciler.breakerOpen ? 1 : 0));
  }

  cacheSizes(): ClusterReading<Readonly<Record<string, number>>>[] {
    return this.#per(
      (p) => ({ workloads: p.view.workloadCount, configs: p.view.configCount, pods: p.view.podCount }),
      (a, b) => ({ workloads: a.workloads + b.workloads, configs: a.configs + b.configs, pods: a.pods + b.pods }),
    );
  }

  isLeader(): boolean {
    return this.#isLeader();
  }

  clockOffsetSeconds(): ClusterReading[] {
    // The offset furthest from zero, of either sign: the pipeline whose API server's clock is furthest off.
    const now = this.#clock.now();
    return this.#per((p) => (p.skew.reading(now).offsetUpperMs ?? 0) / 1000, (a, b) => (Math.abs(b) > Math.abs(a) ? b : a));
  }
}

/** Creates the registry and every metric on it, in the order /metrics lists them. */
export function createProcessMetrics(sources: GaugeSources): ProcessMetrics {
  const controller = createMetrics({
    queueDepth: () => sources.queueDepth(),
    queueOldestSeconds: () => sources.queueOldestSeconds(),
    restartsInProgress: () => sources.restartsInProgress(),
    cacheSizes: () => sources.cacheSizes(),
    isLeader: () => sources.isLeader(),
    clockOffsetSeconds: () => sources.clockOffsetSeconds(),
  });
  const fleet = createFleetMetrics(controller.registry, () => sources.breakerOpen());
  const writeBack = createWriteBackMetrics(controller.registry);
  const workqueue = createWorkqueueMetrics(controller.registry, WORKQUEUE_NAME, {
    depth: () => sources.queueDepth(),
    unfinishedWorkSeconds: () => sources.unfinishedWorkSeconds(),
    longestRunningSeconds: () => sources.longestRunningSeconds(),
  });
  return { controller, fleet, writeBack, workqueue };
}

/** A counter bound to a cluster: each series it adds to carries `cluster`. */
function boundCounter<L extends string>(counter: Counter<L | typeof CLUSTER_LABEL>, cluster: string | undefined): CounterHandle<L> {
  if (cluster === undefined) return counter;
  return { inc: (labels, value) => counter.inc({ ...labels, cluster } as Partial<Record<L | typeof CLUSTER_LABEL, string | number>>, value) };
}

/** A histogram bound to a cluster. */
function boundHistogram<L extends string>(histogram: Histogram<L | typeof CLUSTER_LABEL>, cluster: string | undefined): HistogramHandle<L> {
  if (cluster === undefined) return histogram;
  return { observe: (labels, value) => histogram.observe({ ...labels, cluster } as Partial<Record<L | typeof CLUSTER_LABEL, string | number>>, value) };
}

/** The view of the process's metrics a cluster's pipeline reports to; `undefined`: the one cluster of a controller that is no hub. */
export function clusterMetrics(metrics: ProcessMetrics, cluster: string | undefined): PipelineMetrics {
  const c: ControllerMetrics = metrics.controller;
  const controller: ClusterControllerMetrics = {
    restartsStarted: boundCounter(c.restartsStarted, cluster),
    restartsFinished: boundCounter(c.restartsFinished, cluster),
    restartsFailed: boundCounter(c.restartsFailed, cluster),
    restartsBlocked: boundCounter(c.restartsBlocked, cluster),
    restartsSkipped: boundCounter(c.restartsSkipped, cluster),
    restartsStalled: boundCounter(c.restartsStalled, cluster),
    evictions: boundCounter(c.evictions, cluster),
    reconcileSeconds: boundHistogram(c.reconcileSeconds, cluster),
    changeToRestartSeconds: boundHistogram(c.changeToRestartSeconds, cluster),
    watchRestarts: boundCounter(c.watchRestarts, cluster),
    relists: boundCounter(c.relists, cluster),
    apiRequests: boundCounter(c.apiRequests, cluster),
    writeFailures: boundCounter(c.writeFailures, cluster),
    reloaderReloadExecuted: boundCounter(c.reloaderReloadExecuted, cluster),
  };
  return {
    controller,
    fleet: { restartsHalted: boundCounter(metrics.fleet.restartsHalted, cluster), restartsDeferred: boundCounter(metrics.fleet.restartsDeferred, cluster) },
    writeBack: { fallbacks: boundCounter(metrics.writeBack.fallbacks, cluster) },
    workqueue: metrics.workqueue(cluster),
  };
}

/**
 * Removes every series of a cluster that left (hub mode), from every metric of the registry: a departed
 * cluster leaves no counter or histogram behind (the gauges drop it themselves at the next scrape).
 */
export async function forgetCluster(registry: Registry, cluster: string): Promise<void> {
  for (const { name } of registry.getMetricsAsArray()) {
    const metric = registry.getSingleMetric(name);
    if (metric === undefined) continue;
    const { values } = await metric.get();
    for (const { labels } of values) {
      if (labels[CLUSTER_LABEL] !== cluster) continue;
      // A histogram's buckets carry `le`, which names no series of its own: its series is the rest.
      const { le: _bucket, ...series } = labels;
      metric.remove(series);
    }
  }
}
