/**
 * The reconciler's writes, wrapped so that what they applied is read back over
 * a cache that does not show it (yet). Two kinds, one interface, so the
 * reconciler never asks which it has:
 *
 * - `rememberWrites`: the real writes. Our last apply per workload is read
 *   over the cached copy while the cache still shows the version it was based
 *   on: deciding from the stale copy would start the same restart twice, and
 *   writing the same again would be a wasted request.
 * - `shadowWrites` (`--dry-run`): nothing is applied, so what the writes would
 *   have recorded is read back for good; and no pod goes away, so pacing
 *   would wait forever: a restart reports every eviction it would make at
 *   once, and once per T.
 */
import type { Logger } from 'pino';
import { workloadKey } from '../cache/cluster-view.ts';
import type { OwnFields, Writes } from '../kube/writes.ts';
import type { WorkloadSummary } from '../model.ts';
import { withOwnFields } from './own-fields.ts';

/** Writes that remember what they applied. */
export interface UnseenWrites extends Writes {
  /** How a restart evicts: `paced` as the step says, or `at-once` (`--dry-run`: every eviction reported in one step). */
  readonly evictions: 'paced' | 'at-once';
  /** The cached workload `key` as it reads with what we applied that the cache does not show. */
  readBack(key: string, cached: WorkloadSummary | undefined): WorkloadSummary | undefined;
  /** True when exactly `fields` were applied over this very version of the workload already. */
  appliedOver(workload: WorkloadSummary, fields: OwnFields): boolean;
  /** `at-once`: the T whose evictions were all reported for the workload. */
  evictionsReported(key: string): number | undefined;
  /** `at-once`: every eviction of the restart at T was reported. */
  markEvictionsReported(key: string, restartAt: number): void;
  /** The workload is gone. */
  forget(key: string): void;
}

const keyOf = (workload: WorkloadSummary): string => workloadKey(workload.kind, workload.namespace, workload.name);

/** The real writes, each apply remembered with the resourceVersion it was based on until the cache moves past it. */
export function rememberWrites(writes: Writes, log: Logger): UnseenWrites {
  const lastApply = new Map<string, { readonly basedOn: string; readonly text: string; readonly fields: OwnFields }>();
  return {
    evictions: 'paced',
    async applyOwnFields(workload, fields) {
      await writes.applyOwnFields(workload, fields);
      const key = keyOf(workload);
      lastApply.set(key, { basedOn: workload.resourceVersion, text: JSON.stringify(fields), fields });
      log.debug({ workload: key, restartAt: fields.restartAt }, 'applied own fields');
    },
    patchRestartAt: (workload, restartAt) => writes.patchRestartAt(workload, restartAt),
    evict: (pod) => writes.evict(pod),
    readBack(key, cached) {
      const last = lastApply.get(key);
      if (cached === undefined || last === undefined || last.basedOn !== cached.resourceVersion) return cached;
      return withOwnFields(cached, last.fields);
    },
    appliedOver(workload, fields) {
      const last = lastApply.get(keyOf(workload));
      return last !== undefined && last.basedOn === workload.resourceVersion && last.text === JSON.stringify(fields);
    },
    evictionsReported: () => undefined,
    markEvictionsReported() {},
    forget(key) {
      lastApply.delete(key);
    },
  };
}

/** `--dry-run`: `writes` only say what they would do; what they would have recorded is read back for good. */
export function shadowWrites(writes: Writes): UnseenWrites {
  const shadow = new Map<string, OwnFields>();
  const reported = new Map<string, number>();
  return {
    evictions: 'at-once',
    async applyOwnFields(workload, fields) {
      await writes.applyOwnFields(workload, fields);
      shadow.set(keyOf(workload), fields);
    },
    patchRestartAt: (workload, restartAt) => writes.patchRestartAt(workload, restartAt),
    evict: (pod) => writes.evict(pod),
    readBack(key, cached) {
      const fields = shadow.get(key);
      return cached === undefined || fields === undefined ? cached : withOwnFields(cached, fields);
    },
    // Nothing is applied: the shadow read back is all there is to compare with.
    appliedOver: () => false,
    evictionsReported: (key) => reported.get(key),
    markEvictionsReported(key, restartAt) {
      reported.set(key, restartAt);
    },
    forget(key) {
      shadow.delete(key);
      reported.delete(key);
    },
  };
}
