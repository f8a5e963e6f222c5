/**
 * The restart record: a copy of a workload's bookkeeping (ADR 0007 §3) in an
 * object of its own, a ConfigMap `driftless-record-<workload UID>` in the
 * controller's namespace. The workload's annotations stay the primary copy;
 * the record exists because an Argo CD `Replace=true` sync, `kubectl replace`
 * or any PUT of the workload as Git renders it removes them — keeping the UID,
 * so the record keyed by it still says which digests the pods are current
 * with and the T of a restart in progress. Pure: reducing and building only.
 *
 * In hub mode (ADR 0019) the records of every cluster live in the hub, in the
 * controller's namespace: a record names its cluster (a label, and a prefix of
 * its name), and each cluster's pipeline selects only its own, so records of
 * two clusters never collide nor judge each other.
 */
import type { WorkloadKindName, WorkloadSummary } from '../model.ts';

/** The label every record carries (the record watch selects on it). */
export const RECORD_LABEL = 'driftless.dev/record';

/** The label naming the cluster (its id, `clusterId`) of a hub's record; absent on a single cluster's. */
export const RECORD_CLUSTER_LABEL = 'driftless.dev/record-cluster';

/**
 * The label selector of one pipeline's records: those of its cluster, or, for the one cluster of a controller
 * that is no hub, those that name none (a hub's records in a shared namespace are never its to judge).
 */
export function recordSelector(cluster: string | undefined): string {
  return cluster === undefined ? `${RECORD_LABEL},!${RECORD_CLUSTER_LABEL}` : `${RECORD_LABEL},${RECORD_CLUSTER_LABEL}=${cluster}`;
}

/** True for a raw object carrying the record label (a record, or one made to look like it). */
export function isRestartRecord(raw: unknown): boolean {
  const labels = (raw as { metadata?: { labels?: Record<string, unknown> } } | undefined)?.metadata?.labels;
  return labels !== undefined && labels !== null && Object.hasOwn(labels, RECORD_LABEL);
}

/** The name of the record of the workload with this UID (in the cluster `cluster`, for a hub's record). */
export function recordName(workloadUid: string, cluster?: string): string {
  return cluster === undefined ? `driftless-record-${workloadUid}` : `driftless-record-${cluster}-${workloadUid}`;
}

/** A record, as the cache keeps it. */
export interface RestartRecord {
  readonly name: string;
  readonly resourceVersion: string;
  readonly workload: { readonly kind: WorkloadKindName; readonly namespace: string; readonly name: string; readonly uid: string };
  /** `driftless.dev/restarted-for`, as formatted on the workload. */
  readonly restartedFor: string;
  /** `driftless.dev/restart-at`, when a restart was ever started. */
  readonly restartAt: string | undefined;
  /** `driftless.dev/write-back` (strategy git, ADR 0016), when there is one. */
  readonly writeBack?: string | undefined;
}

/** The bookkeeping a record holds, compared with what is to be written. */
export interface RecordedFields {
  readonly restartedFor: string;
  readonly restartAt: string | undefined;
  /** The git strategy's record: the Replace=true sync of its own commit must not lose it. */
  readonly writeBack?: string | undefined;
}

const KINDS: readonly string[] = ['Deployment', 'StatefulSet', 'DaemonSet', 'CronJob', 'Rollout', 'DeploymentConfig'] satisfies WorkloadKindName[];

/** Reduces a raw ConfigMap to a record; `undefined` for a ConfigMap that is not a well-formed record. */
export function reduceRecord(raw: unknown, cluster?: string): RestartRecord | undefined {
  const object = (raw ?? {}) as { metadata?: { name?: unknown; resourceVersion?: unknown }; data?: Record<string, unknown> };
  const data = object.data ?? {};
  const text = (key: string): string | undefined => (typeof data[key] === 'string' ? data[key] : undefined);
  const kind = text('kind');
  const namespace = text('namespace');
  const name = text('name');
  const uid = text('uid');
  const restartedFor = text('restartedFor');
  if (kind === undefined || !KINDS.includes(kind) || namespace === undefined || name === undefined || uid === undefined || restartedFor === undefined) return undefined;
  if (object.metadata?.name !== recordName(uid, cluster)) return undefined;
  return Object.freeze({
    name: recordName(uid, cluster),
    resourceVersion: typeof object.metadata.resourceVersion === 'string' ? object.metadata.resourceVersion : '',
    workload: Object.freeze({ kind: kind as WorkloadKindName, namespace, name, uid }),
    restartedFor,
    restartAt: text('restartAt'),
    ...(text('writeBack') === undefined ? {} : { writeBack: text('writeBack') }),
  });
}

/** True when the record already holds these fields for this workload. */
export function recordHolds(record: RestartRecord | undefined, fields: RecordedFields): boolean {
  return record !== undefined && record.restartedFor === fields.restartedFor && record.restartAt === fields.restartAt && record.writeBack === fields.writeBack;
}

/** The ConfigMap of a workload's record, as written (create or update). */
export function recordManifest(workload: Pick<WorkloadSummary, 'kind' | 'namespace' | 'name' | 'uid'>, fields: RecordedFields, namespace: string, resourceVersion?: string, cluster?: string): Record<string, unknown> {
  const data: Record<string, string> = { kind: workload.kind, namespace: workload.namespace, name: workload.name, uid: workload.uid, restartedFor: fields.restartedFor };
  if (fields.restartAt !== undefined) data['restartAt'] = fields.restartAt;
  if (fields.writeBack !== undefined) data['writeBack'] = fields.writeBack;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: recordName(workload.uid, cluster),
      namespace,
      labels: { [RECORD_LABEL]: 'true', 'app.kubernetes.io/managed-by': 'driftless', ...(cluster === undefined ? {} : { [RECORD_CLUSTER_LABEL]: cluster }) },
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    },
    data,
  };
}
