/**
 * The write-back's metrics, registered on the controller's own registry (see
 * controller/metrics.ts): commits pushed, push failures by kind, and the
 * latency from a change's first sight to the commit that carries it. Labels
 * are error kinds and, in hub mode, the cluster the batch was for (one batch
 * per cluster, ADR 0026; the label left unset for one cluster, ADR 0027):
 * never a repository, an Application, a config's name or a value.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { CLUSTER_LABEL } from '../metrics.ts';
import type { WriteBackObservation } from './model.ts';

/** The write-back metrics, fed by the engine's `observe`. */
export interface WriteBackMetrics {
  readonly commits: Counter<typeof CLUSTER_LABEL>;
  readonly pushFailures: Counter<'kind' | typeof CLUSTER_LABEL>;
  readonly changeToCommitSeconds: Histogram<typeof CLUSTER_LABEL>;
  /** Restarts through Git given up (ADR 0016), by cause: no-hash-key, untracked, refused, timeout; a reconcile's, so per cluster in hub mode. */
  readonly fallbacks: Counter<'cause' | typeof CLUSTER_LABEL>;
  /** The engine's `observe` dependency. */
  observe(observation: WriteBackObservation): void;
}

/** Registers the write-back metrics. */
export function createWriteBackMetrics(registry: Registry): WriteBackMetrics {
  const commits = new Counter({ name: 'driftless_writeback_commits_total', help: 'Write-back commits pushed (one per batch, however many Applications it carries).', labelNames: [CLUSTER_LABEL] as const, registers: [registry] });
  const pushFailures = new Counter({
    name: 'driftless_writeback_push_failures_total',
    help: 'Write-backs that failed, by kind (auth, non-fast-forward, rejected, network, not-found, file, git, stopped): once per git run, or per directory whose file could not be written.',
    labelNames: ['kind', CLUSTER_LABEL] as const,
    registers: [registry],
  });
  const changeToCommitSeconds = new Histogram({
    name: 'driftless_writeback_change_to_commit_seconds',
    help: 'From first sight of an out-of-band change to the pushed commit that carries it (includes the debounce and the batch window).',
    buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
    labelNames: [CLUSTER_LABEL] as const,
    registers: [registry],
  });
  const fallbacks = new Counter({
    name: 'driftless_writeback_fallbacks_total',
    help: 'Restarts through Git given up for --write-back-fallback, by cause (no-hash-key, untracked, refused, timeout = --write-back-fallback-after).',
    labelNames: ['cause', CLUSTER_LABEL] as const,
    registers: [registry],
  });
  // Scraped as 0 from the start (not "no data"), as before the cluster label:
  // an unlabelled zero series, which hub mode's per-cluster series add to.
  commits.inc(0);
  changeToCommitSeconds.zero({});
  return {
    commits,
    pushFailures,
    changeToCommitSeconds,
    fallbacks,
    observe(observation: WriteBackObservation): void {
      const cluster = observation.cluster === undefined ? {} : { [CLUSTER_LABEL]: observation.cluster };
      if (observation.outcome === 'failed') {
        pushFailures.inc({ kind: observation.kind, ...cluster });
        return;
      }
      commits.inc(cluster);
      for (const ms of observation.changeToCommitMs) changeToCommitSeconds.observe(cluster, ms / 1000);
    },
  };
}
