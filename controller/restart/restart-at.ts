/**
 * The `restart-at` strategy's step (Argo Rollouts): write the Rollout's
 * `spec.restartAt` = T and let Argo Rollouts replace the pods; done once its
 * `status.restartedAt` reaches T.
 */
import { parseRestartAt } from '../bookkeeping.ts';
import type { RestartStep, StrategyInput } from './step.ts';

/** The next step of a Rollout's `spec.restartAt` restart. */
export function restartAtStep(input: Pick<StrategyInput, 'workload' | 'restartAt'>): RestartStep {
  const { workload, restartAt } = input;
  const restarted = parseRestartAt(workload.status.restartedAt);
  if (restarted !== undefined && restarted >= restartAt) return { kind: 'done' };
  const asked = parseRestartAt(workload.restartAt);
  if (asked === undefined || asked < restartAt) return { kind: 'set-restart-at', restartAt };
  return { kind: 'wait', cause: 'restarted-at', reason: `status.restartedAt ${workload.status.restartedAt ?? 'not yet written'} has not reached spec.restartAt` };
}
