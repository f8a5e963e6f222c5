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
  const { workload, pods, restartAt, now } = input;
  // T is the next whole second after the change, and pod creation times are whole seconds: a rollout started
  // before T makes pods that read as created before T, stale for good (the restart never finishes, and once a
  // Replace=true sync removes the annotation it is written again). So, as evictions do, the write waits for T.
  if (now < restartAt) return { kind: 'wait', cause: 'restart-time', reason: `the restart time is ${Math.ceil((restartAt - now) / 1000)}s ahead of the clock`, until: restartAt };
  const stale = pods.some((pod) => isStalePod(pod, restartAt));
  // Only while pods from before T run: a template annotation a Replace=true sync removed after the restart
  // finished (its rollback's pods post-date T) is not written again, which would roll every pod once more.
  if (stale && workload.templateRestartedAt !== formatTime(restartAt)) return { kind: 'set-template', restartAt };
  if (stale) return { kind: 'wait', cause: 'template-rollout', reason: `the ${workload.kind} controller is rolling the pods` };
  if (input.replacementsPending) return { kind: 'wait', cause: 'replacements', reason: 'a replacement pod is not Ready yet' };
  return { kind: 'done' };
}
