/**
 * The controller's Prometheus metrics, on a registry of its own (never
 * prom-client's global one: no module state). Everything is a counter,
 * histogram or a gauge whose value is an O(1) read (a queue length, a map
 * size) — a scrape never walks a cache, so /metrics stays fast however big
 * the cluster (Reloader #252: a slow /metrics failed liveness).
 *
 * Every metric of a cluster's pipeline declares a `cluster` label. A hub
 * (ADR 0019) sets it on every series of a pipeline — Argo CD's name of the
 * cluster — through the pipeline's bound view (wiring/metrics.ts); a
 * controller of one cluster never sets it, so its series are what they were
 * before hub mode and existing dashboards and alerts keep matching
 * (ADR 0027). prom-client lets a series leave a declared label out.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The label a hub puts on every series of a cluster's pipeline. */
export const CLUSTER_LABEL = 'cluster';

/** A scrape-time reading of one cluster's pipeline; `cluster` undefined: the one cluster of a controller that is no hub (no label). */
export interface ClusterReading<T = number> {
  readonly cluster: string | undefined;
  readonly value: T;
}

/** The labels of a cluster's series: none for the one cluster of a controller that is no hub. */
export function clusterLabels(cluster: string | undefined): { readonly cluster?: string } {
  return cluster === undefined ? {} : { cluster };
}

/** Sets a gauge to one value per cluster, dropping the series of clusters no longer read (a removed cluster leaves none). */
export function setPerCluster(gauge: Gauge<string>, readings: readonly ClusterReading[], labels: Readonly<Record<string, string>> = {}): void {
  gauge.reset();
  for (const reading of readings) gauge.set({ ...labels, ...clusterLabels(reading.cluster) }, reading.value);
}

/** O(1) readings taken at scrape time, one per cluster's pipeline. */
export interface MetricSources {
  queueDepth(): readonly ClusterReading[];
  queueOldestSeconds(): readonly ClusterReading[];
  restartsInProgress(): readonly ClusterReading[];
  cacheSizes(): readonly ClusterReading<Readonly<Record<string, number>>>[];
  /** Process-wide: one replica leads for every cluster. */
  isLeader(): boolean;
  /** The upper bound of (this clock − the API server's) in seconds, learnt from fresh writes; absent: not exported. */
  clockOffsetSeconds?(): readonly ClusterReading[];
}

/** A counter's labels, `cluster` included (hub mode). */
type WithCluster<L extends string> = L | typeof CLUSTER_LABEL;

/** The metrics, typed. Label values are kinds, namespaces, strategies, resources and Argo CD's cluster names: never a config's name or value. */
export interface ControllerMetrics {
  readonly registry: Registry;
  readonly restartsStarted: Counter<WithCluster<'kind' | 'namespace' | 'strategy'>>;
  readonly restartsFinished: Counter<WithCluster<'kind' | 'namespace' | 'strategy'>>;
  readonly restartsFailed: Counter<WithCluster<'kind' | 'namespace' | 'strategy'>>;
  readonly restartsBlocked: Counter<WithCluster<'kind' | 'namespace' | 'strategy'>>;
  readonly restartsSkipped: Counter<WithCluster<'kind' | 'namespace' | 'reason'>>;
  /** Restarts halted by --restart-progress-deadline; `cause` is what they waited for (a WaitCause of controller/restart/step.ts). */
  readonly restartsStalled: Counter<WithCluster<'kind' | 'namespace' | 'strategy' | 'cause'>>;
  readonly evictions: Counter<WithCluster<'namespace' | 'outcome'>>;
  readonly reconcileSeconds: Histogram<WithCluster<'result'>>;
  readonly changeToRestartSeconds: Histogram<WithCluster<'kind'>>;
  readonly watchRestarts: Counter<WithCluster<'resource'>>;
  readonly relists: Counter<WithCluster<'resource'>>;
  /** In hub mode the hub's own requests (cluster Secrets, Leases, records, Events in the hub) carry no `cluster`. */
  readonly apiRequests: Counter<WithCluster<'verb' | 'code'>>;
  /** Writes the API server refused for good (403, 422), by operation (apply, restart-at, evict) and code. */
  readonly writeFailures: Counter<WithCluster<'operation' | 'code'>>;
  /** Reloader's own metric, so that existing dashboards and alerts keep working. */
  readonly reloaderReloadExecuted: Counter<WithCluster<'success' | 'namespace'>>;
}

/** What a pipeline does with a counter: adds to one of its series. */
export interface CounterHandle<L extends string> {
  inc(labels: Partial<Record<L, string | number>>, value?: number): void;
}

/** What a pipeline does with a histogram: observes into one of its series. */
export interface HistogramHandle<L extends string> {
  observe(labels: Partial<Record<L, string | number>>, value: number): void;
}

