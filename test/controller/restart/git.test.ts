/**
 * The git strategy's decisions on the fake clock, fed by the real engine's
 * status (a scripted git run: the real one is tested in git.test.ts): submit
 * once per change, wait while the engine works, record the commit, wait for
 * Argo CD's sync and the roll, done; a refusal or a missing key or
 * Application falls back at once; failures are retried until
 * --write-back-fallback-after, then the fallback; a controller restarted
 * with a pending record submits again. And the record's annotation format.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../../support/fake-clock.ts';
import { createWriteBack, WRITE_BACK_DEFAULTS, type WriteBack } from '../../../controller/writeback/engine.ts';
import { WriteBackError } from '../../../controller/writeback/errors.ts';
import type { GitJob, GitRunResult } from '../../../controller/writeback/git-run.ts';
import { gitStep, rolledAway, type GitStepInput } from '../../../controller/restart/git.ts';
import type { ConfigDigest, WriteBackStatus } from '../../../controller/writeback/model.ts';
import { formatWriteBackRecord, parseWriteBackRecord, type WriteBackRecord } from '../../../controller/writeback/record.ts';
import { workload as summary } from '../support/summaries.ts';
import { waitFor } from '../../support/wait.ts';

const T = Date.parse('2026-12-02T10:00:00Z');
const DB: ConfigDigest = { kind: 'Secret', namespace: 'prod', name: 'db', digest: `v1:${'a'.repeat(64)}` };
const APP = { metadata: { name: 'web', namespace: 'argocd' }, spec: { source: { repoURL: 'https://git.example/shop.git', path: 'apps/web', targetRevision: 'main', plugin: { name: 'driftless-v1' } } } };
const ROLLED = { observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2, currentRevision: undefined, updateRevision: undefined, desiredNumberScheduled: undefined, updatedNumberScheduled: undefined, numberAvailable: undefined, restartedAt: undefined };
const WEB = { kind: 'Deployment', namespace: 'prod', name: 'web' };
const WORKLOAD = { ...summary('Deployment', 'web'), configHash: 'v1:old', generation: 2, replicas: 2, status: ROLLED };

/** A git run the test finishes: committed (a SHA), or a failure. */
function scripted() {
  const jobs: { job: GitJob; finish: (outcome: { sha?: string } | WriteBackError) => void }[] = [];
  const run = (job: GitJob): Promise<GitRunResult> => new Promise((resolve, reject) => {
    jobs.push({
      job,
      finish: (outcome) => {
        if (outcome instanceof WriteBackError) return reject(outcome);
        const changed = new Map(outcome.sha === undefined ? [] : job.edits.map((e) => [e.path, e.configs] as const));
        resolve({ branch: 'main', sha: outcome.sha, attempts: 1, changed, failed: new Map() });
      },
    });
  });
  return { jobs, run };
}

