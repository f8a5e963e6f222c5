/**
 * Moves a restart through Git one step (controller/restart/git.ts decides,
 * ADR 0016): submit the changed digests, write the engine's answer to the
 * workload's write-back state, wait for Argo CD's sync and the roll, or fall
 * back to a restart in the cluster — which the reconciler then moves on.
 */
import { formatTime } from '../bookkeeping.ts';
import { resolveStrategy, type ResolvedStrategy } from '../decide.ts';
import { changedConfigs, normalEvent, warningEvent, type EventConfig } from '../events.ts';
import type { OwnFields } from '../kube/writes.ts';
import type { WorkloadSummary } from '../model.ts';
import type { ProcessResult } from '../queue.ts';
import type { ReconcilerDeps } from '../reconciler-deps.ts';
import type { ConfigDigest } from '../writeback/model.ts';
import { WRITE_BACK_ANNOTATION } from '../../core/index.ts';
import { formatWriteBackRecord, parseWriteBackRecord, type WriteBackRecord as WriteBackState } from '../writeback/record.ts';
import { gitStep, type GitStep } from './git.ts';
import type { RestartMemory } from './memory.ts';
import { ownFieldsWith, withOwnFields } from './own-fields.ts';

/** What moving a restart through Git reads and writes through. `deps` is read at each use: its metrics are wired late. */
export interface GitProgress {
  readonly deps: Pick<ReconcilerDeps, 'options' | 'view' | 'events' | 'log' | 'writeBack' | 'writeBackMetrics' | 'metrics' | 'wake'>;
  readonly memory: RestartMemory;
  /** The reconciler's compare-before-write apply of the own fields. */
  apply(workload: WorkloadSummary, fields: OwnFields): Promise<void>;
  /** Ends the restart in progress; true when there was one. */
  finish(key: string): boolean;
}

/** The step's outcome: what to return, or the restart at T goes on in the cluster with `strategy`, from `workload`. */
export type GitOutcome =
  | { readonly result: ProcessResult }
  | { readonly inCluster: { readonly workload: WorkloadSummary; readonly strategy: Exclude<ResolvedStrategy, 'record-only' | 'git'> } };

/** One step of the restart at T through Git. */
export async function progressGit(git: GitProgress, key: string, workload: WorkloadSummary, restartAt: number, now: number): Promise<GitOutcome> {
  const { options, view, log } = git.deps;
  const writeBack = git.deps.writeBack;
  const settings = options.writeBack;
  const state = parseWriteBackRecord(workload.annotations[WRITE_BACK_ANNOTATION]);
  // No write-back state for this T: the restart at T was not one through Git (the strategy changed since); nothing is written for it.
  if (writeBack === undefined || settings === undefined || state?.restartAt !== restartAt) {
    git.finish(key);
    return { result: undefined };
  }
  const app = view.applicationOf(workload);
  const configs = digestsOf(workload.namespace, state);
  const ref = { kind: workload.kind, namespace: workload.namespace, name: workload.name };
  const step = gitStep({
    restartAt,
    changed: configs,
    record: state,
    // The answer to this workload's own submission: its Application's other workloads submit separately.
    status: writeBack.statusOfWorkload(ref),
    tracked: app !== undefined && configs.length > 0,
    keyed: settings.keyed,
    workload,
    now,
    fallbackAfterMs: settings.fallbackAfterMs,
    fallback: settings.fallback,
    retryMs: settings.retryMs,
  });
  const own = (next: WriteBackState): OwnFields => ownFieldsWith(workload, { writeBack: formatWriteBackRecord(next) });
  const changed = changedConfigs(Object.keys(state.configs));
  // Done is not acting: re-adding it would announce RestartFinished again on every later look at the same T.
  if (step.kind !== 'fall-back' && step.kind !== 'done') {
    git.memory.markInProgress(key);
    git.memory.markThroughGit(key, true);
  }
  switch (step.kind) {
    case 'submit': {
      await git.apply(workload, own(step.record));
      if (app === undefined) return { result: { requeueAfterMs: options.checkIntervalMs } };
      log.info({ workload: key, application: `${app.namespace}/${app.name}` }, 'write-back submitted');
      void writeBack.submit({
        application: app.writeBackSource,
        configs: step.configs,
        workloads: [ref],
        changeSeenAt: restartAt,
      }).then(() => git.deps.wake?.(key));
      return { result: { requeueAfterMs: options.checkIntervalMs } };
    }
    case 'write-answer':
      await git.apply(workload, own(step.record));
      await announceAnswer(git, workload, restartAt, step.record, changed);
      return { result: { requeueAfterMs: options.checkIntervalMs } };
    case 'wait':
      log.debug({ workload: key, cause: step.cause, reason: step.reason }, 'write-back waiting');
      return { result: { requeueAfterMs: step.until === undefined ? options.checkIntervalMs : Math.max(1, Math.min(options.checkIntervalMs * 60, step.until - now)) } };
    case 'fall-back':
      return fallBack(git, key, workload, step, own(step.record), changed);
    case 'done':
      // Synced and rolled, seen now: written on the workload, so a later revert or rollback re-opens nothing.
      if (step.record !== undefined) await git.apply(workload, own(step.record));
      // Every look at a finished restart says so (debug): that it looked, where nothing else shows it.
      log.debug({ workload: key, restartAt: formatTime(restartAt), state: step.record?.state ?? state.state }, 'restart through Git done');
      if (git.finish(key)) await announceDone(git, key, workload, state, step.unconfirmed, changed);
      return { result: undefined };
  }
}

