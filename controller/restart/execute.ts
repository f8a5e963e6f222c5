/**
 * Does what a restart step says (controller/restart/step.ts decides it):
 * evict these pods, write the Rollout's `spec.restartAt`, or wait — and keeps
 * the memory the cluster does not show (pods evicted, evictions refused since
 * when, the waits announced once). The steps that end a restart (done, halt)
 * are the reconciler's: they finish its memory.
 */
import { formatTime } from '../bookkeeping.ts';
import type { ResolvedStrategy } from '../decide.ts';
import { normalEvent, warningEvent } from '../events.ts';
import type { Writes } from '../kube/writes.ts';
import type { WorkloadSummary } from '../model.ts';
import type { ProcessResult } from '../queue.ts';
import type { ReconcilerDeps } from '../reconciler-deps.ts';
import type { RestartMemory } from './memory.ts';
import { expiredSyncWait, type RestartInput, type RestartStep } from './step.ts';

/** The restart a step is for. */
export interface StepTarget {
  readonly key: string;
  readonly workload: WorkloadSummary;
  readonly strategy: ResolvedStrategy;
  /** T. */
  readonly restartAt: number;
  /** This clock's now, and the API server's (T and the pods' times are on the API server's clock). */
  readonly now: number;
  readonly apiNow: number;
}

/** A step that acts or waits (not one that ends the restart). */
export type ActingStep = Extract<RestartStep, { kind: 'wait' | 'evict' | 'set-restart-at' | 'set-template' }>;

/** What executing reads and writes through. `deps` is read at each use: its metrics are wired late. */
export interface Execution {
  readonly deps: Pick<ReconcilerDeps, 'events' | 'log' | 'metrics' | 'fleetMetrics' | 'options'>;
  readonly memory: RestartMemory;
  readonly writes: Writes;
}

/** `--argocd-sync-wait` in words, as the Events give it. */
function syncWaitBound(execution: Execution): string {
  return `${Math.round((execution.deps.options.argocdSyncWaitMs ?? 0) / 1000)}s`;
}

/** One Warning per T when a sync still pending no longer holds the restart (ADR 0011). */
export async function announceSyncWaitExpiry(execution: Execution, key: string, input: RestartInput): Promise<void> {
  const reason = expiredSyncWait(input);
  if (reason === undefined) return;
  const { memory } = execution;
  const announced = memory.syncWaitAnnounced(key);
  if (announced?.restartAt === input.restartAt && announced.expired) return;
  memory.markSyncWaitAnnounced(key, input.restartAt, true);
  await execution.deps.events.record(input.workload, warningEvent('RestartSyncWaitExpired', `${reason} ${syncWaitBound(execution)} after ${formatTime(input.restartAt)} (--argocd-sync-wait): restarting anyway`));
}

/** Does what an acting step says; the restart is (still) in progress. */
export async function executeStep(execution: Execution, target: StepTarget, step: ActingStep): Promise<ProcessResult> {
  const { memory, writes } = execution;
  const { checkIntervalMs } = execution.deps.options;
  memory.markInProgress(target.key);
  switch (step.kind) {
    case 'set-restart-at':
      await writes.patchRestartAt(target.workload, step.restartAt);
      return { requeueAfterMs: checkIntervalMs };
    case 'set-template':
      // Written already (the reconciler writes it before it asks again); the cache shows it on the next reconcile.
      return { requeueAfterMs: checkIntervalMs };
    case 'wait':
      return wait(execution, target, step);
    case 'evict':
      await evict(execution, target, step.pods);
      return { requeueAfterMs: checkIntervalMs };
  }
}

/** A wait: announced once when it is Argo CD's sync or a sync window, looked at again when it may end. */
async function wait(execution: Execution, target: StepTarget, step: Extract<RestartStep, { kind: 'wait' }>): Promise<ProcessResult> {
  const { memory, deps } = execution;
  const { key, workload, restartAt, apiNow } = target;
  const { checkIntervalMs } = deps.options;
  if (step.cause === 'argocd-sync' && memory.syncWaitAnnounced(key)?.restartAt !== restartAt) {
    memory.markSyncWaitAnnounced(key, restartAt, false);
    await deps.events.record(workload, normalEvent('RestartWaitingForSync', `${step.reason}: its sync replaces the pods, so the restart at ${formatTime(restartAt)} waits for it (at most ${syncWaitBound(execution)})`));
  }
  if (step.cause === 'sync-window') {
    const hold = `${step.name ?? ''}\u0000${step.until ?? step.reason}`;
    if (memory.windowHoldAnnounced(key) !== hold) {
      memory.markWindowHoldAnnounced(key, hold);
      await deps.events.record(workload, normalEvent('RestartWaitingForSyncWindow', `${step.reason} (the restart at ${formatTime(restartAt)}; changes meanwhile join it)`));
    }
    // Nothing in the cluster announces a window opening: look again at its end (resync and an AppProject change wake it too).
    return { requeueAfterMs: step.until === undefined ? checkIntervalMs : Math.max(1, step.until - apiNow) };
  }
  if (step.cause === 'breaker') deps.fleetMetrics?.restartsDeferred.inc({ cause: 'breaker' });
  deps.log.debug({ workload: key, cause: step.cause, reason: step.reason }, 'restart waiting');
  // T ahead is waited for to the millisecond; the sync wait is looked at again at its bound at the latest.
  if (step.cause === 'restart-time' && step.until !== undefined) return { requeueAfterMs: step.until - apiNow };
  if (step.cause === 'argocd-sync' && step.until !== undefined) return { requeueAfterMs: Math.max(1, Math.min(checkIntervalMs, step.until - apiNow)) };
  return { requeueAfterMs: checkIntervalMs };
}

/** Evicts the pods in order, up to the first one refused; a refusal that lasts is a Warning. */
async function evict(execution: Execution, target: StepTarget, pods: Extract<RestartStep, { kind: 'evict' }>['pods']): Promise<void> {
  const { memory, writes, deps } = execution;
  const { key, workload, strategy, now } = target;
  for (const pod of pods) {
    const { outcome, message } = await writes.evict(pod);
    deps.metrics?.evictions.inc({ namespace: pod.namespace, outcome });
    if (outcome === 'evicted' || outcome === 'gone') {
      memory.markEvicted(key, pod.uid, now);
      memory.clearBlocked(key);
      deps.log.info({ workload: key, pod: pod.name }, 'evicted');
      continue;
    }
    deps.metrics?.restartsBlocked.inc({ kind: workload.kind, namespace: workload.namespace, strategy });
    const since = memory.markBlocked(key, now);
    if (now - since >= deps.options.blockedWarningMs) {
      // The same words for as long as the block lasts (the oldest stale pod is the one asked, and no elapsed
      // time): the recorder folds the rechecks into one Event with a rising count.
      await deps.events.record(workload, warningEvent('RestartBlocked', `eviction of pod ${pod.name} refused since ${formatTime(since)}: ${message}`));
    }
    deps.log.info({ workload: key, pod: pod.name, outcome }, 'eviction refused; retrying later');
    return;
  }
}
