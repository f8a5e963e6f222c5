/**
 * The restart records (record.ts) of one controller: a cache the record watch
 * fills, and the writes — create, update with the cached resourceVersion
 * (compare before write: a record that already holds the fields is not
 * written), delete once its workload is gone. A record that cannot be written
 * (no permission, a conflict) is logged and never fails a reconcile: the
 * workload's annotations remain the primary copy.
 *
 * Only the records of workloads in the namespaces this controller watches are
 * its to judge: the record namespace may be shared (two installs sharded by
 * `--namespaces` in one namespace, every controller run outside a pod in
 * `default`), and a record whose workload this controller cannot see is not a
 * record of a deleted workload. Deleting it lost the baseline of an idle
 * workload, so its next Replace=true sync took a rotation for first sight.
 */
import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import { FencedError, type Fence } from '../kube/fence.ts';
import type { WorkloadSummary } from '../model.ts';
import { recordHolds, recordManifest, recordName, type RecordedFields, type RestartRecord } from './record.ts';

/** What the reconciler uses. */
export interface RecordStore {
  /** The record of the workload with this UID, as cached. */
  get(workloadUid: string): RestartRecord | undefined;
  /** Writes the record when it does not hold `fields` already. */
  write(workload: WorkloadSummary, fields: RecordedFields): Promise<void>;
  /**
   * True when the workload `kind/namespace/name`, in a watched namespace, has a record of a UID other than
   * `liveUid` (deleted or recreated); never for a namespace this controller does not watch.
   */
  hasStale(kind: string, namespace: string, name: string, liveUid: string | undefined): boolean;
  /** Deletes the records of the workload `kind/namespace/name` whose UID is not `liveUid` (in a watched namespace only). */
  forget(kind: string, namespace: string, name: string, liveUid: string | undefined): Promise<void>;
}

/** The record cache: the watch calls `changed`. Indexed by workload UID and by `kind/namespace/name`. */
export class RecordCache {
  readonly #byUid = new Map<string, RestartRecord>();
  readonly #byKey = new Map<string, Set<string>>();

  changed(previous: RestartRecord | undefined, next: RestartRecord | undefined): void {
    if (previous !== undefined) {
      this.#byUid.delete(previous.workload.uid);
      const key = keyOf(previous.workload.kind, previous.workload.namespace, previous.workload.name);
      this.#byKey.get(key)?.delete(previous.workload.uid);
      if (this.#byKey.get(key)?.size === 0) this.#byKey.delete(key);
    }
    if (next !== undefined) {
      this.#byUid.set(next.workload.uid, next);
      const key = keyOf(next.workload.kind, next.workload.namespace, next.workload.name);
      let uids = this.#byKey.get(key);
      if (uids === undefined) this.#byKey.set(key, (uids = new Set()));
      uids.add(next.workload.uid);
    }
  }

  get(workloadUid: string): RestartRecord | undefined {
    return this.#byUid.get(workloadUid);
  }

  /** Every record of the workload `kind/namespace/name` (one per UID it ever had). */
  of(kind: string, namespace: string, name: string): RestartRecord[] {
    const uids = this.#byKey.get(keyOf(kind, namespace, name));
    return uids === undefined ? [] : [...uids].map((uid) => this.#byUid.get(uid)).filter((r): r is RestartRecord => r !== undefined);
  }

  get size(): number {
    return this.#byUid.size;
  }
}

function keyOf(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/** The store against the API server; records live in `namespace` (the controller's). */
export function createRecordStore(deps: {
  client: KubeClient;
  cache: RecordCache;
  namespace: string;
  log: Logger;
  /** Record writes are fenced like every other write (ADR 0008): a deposed leader must not write one. */
  fence: Fence;
  timeoutMs: number;
  /** The namespaces this controller watches (`--namespaces`); absent: all. */
  watches?: (namespace: string) => boolean;
  /** The cluster whose records these are, in hub mode (record.ts `recordName`); absent: the one cluster. */
  cluster?: string | undefined;
}): RecordStore {
  const { client, cache, namespace, log, fence, timeoutMs } = deps;
  const watches = deps.watches ?? ((): boolean => true);
  /** The records of `kind/ns/name` of a UID other than the live one, when that workload is this controller's to see. */
  const stale = (kind: string, ns: string, name: string, liveUid: string | undefined): RestartRecord[] =>
    (watches(ns) ? cache.of(kind, ns, name).filter((record) => record.workload.uid !== liveUid) : []);
  const collection = `/api/v1/namespaces/${namespace}/configmaps`;
  /** Our last write per UID, while the watch has not delivered it: the cache would say "differs" again. */
  const written = new Map<string, { readonly basedOn: string | undefined; readonly fields: RecordedFields }>();
  let warned = false;

  const warnOnce = (error: unknown, what: string): void => {
    if (warned) return;
    warned = true;
    log.warn({ err: error, namespace }, `${what}: the bookkeeping lives on the workloads only, so a Replace=true sync (kubectl replace) in the middle of a restart loses it`);
  };

  return {
    get: (uid) => cache.get(uid),
    hasStale: (kind, ns, name, liveUid) => stale(kind, ns, name, liveUid).length > 0,
    async write(workload, fields) {
      const cached = cache.get(workload.uid);
      if (recordHolds(cached, fields)) return;
      const last = written.get(workload.uid);
      if (last !== undefined && last.basedOn === cached?.resourceVersion && recordHolds({ ...(cached as RestartRecord), ...last.fields }, fields)) return;
      try {
        if (cached === undefined) await client.request('POST', collection, { body: recordManifest(workload, fields, namespace, undefined, deps.cluster), fence, timeoutMs });
        else await client.request('PUT', `${collection}/${recordName(workload.uid, deps.cluster)}`, { body: recordManifest(workload, fields, namespace, cached.resourceVersion, deps.cluster), fence, timeoutMs });
        written.set(workload.uid, { basedOn: cached?.resourceVersion, fields });
      } catch (error) {
        if (error instanceof FencedError) throw error;
        // A conflict (the cache is behind, or two writers): the next write of the bookkeeping tries again.
        if (isConflict(error)) return;
        warnOnce(error, 'could not write a restart record');
      }
    },
    async forget(kind, ns, name, liveUid) {
      for (const record of stale(kind, ns, name, liveUid)) {
        written.delete(record.workload.uid);
        try {
          await client.request('DELETE', `${collection}/${record.name}`, { body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { resourceVersion: record.resourceVersion } }, fence, timeoutMs });
        } catch (error) {
          if (error instanceof FencedError) throw error;
          if (isNotFound(error) || isConflict(error)) continue;
          warnOnce(error, 'could not delete a restart record');
        }
      }
    },
  };
}
