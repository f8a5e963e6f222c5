/**
 * Batching and per-repository serialisation of the write-back, on the fake
 * clock with a scripted git run (the real git run is tested in git.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { FakeClock } from '../../support/fake-clock.ts';
import { createWriteBack, WRITE_BACK_DEFAULTS } from '../../../controller/writeback/engine.ts';
import { WriteBackError } from '../../../controller/writeback/errors.ts';
import { createWriteBackMetrics } from '../../../controller/writeback/metrics.ts';
import type { GitJob, GitRunResult, GitRunSettings } from '../../../controller/writeback/git-run.ts';
import type { ConfigDigest, WriteBackResult } from '../../../controller/writeback/model.ts';
import type { ApplicationLike } from '../../../controller/writeback/source.ts';
import { LOCAL_WAIT, waitFor } from '../../support/wait.ts';

const digest = (n: number): string => `v1:${n.toString(16).padStart(64, '0')}`;
const config = (name: string, n: number): ConfigDigest => ({ kind: 'Secret', namespace: 'prod', name, digest: digest(n) });
const app = (name: string, repoURL: string, path: string, branch = 'main'): ApplicationLike => ({
  metadata: { name, namespace: 'argocd' },
  spec: { source: { repoURL, path, targetRevision: branch, plugin: { name: 'driftless-v1' } } },
});

/** A scripted git: every job waits until the test finishes it; the file state per repo+path is kept to answer "unchanged". */
function scriptedGit() {
  const jobs: { job: GitJob; signal: AbortSignal; finish: (outcome?: WriteBackError) => void }[] = [];
  const files = new Map<string, Map<string, string>>();
  let commits = 0;
  const run = (job: GitJob, settings: GitRunSettings): Promise<GitRunResult> =>
    new Promise((resolve, reject) => {
      jobs.push({
        job,
        signal: settings.signal,
        finish: (failure) => {
          if (failure !== undefined) {
            reject(failure);
            return;
          }
          const changed = new Map<string, ConfigDigest[]>();
          for (const edit of job.edits) {
            const key = `${job.repoURL} ${edit.path}`;
            const held = files.get(key) ?? new Map<string, string>();
            for (const c of edit.configs) {
              if (held.get(c.name) === c.digest) continue;
              held.set(c.name, c.digest);
              changed.set(edit.path, [...(changed.get(edit.path) ?? []), c]);
            }
            files.set(key, held);
          }
          const sha = changed.size === 0 ? undefined : `sha${++commits}`;
          if (sha !== undefined) job.message(changed);
          resolve({ branch: job.writeBranch ?? job.baseBranch ?? 'default', sha, attempts: 1, changed, failed: new Map() });
        },
      });
    });
  return { jobs, run };
}

function setup(windowMs = 5_000) {
  const clock = new FakeClock(Date.parse('2026-12-02T10:00:00Z'));
  const git = scriptedGit();
  const wb = createWriteBack(
    { ...WRITE_BACK_DEFAULTS, workDir: '/nonexistent', batchWindowMs: windowMs },
    { clock, run: git.run, credentialsFor: async () => ({ kind: 'none', from: 'test' }), knownHosts: async () => undefined },
  );
  return { clock, git, wb };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * The engine's first git run waits for the sweep of its work directory (real file-system I/O, which a loaded
 * machine may not finish within a few ticks): polled, not ticked. Later runs need no I/O before them.
 */
const firstRun = (git: ReturnType<typeof scriptedGit>) => waitFor('the first git run (after the sweep of the work directory)', () => git.jobs[0], LOCAL_WAIT);

