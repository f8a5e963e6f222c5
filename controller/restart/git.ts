/**
 * The `git` strategy's decision (issue 15 §1, §6), pure: from the restart at
 * T, the changed configs' keyed digests, the workload's write-back record
 * (record.ts), the engine's status for the workload's own submission and what
 * the workload shows, the one next thing to do. Exactly one rollout per
 * change, and none by the controller in the cluster while Git carries it:
 *
 * 1. Without a hash key, or without an Argo CD Application tracking the
 *    workload, nothing is written: fall back at once (an unkeyed digest of a
 *    low-entropy Secret would be brute-forceable from Git history).
 * 2. No record for T: submit (the record, `pending`, is written first, so a
 *    controller restarted meanwhile submits again — harmless: a file already
 *    holding the digests commits nothing).
 * 3. `pending`: the engine's answer for this submission decides — wait while it
 *    is pending or running; record `committed` (pushed, or already in Git);
 *    a refusal (not a Git source, ambiguous, no credentials) falls back at
 *    once; a failure is recorded and retried. The answer is the engine's
 *    status *of this workload* (`statusOfWorkload`), never its Application's
 *    latest: two workloads of one Application submit separately, and each
 *    taking the other's submission for no answer would submit again in every
 *    batch window, forever. No answer: submit again — when the engine knows
 *    nothing of the workload (the controller restarted; the push may have
 *    landed before it died, and only `unchanged` tells), even past the
 *    deadline; otherwise only until `fallbackAfterMs` after the first
 *    submission, then the fallback (an answer that never matches must not
 *    clone in every batch window).
 * 4. `failed`: retried every `retryMs` (at most a quarter of `fallbackAfterMs`), until `fallbackAfterMs` after the
 *    first submission: then the fallback.
 * 5. `committed`: wait until Argo CD synced a new render (the pod template's
 *    `driftless.dev/config-hash` differs from the one at submission) and the
 *    workload rolled it (every replica updated): then done. Not synced within
 *    `fallbackAfterMs` of the commit (a write branch Argo CD does not track,
 *    another repository, a workload the plugin does not stamp, a sync window,
 *    a sync that came before the record): done *unconfirmed* — the commit is in
 *    Git and Argo CD's next sync of it rolls the workload; a restart in the
 *    cluster now would be a second rollout. Once synced, the roll is the
 *    workload controller's and is waited for without a bound. Synced and
 *    rolled: done, and the record says `synced` from then on.
 * 6. `fallback`: the in-cluster restart (or nothing) has taken over.
 * 7. `synced`: done, whatever the template shows now — a person's revert of
 *    the commit, or an Argo CD rollback to an earlier revision, puts the hash
 *    at submission back and leaves no commit to sync (issue 21 §2.1).
 */
import { configKey } from '../bookkeeping.ts';
import type { WorkloadSummary } from '../model.ts';
import type { ConfigDigest, WriteBackStatus } from '../writeback/model.ts';
import type { WriteBackRecord } from '../writeback/record.ts';

/** `--write-back-fallback`. */
export type GitFallback = 'restart' | 'none';

/** What the git strategy reads. */
export interface GitStepInput {
  /** T of the restart (epoch ms). */
  readonly restartAt: number;
  /** The changed configs with their keyed digests. */
  readonly changed: readonly ConfigDigest[];
  readonly record: WriteBackRecord | undefined;
  /** The engine's latest status of a submission for this workload (`statusOfWorkload`; `undefined`: none since this process started). */
  readonly status: WriteBackStatus | undefined;
  /** An Argo CD Application tracks the workload and is watched. */
  readonly tracked: boolean;
  /** The controller has a hash key. */
  readonly keyed: boolean;
  readonly workload: Pick<WorkloadSummary, 'configHash' | 'generation' | 'replicas' | 'status' | 'kind'>;
  readonly now: number;
  /** `--write-back-fallback-after` in ms. */
  readonly fallbackAfterMs: number;
  readonly fallback: GitFallback;
  /** How long a failed write-back waits before it is submitted again. */
  readonly retryMs: number;
}

