/**
 * The write-back engine: what the restart path calls. `submit` takes an
 * Application's changed digests and resolves when they are in Git (or why
 * not); `status` tells `explain` what is pending and what was committed, per
 * Application; `statusOfWorkload` is the restart path's answer, per workload
 * (one Application's workloads submit separately: with one status per
 * Application each would see the other's submission as no answer, ADR 0016).
 *
 * - **Batching.** Submissions for the same repository and branches within
 *   `batchWindowMs` of the first become one commit (Image Updater's users
 *   with 90 Applications in a monorepo waited minutes for 90 commits). A
 *   batch waiting for its repository keeps accepting submissions.
 * - **Serialisation.** At most one git operation per repository at a time,
 *   whatever the branch: two clones racing each other would only make
 *   non-fast-forward retries.
 * - **No empty commits.** A submission whose digests the file already holds
 *   is `unchanged`. The engine writes what it is given; deciding *when* to
 *   write (on a change of the live config, never because Git differs) is the
 *   restart path's rule (ADR 0014).
 * - **Clusters** (hub mode, ADR 0026). Workloads are keyed by cluster as well
 *   as namespace and name: each cluster's pipeline uses `forCluster`, whose
 *   submissions and answers are its own, batched apart from other clusters',
 *   and fenced by that pipeline's fence: once it closes, the cluster's
 *   submissions not yet run are dropped, a running one is aborted, and their
 *   answers are forgotten (a later pipeline for the cluster submits again, as
 *   after a restart of the controller). Without `forCluster` (one cluster)
 *   everything is in one implicit cluster, as before.
 */
import { randomBytes } from 'node:crypto';
import { formatOutOfBandFile, OutOfBandFileError, parseOutOfBandFile } from '../../core/index.ts';
import type { Clock, Timer } from '../clock.ts';
import { isCredentialsRefusal, normaliseGitUrl, type CredentialsRefusal, type GitCredentials } from './credentials.ts';
import { CredentialsReadError, WriteBackError, redactUrl } from './errors.ts';
import { runGitJob, sweepWorkDir, workDirPrefix, type GitJob, type GitRunResult, type GitRunSettings, type PathEdit, type WorkDirOwner } from './git-run.ts';
import { commitMessage, DEFAULT_MESSAGE_TEMPLATE } from './message.ts';
import type { ConfigDigest, WriteBackObservation, WriteBackRequest, WriteBackResult, WriteBackStatus, WorkloadRef } from './model.ts';
import type { SigningKey } from './signing.ts';
import { DEFAULT_SOURCE_OPTIONS, isRefusal, resolveWriteTarget, type SourceOptions, type WriteTarget } from './source.ts';

/** The engine's settings (from the controller's flags). */
export interface WriteBackSettings {
  readonly workDir: string;
  readonly authorName: string;
  readonly authorEmail: string;
  readonly messageTemplate: string;
  readonly batchWindowMs: number;
  readonly pushAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly commandTimeoutMs: number;
  readonly sourceOptions: SourceOptions;
}

/** Defaults matching the flags' defaults; `workDir` has none. */
export const WRITE_BACK_DEFAULTS: Omit<WriteBackSettings, 'workDir'> = Object.freeze({
  authorName: 'driftless',
  authorEmail: 'driftless@noreply.invalid',
  messageTemplate: DEFAULT_MESSAGE_TEMPLATE,
  batchWindowMs: 5_000,
  pushAttempts: 5,
  retryBaseMs: 500,
  retryMaxMs: 8_000,
  commandTimeoutMs: 60_000,
  sourceOptions: DEFAULT_SOURCE_OPTIONS,
});

/** What the engine needs from outside: time, and the credentials (read from Argo CD's Secrets by the caller). */
export interface WriteBackDeps {
  readonly clock: Clock;
  /** The credentials for a repository URL (see `selectCredentials`). */
  credentialsFor(repoURL: string, project: string): Promise<GitCredentials | CredentialsRefusal>;
  /** Argo CD's known hosts (`knownHostsOf`), for SSH. */
  knownHosts(): Promise<string | undefined>;
  /** The key commits are signed with (`--write-back-signing-secret`); absent or undefined = unsigned. */
  signingKey?(): Promise<SigningKey | undefined>;
  /** Told what each batch came to (the controller's metrics); never given a credential or a value. */
  readonly observe?: (observation: WriteBackObservation) => void;
  /** The git operation; replaced only by unit tests of the batching. */
  readonly run?: (job: GitJob, settings: GitRunSettings) => Promise<GitRunResult>;
  /** Whether a process runs (the work directories of dead ones are swept); default: `kill(pid, 0)`. */
  readonly processAlive?: (pid: number) => boolean;
}