describe('write-back batching and serialisation', () => {
  it('submissions for one repository and branch within the window become one job; nothing runs before the window ends', async () => {
    const { clock, git, wb } = setup();
    const a = wb.submit({ application: app('a', 'https://h/mono.git', 'apps/a'), configs: [config('s1', 1)], workloads: [] });
    await clock.advanceAsync(4_999);
    const b = wb.submit({ application: app('b', 'https://h/mono.git', 'apps/b'), configs: [config('s2', 2)], workloads: [] });
    assert.equal(git.jobs.length, 0);
    assert.equal(wb.statusOf('argocd', 'a')?.state, 'pending');
    await clock.advanceAsync(1);
    await firstRun(git);
    assert.equal(git.jobs.length, 1);
    assert.deepEqual(git.jobs[0]?.job.edits.map((e) => e.path), ['apps/a', 'apps/b']);
    assert.equal(wb.statusOf('argocd', 'b')?.state, 'running');
    git.jobs[0]?.finish();
    const [ra, rb] = await Promise.all([a, b]);
    assert.equal(ra.status, 'committed');
    assert.equal(ra.status === 'committed' && rb.status === 'committed' && ra.sha === rb.sha, true);
    assert.equal(wb.statusOf('argocd', 'a')?.state, 'committed');
  });

  it('two workloads of one Application: the Application shows the later submission, each workload its own; an older batch never overwrites a newer one', async () => {
    const { clock, git, wb } = setup(1_000);
    const web = { kind: 'StatefulSet', namespace: 'prod', name: 'web' };
    const api = { kind: 'StatefulSet', namespace: 'prod', name: 'api' };
    const shop = app('shop', 'https://h/mono.git', 'apps/shop');
    const first = wb.submit({ application: shop, configs: [config('db', 1)], workloads: [web] });
    const second = wb.submit({ application: shop, configs: [config('cache', 2)], workloads: [api] });
    assert.equal(wb.statusOf('argocd', 'shop')?.configs[0]?.name, 'cache', 'the Application: the later submission');
    assert.equal(wb.statusOfWorkload(web)?.configs[0]?.name, 'db');
    assert.equal(wb.statusOfWorkload(api)?.configs[0]?.name, 'cache');
    assert.equal(wb.statusOfWorkload({ ...web, name: 'other' }), undefined);
    await clock.advanceAsync(1_000);
    // The engine's first run waits for the sweep of its work directory (real file-system I/O): polled, not ticked.
    const running = await waitFor('the first git run', () => git.jobs[0]);
    // web submits again while its first batch runs (a retry): the running batch finishing must not overwrite it.
    const again = wb.submit({ application: shop, configs: [config('db', 3)], workloads: [web] });
    running.finish();
    await Promise.all([first, second]);
    assert.equal(wb.statusOfWorkload(api)?.state, 'committed');
    assert.equal(wb.statusOfWorkload(web)?.state, 'pending', 'the newer submission owns the status');
    assert.equal(wb.statusOfWorkload(web)?.configs[0]?.digest, digest(3));
    await clock.advanceAsync(1_000);
    (await waitFor('the second git run', () => git.jobs[1])).finish();
    await again;
    assert.equal(wb.statusOfWorkload(web)?.state, 'committed');
    await wb.close();
  });

  it('a submission after the window opens a new batch; one repository runs one job at a time, another repository does not wait', async () => {
    const { clock, git, wb } = setup(1_000);
    const first = wb.submit({ application: app('a', 'https://h/mono.git', 'apps/a'), configs: [config('s1', 1)], workloads: [] });
    await clock.advanceAsync(1_000);
    await firstRun(git);
    assert.equal(git.jobs.length, 1);
    // The same repository on another branch, and another repository, while the first job runs.
    const second = wb.submit({ application: app('b', 'https://h/mono.git', 'apps/b', 'release'), configs: [config('s2', 2)], workloads: [] });
    const other = wb.submit({ application: app('c', 'https://h/other.git', 'apps/c'), configs: [config('s3', 3)], workloads: [] });
    await clock.advanceAsync(1_000);
    await settle();
    assert.deepEqual(git.jobs.map((j) => j.job.repoURL), ['https://h/mono.git', 'https://h/other.git']);
    // Still waiting for the repository: a late submission for that branch joins the waiting batch.
    const late = wb.submit({ application: app('d', 'https://h/mono.git', 'apps/d', 'release'), configs: [config('s4', 4)], workloads: [] });
    await clock.advanceAsync(5_000);
    await settle();
    assert.equal(git.jobs.length, 2);
    git.jobs[0]?.finish();
    await first;
    await settle();
    assert.equal(git.jobs.length, 3);
    assert.deepEqual(git.jobs[2]?.job.edits.map((e) => e.path), ['apps/b', 'apps/d']);
    git.jobs[1]?.finish();
    git.jobs[2]?.finish();
    const results = await Promise.all([second, other, late]);
    assert.deepEqual(results.map((r) => r.status), ['committed', 'committed', 'committed']);
  });

  it('a submission whose digest the file already holds is unchanged; in a mixed batch only the changed one is committed', async () => {
    const { clock, git, wb } = setup(0);
    const one = wb.submit({ application: app('a', 'https://h/r.git', 'apps/a'), configs: [config('s1', 1)], workloads: [] });
    await clock.advanceAsync(0);
    (await firstRun(git)).finish();
    assert.equal((await one).status, 'committed');
    const same = wb.submit({ application: app('a', 'https://h/r.git', 'apps/a'), configs: [config('s1', 1)], workloads: [] });
    const fresh = wb.submit({ application: app('b', 'https://h/r.git', 'apps/b'), configs: [config('s2', 2)], workloads: [] });
    await clock.advanceAsync(0);
    await settle();
    git.jobs[1]?.finish();
    const [rs, rf] = await Promise.all([same, fresh]);
    assert.equal(rs.status, 'unchanged');
    assert.equal(rf.status, 'committed');
  });

  it('a failed job fails every submission of its batch with the typed error; a refused Application never reaches git', async () => {
    const { clock, git, wb } = setup(10);
    const a = wb.submit({ application: app('a', 'https://h/r.git', 'apps/a'), configs: [config('s1', 1)], workloads: [] });
    const refused = await wb.submit({
      application: { metadata: { name: 'helm', namespace: 'argocd' }, spec: { source: { repoURL: 'https://charts', chart: 'redis' } } },
      configs: [config('s1', 1)],
      workloads: [],
    });
    assert.equal(refused.status === 'refused' && refused.reason, 'not-git');
    await clock.advanceAsync(10);
    (await firstRun(git)).finish(new WriteBackError('rejected', 'https://h/r.git', 'push', 'protected branch'));
    const result: WriteBackResult = await a;
    assert.equal(result.status === 'failed' && result.error.kind, 'rejected');
    assert.equal(wb.statusOf('argocd', 'a')?.state, 'failed');
    assert.equal(git.jobs.length, 1);
  });

  it('refuses a request the file could not hold (bad digest, kind or name), naming the field and not the value', async () => {
    const { git, wb } = setup(0);
    const bad = await wb.submit({ application: app('a', 'https://h/r.git', 'apps/a'), configs: [{ kind: 'Secret', namespace: 'prod', name: 'db', digest: 'v1:SECRETISH' }], workloads: [] });
    assert.equal(bad.status === 'refused' && bad.reason, 'invalid-request');
    assert.match(bad.status === 'refused' ? bad.message : '', /digest must be/);
    assert.ok(!JSON.stringify(bad).includes('SECRETISH'));
    const name = await wb.submit({ application: app('a', 'https://h/r.git', 'apps/a'), configs: [{ kind: 'Secret', namespace: 'prod', name: 'Not_A_Name', digest: digest(1) }], workloads: [] });
    assert.equal(name.status === 'refused' && name.reason, 'invalid-request');
    assert.equal(git.jobs.length, 0);
  });

  it('close resolves submissions still in their window as stopped', async () => {
    const { git, wb } = setup();
    const a = wb.submit({ application: app('a', 'https://h/r.git', 'apps/a'), configs: [config('s1', 1)], workloads: [] });
    await wb.close();
    const result = await a;
    assert.equal(result.status === 'failed' && result.error.kind, 'stopped');
    assert.equal(git.jobs.length, 0);
  });
});