/** Why the strategy gave up on Git. */
export type FallbackCause = 'no-hash-key' | 'untracked' | 'refused' | 'timeout';

/** The one next thing the git strategy does. Reasons name objects and kinds, never a value or a credential. */
export type GitStep =
  /** Write `record` (pending), then submit `configs` for the workload's Application. */
  | { readonly kind: 'submit'; readonly record: WriteBackRecord; readonly configs: readonly ConfigDigest[] }
  /** Write `record` (the engine's answer: committed or failed), nothing else. */
  | { readonly kind: 'write-answer'; readonly record: WriteBackRecord }
  /** Nothing to do now; `until`: when to look again at the latest. */
  | { readonly kind: 'wait'; readonly cause: 'write-back' | 'write-back-sync'; readonly reason: string; readonly until?: number }
  /**
   * Give up on Git: write `record` (state `fallback`) and hand the restart at T to `to`. `announce`: the state
   * changes now (a Warning Event and the metric, once); false when the record already says so.
   */
  | { readonly kind: 'fall-back'; readonly to: GitFallback; readonly cause: FallbackCause; readonly reason: string; readonly record: WriteBackRecord; readonly announce: boolean }
  /**
   * Argo CD synced the commit and the workload rolled: the change is done. `record`: write it (state `synced`)
   * first — the state changes now; absent when the record already says so, and when `unconfirmed`: Argo CD did
   * not sync a new render within `fallbackAfterMs` of the commit; the controller stops waiting (a Warning says why).
   */
  | { readonly kind: 'done'; readonly record?: WriteBackRecord; readonly unconfirmed?: string };

/** The next step of the git strategy for the restart at `input.restartAt`. */
export function gitStep(input: GitStepInput): GitStep {
  const { restartAt, now } = input;
  const record = input.record !== undefined && input.record.restartAt === restartAt ? input.record : undefined;
  // Finished, and nothing seen since re-opens it: not a revert or rollback, nor the key or the Application gone.
  if (record?.state === 'synced') return { kind: 'done' };
  if (record?.state === 'fallback') {
    return { kind: 'fall-back', to: input.fallback, cause: (record.error as FallbackCause | undefined) ?? 'refused', reason: `the write-back was given up (${record.error ?? 'refused'})`, record, announce: false };
  }
  const base = record ?? pendingRecord(input);
  if (!input.keyed) return fallBack(input, base, 'no-hash-key', 'the controller has no hash key: an unkeyed digest of a config is never written to Git (a low-entropy Secret would be brute-forceable from its history)');
  if (!input.tracked) return fallBack(input, base, 'untracked', 'no watched Argo CD Application tracks this workload: there is no Git source to write to');
  if (record === undefined) return { kind: 'submit', record: base, configs: input.changed };

  if (record.state === 'committed') {
    // Recorded, so that a template put back to the hash at submission later is not read as "not synced yet".
    if (rolledAway(input.workload, record.templateHash)) return { kind: 'done', record: { ...record, state: 'synced', at: now } };
    const commit = record.sha === undefined ? 'the digests are in Git' : `commit ${record.sha.slice(0, 12)} on ${record.branch ?? 'its branch'}`;
    const synced = (input.workload.configHash ?? '') !== record.templateHash;
    const syncBy = record.at + input.fallbackAfterMs;
    if (!synced && now >= syncBy) {
      return {
        kind: 'done',
        unconfirmed: `${commit}: Argo CD synced no new render of the ${input.workload.kind} within ${seconds(input.fallbackAfterMs)} (--write-back-fallback-after); no longer waiting — its next sync of the commit rolls the ${input.workload.kind} (a write branch it does not track is rolled once merged). Nothing is restarted in the cluster: that would be a second rollout`,
      };
    }
    return { kind: 'wait', cause: 'write-back-sync', reason: `${commit}: waiting for Argo CD to sync it and the ${input.workload.kind} to roll` };
  }

  const answer = ours(input.status, record);
  if (answer?.state === 'pending' || answer?.state === 'running') {
    return { kind: 'wait', cause: 'write-back', reason: `the write-back is ${answer.state} (${answer.repo}${answer.branch === '' ? '' : ` ${answer.branch}`})` };
  }
  const result = answer?.result;
  if (result?.status === 'committed' || result?.status === 'unchanged') {
    return {
      kind: 'write-answer',
      record: { ...record, state: 'committed', at: result.at, repo: result.repo, branch: result.branch, ...(result.status === 'committed' ? { sha: result.sha } : {}), error: undefined },
    };
  }
  if (result?.status === 'refused') return fallBack(input, record, 'refused', `the write-back was refused: ${result.message}`);
  const timedOut = now - record.since >= input.fallbackAfterMs;
  if (result?.status === 'failed') {
    if (timedOut) return fallBack(input, record, 'timeout', `the write-back kept failing for ${seconds(now - record.since)} (--write-back-fallback-after): ${result.error.message}`);
    if (record.state !== 'failed' || record.error !== result.error.kind || record.at !== result.at) {
      return { kind: 'write-answer', record: { ...record, state: 'failed', at: result.at, error: result.error.kind } };
    }
  }
  if (record.state === 'failed') {
    if (timedOut) return fallBack(input, record, 'timeout', `the write-back kept failing for ${seconds(now - record.since)} (--write-back-fallback-after; last: ${record.error ?? 'unknown'})`);
    // A fallback deadline shorter than the retry interval must still see retries: at least four attempts fit.
    const retryAt = record.at + Math.min(input.retryMs, input.fallbackAfterMs / 4);
    if (now < retryAt) return { kind: 'wait', cause: 'write-back', reason: `the write-back failed (${record.error ?? 'unknown'}); trying again`, until: Math.min(retryAt, record.since + input.fallbackAfterMs) };
  }
  if (record.state === 'pending' && answer === undefined && input.status !== undefined && timedOut) {
    return fallBack(input, record, 'timeout', `the write-back got no answer for ${seconds(now - record.since)} (--write-back-fallback-after)`);
  }
  // Pending with no answer in this process (it restarted), or a failure due for another attempt.
  return { kind: 'submit', record, configs: input.changed };
}