/** What one cluster's restart path uses: its own submissions and their answers. */
export interface ClusterWriteBack {
  /** Writes the request's digests; resolves with the outcome (never rejects). */
  submit(request: WriteBackRequest): Promise<WriteBackResult>;
  /**
   * The latest submission naming this workload in its `workloads`: the restart path's answer. A workload has one
   * restart in flight, so this is the answer to its own submission, whatever else its Application submitted since.
   */
  statusOfWorkload(workload: WorkloadRef): WriteBackStatus | undefined;
}

/** One cluster of a hub (ADR 0026): its id, and the fence of its pipeline. */
export interface WriteBackCluster {
  /** The cluster's id (`clusterId` of its server URL): what its workloads are keyed by. */
  readonly id: string;
  /**
   * The pipeline's fence: once aborted, the cluster's submissions not yet run are dropped (resolved `stopped`,
   * never committed), a running one is aborted, and the answers of what was dropped are forgotten.
   */
  readonly fence: AbortSignal;
}

/** The interface the restart path uses (one cluster: the engine itself; a hub's clusters: `forCluster`). */
export interface WriteBack extends ClusterWriteBack {
  /** The latest submission of every Application seen, sorted by namespace and name. */
  status(): readonly WriteBackStatus[];
  /**
   * The latest submission of one Application (what `explain` shows; another workload's submission may be the
   * latest); `cluster`: the id its workloads were submitted under (`forCluster`), none for the implicit cluster.
   */
  statusOf(namespace: string, name: string, cluster?: string): WriteBackStatus | undefined;
  /** The engine as the pipeline of one cluster of a hub uses it (ADR 0026). */
  forCluster(cluster: WriteBackCluster): ClusterWriteBack;
  /** Stops: open batches resolve `failed` (`stopped`), a running git command is aborted. */
  close(): Promise<void>;
}

/** The cluster a submission is for: `''` and no fence for the implicit one (one cluster; the election's fence closes the engine). */
interface Scope {
  readonly id: string;
  readonly fence: AbortSignal | undefined;
}

const IMPLICIT: Scope = Object.freeze({ id: '', fence: undefined });

/** The `cluster` of a scope's records and metrics: none for the implicit cluster, so one-cluster series stay as they were. */
const clusterOf = (scope: Scope): { readonly cluster?: string } => (scope.id === '' ? {} : { cluster: scope.id });

interface Member {
  readonly scope: Scope;
  readonly target: WriteTarget;
  readonly request: WriteBackRequest;
  readonly submittedAt: number;
  readonly resolve: (result: WriteBackResult) => void;
}

interface Batch {
  readonly key: string;
  readonly repoKey: string;
  /** One cluster's members only: its fence aborts the batch without dropping another cluster's digests. */
  readonly scope: Scope;
  readonly target: WriteTarget;
  readonly members: Member[];
  timer: Timer | undefined;
}