describe('write-back per cluster (hub mode, ADR 0026)', () => {
  const web = { kind: 'Deployment', namespace: 'prod', name: 'web' };

  it('the same workload in two clusters: separate answers and separate commits; the implicit cluster sees neither', async () => {
    const { clock, git, wb } = setup(1_000);
    const a = wb.forCluster({ id: 'aaa', fence: new AbortController().signal });
    const b = wb.forCluster({ id: 'bbb', fence: new AbortController().signal });
    const ra = a.submit({ application: app('shop-a', 'https://h/mono.git', 'apps/a'), configs: [config('db', 1)], workloads: [web] });
    const rb = b.submit({ application: app('shop-b', 'https://h/mono.git', 'apps/b'), configs: [config('db', 2)], workloads: [web] });
    assert.equal(a.statusOfWorkload(web)?.configs[0]?.digest, digest(1));
    assert.equal(b.statusOfWorkload(web)?.configs[0]?.digest, digest(2));
    assert.equal(a.statusOfWorkload(web)?.cluster, 'aaa');
    assert.equal(wb.statusOfWorkload(web), undefined);
    assert.equal(wb.statusOf('argocd', 'shop-a', 'aaa')?.state, 'pending');
    assert.equal(wb.statusOf('argocd', 'shop-a'), undefined);
    await clock.advanceAsync(1_000);
    (await firstRun(git)).finish();
    await settle();
    // One repository runs one job at a time: the second cluster's batch follows the first.
    (await waitFor('the second cluster\'s git run', () => git.jobs[1], LOCAL_WAIT)).finish();
    const results = await Promise.all([ra, rb]);
    assert.deepEqual(results.map((r) => r.status), ['committed', 'committed']);
    assert.deepEqual(git.jobs.map((j) => j.job.edits.map((e) => e.path)), [['apps/a'], ['apps/b']]);
    assert.equal(a.statusOfWorkload(web)?.state, 'committed');
    await wb.close();
  });

  it('a cluster\'s fence closed: its submissions not yet run are dropped and forgotten, never committed; another cluster\'s go on', async () => {
    const { clock, git, wb } = setup(1_000);
    const fenceA = new AbortController();
    const a = wb.forCluster({ id: 'aaa', fence: fenceA.signal });
    const b = wb.forCluster({ id: 'bbb', fence: new AbortController().signal });
    const ra = a.submit({ application: app('shop-a', 'https://h/mono.git', 'apps/a'), configs: [config('db', 1)], workloads: [web] });
    const rb = b.submit({ application: app('shop-b', 'https://h/mono.git', 'apps/b'), configs: [config('db', 2)], workloads: [web] });
    fenceA.abort();
    const dropped = await ra;
    assert.equal(dropped.status === 'failed' && dropped.error.kind, 'stopped');
    assert.equal(a.statusOfWorkload(web), undefined, 'no answer left pending: a later pipeline for the cluster submits again');
    assert.equal(wb.statusOf('argocd', 'shop-a', 'aaa'), undefined);
    const late = await a.submit({ application: app('shop-a', 'https://h/mono.git', 'apps/a'), configs: [config('db', 3)], workloads: [web] });
    assert.equal(late.status === 'failed' && late.error.kind, 'stopped', 'a fenced cluster submits nothing more');
    await clock.advanceAsync(1_000);
    (await firstRun(git)).finish();
    assert.equal((await rb).status, 'committed');
    await clock.advanceAsync(5_000);
    await settle();
    assert.deepEqual(git.jobs.map((j) => j.job.edits.map((e) => e.path)), [['apps/b']], 'only the other cluster\'s commit');
    await wb.close();
  });

  it('a cluster\'s fence closed while its commit runs: the git run is aborted, its answer dropped; a batch waiting for the repository is dropped', async () => {
    const { clock, git, wb } = setup(1_000);
    const fenceA = new AbortController();
    const a = wb.forCluster({ id: 'aaa', fence: fenceA.signal });
    const running = a.submit({ application: app('shop-a', 'https://h/mono.git', 'apps/a'), configs: [config('db', 1)], workloads: [web] });
    await clock.advanceAsync(1_000);
    const job = await firstRun(git);
    // A second batch of the cluster (another branch), waiting for the repository.
    const waiting = a.submit({ application: app('api', 'https://h/mono.git', 'apps/api', 'release'), configs: [config('db', 1)], workloads: [{ ...web, name: 'api' }] });
    await clock.advanceAsync(1_000);
    assert.equal(job.signal.aborted, false);
    fenceA.abort();
    assert.equal(job.signal.aborted, true, 'the running git command sees the fence');
    job.finish(new WriteBackError('git', 'https://h/mono.git', 'push', 'aborted'));
    for (const result of await Promise.all([running, waiting])) assert.equal(result.status === 'failed' && result.error.kind, 'stopped');
    assert.equal(a.statusOfWorkload(web), undefined);
    assert.equal(a.statusOfWorkload({ ...web, name: 'api' }), undefined);
    await settle();
    assert.equal(git.jobs.length, 1, 'the waiting batch never ran');
    await wb.close();
  });
});