/** A pipeline's view of the controller's metrics: handles bound to its cluster (wiring/metrics.ts), or the metrics themselves. */
export interface ClusterControllerMetrics {
  readonly restartsStarted: CounterHandle<'kind' | 'namespace' | 'strategy'>;
  readonly restartsFinished: CounterHandle<'kind' | 'namespace' | 'strategy'>;
  readonly restartsFailed: CounterHandle<'kind' | 'namespace' | 'strategy'>;
  readonly restartsBlocked: CounterHandle<'kind' | 'namespace' | 'strategy'>;
  readonly restartsSkipped: CounterHandle<'kind' | 'namespace' | 'reason'>;
  readonly restartsStalled: CounterHandle<'kind' | 'namespace' | 'strategy' | 'cause'>;
  readonly evictions: CounterHandle<'namespace' | 'outcome'>;
  readonly reconcileSeconds: HistogramHandle<'result'>;
  readonly changeToRestartSeconds: HistogramHandle<'kind'>;
  readonly watchRestarts: CounterHandle<'resource'>;
  readonly relists: CounterHandle<'resource'>;
  readonly apiRequests: CounterHandle<'verb' | 'code'>;
  readonly writeFailures: CounterHandle<'operation' | 'code'>;
  readonly reloaderReloadExecuted: CounterHandle<'success' | 'namespace'>;
}

/** Creates the registry and every metric; gauges read `sources` at scrape time. */
export function createMetrics(sources: MetricSources): ControllerMetrics {
  const registry = new Registry();
  const restartLabels = ['kind', 'namespace', 'strategy', CLUSTER_LABEL] as const;
  const metrics: ControllerMetrics = {
    registry,
    restartsStarted: new Counter({ name: 'driftless_restarts_started_total', help: 'Restarts started, by workload kind, namespace and strategy.', labelNames: restartLabels, registers: [registry] }),
    restartsFinished: new Counter({ name: 'driftless_restarts_finished_total', help: 'Restarts finished: every pod created before T replaced.', labelNames: restartLabels, registers: [registry] }),
    restartsFailed: new Counter({ name: 'driftless_restarts_failed_total', help: 'Restart steps that failed with an API error.', labelNames: restartLabels, registers: [registry] }),
    restartsBlocked: new Counter({ name: 'driftless_restarts_blocked_total', help: 'Restart steps refused (PodDisruptionBudget 429, several PDBs).', labelNames: restartLabels, registers: [registry] }),
    restartsSkipped: new Counter({ name: 'driftless_restarts_skipped_total', help: 'Changes that restarted nothing (strategy none, CronJob, pending update revision).', labelNames: ['kind', 'namespace', 'reason', CLUSTER_LABEL] as const, registers: [registry] }),
    restartsStalled: new Counter({ name: 'driftless_restarts_progress_deadline_exceeded_total', help: 'Restarts halted after no progress within --restart-progress-deadline, by what they waited for.', labelNames: ['kind', 'namespace', 'strategy', 'cause', CLUSTER_LABEL] as const, registers: [registry] }),
    evictions: new Counter({ name: 'driftless_evictions_total', help: 'Eviction requests, by outcome (evicted, gone, blocked = 429, refused = 500).', labelNames: ['namespace', 'outcome', CLUSTER_LABEL] as const, registers: [registry] }),
    reconcileSeconds: new Histogram({ name: 'driftless_reconcile_duration_seconds', help: 'Time of one reconcile of one workload.', labelNames: ['result', CLUSTER_LABEL] as const, buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registers: [registry] }),
    changeToRestartSeconds: new Histogram({ name: 'driftless_change_to_restart_seconds', help: 'From first sight of new content to the restart start (includes the debounce).', labelNames: ['kind', CLUSTER_LABEL] as const, buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300], registers: [registry] }),
    watchRestarts: new Counter({ name: 'driftless_watch_restarts_total', help: 'Watches opened again after an end, an error or silence.', labelNames: ['resource', CLUSTER_LABEL] as const, registers: [registry] }),
    relists: new Counter({ name: 'driftless_relists_total', help: 'Full lists completed (the first, after a 410, periodic); an attempt that fails is not counted.', labelNames: ['resource', CLUSTER_LABEL] as const, registers: [registry] }),
    apiRequests: new Counter({ name: 'driftless_api_requests_total', help: 'API requests sent, by verb and status code.', labelNames: ['verb', 'code', CLUSTER_LABEL] as const, registers: [registry] }),
    writeFailures: new Counter({ name: 'driftless_write_failures_total', help: 'Writes the API server refused for good (403 from an admission webhook or RBAC, 422), by operation (apply, restart-at, evict) and status code.', labelNames: ['operation', 'code', CLUSTER_LABEL] as const, registers: [registry] }),
    reloaderReloadExecuted: new Counter({ name: 'reloader_reload_executed_total', help: 'Reloader-compatible: restarts started (success=true) or failed (success=false).', labelNames: ['success', 'namespace', CLUSTER_LABEL] as const, registers: [registry] }),
  };
  const perCluster = { labelNames: [CLUSTER_LABEL] as const, registers: [registry] };
  new Gauge({ name: 'driftless_queue_depth', help: 'Workload keys waiting to be reconciled.', ...perCluster, collect() { setPerCluster(this, sources.queueDepth()); } });
  new Gauge({ name: 'driftless_queue_oldest_seconds', help: 'Age of the oldest waiting key.', ...perCluster, collect() { setPerCluster(this, sources.queueOldestSeconds()); } });
  new Gauge({ name: 'driftless_restarts_in_progress', help: 'Workloads with a restart in progress.', ...perCluster, collect() { setPerCluster(this, sources.restartsInProgress()); } });
  new Gauge({
    name: 'driftless_cache_objects', help: 'Objects in the caches, by kind.', labelNames: ['kind', CLUSTER_LABEL] as const, registers: [registry],
    collect() {
      this.reset();
      for (const { cluster, value } of sources.cacheSizes()) {
        for (const [kind, size] of Object.entries(value)) this.set({ kind, ...clusterLabels(cluster) }, size);
      }
    },
  });
  new Gauge({ name: 'driftless_leader', help: '1 while this replica holds the leader Lease (or runs without leader election).', registers: [registry], collect() { this.set(sources.isLeader() ? 1 : 0); } });
  if (sources.clockOffsetSeconds !== undefined) {
    new Gauge({
      name: 'driftless_clock_offset_seconds',
      help: 'Upper bound of this clock minus the API server\'s (fresh writes\' times vs their arrival; includes watch latency and up to 1 s of truncation). Negative: this clock is behind.',
      ...perCluster,
      collect() { setPerCluster(this, sources.clockOffsetSeconds?.() ?? []); },
    });
  }
  return metrics;
}