/** Creates the engine. No module state: everything lives in the returned object. */
export function createWriteBack(settings: WriteBackSettings, deps: WriteBackDeps): WriteBack {
  const abort = new AbortController();
  /** Batches not yet started, by repository + branches. */
  const open = new Map<string, Batch>();
  /** Ready batches per repository, in order; the head runs when the repository is free. */
  const ready = new Map<string, Batch[]>();
  const busy = new Set<string>();
  const running = new Set<Promise<void>>();
  const statuses = new Map<string, WriteBackStatus>();
  /** By workload (`workloadKey`): one Application's workloads submit separately, and each must find its own answer. */
  const byWorkload = new Map<string, WriteBackStatus>();
  let closed = false;
  // A process killed mid-run (SIGKILL, OOM) left its clone and credential files in the work directory: swept at
  // the start, before this process runs git there. Its own directories carry its pid and a tag of this start.
  const owner: WorkDirOwner = { pid: process.pid, tag: randomBytes(4).toString('hex') };
  const swept = sweepWorkDir(settings.workDir, owner, deps.processAlive ?? processAlive).catch(() => []);
  // The sweep guards git's work directory, so it comes before the first real git run (a replaced run has none).
  const run =
    deps.run ??
    (async (job: GitJob, runSettings: GitRunSettings): Promise<GitRunResult> => {
      await swept;
      return runGitJob(job, runSettings);
    });

  const appKey = (cluster: string, namespace: string, name: string): string => `${cluster}\u0000${namespace}\u0000${name}`;
  /** Sets a status unless a later submission owns the key: an older batch finishing must not overwrite it. */
  const put = (map: Map<string, WriteBackStatus>, key: string, status: WriteBackStatus): void => {
    const current = map.get(key);
    if (current !== undefined && current.submittedAt > status.submittedAt) return;
    map.set(key, status);
  };
  const publish = (scope: Scope, status: WriteBackStatus, workloads: readonly WorkloadRef[]): void => {
    put(statuses, appKey(scope.id, status.application.namespace, status.application.name), status);
    for (const w of workloads) put(byWorkload, workloadKey(scope.id, w), status);
  };
  /** Forgets what a dropped member published: no answer stays `pending` for a submission that will never run. */
  const forget = (member: Member): void => {
    const mine = (map: Map<string, WriteBackStatus>, key: string): void => {
      if (map.get(key)?.configs === member.request.configs) map.delete(key);
    };
    mine(statuses, appKey(member.scope.id, member.target.application.namespace, member.target.application.name));
    for (const w of member.request.workloads) mine(byWorkload, workloadKey(member.scope.id, w));
  };
  /** A member of a cluster whose fence closed: resolved `stopped`, never committed, its answers forgotten. */
  const drop = (member: Member): void => {
    forget(member);
    member.resolve({ status: 'failed', error: { kind: 'stopped', message: 'the cluster was removed or is reconnecting' }, at: deps.clock.now() });
  };
  const record = (member: Member, state: WriteBackStatus['state'], branch: string, result: WriteBackResult | undefined): void => {
    publish(
      member.scope,
      Object.freeze({
        ...(member.scope.id === '' ? {} : { cluster: member.scope.id }),
        application: member.target.application,
        state,
        repo: redactUrl(member.target.repoURL),
        branch,
        configs: member.request.configs,
        submittedAt: member.submittedAt,
        result,
      }),
      member.request.workloads,
    );
  };
  const finish = (member: Member, branch: string, result: WriteBackResult): void => {
    if (member.scope.fence?.aborted === true) {
      drop(member);
      return;
    }
    record(member, result.status, branch, result);
    member.resolve(result);
  };

  const pump = (repoKey: string): void => {
    if (busy.has(repoKey) || closed) return;
    const queue = ready.get(repoKey);
    const batch = queue?.shift();
    if (batch === undefined) return;
    if (queue?.length === 0) ready.delete(repoKey);
    open.delete(batch.key);
    if (batch.scope.fence?.aborted === true) {
      for (const member of batch.members) drop(member);
      pump(repoKey);
      return;
    }
    busy.add(repoKey);
    const done = execute(batch)
      .catch((error: unknown) => {
        // Only the lookups before git can throw here (credentials, known hosts, signing key); git's own failures are results.
        const at = deps.clock.now();
        const why = error instanceof CredentialsReadError ? error.message : error instanceof Error ? error.name : 'error';
        const message = `write-back to ${redactUrl(batch.target.repoURL)}: reading the credentials failed (${why})`;
        deps.observe?.({ outcome: 'failed', kind: 'auth', ...clusterOf(batch.scope) });
        for (const member of batch.members) finish(member, batch.target.writeBranch ?? batch.target.baseBranch ?? '', { status: 'failed', error: { kind: 'auth', message }, at });
      })
      .finally(() => {
      busy.delete(repoKey);
      running.delete(done);
      pump(repoKey);
    });
    running.add(done);
  };

  const execute = async (batch: Batch): Promise<void> => {
    const branchShown = batch.target.writeBranch ?? batch.target.baseBranch ?? '';
    for (const member of batch.members) record(member, 'running', branchShown, undefined);
    const credentials = await deps.credentialsFor(batch.target.repoURL, batch.target.project);
    if (isCredentialsRefusal(credentials)) {
      const at = deps.clock.now();
      for (const member of batch.members) finish(member, branchShown, { status: 'refused', reason: credentials.refused, message: credentials.message, at });
      return;
    }
    const knownHosts = credentials.kind === 'ssh' ? await deps.knownHosts() : undefined;
    const edits = pathEdits(batch.members);
    const job: GitJob = {
      repoURL: batch.target.repoURL,
      baseBranch: batch.target.baseBranch,
      writeBranch: batch.target.writeBranch,
      edits,
      message: (changed) => commitMessage(settings.messageTemplate, subjectOf(batch.members, changed)),
    };
    let result: GitRunResult;
    try {
      result = await run(job, {
        workDir: settings.workDir,
        workPrefix: workDirPrefix(owner),
        authorName: settings.authorName,
        authorEmail: settings.authorEmail,
        pushAttempts: settings.pushAttempts,
        retryBaseMs: settings.retryBaseMs,
        retryMaxMs: settings.retryMaxMs,
        commandTimeoutMs: settings.commandTimeoutMs,
        clock: deps.clock,
        // The cluster's fence too: a removed cluster's commit is aborted, not pushed after its removal.
        signal: batch.scope.fence === undefined ? abort.signal : AbortSignal.any([abort.signal, batch.scope.fence]),
        credentials,
        knownHosts,
        signingKey: deps.signingKey === undefined ? undefined : await deps.signingKey(),
      });
    } catch (error) {
      const at = deps.clock.now();
      const failure =
        error instanceof WriteBackError
          ? error
          : new WriteBackError('git', redactUrl(batch.target.repoURL), 'run', `unexpected ${error instanceof Error ? error.name : 'failure'}`);
      const kind = abort.signal.aborted || batch.scope.fence?.aborted === true ? 'stopped' : failure.kind;
      deps.observe?.({ outcome: 'failed', kind, ...clusterOf(batch.scope) });
      for (const member of batch.members) finish(member, branchShown, { status: 'failed', error: { kind, message: failure.message }, at });
      return;
    }
    const at = deps.clock.now();
    const place = { repo: redactUrl(batch.target.repoURL), branch: result.branch };
    for (const failed of result.failed.values()) deps.observe?.({ outcome: 'failed', kind: failed.kind, ...clusterOf(batch.scope) });
    const latencies: number[] = [];
    for (const member of batch.members) {
      const failed = result.failed.get(member.target.path);
      if (failed !== undefined) {
        finish(member, result.branch, { status: 'failed', error: { kind: failed.kind, message: failed.message }, at });
        continue;
      }
      const changed = new Set((result.changed.get(member.target.path) ?? []).map(configKey));
      const mine = result.sha !== undefined && member.request.configs.some((c) => changed.has(configKey(c)));
      if (mine && member.request.changeSeenAt !== undefined) latencies.push(Math.max(0, at - member.request.changeSeenAt));
      finish(
        member,
        result.branch,
        mine
          ? { status: 'committed', sha: result.sha as string, attempts: result.attempts, at, ...place, path: member.target.path }
          : { status: 'unchanged', at, ...place, path: member.target.path },
      );
    }
    if (result.sha !== undefined) deps.observe?.({ outcome: 'committed', sha: result.sha, changeToCommitMs: latencies, ...clusterOf(batch.scope) });
  };

  const submitIn = (scope: Scope, request: WriteBackRequest): Promise<WriteBackResult> => {
    const now = deps.clock.now();
    if (scope.fence?.aborted === true) return Promise.resolve({ status: 'failed', error: { kind: 'stopped', message: 'the cluster was removed or is reconnecting' }, at: now });
    // A refusal is the Application's latest status too: the restart path and explain read it from there.
    const refuse = (result: WriteBackResult & { status: 'refused' }): Promise<WriteBackResult> => {
      const application = { namespace: request.application.metadata.namespace ?? '', name: request.application.metadata.name };
      const cluster = scope.id === '' ? {} : { cluster: scope.id };
      publish(scope, Object.freeze({ ...cluster, application, state: 'refused', repo: '', branch: '', configs: request.configs, submittedAt: now, result }), request.workloads);
      return Promise.resolve(result);
    };
    const target = resolveWriteTarget(request.application, settings.sourceOptions);
    if (isRefusal(target)) return refuse(Object.freeze({ status: 'refused', reason: target.refused, message: target.message, at: now }));
    const invalid = requestProblem(request.configs);
    if (invalid !== undefined) return refuse(Object.freeze({ status: 'refused', reason: 'invalid-request', message: invalid, at: now }));
    if (closed) return Promise.resolve({ status: 'failed', error: { kind: 'stopped', message: 'the write-back is stopped' }, at: now });
    const repoKey = normaliseGitUrl(target.repoURL);
    // The project too: project-scoped repository Secrets may give two projects different credentials for one repository.
    // The cluster too: one cluster's fence must be able to stop its batch without dropping another cluster's digests.
    const key = `${repoKey}\u0000${target.baseBranch ?? 'HEAD'}\u0000${target.writeBranch ?? ''}\u0000${target.project}\u0000${scope.id}`;
    return new Promise((resolve) => {
      const member: Member = { scope, target, request, submittedAt: now, resolve };
      let batch = open.get(key);
      if (batch === undefined) {
        const created: Batch = { key, repoKey, scope, target, members: [], timer: undefined };
        created.timer = deps.clock.setTimer(() => {
          created.timer = undefined;
          const queue = ready.get(repoKey) ?? [];
          queue.push(created);
          ready.set(repoKey, queue);
          pump(repoKey);
        }, settings.batchWindowMs);
        open.set(key, created);
        batch = created;
      }
      batch.members.push(member);
      record(member, 'pending', target.writeBranch ?? target.baseBranch ?? '', undefined);
    });
  };

  /** A cluster's fence closed: its batches not yet run are dropped (a running one sees the fence through its signal). */
  const dropCluster = (scope: Scope): void => {
    for (const [repoKey, queue] of ready) {
      const kept = queue.filter((batch) => batch.scope !== scope);
      if (kept.length === 0) ready.delete(repoKey);
      else ready.set(repoKey, kept);
    }
    for (const [key, batch] of open) {
      if (batch.scope !== scope) continue;
      batch.timer?.cancel();
      open.delete(key);
      for (const member of batch.members) drop(member);
    }
  };

  return {
    submit: (request) => submitIn(IMPLICIT, request),
    status(): readonly WriteBackStatus[] {
      return [...statuses.values()].sort((a, b) => compare(a.application.namespace, b.application.namespace) || compare(a.application.name, b.application.name));
    },
    statusOf(namespace: string, name: string, cluster = ''): WriteBackStatus | undefined {
      return statuses.get(appKey(cluster, namespace, name));
    },
    statusOfWorkload(workload: WorkloadRef): WriteBackStatus | undefined {
      return byWorkload.get(workloadKey(IMPLICIT.id, workload));
    },
    forCluster(cluster: WriteBackCluster): ClusterWriteBack {
      const scope: Scope = Object.freeze({ id: cluster.id, fence: cluster.fence });
      if (cluster.fence.aborted) dropCluster(scope);
      else cluster.fence.addEventListener('abort', () => dropCluster(scope), { once: true });
      return {
        submit: (request) => submitIn(scope, request),
        statusOfWorkload: (workload) => byWorkload.get(workloadKey(scope.id, workload)),
      };
    },
    async close(): Promise<void> {
      closed = true;
      abort.abort();
      const at = deps.clock.now();
      for (const batch of open.values()) {
        batch.timer?.cancel();
        // A batch already started is not in `open`; its run sees the abort.
        for (const member of batch.members) finish(member, member.target.writeBranch ?? member.target.baseBranch ?? '', { status: 'failed', error: { kind: 'stopped', message: 'the write-back stopped before this submission ran' }, at });
      }
      open.clear();
      ready.clear();
      await Promise.allSettled(running);
    },
  };
}

