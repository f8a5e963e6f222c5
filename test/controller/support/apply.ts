/**
 * What the API server makes of the controller's server-side apply of its own fields
 * (controller/kube/writes.ts `applyOwnFields`), for reconciler tests that play the API server against a
 * ClusterView: the bookkeeping annotations set, the optional ones (the health gate's halt, the git
 * strategy's write-back record) removed when left out — an apply by the field manager `driftless` drops
 * the fields it no longer sends — and the `rollout` strategy's template annotation as sent.
 */
import type { OwnFields } from '../../../controller/kube/writes.ts';
import type { WorkloadSummary } from '../../../controller/model.ts';
import { BOOKKEEPING, FLEET_ANNOTATIONS, WRITE_BACK_ANNOTATION } from '../../../core/index.ts';

/** The workload as the API server returns it after the apply, at `resourceVersion`. */
export function appliedOwnFields(workload: WorkloadSummary, fields: OwnFields, resourceVersion: string): WorkloadSummary {
  const annotations: Record<string, string> = { ...workload.annotations, [BOOKKEEPING.restartedFor]: fields.restartedFor };
  if (fields.restartAt !== undefined) annotations[BOOKKEEPING.restartAt] = fields.restartAt;
  if (fields.restartHalted !== undefined) annotations[FLEET_ANNOTATIONS.restartHalted] = fields.restartHalted;
  else delete annotations[FLEET_ANNOTATIONS.restartHalted];
  if (fields.writeBack !== undefined) annotations[WRITE_BACK_ANNOTATION] = fields.writeBack;
  else delete annotations[WRITE_BACK_ANNOTATION];
  return { ...workload, annotations, templateRestartedAt: fields.templateRestartedAt, resourceVersion };
}