/** The write-back was given up: say so once, then the restart at T goes on in the cluster, or ends (`--write-back-fallback none`). */
async function fallBack(git: GitProgress, key: string, workload: WorkloadSummary, step: Extract<GitStep, { kind: 'fall-back' }>, fields: OwnFields, changed: readonly EventConfig[]): Promise<GitOutcome> {
  await git.apply(workload, fields);
  if (step.announce) {
    git.deps.writeBackMetrics?.fallbacks.inc({ cause: step.cause });
    git.deps.log.warn({ workload: key, cause: step.cause, to: step.to }, 'write-back given up');
    await git.deps.events.record(workload, warningEvent('WriteBackFallback', `${step.reason}; ${step.to === 'restart' ? 'restarting in the cluster instead' : 'recorded only (--write-back-fallback none)'}`, changed));
  }
  git.memory.markThroughGit(key, false);
  const inCluster = resolveStrategy(workload, git.deps.options.defaultStrategy).strategy;
  if (step.to === 'none' || inCluster === 'record-only' || inCluster === 'git') {
    git.finish(key);
    return { result: undefined };
  }
  // The restart at T goes on in the cluster, from what was just written.
  return { inCluster: { workload: withOwnFields(workload, fields), strategy: inCluster } };
}

/** The write-back engine's answer, now written on the workload: committed (Argo CD's sync rolls it), or failed (retried). */
async function announceAnswer(git: GitProgress, workload: WorkloadSummary, restartAt: number, answer: WriteBackState, changed: readonly EventConfig[]): Promise<void> {
  const { sha, branch, repo, error } = answer;
  if (answer.state === 'committed') {
    await git.deps.events.record(workload, normalEvent('WriteBackCommitted', `${sha === undefined ? 'the digests were already' : `committed ${sha.slice(0, 12)}`} in ${repo ?? 'the repository'} on ${branch ?? 'its branch'} for the restart at ${formatTime(restartAt)}: Argo CD's sync rolls the ${workload.kind}`, changed));
    return;
  }
  const result = git.deps.writeBack?.statusOfWorkload({ kind: workload.kind, namespace: workload.namespace, name: workload.name })?.result;
  const message = result?.status === 'failed' ? result.error.message : error ?? 'unknown';
  await git.deps.events.record(workload, warningEvent('WriteBackFailed', `the write-back failed (${error ?? 'unknown'}): ${message}; retrying until --write-back-fallback-after`));
}

/** The restart through Git ended: Argo CD synced the commit and the workload rolled, or (`unconfirmed`) no longer waited for. */
async function announceDone(git: GitProgress, key: string, workload: WorkloadSummary, state: WriteBackState, unconfirmed: string | undefined, changed: readonly EventConfig[]): Promise<void> {
  if (unconfirmed !== undefined) {
    git.deps.log.warn({ workload: key }, 'write-back not synced by Argo CD within --write-back-fallback-after; no longer waiting');
    await git.deps.events.record(workload, warningEvent('RestartSyncWaitExpired', unconfirmed, changed));
    return;
  }
  git.deps.metrics?.restartsFinished.inc({ kind: workload.kind, namespace: workload.namespace, strategy: 'git' });
  await git.deps.events.record(workload, normalEvent('RestartFinished', `Argo CD synced the write-back${state.sha === undefined ? '' : ` (commit ${state.sha.slice(0, 12)})`} and the ${workload.kind} rolled`));
}

/** The configs the write-back state holds, as the write-back takes them (only ConfigMaps and Secrets have a digest the plugin folds). */
function digestsOf(namespace: string, state: WriteBackState): ConfigDigest[] {
  const out: ConfigDigest[] = [];
  for (const [key, digest] of Object.entries(state.configs)) {
    const slash = key.indexOf('/');
    const kind = key.slice(0, slash);
    if (kind === 'ConfigMap' || kind === 'Secret') out.push({ kind, namespace, name: key.slice(slash + 1), digest });
  }
  return out;
}