/** The record of a first submission. */
function pendingRecord(input: GitStepInput): WriteBackRecord {
  const configs: Record<string, string> = {};
  for (const c of input.changed) configs[configKey(c.kind, c.name)] = c.digest;
  return { restartAt: input.restartAt, state: 'pending', configs, templateHash: input.workload.configHash ?? '', since: input.now, at: input.now };
}

function fallBack(input: GitStepInput, record: WriteBackRecord, cause: FallbackCause, reason: string): GitStep {
  const next: WriteBackRecord = { ...record, state: 'fallback', at: input.now, error: cause };
  return { kind: 'fall-back', to: input.fallback, cause, reason, record: next, announce: true };
}

/** The engine's status when it is about this record's submission: same configs and digests, submitted since. */
function ours(status: WriteBackStatus | undefined, record: WriteBackRecord): WriteBackStatus | undefined {
  if (status === undefined || status.submittedAt < record.since) return undefined;
  const submitted = new Map(status.configs.map((c) => [configKey(c.kind, c.name), c.digest]));
  return Object.entries(record.configs).every(([key, digest]) => submitted.get(key) === digest) ? status : undefined;
}

/**
 * Argo CD synced a new render (the template's config-hash is not the one at submission) and the workload's
 * controller rolled it: every replica updated, the generation observed.
 */
export function rolledAway(workload: GitStepInput['workload'], hashAtSubmission: string): boolean {
  if ((workload.configHash ?? '') === hashAtSubmission) return false;
  const { status } = workload;
  if (status.observedGeneration !== undefined && status.observedGeneration < workload.generation) return false;
  if (workload.kind === 'DaemonSet') return (status.updatedNumberScheduled ?? 0) >= (status.desiredNumberScheduled ?? 0);
  if (workload.kind === 'StatefulSet' && status.updateRevision !== undefined && status.currentRevision !== status.updateRevision) return false;
  const desired = workload.replicas ?? 1;
  return (status.updatedReplicas ?? 0) >= desired && (status.replicas ?? 0) <= desired;
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}
