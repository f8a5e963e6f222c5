/**
 * The controller's Prometheus metrics, on a registry of its own (never
 * prom-client's global one: no module state). Everything is a counter,
 * histogram or a gauge whose value is an O(1) read (a queue length, a map
 * size) — a scrape never walks a cache, so /metrics stays fast however big
 * the cluster (Reloader #252: a slow /metrics failed liveness).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** O(1) readings taken at scrape time. */
export interface MetricSources {
  queueDepth(): number;
  queueOldestSeconds(): number;
  restartsInProgress(): number;
  cacheSizes(): Readonly<Record<string, number>>;
  isLeader(): boolean;
  /** The upper bound of (this clock − the API server's) in seconds, learnt from fresh writes; absent: not exported. */
  clockOffsetSeconds?(): number;
}

/** The metrics, typed. Label values are kinds, namespaces, strategies and resources: never a config's name or value. */
export interface ControllerMetrics {
  readonly registry: Registry;
  readonly restartsStarted: Counter<'kind' | 'namespace' | 'strategy'>;
  readonly restartsFinished: Counter<'kind' | 'namespace' | 'strategy'>;
  readonly restartsFailed: Counter<'kind' | 'namespace' | 'strategy'>;
  readonly restartsBlocked: Counter<'kind' | 'namespace' | 'strategy'>;
  readonly restartsSkipped: Counter<'kind' | 'namespace' | 'reason'>;
  /** Restarts halted by --restart-progress-deadline; `cause` is what they waited for (a WaitCause of controller/restart/step.ts). */
  readonly restartsStalled: Counter<'kind' | 'namespace' | 'strategy' | 'cause'>;
  readonly evictions: Counter<'namespace' | 'outcome'>;
  readonly reconcileSeconds: Histogram<'result'>;
  readonly changeToRestartSeconds: Histogram<'kind'>;
  readonly watchRestarts: Counter<'resource'>;
  readonly relists: Counter<'resource'>;
  readonly apiRequests: Counter<'verb' | 'code'>;
  /** Writes the API server refused for good (403, 422), by operation (apply, restart-at, evict) and code. */
  readonly writeFailures: Counter<'operation' | 'code'>;
  /** Reloader's own metric, so that existing dashboards and alerts keep working. */
  readonly reloaderReloadExecuted: Counter<'success' | 'namespace'>;
}

/** Creates the registry and every metric; gauges read `sources` at scrape time. */
export function createMetrics(sources: MetricSources): ControllerMetrics {
  const registry = new Registry();
  const restartLabels = ['kind', 'namespace', 'strategy'] as const;
  const metrics: ControllerMetrics = {
    registry,
    restartsStarted: new Counter({ name: 'driftless_restarts_started_total', help: 'Restarts started, by workload kind, namespace and strategy.', labelNames: restartLabels, registers: [registry] }),
    restartsFinished: new Counter({ name: 'driftless_restarts_finished_total', help: 'Restarts finished: every pod created before T replaced.', labelNames: restartLabels, registers: [registry] }),
    restartsFailed: new Counter({ name: 'driftless_restarts_failed_total', help: 'Restart steps that failed with an API error.', labelNames: restartLabels, registers: [registry] }),
    restartsBlocked: new Counter({ name: 'driftless_restarts_blocked_total', help: 'Restart steps refused (PodDisruptionBudget 429, several PDBs).', labelNames: restartLabels, registers: [registry] }),
    restartsSkipped: new Counter({ name: 'driftless_restarts_skipped_total', help: 'Changes that restarted nothing (strategy none, CronJob, pending update revision).', labelNames: ['kind', 'namespace', 'reason'] as const, registers: [registry] }),
    restartsStalled: new Counter({ name: 'driftless_restarts_progress_deadline_exceeded_total', help: 'Restarts halted after no progress within --restart-progress-deadline, by what they waited for.', labelNames: ['kind', 'namespace', 'strategy', 'cause'] as const, registers: [registry] }),
    evictions: new Counter({ name: 'driftless_evictions_total', help: 'Eviction requests, by outcome (evicted, gone, blocked = 429, refused = 500).', labelNames: ['namespace', 'outcome'] as const, registers: [registry] }),
    reconcileSeconds: new Histogram({ name: 'driftless_reconcile_duration_seconds', help: 'Time of one reconcile of one workload.', labelNames: ['result'] as const, buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registers: [registry] }),
    changeToRestartSeconds: new Histogram({ name: 'driftless_change_to_restart_seconds', help: 'From first sight of new content to the restart start (includes the debounce).', labelNames: ['kind'] as const, buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300], registers: [registry] }),
    watchRestarts: new Counter({ name: 'driftless_watch_restarts_total', help: 'Watches opened again after an end, an error or silence.', labelNames: ['resource'] as const, registers: [registry] }),
    relists: new Counter({ name: 'driftless_relists_total', help: 'Full lists (first, after 410, periodic).', labelNames: ['resource'] as const, registers: [registry] }),
    apiRequests: new Counter({ name: 'driftless_api_requests_total', help: 'API requests sent, by verb and status code.', labelNames: ['verb', 'code'] as const, registers: [registry] }),
    writeFailures: new Counter({ name: 'driftless_write_failures_total', help: 'Writes the API server refused for good (403 from an admission webhook or RBAC, 422), by operation (apply, restart-at, evict) and status code.', labelNames: ['operation', 'code'] as const, registers: [registry] }),
    reloaderReloadExecuted: new Counter({ name: 'reloader_reload_executed_total', help: 'Reloader-compatible: restarts started (success=true) or failed (success=false).', labelNames: ['success', 'namespace'] as const, registers: [registry] }),
  };
  new Gauge({ name: 'driftless_queue_depth', help: 'Workload keys waiting to be reconciled.', registers: [registry], collect() { this.set(sources.queueDepth()); } });
  new Gauge({ name: 'driftless_queue_oldest_seconds', help: 'Age of the oldest waiting key.', registers: [registry], collect() { this.set(sources.queueOldestSeconds()); } });
  new Gauge({ name: 'driftless_restarts_in_progress', help: 'Workloads with a restart in progress.', registers: [registry], collect() { this.set(sources.restartsInProgress()); } });
  new Gauge({
    name: 'driftless_cache_objects', help: 'Objects in the caches, by kind.', labelNames: ['kind'] as const, registers: [registry],
    collect() {
      for (const [kind, size] of Object.entries(sources.cacheSizes())) this.set({ kind }, size);
    },
  });
  new Gauge({ name: 'driftless_leader', help: '1 while this replica holds the leader Lease (or runs without leader election).', registers: [registry], collect() { this.set(sources.isLeader() ? 1 : 0); } });
  if (sources.clockOffsetSeconds !== undefined) {
    new Gauge({
      name: 'driftless_clock_offset_seconds',
      help: 'Upper bound of this clock minus the API server\'s (fresh writes\' times vs their arrival; includes watch latency and up to 1 s of truncation). Negative: this clock is behind.',
      registers: [registry],
      collect() { this.set(sources.clockOffsetSeconds?.() ?? 0); },
    });
  }
  return metrics;
}

