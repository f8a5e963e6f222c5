/**
 * A restart starts: T is written on the workload, as always (a controller
 * restarted while waiting resumes from it), with the git strategy's pending
 * write-back state; the restart is in progress from here, counted and
 * announced. Admission (fleet/admission.ts) has said it may.
 */
import { formatDigestMap, formatTime, type DigestMap } from '../bookkeeping.ts';
import type { ResolvedStrategy } from '../decide.ts';
import { changedConfigs, normalEvent, warningEvent } from '../events.ts';
import type { OwnFields } from '../kube/writes.ts';
import type { WorkloadSummary } from '../model.ts';
import type { ReconcilerDeps } from '../reconciler-deps.ts';
import { formatWriteBackRecord, type WriteBackRecord as WriteBackState } from '../writeback/record.ts';
import { restartWarnings } from './evict-plan.ts';
import type { RestartMemory } from './memory.ts';

/** What starting reads and writes through. `deps` is read at each use: its metrics are wired late. */
export interface Starting {
  readonly deps: Pick<ReconcilerDeps, 'events' | 'metrics'>;
  readonly memory: RestartMemory;
  /** The reconciler's compare-before-write apply of the own fields. */
  apply(workload: WorkloadSummary, fields: OwnFields): Promise<void>;
}

/** The restart about to start. */
export interface StartInput {
  readonly key: string;
  readonly workload: WorkloadSummary;
  readonly strategy: Exclude<ResolvedStrategy, 'record-only'>;
  /** T. */
  readonly restartAt: number;
  /** The changed configs' keys (`Kind/name`), and every current digest. */
  readonly changed: readonly string[];
  readonly current: DigestMap;
  readonly now: number;
  /** When a config's current content was first seen. */
  readonly seenAt: (configKey: string) => number;
}

/** Writes T and announces the restart. */
export async function startRestart(starting: Starting, input: StartInput): Promise<void> {
  const { key, workload, strategy, restartAt, current, now } = input;
  // The template annotation is not written here: it is the template step's first act (controller/restart/template.ts),
  // which waits for T (a rollout started in T's second makes pods that read as created before T) and for Argo CD's sync.
  await starting.apply(workload, {
    restartedFor: formatDigestMap(current),
    restartAt: formatTime(restartAt),
    templateRestartedAt: workload.templateRestartedAt,
    // The git strategy writes what it is to commit before it commits it (ADR 0016): a controller restarted
    // meanwhile submits the same again, which Git makes harmless.
    ...(strategy === 'git' ? { writeBack: formatWriteBackRecord(pendingWriteBack(workload, restartAt, input.changed, current, now)) } : {}),
  });
  if (strategy === 'git') starting.memory.markThroughGit(key, true);
  starting.memory.markInProgress(key);
  starting.memory.clearBlocked(key);
  const metrics = starting.deps.metrics;
  if (metrics !== undefined) {
    metrics.restartsStarted.inc({ kind: workload.kind, namespace: workload.namespace, strategy });
    metrics.reloaderReloadExecuted.inc({ success: 'true', namespace: workload.namespace });
    metrics.changeToRestartSeconds.observe({ kind: workload.kind }, Math.max(0, now - Math.max(...input.changed.map(input.seenAt))) / 1000);
  }
  const { events } = starting.deps;
  await events.record(workload, normalEvent('RestartStarted', strategy === 'git'
    ? `the restart at ${formatTime(restartAt)} goes through Git: ${describeStrategy(strategy)}`
    : `replacing the pods created before ${formatTime(restartAt)} (${describeStrategy(strategy)})`, changedConfigs(input.changed)));
  for (const warning of strategy === 'evict' ? restartWarnings(workload) : []) await events.record(workload, warningEvent('RestartWarning', warning));
}

function describeStrategy(strategy: Exclude<ResolvedStrategy, 'record-only'>): string {
  switch (strategy) {
    case 'evict': return 'paced evictions';
    case 'restart-at': return 'the Rollout\'s spec.restartAt';
    case 'template': return 'a rolling update through the pod template annotation driftless.dev/restarted-at';
    case 'git': return 'a commit of the changed digests to the Application\'s Git source, which Argo CD syncs';
  }
}

/** The write-back state of a restart through Git at T, before its first submission: the changed configs' keyed digests. */
function pendingWriteBack(workload: WorkloadSummary, restartAt: number, changed: readonly string[], current: DigestMap, now: number): WriteBackState {
  const configs: Record<string, string> = {};
  for (const key of changed) {
    const digest = current[key];
    if (digest !== undefined && (key.startsWith('ConfigMap/') || key.startsWith('Secret/'))) configs[key] = digest;
  }
  return { restartAt, state: 'pending', configs, templateHash: workload.configHash ?? '', since: now, at: now };
}
