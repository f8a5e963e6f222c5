/**
 * Every write the controller makes, each the smallest that does the job, with
 * an explicit content type and field manager `driftless`:
 *
 * - the bookkeeping annotations on a workload's metadata (and, for the opt-in
 *   `rollout` strategy, one pod-template annotation), by server-side apply of
 *   exactly the fields the controller owns — one apply carries all of them,
 *   because an apply that omits an owned field removes it;
 * - a Rollout's `spec.restartAt`, by merge patch, as `kubectl argo rollouts restart` does;
 * - a pod eviction (policy/v1), with a UID precondition so that a StatefulSet
 *   pod's same-named replacement is never evicted by mistake.
 */
import { BOOKKEEPING, formatTime } from '../bookkeeping.ts';
import { FLEET_ANNOTATIONS } from '../fleet/safety.ts';
import type { PodSummary, WorkloadSummary } from '../model.ts';
import type { KubeClient } from './client.ts';
import { KubeApiError, isConflict, isNotFound, isTooManyRequests } from './errors.ts';
import { OTHER_RESOURCES, WORKLOAD_RESOURCES, objectPath } from './resources.ts';

const RESTART_HALTED = FLEET_ANNOTATIONS.restartHalted;

/** The field manager of every write. */
export const FIELD_MANAGER = 'driftless';

/** The fields the controller owns on one workload. */
export interface OwnFields {
  /** `driftless.dev/restarted-for` (formatted). */
  readonly restartedFor: string;
  /** `driftless.dev/restart-at` (formatted), when a restart was ever started. */
  readonly restartAt: string | undefined;
  /** The `rollout` strategy's pod-template annotation, when the controller owns it. */
  readonly templateRestartedAt: string | undefined;
  /** `driftless.dev/restart-halted` (formatted), while the health gate keeps this workload from restarting. */
  readonly restartHalted?: string | undefined;
}

/** The outcome of one eviction request. */
export type EvictionOutcome = 'evicted' | 'gone' | 'blocked' | 'refused';

/** The writes, as an interface so that `--dry-run` (and tests of the reconciler) can swap them. */
export interface Writes {
  applyOwnFields(workload: WorkloadSummary, fields: OwnFields): Promise<void>;
  patchRestartAt(workload: WorkloadSummary, restartAt: number): Promise<void>;
  /** `blocked`: 429, a PodDisruptionBudget (or the API server) says not now; `refused`: 500, e.g. several PDBs match. */
  evict(pod: PodSummary): Promise<{ outcome: EvictionOutcome; message: string }>;
}

/** The writes against the API server. */
export function createWrites(client: KubeClient): Writes {
  return {
    async applyOwnFields(workload, fields) {
      const spec = WORKLOAD_RESOURCES[workload.kind];
      const annotations: Record<string, string> = { [BOOKKEEPING.restartedFor]: fields.restartedFor };
      if (fields.restartAt !== undefined) annotations[BOOKKEEPING.restartAt] = fields.restartAt;
      if (fields.restartHalted !== undefined) annotations[RESTART_HALTED] = fields.restartHalted;
      const body: Record<string, unknown> = {
        apiVersion: workload.apiVersion,
        kind: workload.kind,
        // The UID makes the apply a precondition on this very object: never recreate a deleted one.
        metadata: { name: workload.name, namespace: workload.namespace, uid: workload.uid, annotations },
      };
      if (fields.templateRestartedAt !== undefined) {
        const template = { metadata: { annotations: { [BOOKKEEPING.templateRestartedAt]: fields.templateRestartedAt } } };
        body['spec'] = workload.kind === 'CronJob' ? { jobTemplate: { spec: { template } } } : { template };
      }
      await client.request('PATCH', objectPath(spec, workload.namespace, workload.name), {
        query: { fieldManager: FIELD_MANAGER, force: true },
        contentType: 'application/apply-patch+yaml',
        body,
      });
    },
    async patchRestartAt(workload, restartAt) {
      await client.request('PATCH', objectPath(WORKLOAD_RESOURCES.Rollout, workload.namespace, workload.name), {
        query: { fieldManager: FIELD_MANAGER },
        contentType: 'application/merge-patch+json',
        body: { spec: { restartAt: formatTime(restartAt) } },
      });
    },
    async evict(pod) {
      try {
        await client.request('POST', `${objectPath(OTHER_RESOURCES.pods, pod.namespace, pod.name)}/eviction`, {
          body: {
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name: pod.name, namespace: pod.namespace },
            deleteOptions: { preconditions: { uid: pod.uid } },
          },
        });
        return { outcome: 'evicted', message: '' };
      } catch (error) {
        // 409: the UID precondition failed, i.e. the pod was already replaced.
        if (isNotFound(error) || isConflict(error)) return { outcome: 'gone', message: '' };
        if (isTooManyRequests(error)) return { outcome: 'blocked', message: (error as KubeApiError).message };
        if (error instanceof KubeApiError && error.status === 500) return { outcome: 'refused', message: error.message };
        throw error;
      }
    },
  };
}

/** Writes that only log what they would do (`--dry-run`). */
export function dryRunWrites(log: (what: string) => void): Writes {
  return {
    async applyOwnFields(workload) {
      log(`would record on ${workload.kind} ${workload.namespace}/${workload.name}`);
    },
    async patchRestartAt(workload, restartAt) {
      log(`would set spec.restartAt=${formatTime(restartAt)} on Rollout ${workload.namespace}/${workload.name}`);
    },
    async evict(pod) {
      log(`would evict pod ${pod.namespace}/${pod.name}`);
      return { outcome: 'evicted', message: '' };
    },
  };
}
