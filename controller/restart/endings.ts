/**
 * How a restart in the cluster ends, each with its metric and Event: done
 * (every pod from before T replaced), halted by the health gate (the halt is
 * written on the workload, and the breaker counts it), skipped (a pending
 * update revision), or stalled by the progress deadline (no slot until its
 * pods move). Each finishes the restart's memory.
 */
import { formatTime } from '../bookkeeping.ts';
import { resolveStrategy } from '../decide.ts';
import { normalEvent, warningEvent } from '../events.ts';
import type { Breaker } from '../fleet/breaker.ts';
import { FLEET_ANNOTATIONS } from '../../core/index.ts';
import { formatHalt } from '../fleet/safety.ts';
import type { OwnFields } from '../kube/writes.ts';
import type { PodSummary, WorkloadSummary } from '../model.ts';
import type { ProcessResult } from '../queue.ts';
import type { ReconcilerDeps } from '../reconciler-deps.ts';
import type { StepTarget } from './execute.ts';
import type { RestartMemory } from './memory.ts';
import { ownFieldsWith } from './own-fields.ts';
import { stallReason } from './progress.ts';
import type { RestartStep } from './step.ts';

/** What ending a restart reads and writes through. `deps` is read at each use: its metrics are wired late. */
export interface Ending {
  readonly deps: Pick<ReconcilerDeps, 'options' | 'events' | 'log' | 'metrics' | 'fleetMetrics'>;
  readonly memory: RestartMemory;
  readonly breaker: Breaker;
  /** The reconciler's compare-before-write apply of the own fields. */
  apply(workload: WorkloadSummary, fields: OwnFields): Promise<void>;
  /** Ends the restart in progress; true when there was one. */
  finish(key: string): boolean;
}

/** Every pod from before T is replaced: the restart ends, announced once. */
export async function finishRestart(ending: Ending, key: string, workload: WorkloadSummary, restartAt: number): Promise<ProcessResult> {
  if (ending.finish(key)) {
    ending.deps.metrics?.restartsFinished.inc({ kind: workload.kind, namespace: workload.namespace, strategy: resolveStrategy(workload, ending.deps.options.defaultStrategy).strategy });
    await ending.deps.events.record(workload, normalEvent('RestartFinished', `every pod created before ${formatTime(restartAt)} was replaced`));
  }
  return undefined;
}

/** The health gate failed: write the halt on the workload (it outlives this process) and stop. */
export async function haltRestart(ending: Ending, target: StepTarget, reason: string): Promise<ProcessResult> {
  const { deps } = ending;
  const { key, workload, strategy, now } = target;
  const at = Math.floor(now / 1000) * 1000;
  await ending.apply(workload, ownFieldsWith(workload, { restartHalted: formatHalt({ at, reason }) }));
  // The cache shows our write a moment later; the breaker must count this halt now.
  ending.breaker.halted(key, at, workload.resourceVersion);
  ending.finish(key);
  deps.metrics?.restartsFailed.inc({ kind: workload.kind, namespace: workload.namespace, strategy });
  deps.metrics?.reloaderReloadExecuted.inc({ success: 'false', namespace: workload.namespace });
  deps.fleetMetrics?.restartsHalted.inc({ kind: workload.kind, namespace: workload.namespace });
  deps.log.warn({ workload: key, reason }, 'restart halted by the health gate');
  await deps.events.record(workload, warningEvent('RestartHalted', `${reason}: no further restart of this workload until the annotation ${FLEET_ANNOTATIONS.restartHalted} is removed`));
  return undefined;
}

/** Evicting would apply a pending update revision: the restart ends, not done. */
export async function skipRestart(ending: Ending, key: string, workload: WorkloadSummary, reason: string): Promise<ProcessResult> {
  ending.finish(key);
  ending.deps.metrics?.restartsSkipped.inc({ kind: workload.kind, namespace: workload.namespace, reason: 'pending-revision' });
  await ending.deps.events.record(workload, warningEvent('RestartSkipped', reason));
  return undefined;
}

/** The progress deadline passed: the restart stops acting, gives its slot back, and says why. */
export async function stallRestart(ending: Ending, target: StepTarget, step: RestartStep, pods: readonly PodSummary[], marker: string): Promise<ProcessResult> {
  const { options, log, events, metrics } = ending.deps;
  const { key, workload, strategy, restartAt } = target;
  ending.finish(key);
  ending.memory.markStalled(key, restartAt, marker);
  const cause = step.kind === 'wait' ? step.cause : step.kind;
  metrics?.restartsStalled.inc({ kind: workload.kind, namespace: workload.namespace, strategy, cause });
  const why = stallReason(step, pods, restartAt);
  log.warn({ workload: key, cause, reason: why }, 'restart halted: no progress within --restart-progress-deadline');
  const deadline = `${Math.round((options.progressDeadlineMs ?? 0) / 1000)}s`;
  await events.record(workload, warningEvent('RestartProgressDeadlineExceeded',
    `the restart at ${formatTime(restartAt)} made no progress for ${deadline} (--restart-progress-deadline): ${why}; it holds no restart slot now and resumes once its pods move, or at the next change`));
  return { requeueAfterMs: options.checkIntervalMs };
}
