/**
 * The write-back's bookkeeping on the workload (strategy `git`): what was
 * submitted for the restart at T and where it stands, as the annotation
 * `driftless.dev/write-back` on the workload's own metadata, written by
 * server-side apply beside `restarted-for` and `restart-at`. The engine keeps
 * its state in memory only; this record is what survives a controller
 * restart (no second commit, no in-cluster restart for a change already in
 * Git) and what `explain --live`, a separate process, reads.
 *
 * Canonical JSON with fixed keys, so equal records give equal bytes (compare
 * before write). It holds keyed digests (as `restarted-for` does), the
 * repository URL without user-info, the branch and the commit: never a
 * value or a credential.
 */
import { canonicalJson } from '../../core/index.ts';

/**
 * Where a change's write-back stands:
 * - `pending`: submitted (or to be submitted again after a controller restart);
 * - `committed`: pushed (`sha` set), or already in Git (`unchanged`, `sha` absent); Argo CD is to sync it;
 * - `failed`: the last attempt failed (`error` is its kind); retried until the fallback;
 * - `fallback`: given up on Git — the in-cluster restart (or nothing) took over;
 * - `synced`: Argo CD synced a new render and the workload rolled it — the restart at T is done. Written
 *   once, when first seen: a later revert of the commit, or an Argo CD rollback to an earlier revision,
 *   puts the template's hash back to `templateHash`, and without this state that would read as a commit
 *   not synced yet (a restart re-opened, then a false Warning at the sync-wait bound).
 */
export type WriteBackState = 'pending' | 'committed' | 'failed' | 'fallback' | 'synced';

/** The record of the write-back for the restart at `restartAt`. */
export interface WriteBackRecord {
  /** T of the restart this write-back is for (epoch ms). */
  readonly restartAt: number;
  readonly state: WriteBackState;
  /** `Kind/name` → keyed digest submitted (the changed configs only). */
  readonly configs: Readonly<Record<string, string>>;
  /** The pod template's `driftless.dev/config-hash` when submitted: a different one means Argo CD synced a new render. */
  readonly templateHash: string;
  /** Epoch ms of the first submission. */
  readonly since: number;
  /** Epoch ms of the last state change (commit, failure, fallback, synced). */
  readonly at: number;
  readonly sha?: string;
  readonly branch?: string;
  /** Repository URL without user-info. */
  readonly repo?: string;
  /** `failed`: the error kind (auth, rejected, …); `fallback`: why (a refusal reason or `timeout`). */
  readonly error?: string;
}

const STATES: ReadonlySet<string> = new Set(['pending', 'committed', 'failed', 'fallback', 'synced']);

/** The annotation value: canonical JSON, times as RFC 3339 with milliseconds. */
export function formatWriteBackRecord(record: WriteBackRecord): string {
  return canonicalJson({
    restartAt: new Date(record.restartAt).toISOString(),
    state: record.state,
    configs: record.configs,
    templateHash: record.templateHash,
    since: new Date(record.since).toISOString(),
    at: new Date(record.at).toISOString(),
    ...(record.sha === undefined ? {} : { sha: record.sha }),
    ...(record.branch === undefined ? {} : { branch: record.branch }),
    ...(record.repo === undefined ? {} : { repo: record.repo }),
    ...(record.error === undefined ? {} : { error: record.error }),
  });
}

/** Parses the annotation; `undefined` when absent or not a record (then the write-back starts over, which Git makes harmless: an unchanged file commits nothing). */
export function parseWriteBackRecord(text: string | undefined): WriteBackRecord | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const raw = value as Record<string, unknown>;
  const time = (key: string): number | undefined => (typeof raw[key] === 'string' ? finite(Date.parse(raw[key])) : undefined);
  const textOf = (key: string): string | undefined => (typeof raw[key] === 'string' ? raw[key] : undefined);
  const restartAt = time('restartAt');
  const since = time('since');
  const at = time('at');
  const state = textOf('state');
  const templateHash = textOf('templateHash');
  const configs = raw['configs'];
  if (restartAt === undefined || since === undefined || at === undefined || state === undefined || !STATES.has(state) || templateHash === undefined) return undefined;
  if (typeof configs !== 'object' || configs === null || Array.isArray(configs) || !Object.values(configs).every((d) => typeof d === 'string')) return undefined;
  const optional = (key: 'sha' | 'branch' | 'repo' | 'error') => {
    const v = textOf(key);
    return v === undefined ? {} : { [key]: v };
  };
  return Object.freeze({
    restartAt,
    state: state as WriteBackState,
    configs: Object.freeze({ ...(configs as Record<string, string>) }),
    templateHash,
    since,
    at,
    ...optional('sha'),
    ...optional('branch'),
    ...optional('repo'),
    ...optional('error'),
  });
}

function finite(ms: number): number | undefined {
  return Number.isFinite(ms) ? ms : undefined;
}
