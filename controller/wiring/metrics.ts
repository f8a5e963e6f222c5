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
 * What the gauges read: the pipeline and the leader election, attached once they exist. Before that a
 * gauge reads as empty (nothing queued, nothing cached, not the leader), which no scrape can see.
 */
export class GaugeSources {
  readonly #clock: Clock;
  #pipeline: GaugedPipeline | undefined;
  #isLeader: () => boolean = () => false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Attaches the pipeline; `isLeader` reads the election (always true without one). */
  attach(pipeline: GaugedPipeline, isLeader: () => boolean): void {
    this.#pipeline = pipeline;
    this.#isLeader = isLeader;
  }

  queueDepth(): number {
    return this.#pipeline?.queue.depth ?? 0;
  }

  queueOldestSeconds(): number {
    return (this.#pipeline?.queue.oldestWaitMs() ?? 0) / 1000;
  }

  unfinishedWorkSeconds(): number {
    return this.#pipeline?.queue.unfinishedWorkSeconds() ?? 0;
  }

  longestRunningSeconds(): number {
    return this.#pipeline?.queue.longestRunningSeconds() ?? 0;
  }

  restartsInProgress(): number {
    return this.#pipeline?.reconciler.restartingCount ?? 0;
  }

  breakerOpen(): boolean {
    return this.#pipeline?.reconciler.breakerOpen ?? false;
  }

  cacheSizes(): Readonly<Record<string, number>> {
    const view = this.#pipeline?.view;
    return view === undefined ? {} : { workloads: view.workloadCount, configs: view.configCount, pods: view.podCount };
  }

  isLeader(): boolean {
    return this.#isLeader();
  }

  clockOffsetSeconds(): number {
    return (this.#pipeline?.skew.reading(this.#clock.now()).offsetUpperMs ?? 0) / 1000;
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
