/**
 * The fields the controller owns on a workload (kube/writes.ts `OwnFields`) as
 * the reconciler reads and writes them: what the workload shows now, the
 * workload as it reads with a write applied, and a write made whole. An apply
 * that omits an owned field removes it, so every write carries them all.
 */
import { BOOKKEEPING, FLEET_ANNOTATIONS, WRITE_BACK_ANNOTATION } from '../../core/index.ts';
import type { OwnFields } from '../kube/writes.ts';
import type { WorkloadSummary } from '../model.ts';

/** The own fields as the workload shows them, with `changes` over them (an absent `restartedFor` is `{}`). */
export function ownFieldsWith(workload: WorkloadSummary, changes: Partial<OwnFields>): OwnFields {
  return {
    restartedFor: workload.annotations[BOOKKEEPING.restartedFor] ?? '{}',
    restartAt: workload.annotations[BOOKKEEPING.restartAt],
    templateRestartedAt: workload.templateRestartedAt,
    ...changes,
  };
}

/** `given` made whole: the halt and the write-back state are carried over from the workload unless `given` sets them. */
export function completeOwnFields(workload: WorkloadSummary, given: OwnFields): OwnFields {
  const withHalt: OwnFields = 'restartHalted' in given ? given : { ...given, restartHalted: workload.annotations[FLEET_ANNOTATIONS.restartHalted] };
  return 'writeBack' in withHalt ? withHalt : { ...withHalt, writeBack: workload.annotations[WRITE_BACK_ANNOTATION] };
}

/** True when the workload shows exactly `fields` (complete ones): nothing to write. */
export function showsOwnFields(workload: WorkloadSummary, fields: OwnFields): boolean {
  return workload.annotations[BOOKKEEPING.restartedFor] === fields.restartedFor
    && workload.annotations[BOOKKEEPING.restartAt] === fields.restartAt
    && workload.templateRestartedAt === fields.templateRestartedAt
    && workload.annotations[FLEET_ANNOTATIONS.restartHalted] === fields.restartHalted
    && workload.annotations[WRITE_BACK_ANNOTATION] === fields.writeBack;
}

/** The workload as it reads with the controller's own fields `own` written. */
export function withOwnFields(workload: WorkloadSummary, own: OwnFields): WorkloadSummary {
  const annotations: Record<string, string> = { ...workload.annotations, [BOOKKEEPING.restartedFor]: own.restartedFor };
  if (own.restartAt !== undefined) annotations[BOOKKEEPING.restartAt] = own.restartAt;
  if (own.restartHalted !== undefined) annotations[FLEET_ANNOTATIONS.restartHalted] = own.restartHalted;
  if (own.writeBack !== undefined) annotations[WRITE_BACK_ANNOTATION] = own.writeBack;
  return { ...workload, annotations, templateRestartedAt: own.templateRestartedAt };
}
