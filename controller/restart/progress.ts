/**
 * The progress deadline (`--restart-progress-deadline`): whether a restart
 * that waits on its workload has seen its pods move, and in words why it is
 * stuck when they have not. The marker is data; the memory of when it last
 * changed is the reconciler's (restart/memory.ts).
 */
import type { Logger } from 'pino';
import type { PodSummary, WorkloadSummary } from '../model.ts';
import type { RestartMemory } from './memory.ts';
import { isTerminalPod } from './stale-pods.ts';
import type { RestartStep, WaitCause } from './step.ts';

/**
 * Waits the progress deadline applies to: the restart waits on the workload itself, which may never move.
 * Not the bounded ones (sync wait, T ahead), not the breaker's pause, and not a PodDisruptionBudget's 429
 * (that restart already holds no slot, is retried, and has its own Warning).
 */
const DEADLINE_CAUSES: ReadonlySet<WaitCause> = new Set<WaitCause>(['rollout-in-progress', 'availability', 'replacements', 'restarted-at', 'template-rollout']);

/**
 * What the restart's pods and status look like, as far as progress goes: pods from before T still running
 * and being deleted, replacements and how many are Ready, and the status fields a rollout advances.
 * A change in any of them is progress.
 */
export function progressMarker(workload: WorkloadSummary, pods: readonly PodSummary[], restartAt: number): string {
  let old = 0;
  let deleting = 0;
  let fresh = 0;
  let ready = 0;
  for (const pod of pods) {
    if (isTerminalPod(pod)) continue;
    if (pod.createdAt < restartAt) {
      if (pod.deleting) deleting++;
      else old++;
    } else {
      fresh++;
      if (pod.readySince !== undefined) ready++;
    }
  }
  const { status } = workload;
  return JSON.stringify([old, deleting, fresh, ready, status.restartedAt ?? null, status.updatedReplicas ?? null, status.updatedNumberScheduled ?? null, status.currentRevision ?? null]);
}

/**
 * Whether the restart has waited on its workload, its pods unmoved, for `deadlineMs` (0: never).
 * Any other step (an eviction, a write, a bounded or fleet-wide wait) starts the clock again.
 */
export function deadlinePassed(memory: RestartMemory, key: string, step: RestartStep, restartAt: number, marker: string, now: number, deadlineMs: number): boolean {
  const last = memory.lastMoved(key);
  const waitsOnWorkload = step.kind === 'wait' && DEADLINE_CAUSES.has(step.cause);
  if (deadlineMs <= 0 || !waitsOnWorkload || last === undefined || last.restartAt !== restartAt || last.marker !== marker) {
    memory.markMoved(key, { restartAt, marker, at: now });
    return false;
  }
  return now - last.at >= deadlineMs;
}

/** Why a stalled restart is stuck, in words: the step's reason, and a replacement that cannot start. */
export function stallReason(step: RestartStep, pods: readonly PodSummary[], restartAt: number): string {
  const reason = step.kind === 'wait' || step.kind === 'halt' ? step.reason : step.kind;
  const pending = pods.filter((pod) => pod.createdAt >= restartAt && !pod.deleting && pod.phase === 'Pending').map((pod) => pod.name).sort();
  return pending.length === 0 ? reason : `${reason}; replacement pod ${pending[0]} is Pending (unschedulable, or waiting for quota or volumes)`;
}

/**
 * Whether a restart halted by the progress deadline acts again: only once its pods moved by themselves
 * (or at a new T), and only with a free slot, as a start would. True for one never halted.
 */
export function resumesStalled(memory: RestartMemory, key: string, restartAt: number, marker: string, maxConcurrentRestarts: number, log: Logger): boolean {
  const stalled = memory.stalled(key);
  if (stalled === undefined) return true;
  if (stalled.restartAt === restartAt && stalled.marker === marker) return false;
  if (!memory.inProgress(key) && memory.actingCount() >= maxConcurrentRestarts) return false;
  memory.clearStalled(key);
  log.info({ workload: key }, 'a stalled restart moved: resuming it');
  return true;
}