describe('write-back metrics', () => {
  it('from the start, before any write-back: zero commits and an empty latency histogram are scraped, so a dashboard sees 0, not no data', async () => {
    const registry = new Registry();
    createWriteBackMetrics(registry);
    const text = await registry.metrics();
    assert.match(text, /^driftless_writeback_commits_total 0$/m);
    assert.match(text, /^driftless_writeback_change_to_commit_seconds_count 0$/m);
    assert.match(text, /^# TYPE driftless_writeback_push_failures_total counter$/m);
  });

  it('one batch of two changes: one commit counted, each change\'s latency from its first sight; a failed run: one failure by kind', async () => {
    const registry = new Registry();
    const metrics = createWriteBackMetrics(registry);
    const clock = new FakeClock(Date.parse('2026-12-02T10:00:00Z'));
    const git = scriptedGit();
    const wb = createWriteBack(
      { ...WRITE_BACK_DEFAULTS, workDir: '/nonexistent', batchWindowMs: 5_000 },
      { clock, run: git.run, credentialsFor: async () => ({ kind: 'none', from: 'test' }), knownHosts: async () => undefined, observe: (o) => metrics.observe(o) },
    );
    const seen = clock.now();
    const a = wb.submit({ application: app('a', 'https://h/mono.git', 'apps/a'), configs: [config('s1', 1)], workloads: [], changeSeenAt: seen - 2_000 });
    await clock.advanceAsync(1_000);
    const b = wb.submit({ application: app('b', 'https://h/mono.git', 'apps/b'), configs: [config('s2', 2)], workloads: [], changeSeenAt: seen + 1_000 });
    await clock.advanceAsync(4_000);
    (await firstRun(git)).finish();
    assert.equal((await a).status, 'committed');
    assert.equal((await b).status, 'committed');
    const c = wb.submit({ application: app('a', 'https://h/mono.git', 'apps/a'), configs: [config('s1', 3)], workloads: [] });
    await clock.advanceAsync(5_000);
    await settle();
    git.jobs[1]?.finish(new WriteBackError('rejected', 'https://h/mono.git', 'push', 'pre-receive hook declined'));
    assert.equal((await c).status, 'failed');
    await wb.close();
    const text = await registry.metrics();
    assert.match(text, /^driftless_writeback_commits_total 1$/m);
    assert.match(text, /^driftless_writeback_push_failures_total\{kind="rejected"\} 1$/m);
    assert.match(text, /^driftless_writeback_change_to_commit_seconds_count 2$/m);
    assert.match(text, /^driftless_writeback_change_to_commit_seconds_sum 11$/m, '7 s and 4 s');
    assert.ok(!text.includes('mono') && !text.includes('s1'), 'no repository or config name in the metrics');
  });

  it('hub mode: each cluster\'s commits, failures and latencies carry its cluster; the implicit cluster\'s none', async () => {
    const registry = new Registry();
    const metrics = createWriteBackMetrics(registry);
    const clock = new FakeClock(Date.parse('2026-12-02T10:00:00Z'));
    const git = scriptedGit();
    const wb = createWriteBack(
      { ...WRITE_BACK_DEFAULTS, workDir: '/nonexistent', batchWindowMs: 1_000 },
      { clock, run: git.run, credentialsFor: async () => ({ kind: 'none', from: 'test' }), knownHosts: async () => undefined, observe: (o) => metrics.observe(o) },
    );
    const spoke = wb.forCluster({ id: 'spoke-a', fence: new AbortController().signal });
    const committed = spoke.submit({ application: app('a', 'https://h/mono.git', 'apps/a'), configs: [config('s1', 1)], workloads: [], changeSeenAt: clock.now() });
    await clock.advanceAsync(1_000);
    (await firstRun(git)).finish();
    assert.equal((await committed).status, 'committed');
    const rejected = wb.submit({ application: app('b', 'https://h/mono.git', 'apps/b'), configs: [config('s2', 2)], workloads: [] });
    await clock.advanceAsync(1_000);
    await settle();
    git.jobs[1]?.finish(new WriteBackError('rejected', 'https://h/mono.git', 'push', 'pre-receive hook declined'));
    assert.equal((await rejected).status, 'failed');
    await wb.close();
    const text = await registry.metrics();
    assert.match(text, /^driftless_writeback_commits_total\{cluster="spoke-a"\} 1$/m);
    assert.match(text, /^driftless_writeback_change_to_commit_seconds_count\{cluster="spoke-a"\} 1$/m);
    assert.match(text, /^driftless_writeback_push_failures_total\{kind="rejected"\} 1$/m);
    assert.doesNotMatch(text, /push_failures_total\{[^}]*cluster=/);
  });
});
