/**
 * The process's metrics, created before anything that reports to them: one
 * registry, the counters and histograms every part is handed as a plain
 * value, and the gauges a scrape reads from the pipeline once it is attached.
 * A gauge is a read at scrape time (controller/metrics.ts), so it reads
 * whatever is attached then; the HTTP server serves scrapes only after
 * `startController` has returned, by which time the pipeline is.
 */
import type { Clock } from '../clock.ts';
import type { ClockSkew } from '../clock-skew.ts';
import type { ClusterView } from '../cache/cluster-view.ts';
import { createFleetMetrics, type FleetMetrics } from '../fleet/metrics.ts';
import { createMetrics, createWorkqueueMetrics, type ControllerMetrics, type WorkqueueHooks } from '../metrics.ts';
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
  /** What the workqueue reports as it works. */
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
 * no scrape can see. Over several pipelines a count is their sum and an age their largest.
 */
export class GaugeSources {
  readonly #clock: Clock;
  readonly #pipelines = new Set<GaugedPipeline>();
  #isLeader: () => boolean = () => false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Attaches a pipeline; `isLeader` reads the election (always true without one). */
  attach(pipeline: GaugedPipeline, isLeader: () => boolean): void {
    this.#pipelines.add(pipeline);
    this.#isLeader = isLeader;
  }

  /** Detaches a pipeline that stopped (a cluster removed in hub mode). */
  detach(pipeline: GaugedPipeline): void {
    this.#pipelines.delete(pipeline);
  }

  #sum(read: (pipeline: GaugedPipeline) => number): number {
    let total = 0;
    for (const pipeline of this.#pipelines) total += read(pipeline);
    return total;
  }

  #max(read: (pipeline: GaugedPipeline) => number): number {
    let largest = 0;
    for (const pipeline of this.#pipelines) largest = Math.max(largest, read(pipeline));
    return largest;
  }

  queueDepth(): number {
    return this.#sum((p) => p.queue.depth);
  }

  queueOldestSeconds(): number {
    return this.#max((p) => p.queue.oldestWaitMs()) / 1000;
  }

  unfinishedWorkSeconds(): number {
    return this.#sum((p) => p.queue.unfinishedWorkSeconds());
  }

  longestRunningSeconds(): number {
    return this.#max((p) => p.queue.longestRunningSeconds());
  }

  restartsInProgress(): number {
    return this.#sum((p) => p.reconciler.restartingCount);
  }

  breakerOpen(): boolean {
    return [...this.#pipelines].some((p) => p.reconciler.breakerOpen);
  }

  cacheSizes(): Readonly<Record<string, number>> {
    if (this.#pipelines.size === 0) return {};
    return { workloads: this.#sum((p) => p.view.workloadCount), configs: this.#sum((p) => p.view.configCount), pods: this.#sum((p) => p.view.podCount) };
  }

  isLeader(): boolean {
    return this.#isLeader();
  }

  clockOffsetSeconds(): number {
    // The offset furthest from zero, of either sign: the cluster whose clock is furthest off.
    const now = this.#clock.now();
    let worst = 0;
    for (const pipeline of this.#pipelines) {
      const offset = pipeline.skew.reading(now).offsetUpperMs ?? 0;
      if (Math.abs(offset) > Math.abs(worst)) worst = offset;
    }
    return worst / 1000;
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
