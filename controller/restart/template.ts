/**
 * The `rollout` strategy's step (resolved `template`): write the pod template
 * annotation `driftless.dev/restarted-at` = T, so the workload's own
 * controller rolls every pod; done once no pod from before T is left and the
 * replacements are Ready when the health gate waits for them.
 */
import { formatTime } from '../bookkeeping.ts';
import { isStalePod } from './stale-pods.ts';
import type { RestartStep, StrategyInput } from './step.ts';

/** The next step of a pod template restart. */
export function templateStep(input: StrategyInput): RestartStep {
  const { workload, pods, restartAt } = input;
  const stale = pods.some((pod) => isStalePod(pod, restartAt));
  // Only while pods from before T run: a template annotation a Replace=true sync removed after the restart
  // finished (its rollback's pods post-date T) is not written again, which would roll every pod once more.
  if (stale && workload.templateRestartedAt !== formatTime(restartAt)) return { kind: 'set-template', restartAt };
  if (stale) return { kind: 'wait', cause: 'template-rollout', reason: `the ${workload.kind} controller is rolling the pods` };
  if (input.replacementsPending) return { kind: 'wait', cause: 'replacements', reason: 'a replacement pod is not Ready yet' };
  return { kind: 'done' };
}
