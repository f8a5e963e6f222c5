/**
 * The `evict` strategy's step: paced evictions of the pods created before T,
 * planned by `planEvictions` (evict-plan.ts, after Argo Rollouts'
 * `rollout/restart.go`). The restart is done once no pod from before T is
 * left — also none still being deleted — and its replacements are Ready when
 * the health gate waits for them.
 */
import { planEvictions } from './evict-plan.ts';
import { isTerminalPod } from './stale-pods.ts';
import type { RestartStep, StrategyInput } from './step.ts';

/** The next step of an eviction restart. */
export function evictStep(input: StrategyInput): RestartStep {
  const { workload, pods, restartAt, now } = input;
  // T is the next whole second after the change (pod creation times have whole-second precision): a
  // replacement created before T would count as stale, so evictions start at T, to the millisecond.
  if (now < restartAt) return { kind: 'wait', cause: 'restart-time', reason: `the restart time is ${Math.ceil((restartAt - now) / 1000)}s ahead of the clock`, until: restartAt };
  const plan = planEvictions({ workload, pods, restartAt, now });
  switch (plan.action) {
    case 'done':
      // The planner is done once the last stale pod is being deleted; the restart is finished when it is gone.
      // Not isStalePod on purpose: a pod from before T that is still being deleted keeps the restart open.
      if (pods.some((pod) => pod.createdAt < restartAt && !isTerminalPod(pod))) return { kind: 'wait', cause: 'replacements', reason: 'a pod created before the restart time is still being deleted' };
      if (input.replacementsPending) return { kind: 'wait', cause: 'replacements', reason: 'a replacement pod is not Ready yet' };
      return { kind: 'done' };
    case 'skip':
      return { kind: 'halt', cause: 'pending-revision', reason: plan.reason };
    case 'wait':
      return { kind: 'wait', cause: plan.cause, reason: plan.reason };
    case 'evict':
      return { kind: 'evict', pods: plan.pods, budget: plan.budget };
  }
}