/** What the workqueue metrics read at scrape time. */
export interface WorkqueueReadings {
  depth(): number;
  unfinishedWorkSeconds(): number;
  longestRunningSeconds(): number;
}

/** The hooks a WorkQueue calls (controller/queue.ts `QueueMetrics`), in milliseconds. */
export interface WorkqueueHooks {
  added(): void;
  retried(): void;
  started(waitedMs: number): void;
  finished(ms: number): void;
}

/**
 * client-go's workqueue metrics, with its names and a `name` label (the queue's), so that the dashboards and
 * alerts written for client-go and controller-runtime controllers work unchanged. Buckets as controller-runtime's:
 * 10 ns to 1000 s by powers of ten.
 */
export function createWorkqueueMetrics(registry: Registry, name: string, readings: WorkqueueReadings): WorkqueueHooks {
  const labelNames = ['name'] as const;
  const buckets = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);
  const adds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames, registers: [registry] });
  const retries = new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames, registers: [registry] });
  const queueDuration = new Histogram({ name: 'workqueue_queue_duration_seconds', help: 'How long in seconds an item stays in workqueue before being requested', labelNames, buckets, registers: [registry] });
  const workDuration = new Histogram({ name: 'workqueue_work_duration_seconds', help: 'How long in seconds processing an item from workqueue takes.', labelNames, buckets, registers: [registry] });
  new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames, registers: [registry], collect() { this.set({ name }, readings.depth()); } });
  new Gauge({
    name: 'workqueue_unfinished_work_seconds',
    help: 'How many seconds of work has been done that is in progress and hasn\'t been observed by work_duration. Large values indicate stuck threads.',
    labelNames,
    registers: [registry],
    collect() { this.set({ name }, readings.unfinishedWorkSeconds()); },
  });
  new Gauge({
    name: 'workqueue_longest_running_processor_seconds',
    help: 'How many seconds has the longest running processor for workqueue been running.',
    labelNames,
    registers: [registry],
    collect() { this.set({ name }, readings.longestRunningSeconds()); },
  });
  // Zero-valued series from the start, as client-go's: an alert on rate() sees the queue before its first add.
  adds.inc({ name }, 0);
  retries.inc({ name }, 0);
  return {
    added: () => adds.inc({ name }),
    retried: () => retries.inc({ name }),
    started: (waitedMs) => queueDuration.observe({ name }, waitedMs / 1000),
    finished: (ms) => workDuration.observe({ name }, ms / 1000),
  };
}