/**
 * What is wrong with the configs of a request, checked by the file's own reader (so nothing the plugin
 * would refuse is ever committed), or undefined. The message names the field, never the value.
 */
function requestProblem(configs: readonly ConfigDigest[]): string | undefined {
  const unique = new Map(configs.map((c) => [configKey(c), { kind: c.kind, namespace: c.namespace, name: c.name, digest: c.digest }]));
  try {
    parseOutOfBandFile(formatOutOfBandFile([...unique.values()]), 'the submitted configs');
    return undefined;
  } catch (error) {
    return error instanceof OutOfBandFileError ? `${error.problem} (in the submitted configs)` : 'the submitted configs are not valid';
  }
}

/** `kill(pid, 0)`: no such process → dead; any other answer (EPERM: another user's) → alive. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function configKey(c: ConfigDigest): string {
  return `${c.namespace}\u0000${c.kind}\u0000${c.name}`;
}

/** The configs per directory, in submission order (a later digest of the same config wins). */
function pathEdits(members: readonly Member[]): PathEdit[] {
  const byPath = new Map<string, ConfigDigest[]>();
  for (const m of members) {
    const list = byPath.get(m.target.path) ?? [];
    list.push(...m.request.configs);
    byPath.set(m.target.path, list);
  }
  return [...byPath].map(([path, configs]) => ({ path, configs }));
}

/** What the message names: the Applications, configs and workloads whose digests changed. */
function subjectOf(members: readonly Member[], changed: ReadonlyMap<string, readonly ConfigDigest[]>) {
  const applications: { namespace: string; name: string }[] = [];
  const configs: ConfigDigest[] = [];
  const workloads: WorkloadRef[] = [];
  for (const m of members) {
    const keys = new Set((changed.get(m.target.path) ?? []).map(configKey));
    const mine = m.request.configs.filter((c) => keys.has(configKey(c)));
    if (mine.length === 0) continue;
    applications.push(m.target.application);
    configs.push(...mine);
    workloads.push(...m.request.workloads);
  }
  return { applications, configs, workloads };
}

function workloadKey(cluster: string, w: WorkloadRef): string {
  return `${cluster}\u0000${w.namespace}\u0000${w.kind}\u0000${w.name}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
