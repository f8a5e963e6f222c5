/**
 * Evictions all at once, for writes that evict at once (`--dry-run`,
 * restart/unseen-writes.ts `shadowWrites`): no pod goes away, so pacing would
 * wait forever. Past the waits that hold a restart before it acts, an evict
 * restart reports every eviction it would make, once per T, and is done.
 */
import type { ResolvedStrategy } from '../decide.ts';
import type { PodSummary } from '../model.ts';
import type { ProcessResult } from '../queue.ts';
import { finishRestart, type Ending } from './endings.ts';
import type { StepTarget } from './execute.ts';
import { isStalePod } from './stale-pods.ts';
import type { RestartStep, WaitCause } from './step.ts';
import type { UnseenWrites } from './unseen-writes.ts';

/** Waits that hold a restart before it acts: its evictions are reported only past them. */
const HOLDS_BEFORE_ACTING: ReadonlySet<WaitCause> = new Set<WaitCause>(['argocd-sync', 'rollout-update', 'breaker', 'sync-window']);

/** True when the restart's evictions are reported at once now, rather than the step done. */
export function evictsAtOnce(writes: UnseenWrites, strategy: ResolvedStrategy, step: RestartStep): boolean {
  if (writes.evictions !== 'at-once' || strategy !== 'evict') return false;
  const heldOrHalted = (step.kind === 'halt' && step.cause === 'health-gate') || (step.kind === 'wait' && HOLDS_BEFORE_ACTING.has(step.cause));
  return !heldOrHalted;
}

/** True when every eviction of the evict restart at T was reported already: nothing more to do. */
export function evictionsReported(writes: UnseenWrites, key: string, strategy: ResolvedStrategy, restartAt: number): boolean {
  return strategy === 'evict' && writes.evictionsReported(key) === restartAt;
}

/** Reports every eviction the restart would make, and ends it. */
export async function evictAtOnce(context: Ending & { readonly writes: UnseenWrites }, target: StepTarget, pods: readonly PodSummary[]): Promise<ProcessResult> {
  for (const pod of pods) {
    if (!isStalePod(pod, target.restartAt)) continue;
    await context.writes.evict(pod);
    context.memory.markEvicted(target.key, pod.uid, target.now);
  }
  context.writes.markEvictionsReported(target.key, target.restartAt);
  return finishRestart(context, target.key, target.workload, target.restartAt);
}