function setup() {
  const clock = new FakeClock(T);
  const git = scripted();
  const wb = createWriteBack({ ...WRITE_BACK_DEFAULTS, workDir: '/nonexistent', batchWindowMs: 1_000 }, { clock, run: git.run, credentialsFor: async () => ({ kind: 'none', from: 'test' }), knownHosts: async () => undefined });
  return { clock, git, wb };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

function input(wb: WriteBack, clock: FakeClock, record: WriteBackRecord | undefined, overrides: Partial<GitStepInput> = {}): GitStepInput {
  return {
    restartAt: T,
    changed: [DB],
    record,
    status: wb.statusOfWorkload(WEB),
    tracked: true,
    keyed: true,
    workload: WORKLOAD,
    now: clock.now(),
    fallbackAfterMs: 600_000,
    fallback: 'restart',
    retryMs: 30_000,
    ...overrides,
  };
}

describe('gitStep', () => {
  it('one change: submit, wait, record the commit, wait for the sync and the roll, done', async () => {
    const { clock, git, wb } = setup();
    const first = gitStep(input(wb, clock, undefined));
    assert.equal(first.kind, 'submit');
    assert.ok(first.kind === 'submit');
    assert.deepEqual<WriteBackRecord>(first.record, { restartAt: T, state: 'pending', configs: { 'Secret/db': DB.digest }, templateHash: 'v1:old', since: T, at: T });
    const submitted = wb.submit({ application: APP, configs: first.configs, workloads: [WEB], changeSeenAt: T });
    let record = first.record;
    assert.deepEqual(gitStep(input(wb, clock, record)).kind, 'wait', 'pending in the batch window: no second submission');
    await clock.advanceAsync(1_000);
    await settle();
    assert.match((gitStep(input(wb, clock, record)) as { reason: string }).reason, /^the write-back is running \(https:\/\/git\.example\/shop\.git main\)$/);
    git.jobs[0]?.finish({ sha: '0123456789abcdef0123' });
    await submitted;
    const recorded = gitStep(input(wb, clock, record));
    assert.ok(recorded.kind === 'write-answer');
    record = recorded.record;
    assert.equal(record.state, 'committed');
    assert.equal(record.sha, '0123456789abcdef0123');
    assert.equal(record.branch, 'main');
    assert.deepEqual(gitStep(input(wb, clock, record)), { kind: 'wait', cause: 'write-back-sync', reason: 'commit 0123456789ab on main: waiting for Argo CD to sync it and the Deployment to roll' });
    const midRoll = { ...WORKLOAD, configHash: 'v1:new', status: { ...ROLLED, updatedReplicas: 1, replicas: 3 } };
    assert.equal(gitStep(input(wb, clock, record, { workload: midRoll })).kind, 'wait', 'synced, still rolling');
    assert.deepEqual(gitStep(input(wb, clock, record, { workload: { ...WORKLOAD, configHash: 'v1:new' } })), { kind: 'done', record: { ...record, state: 'synced', at: clock.now() } });
    await wb.close();
  });

  it('no hash key, no Application: nothing is written, the fallback at once, announced once', () => {
    const { clock, wb } = setup();
    const unkeyed = gitStep(input(wb, clock, undefined, { keyed: false }));
    assert.ok(unkeyed.kind === 'fall-back');
    assert.equal(unkeyed.cause, 'no-hash-key');
    assert.equal(unkeyed.to, 'restart');
    assert.equal(unkeyed.announce, true);
    assert.match(unkeyed.reason, /no hash key/);
    assert.equal(unkeyed.record.state, 'fallback');
    const again = gitStep(input(wb, clock, unkeyed.record, { keyed: false }));
    assert.ok(again.kind === 'fall-back');
    assert.equal(again.announce, false, 'the record says so already: no second Event');
    const untracked = gitStep(input(wb, clock, undefined, { tracked: false, fallback: 'none' }));
    assert.ok(untracked.kind === 'fall-back');
    assert.equal(untracked.cause, 'untracked');
    assert.equal(untracked.to, 'none');
  });

  it('a refused source falls back at once with the engine\'s reason', async () => {
    const { clock, wb } = setup();
    const first = gitStep(input(wb, clock, undefined));
    assert.ok(first.kind === 'submit');
    await wb.submit({ application: { metadata: APP.metadata, spec: { source: { repoURL: 'https://charts.example', chart: 'web', targetRevision: '1.0.0' } } }, configs: first.configs, workloads: [WEB] });
    const step = gitStep(input(wb, clock, first.record));
    assert.ok(step.kind === 'fall-back');
    assert.equal(step.cause, 'refused');
    assert.match(step.reason, /^the write-back was refused: /);
    await wb.close();
  });

  it('a failing push is recorded, retried every retryMs, and falls back at --write-back-fallback-after', async () => {
    const { clock, git, wb } = setup();
    const first = gitStep(input(wb, clock, undefined));
    assert.ok(first.kind === 'submit');
    let record = first.record;
    let submitted = wb.submit({ application: APP, configs: first.configs, workloads: [WEB] });
    await clock.advanceAsync(1_000);
    await settle();
    git.jobs[0]?.finish(new WriteBackError('rejected', 'https://git.example/shop.git', 'push', 'protected branch'));
    await submitted;
    const failed = gitStep(input(wb, clock, record));
    assert.ok(failed.kind === 'write-answer');
    record = failed.record;
    assert.equal(record.state, 'failed');
    assert.equal(record.error, 'rejected');
    const waiting = gitStep(input(wb, clock, record));
    assert.deepEqual(waiting, { kind: 'wait', cause: 'write-back', reason: 'the write-back failed (rejected); trying again', until: record.at + 30_000 });
    await clock.advanceAsync(30_000);
    const retry = gitStep(input(wb, clock, record));
    assert.ok(retry.kind === 'submit');
    assert.equal(retry.record.since, T, 'the first submission still counts for the fallback');
    submitted = wb.submit({ application: APP, configs: retry.configs, workloads: [WEB] });
    await clock.advanceAsync(1_000);
    await settle();
    git.jobs[1]?.finish(new WriteBackError('auth', 'https://git.example/shop.git', 'push', 'authentication failed'));
    await submitted;
    const second = gitStep(input(wb, clock, record));
    assert.ok(second.kind === 'write-answer');
    record = second.record;
    assert.equal(record.error, 'auth');
    await clock.advanceAsync(600_000 - (clock.now() - T));
    const gaveUp = gitStep(input(wb, clock, record));
    assert.ok(gaveUp.kind === 'fall-back');
    assert.equal(gaveUp.cause, 'timeout');
    assert.match(gaveUp.reason, /^the write-back kept failing for 600s \(--write-back-fallback-after\): /);
    assert.equal(gaveUp.announce, true);
    await wb.close();
  });

  it('a --write-back-fallback-after shorter than retryMs still retries: every quarter of it', () => {
    const { clock, wb } = setup();
    const failed: WriteBackRecord = { restartAt: T, state: 'failed', configs: { 'Secret/db': DB.digest }, templateHash: 'v1:old', since: T, at: T + 1_000, error: 'rejected' };
    const short = { fallbackAfterMs: 10_000, now: T + 2_000 };
    assert.deepEqual(gitStep(input(wb, clock, failed, short)), { kind: 'wait', cause: 'write-back', reason: 'the write-back failed (rejected); trying again', until: T + 3_500 });
    assert.equal(gitStep(input(wb, clock, failed, { ...short, now: T + 3_500 })).kind, 'submit');
  });

  it('a controller restarted with a pending record submits again; one restarted after the commit does not', () => {
    const { clock, wb } = setup();
    const pending: WriteBackRecord = { restartAt: T, state: 'pending', configs: { 'Secret/db': DB.digest }, templateHash: 'v1:old', since: T, at: T };
    const again = gitStep(input(wb, clock, pending));
    assert.ok(again.kind === 'submit');
    assert.equal(again.record, pending);
    const committed: WriteBackRecord = { ...pending, state: 'committed', sha: 'abc', branch: 'main', repo: 'https://git.example/shop.git' };
    assert.equal(gitStep(input(wb, clock, committed)).kind, 'wait');
  });

  it('a pending record the engine never answers falls back at --write-back-fallback-after, as a failing one does', () => {
    const { clock, wb } = setup();
    const pending: WriteBackRecord = { restartAt: T, state: 'pending', configs: { 'Secret/db': DB.digest }, templateHash: 'v1:old', since: T, at: T };
    // The engine's status for the workload is of another submission (other configs): no answer to this one.
    const other: WriteBackStatus = { application: { namespace: 'argocd', name: 'web' }, state: 'pending', repo: 'https://git.example/shop.git', branch: 'main', configs: [{ ...DB, name: 'cache' }], submittedAt: T + 1, result: undefined };
    assert.equal(gitStep(input(wb, clock, pending, { status: other, now: T + 599_999 })).kind, 'submit', 'before the deadline: submitted again');
    const gaveUp = gitStep(input(wb, clock, pending, { status: other, now: T + 600_000 }));
    assert.ok(gaveUp.kind === 'fall-back');
    assert.equal(gaveUp.cause, 'timeout');
    assert.equal(gaveUp.announce, true);
    assert.match(gaveUp.reason, /^the write-back got no answer for 600s \(--write-back-fallback-after\)$/);
    // A controller restarted past the deadline (the engine knows nothing of the workload) asks Git once more:
    // the push may have landed before it died, and falling back then would be a second rollout.
    assert.equal(gitStep(input(wb, clock, pending, { status: undefined, now: T + 3_600_000 })).kind, 'submit');
  });

  it('two workloads of one Application: each step reads the answer to its own submission', async () => {
    const { clock, git, wb } = setup();
    const API = { kind: 'Deployment', namespace: 'prod', name: 'api' };
    const CACHE: ConfigDigest = { ...DB, name: 'cache' };
    const web = gitStep(input(wb, clock, undefined));
    const api = gitStep(input(wb, clock, undefined, { changed: [CACHE], status: wb.statusOfWorkload(API) }));
    assert.ok(web.kind === 'submit' && api.kind === 'submit');
    const submitted = [wb.submit({ application: APP, configs: web.configs, workloads: [WEB] }), wb.submit({ application: APP, configs: api.configs, workloads: [API] })];
    assert.equal(wb.statusOf('argocd', 'web')?.configs[0]?.name, 'cache', 'the Application\'s latest is api\'s');
    assert.equal(gitStep(input(wb, clock, web.record)).kind, 'wait', 'web waits for its own submission');
    assert.equal(gitStep(input(wb, clock, api.record, { changed: [CACHE], status: wb.statusOfWorkload(API) })).kind, 'wait');
    await clock.advanceAsync(1_000);
    // The engine's first run waits for the sweep of its work directory (real file-system I/O): polled, not ticked.
    (await waitFor('the git run', () => git.jobs[0])).finish({ sha: 'abc' });
    assert.equal(git.jobs.length, 1, 'one batch');
    await Promise.all(submitted);
    assert.equal((gitStep(input(wb, clock, web.record)) as { record?: WriteBackRecord }).record?.state, 'committed');
    assert.equal((gitStep(input(wb, clock, api.record, { changed: [CACHE], status: wb.statusOfWorkload(API) })) as { record?: WriteBackRecord }).record?.state, 'committed');
    await wb.close();
  });

  it('a commit Argo CD does not sync within --write-back-fallback-after: done unconfirmed, nothing in the cluster; a sync in time waits for the roll', () => {
    const { clock, wb } = setup();
    const committed: WriteBackRecord = { restartAt: T, state: 'committed', configs: { 'Secret/db': DB.digest }, templateHash: 'v1:old', since: T, at: T + 2_000, sha: '0123456789abcdef', branch: 'drift', repo: 'https://git.example/shop.git' };
    assert.equal(gitStep(input(wb, clock, committed, { now: T + 601_999 })).kind, 'wait');
    const expired = gitStep(input(wb, clock, committed, { now: T + 602_000 }));
    assert.ok(expired.kind === 'done');
    assert.match(expired.unconfirmed ?? '', /^commit 0123456789ab on drift: Argo CD synced no new render of the Deployment within 600s \(--write-back-fallback-after\); no longer waiting/);
    const rolling = { ...WORKLOAD, configHash: 'v1:new', status: { ...ROLLED, updatedReplicas: 1 } };
    assert.equal(gitStep(input(wb, clock, committed, { now: T + 3_600_000, workload: rolling })).kind, 'wait', 'synced: the roll is waited for');
  });

  it('synced and rolled: done, recorded once as synced; a revert or an Argo CD rollback of the render later re-opens nothing', () => {
    const { clock, wb } = setup();
    const committed: WriteBackRecord = { restartAt: T, state: 'committed', configs: { 'Secret/db': DB.digest }, templateHash: 'v1:old', since: T, at: T + 2_000, sha: '0123456789abcdef', branch: 'main', repo: 'https://git.example/shop.git' };
    const rolled = { ...WORKLOAD, configHash: 'v1:new' };
    const synced: WriteBackRecord = { ...committed, state: 'synced', at: T + 60_000 };
    assert.deepEqual(gitStep(input(wb, clock, committed, { now: T + 60_000, workload: rolled })), { kind: 'done', record: synced }, 'the first look at the roll records it');
    assert.deepEqual(gitStep(input(wb, clock, synced, { now: T + 61_000, workload: rolled })), { kind: 'done' }, 'recorded already: nothing more to write');
    // A person reverts the commit (or `argocd app rollback` syncs the revision before it): the template's hash is the
    // one at submission again, rolled. Before, past the sync-wait bound, this read as a commit never synced.
    const reverted = { ...WORKLOAD, configHash: 'v1:old', generation: 3, status: { ...ROLLED, observedGeneration: 3 } };
    assert.deepEqual(gitStep(input(wb, clock, synced, { now: T + 1_000, workload: reverted })), { kind: 'done' });
    assert.deepEqual(gitStep(input(wb, clock, synced, { now: T + 3_600_000, workload: reverted })), { kind: 'done' }, 'no RestartSyncWaitExpired past the bound');
    const rollingBack = { ...reverted, status: { ...reverted.status, updatedReplicas: 1, replicas: 3 } };
    assert.deepEqual(gitStep(input(wb, clock, synced, { now: T + 3_600_000, workload: rollingBack })), { kind: 'done' }, 'the revert\'s own roll is not waited for');
    // Nor does an Application or the key going away afterwards turn a finished restart into a fallback.
    assert.deepEqual(gitStep(input(wb, clock, synced, { now: T + 3_600_000, workload: reverted, tracked: false, keyed: false })), { kind: 'done' });
  });

  it('a record of an earlier T is superseded: the new change is submitted', () => {
    const { clock, wb } = setup();
    const old: WriteBackRecord = { restartAt: T - 60_000, state: 'committed', configs: { 'Secret/db': 'v1:x' }, templateHash: 'v1:older', since: T - 60_000, at: T - 59_000, sha: 'abc' };
    assert.equal(gitStep(input(wb, clock, old)).kind, 'submit');
  });
});

describe('rolledAway', () => {
  it('needs a new config-hash and every replica updated, by kind', () => {
    assert.equal(rolledAway(WORKLOAD, 'v1:old'), false, 'the same render');
    assert.equal(rolledAway({ ...WORKLOAD, configHash: 'v1:new' }, 'v1:old'), true);
    assert.equal(rolledAway({ ...WORKLOAD, configHash: 'v1:new', generation: 3 }, 'v1:old'), false, 'generation not observed yet');
    const ds = { ...WORKLOAD, kind: 'DaemonSet' as const, configHash: 'v1:new', status: { ...ROLLED, desiredNumberScheduled: 3, updatedNumberScheduled: 2 } };
    assert.equal(rolledAway(ds, 'v1:old'), false);
    assert.equal(rolledAway({ ...ds, status: { ...ds.status, updatedNumberScheduled: 3 } }, 'v1:old'), true);
    const sts = { ...WORKLOAD, kind: 'StatefulSet' as const, configHash: 'v1:new', status: { ...ROLLED, currentRevision: 'web-1', updateRevision: 'web-2' } };
    assert.equal(rolledAway(sts, 'v1:old'), false);
  });
});

describe('the write-back record annotation', () => {
  it('round-trips as canonical JSON with RFC 3339 times, and anything else reads as no record', () => {
    const record: WriteBackRecord = { restartAt: T, state: 'committed', configs: { 'Secret/db': DB.digest }, templateHash: 'v1:old', since: T, at: T + 1_500, sha: 'abc', branch: 'main', repo: 'https://git.example/shop.git' };
    const text = formatWriteBackRecord(record);
    assert.equal(text, `{"at":"2026-12-02T10:00:01.500Z","branch":"main","configs":{"Secret/db":"${DB.digest}"},"repo":"https://git.example/shop.git","restartAt":"2026-12-02T10:00:00.000Z","sha":"abc","since":"2026-12-02T10:00:00.000Z","state":"committed","templateHash":"v1:old"}`);
    assert.deepEqual(parseWriteBackRecord(text), record);
    assert.deepEqual(parseWriteBackRecord(text.replace('"committed"', '"synced"')), { ...record, state: 'synced' });
    for (const bad of [undefined, '', '[]', '{"state":"committed"}', text.replace('"committed"', '"done"'), text.replace('"2026-12-02T10:00:00.000Z"', '"yesterday"')]) {
      assert.equal(parseWriteBackRecord(bad), undefined, String(bad));
    }
  });
});