/** What the workqueue metrics read at scrape time, per cluster's queue. */
export interface WorkqueueReadings {
  depth(): readonly ClusterReading[];
  unfinishedWorkSeconds(): readonly ClusterReading[];
  longestRunningSeconds(): readonly ClusterReading[];
}

/** The hooks a WorkQueue calls (controller/queue.ts `QueueMetrics`), in milliseconds. */
export interface WorkqueueHooks {
  added(): void;
  retried(): void;
  started(waitedMs: number): void;
  finished(ms: number): void;
}

/** client-go's workqueue metrics: the hooks of one cluster's queue (`undefined`: the one cluster, no `cluster` label). */
export type WorkqueueMetrics = (cluster: string | undefined) => WorkqueueHooks;

/**
 * client-go's workqueue metrics, with its names and a `name` label (the queue's), so that the dashboards and
 * alerts written for client-go and controller-runtime controllers work unchanged; in hub mode each cluster's
 * queue is told apart by `cluster`. Buckets as controller-runtime's: 10 ns to 1000 s by powers of ten.
 */
export function createWorkqueueMetrics(registry: Registry, name: string, readings: WorkqueueReadings): WorkqueueMetrics {
  const labelNames = ['name', CLUSTER_LABEL] as const;
  const buckets = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);
  const adds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames, registers: [registry] });
  const retries = new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames, registers: [registry] });
  const queueDuration = new Histogram({ name: 'workqueue_queue_duration_seconds', help: 'How long in seconds an item stays in workqueue before being requested', labelNames, buckets, registers: [registry] });
  const workDuration = new Histogram({ name: 'workqueue_work_duration_seconds', help: 'How long in seconds processing an item from workqueue takes.', labelNames, buckets, registers: [registry] });
  new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames, registers: [registry], collect() { setPerCluster(this, readings.depth(), { name }); } });
  new Gauge({
    name: 'workqueue_unfinished_work_seconds',
    help: 'How many seconds of work has been done that is in progress and hasn\'t been observed by work_duration. Large values indicate stuck threads.',
    labelNames,
    registers: [registry],
    collect() { setPerCluster(this, readings.unfinishedWorkSeconds(), { name }); },
  });
  new Gauge({
    name: 'workqueue_longest_running_processor_seconds',
    help: 'How many seconds has the longest running processor for workqueue been running.',
    labelNames,
    registers: [registry],
    collect() { setPerCluster(this, readings.longestRunningSeconds(), { name }); },
  });
  return (cluster) => {
    const labels = { name, ...clusterLabels(cluster) };
    // Zero-valued series from the start, as client-go's: an alert on rate() sees the queue before its first add.
    adds.inc(labels, 0);
    retries.inc(labels, 0);
    return {
      added: () => adds.inc(labels),
      retried: () => retries.inc(labels),
      started: (waitedMs) => queueDuration.observe(labels, waitedMs / 1000),
      finished: (ms) => workDuration.observe(labels, ms / 1000),
    };
  };
}
