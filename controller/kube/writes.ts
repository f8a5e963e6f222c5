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
 *
 * Every write is fenced (kube/fence.ts, ADR 0008): the client checks the fence
 * immediately before sending and the fence's signal aborts it, so a replica
 * that cannot prove it leads writes nothing, and the reconciler need not know.
 * Every write has a deadline, sent along as the API server's `timeout` too.
 */
import { BOOKKEEPING, FLEET_ANNOTATIONS, WRITE_BACK_ANNOTATION } from '../../core/index.ts';
import { formatTime } from '../bookkeeping.ts';
import type { PodSummary, WorkloadSummary } from '../model.ts';
import type { KubeClient } from './client.ts';
import { KubeApiError, isEvictionPreconditionFailed, isNotFound, isRejectedWrite, isTooManyRequests } from './errors.ts';
import { unfenced, type Fence } from './fence.ts';
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
  /** `driftless.dev/write-back` (formatted, controller/writeback/record.ts), while the git strategy has a record. */
  readonly writeBack?: string | undefined;
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

/** How writes are fenced and bounded. */
export interface WriteOptions {
  /** The leader election's fence; absent: unfenced (a single replica). */
  readonly fence?: Fence;
  /**
   * The deadline of one write. Under leader election it must stay below leaseDuration − renewDeadline, so a
   * write that passed the fence is over (answered or aborted) before a standby can take the Lease.
   */
  readonly timeoutMs: number;
}

/** The writes against the API server. */
export function createWrites(client: KubeClient, options: WriteOptions = { timeoutMs: 5000 }): Writes {
  const fence = options.fence ?? unfenced();
  const timeoutMs = options.timeoutMs;
  // The API server's own deadline for the request (its `timeout` parameter), whole seconds, at least 1.
  const serverTimeout = `${Math.max(1, Math.floor(timeoutMs / 1000))}s`;
  return {
    async applyOwnFields(workload, fields) {
      const spec = WORKLOAD_RESOURCES[workload.kind];
      const annotations: Record<string, string> = { [BOOKKEEPING.restartedFor]: fields.restartedFor };
      if (fields.restartAt !== undefined) annotations[BOOKKEEPING.restartAt] = fields.restartAt;
      if (fields.restartHalted !== undefined) annotations[RESTART_HALTED] = fields.restartHalted;
      if (fields.writeBack !== undefined) annotations[WRITE_BACK_ANNOTATION] = fields.writeBack;
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
        fence,
        timeoutMs,
        query: { fieldManager: FIELD_MANAGER, force: true, timeout: serverTimeout },
        contentType: 'application/apply-patch+yaml',
        body,
      });
    },
    async patchRestartAt(workload, restartAt) {
      await client.request('PATCH', objectPath(WORKLOAD_RESOURCES.Rollout, workload.namespace, workload.name), {
        fence,
        timeoutMs,
        query: { fieldManager: FIELD_MANAGER, timeout: serverTimeout },
        contentType: 'application/merge-patch+json',
        body: { spec: { restartAt: formatTime(restartAt) } },
      });
    },
    async evict(pod) {
      try {
        await client.request('POST', `${objectPath(OTHER_RESOURCES.pods, pod.namespace, pod.name)}/eviction`, {
          fence,
          timeoutMs,
          query: { timeout: serverTimeout },
          body: {
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name: pod.name, namespace: pod.namespace },
            deleteOptions: { preconditions: { uid: pod.uid } },
          },
        });
        return { outcome: 'evicted', message: '' };
      } catch (error) {
        // A 409 whose UID precondition failed: the pod was already replaced. Any other 409 (the PDB's status
        // changed under the eviction) is thrown and retried with backoff: it says nothing about the pod.
        if (isNotFound(error) || isEvictionPreconditionFailed(error)) return { outcome: 'gone', message: '' };
        if (isTooManyRequests(error)) return { outcome: 'blocked', message: (error as KubeApiError).message };
        if (error instanceof KubeApiError && error.status === 500) return { outcome: 'refused', message: error.message };
        throw error;
      }
    },
  };
}

/** Which write failed: the `operation` label of `driftless_write_failures_total`. */
export type WriteOperation = 'apply' | 'restart-at' | 'evict';

/** What is told about a write the API server refused for good (403 from an admission webhook or RBAC, 422). */
export interface RejectedWrite {
  readonly workload: WorkloadSummary | undefined;
  readonly operation: WriteOperation;
  readonly status: number;
  /** The API server's message (a webhook's denial reason); never a Secret value: we send none. */
  readonly message: string;
  /** The write was the start of a restart (it set a new restart-at): the start token it spent is to be given back. */
  readonly startedRestart: boolean;
}

/**
 * Wraps writes so that one refused for good (403, 422) is reported once per call — a Warning Event on the
 * workload and a metric, by the caller's `report` — before the error goes on to the reconciler's retry.
 */
export function reportRejectedWrites(writes: Writes, report: (rejected: RejectedWrite) => void): Writes {
  const rejected = (error: unknown, workload: WorkloadSummary | undefined, operation: WriteOperation, startedRestart: boolean): void => {
    if (!isRejectedWrite(error)) return;
    const { status, statusMessage } = error as KubeApiError;
    report({ workload, operation, status, message: statusMessage, startedRestart });
  };
  return {
    async applyOwnFields(workload, fields) {
      try {
        await writes.applyOwnFields(workload, fields);
      } catch (error) {
        rejected(error, workload, 'apply', fields.restartAt !== undefined && fields.restartAt !== workload.annotations[BOOKKEEPING.restartAt]);
        throw error;
      }
    },
    async patchRestartAt(workload, restartAt) {
      try {
        await writes.patchRestartAt(workload, restartAt);
      } catch (error) {
        rejected(error, workload, 'restart-at', false);
        throw error;
      }
    },
    async evict(pod) {
      try {
        return await writes.evict(pod);
      } catch (error) {
        rejected(error, undefined, 'evict', false);
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
