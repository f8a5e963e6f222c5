/**
 * The git strategy in the reconciler (ADR 0016), on the fake clock with a fake API and the real engine over
 * a scripted git run (the real git run: writeback/git.test.ts; real Argo CD: test/argocd/): a rotation is
 * committed, never evicted nor restartAt-ed; the restart is done once Argo CD's sync rolled a new render;
 * without a hash key, or when pushes keep failing past --write-back-fallback-after, a Warning and the
 * fallback (restart in the cluster, or none); an engine closed before its batch ran leaves the submission
 * to the next process. The real controller process killed after the commit or mid-push, the real
 * fallback, batching, a revert and a write branch: git-strategy.cluster.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { reduceApplication } from '../../controller/cache/reduce.ts';
import { ClusterView, workloadKey } from '../../controller/cache/cluster-view.ts';
import { WRITE_BACK_ANNOTATION } from '../../core/index.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { eventMessage, type EventReason, type EventRecorder } from '../../controller/events.ts';
import type { Writes } from '../../controller/kube/writes.ts';
import type { PodSummary, WorkloadSummary } from '../../controller/model.ts';
import { Reconciler, type GitStrategyOptions } from '../../controller/reconciler.ts';
import { createWriteBack, WRITE_BACK_DEFAULTS, type WriteBack } from '../../controller/writeback/engine.ts';
import { WriteBackError } from '../../controller/writeback/errors.ts';
import type { GitJob, GitRunResult } from '../../controller/writeback/git-run.ts';
import { createWriteBackMetrics } from '../../controller/writeback/metrics.ts';
import { parseWriteBackRecord } from '../../controller/writeback/record.ts';
import { config, workload } from './support/summaries.ts';
import { appliedOwnFields } from './support/apply.ts';

const START = Date.parse('2026-12-02T10:00:00Z');
const KEYED = `v1:${'1'.repeat(64)}`;
const ROTATED = `v1:${'2'.repeat(64)}`;

interface Recorded {
  readonly type: 'Normal' | 'Warning';
  readonly reason: EventReason;
  readonly message: string;
}

/** A git run the test answers: a SHA, or a failure. */
function scriptedGit() {
  const jobs: { job: GitJob; answer: (outcome: string | WriteBackError) => void }[] = [];
  const run = (job: GitJob): Promise<GitRunResult> => new Promise((resolve, reject) => {
    jobs.push({
      job,
      answer: (outcome) => {
        if (outcome instanceof WriteBackError) return reject(outcome);
        job.message(new Map(job.edits.map((e) => [e.path, e.configs] as const)));
        resolve({ branch: 'main', sha: outcome, attempts: 1, changed: new Map(job.edits.map((e) => [e.path, e.configs] as const)), failed: new Map() });
      },
    });
  });
  return { jobs, run };
}

/**
 * StatefulSet `web` (annotated git, one old pod) tracked by Application shop rendered by the plugin, using Secret `db`;
 * with `api`, StatefulSet `api` of the same Application too, using Secret `cache`.
 */
/** A Secret rotated, the write-back submitted, its commit answered and written on the workload: the state both end tests start from. */
async function rotatedAndCommitted(): Promise<{ h: ReturnType<typeof harness>; reconciler: ReturnType<ReturnType<typeof harness>['make']> }> {
  const h = harness();
  const reconciler = h.make();
  await reconciler.reconcile(h.key);
  h.rotate();
  await reconciler.reconcile(h.key);
  await reconciler.reconcile(h.key);
  await h.clock.advanceAsync(1_000);
  await h.settle();
  h.git.jobs[0]?.answer('c0ffee0123456789c0ffee0123456789c0ffee01');
  await h.settle();
  await reconciler.reconcile(h.key);
  return { h, reconciler };
}

function harness(options: { keyed?: boolean; fallback?: GitStrategyOptions['fallback']; annotations?: Record<string, string>; api?: boolean } = {}) {
  const clock = new FakeClock(START);
  const view = new ClusterView();
  const events: Recorded[] = [];
  const evicted: string[] = [];
  const restartAts: number[] = [];
  let version = 1;
  const writes: Writes = {
    async applyOwnFields(target, fields) {
      const previous = view.workload(workloadKey(target.kind, target.namespace, target.name)) as WorkloadSummary;
      view.workloadChanged(previous, appliedOwnFields(previous, fields, String(++version)));
    },
    async patchRestartAt(_target, restartAt) {
      restartAts.push(restartAt);
    },
    async evict(pod) {
      evicted.push(pod.name);
      view.podChanged(pod, undefined);
      view.podChanged(undefined, { ...pod, uid: `${pod.uid}-next`, createdAt: clock.now(), readySince: clock.now() });
      return { outcome: 'evicted', message: '' };
    },
  };
  const recorder: EventRecorder = {
    async record(_target, event) {
      events.push({ type: event.type, reason: event.reason, message: eventMessage(event) });
    },
  };
  const summary = workload('StatefulSet', 'web', { app: 'shop', secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true', 'driftless.dev/restart-strategy': 'git', ...options.annotations }, spec: { replicas: 1 } });
  view.workloadChanged(undefined, { ...summary, configHash: 'v1:render-1', generation: 1, status: { ...summary.status, observedGeneration: 1, replicas: 1, updatedReplicas: 1 } });
  const pod: PodSummary = { namespace: 'prod', name: 'web-0', uid: 'uid-0', owner: { kind: 'StatefulSet', name: 'web', uid: summary.uid }, createdAt: START - 3_600_000, deleting: false, phase: 'Running', readySince: START - 3_590_000, nodeName: 'n' };
  view.podChanged(undefined, pod);
  if (options.api === true) {
    const api = workload('StatefulSet', 'api', { app: 'shop', secrets: ['cache'], annotations: { 'reloader.stakater.com/auto': 'true', 'driftless.dev/restart-strategy': 'git' }, spec: { replicas: 1 } });
    view.workloadChanged(undefined, { ...api, configHash: 'v1:render-1', generation: 1, status: { ...api.status, observedGeneration: 1, replicas: 1, updatedReplicas: 1 } });
    view.podChanged(undefined, { ...pod, name: 'api-0', uid: 'uid-api-0', owner: { kind: 'StatefulSet', name: 'api', uid: api.uid } });
    view.configChanged(undefined, config('Secret', 'cache', { digest: KEYED, seenAt: START }));
  }
  view.applicationChanged(undefined, reduceApplication({
    metadata: { name: 'shop', namespace: 'argocd', resourceVersion: '1' },
    spec: { project: 'default', source: { repoURL: 'https://git.example/shop.git', path: 'apps/web', targetRevision: 'main', plugin: { name: 'driftless-v1' } } },
  }, 'argocd'));
  view.configChanged(undefined, config('Secret', 'db', { digest: KEYED, seenAt: START }));
  const git = scriptedGit();
  const registry = new Registry();
  const metrics = createWriteBackMetrics(registry);
  let engine: WriteBack = createWriteBack({ ...WRITE_BACK_DEFAULTS, workDir: '/nonexistent', batchWindowMs: 1_000 }, { clock, run: git.run, credentialsFor: async () => ({ kind: 'none', from: 'test' }), knownHosts: async () => undefined, observe: (o) => metrics.observe(o) });
  const woken: string[] = [];
  const make = (): Reconciler => new Reconciler({
    view,
    writes,
    events: recorder,
    clock,
    log: pino({ enabled: false }),
    inScope: () => true,
    options: {
      mode: 'annotated', defaultStrategy: 'evict', debounceMs: 0, checkIntervalMs: 500, maxConcurrentRestarts: 100, blockedWarningMs: 60_000,
      writeBack: { defaults: { namespaces: [], applications: [] }, fallbackAfterMs: 600_000, fallback: options.fallback ?? 'restart', retryMs: 30_000, keyed: options.keyed ?? true },
    },
    writeBack: engine,
    writeBackMetrics: metrics,
    wake: (key) => woken.push(key),
  });
  const rotate = (name = 'db'): void => {
    view.configChanged(view.configLookup('prod').get('Secret', name), config('Secret', name, { digest: ROTATED, seenAt: clock.now() }));
  };
  /** Argo CD synced a new render (`v1:render-2`; another hash: a revert's or a rollback's) and the StatefulSet rolled it. */
  const syncRolled = (of = key, configHash = 'v1:render-2'): void => {
    const previous = view.workload(of) as WorkloadSummary;
    const generation = previous.generation + 1;
    view.workloadChanged(previous, { ...previous, configHash, generation, resourceVersion: String(++version), status: { ...previous.status, observedGeneration: generation, replicas: 1, updatedReplicas: 1 } });
  };
  const key = workloadKey('StatefulSet', 'prod', 'web');
  const record = (of = key) => parseWriteBackRecord(view.workload(of)?.annotations[WRITE_BACK_ANNOTATION]);
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  const restartEngine = (): void => {
    void engine.close();
    engine = createWriteBack({ ...WRITE_BACK_DEFAULTS, workDir: '/nonexistent', batchWindowMs: 1_000 }, { clock, run: git.run, credentialsFor: async () => ({ kind: 'none', from: 'test' }), knownHosts: async () => undefined });
  };
  return { clock, view, events, evicted, restartAts, git, registry, make, rotate, syncRolled, key, record, settle, woken, restartEngine, engine: () => engine };
}

const reasons = (events: readonly Recorded[]): string[] => events.filter((e) => e.reason !== 'RestartWarning').map((e) => `${e.type} ${e.reason}`);

describe('the git strategy in the reconciler', () => {
  it('a rotation is committed once, nothing is evicted, and the restart is done once Argo CD synced a new render and it rolled', async () => {
    const h = harness();
    const reconciler = h.make();
    await reconciler.reconcile(h.key);
    h.clock.advance(1_000);
    h.rotate();
    await reconciler.reconcile(h.key);
    assert.deepEqual(reasons(h.events), ['Normal RestartStarted']);
    assert.match(h.events[0]?.message ?? '', /^Secret db changed: the restart at 2026-12-02T10:00:01Z goes through Git: a commit of the changed digests/);
    assert.deepEqual({ ...h.record(), since: 0, at: 0 }, { restartAt: START + 1_000, state: 'pending', configs: { 'Secret/db': ROTATED }, templateHash: 'v1:render-1', since: 0, at: 0 });
    // The first look after the start submits; more looks in the batch window submit nothing more.
    await reconciler.reconcile(h.key);
    await reconciler.reconcile(h.key);
    await h.clock.advanceAsync(1_000);
    await h.settle();
    assert.equal(h.git.jobs.length, 1, 'one git run');
    assert.deepEqual(h.git.jobs[0]?.job.edits, [{ path: 'apps/web', configs: [{ kind: 'Secret', namespace: 'prod', name: 'db', digest: ROTATED }] }]);
    h.git.jobs[0]?.answer('c0ffee0123456789c0ffee0123456789c0ffee01');
    await h.settle();
    assert.deepEqual(h.woken, [h.key], 'the answer wakes the workload');
    await reconciler.reconcile(h.key);
    assert.equal(h.record()?.state, 'committed');
    assert.equal(h.record()?.sha, 'c0ffee0123456789c0ffee0123456789c0ffee01');
    assert.match(h.events.at(-1)?.message ?? '', /^Secret db changed: committed c0ffee012345 in https:\/\/git\.example\/shop\.git on main for the restart at 2026-12-02T10:00:01Z: Argo CD's sync rolls the StatefulSet$/);
    h.clock.advance(60_000);
    assert.deepEqual(await reconciler.reconcile(h.key), { requeueAfterMs: 500 }, 'waiting for the sync');
    h.syncRolled();
    assert.equal(await reconciler.reconcile(h.key), undefined);
    assert.deepEqual(reasons(h.events), ['Normal RestartStarted', 'Normal WriteBackCommitted', 'Normal RestartFinished']);
    assert.deepEqual(h.evicted, [], 'no eviction by the controller');
    assert.deepEqual(h.restartAts, [], 'no restartAt');
    assert.match(await h.registry.metrics(), /^driftless_writeback_commits_total 1$/m);
    await h.engine().close();
  });

  it('a controller restarted before the answer submits again (Git makes it harmless)', async () => {
    const h = harness();
    const first = h.make();
    await first.reconcile(h.key);
    h.rotate();
    await first.reconcile(h.key);
    await first.reconcile(h.key);
    h.restartEngine();
    const second = h.make();
    await second.reconcile(h.key);
    await h.clock.advanceAsync(1_000);
    await h.settle();
    assert.equal(h.git.jobs.length, 1, 'the stopped engine ran nothing; the new one runs once');
    assert.deepEqual(h.evicted, []);
    h.git.jobs[0]?.answer('abc');
    await h.settle();
    await second.reconcile(h.key);
    assert.equal(h.record()?.state, 'committed');
    await h.engine().close();
  });

  it('without a hash key nothing is written: a Warning, and the restart in the cluster', async () => {
    const h = harness({ keyed: false });
    const reconciler = h.make();
    await reconciler.reconcile(h.key);
    h.rotate();
    await reconciler.reconcile(h.key);
    await reconciler.reconcile(h.key);
    const warning = h.events.find((e) => e.reason === 'WriteBackFallback');
    assert.equal(warning?.type, 'Warning');
    assert.match(warning?.message ?? '', /^Secret db changed: the controller has no hash key: an unkeyed digest of a config is never written to Git .*; restarting in the cluster instead$/);
    assert.deepEqual(h.evicted, ['web-0']);
    assert.equal(h.git.jobs.length, 0);
    await reconciler.reconcile(h.key);
    assert.equal(h.events.filter((e) => e.reason === 'WriteBackFallback').length, 1, 'said once');
    assert.match(await h.registry.metrics(), /^driftless_writeback_fallbacks_total\{cause="no-hash-key"\} 1$/m);
    await h.engine().close();
  });

  it('pushes failing past --write-back-fallback-after: Warnings, then the fallback (none: nothing in the cluster)', async () => {
    const h = harness({ fallback: 'none' });
    const reconciler = h.make();
    await reconciler.reconcile(h.key);
    h.rotate();
    await reconciler.reconcile(h.key);
    await reconciler.reconcile(h.key);
    for (let attempt = 0; h.clock.now() < START + 600_000; attempt++) {
      await h.clock.advanceAsync(1_000);
      await h.settle();
      const job = h.git.jobs[attempt];
      if (job === undefined) break;
      job.answer(new WriteBackError('rejected', 'https://git.example/shop.git', 'push', 'pre-receive hook declined'));
      await h.settle();
      await reconciler.reconcile(h.key);
      await h.clock.advanceAsync(30_000);
      await reconciler.reconcile(h.key);
    }
    assert.ok(h.git.jobs.length >= 2, 'retried');
    await h.clock.advanceAsync(600_000);
    await reconciler.reconcile(h.key);
    assert.equal(h.record()?.state, 'fallback');
    assert.ok(h.events.some((e) => e.reason === 'WriteBackFailed' && e.type === 'Warning'));
    assert.match(h.events.find((e) => e.reason === 'WriteBackFallback')?.message ?? '', /kept failing for \d+s \(--write-back-fallback-after\).*recorded only \(--write-back-fallback none\)$/);
    assert.deepEqual(h.evicted, [], 'fallback none: nothing in the cluster');
    assert.match(await h.registry.metrics(), /^driftless_writeback_push_failures_total\{kind="rejected"\} [1-9]/m);
    await h.engine().close();
  });

  it('two git workloads of one Application, both rotated: one git run, both committed, both finished after the sync (no resubmission loop)', async () => {
    const h = harness({ api: true });
    const api = workloadKey('StatefulSet', 'prod', 'api');
    const reconciler = h.make();
    const both = async (): Promise<void> => {
      await reconciler.reconcile(h.key);
      await reconciler.reconcile(api);
    };
    await both();
    h.clock.advance(1_000);
    h.rotate('db');
    h.rotate('cache');
    await both();
    // Twenty batch windows, every git run answered with a commit: each workload's step reads the engine's answer to
    // its own submission, never the other's (the other's configs differ), so neither submits again.
    let answered = 0;
    for (let window = 0; window < 20; window++) {
      await both();
      await h.clock.advanceAsync(1_000);
      await h.settle();
      for (; answered < h.git.jobs.length; answered++) h.git.jobs[answered]?.answer(`c0ffee${String(answered).padStart(34, '0')}`);
      await h.settle();
    }
    assert.equal(h.git.jobs.length, 1, 'one git run for both workloads (one batch)');
    assert.deepEqual(h.git.jobs[0]?.job.edits, [{ path: 'apps/web', configs: [
      { kind: 'Secret', namespace: 'prod', name: 'db', digest: ROTATED },
      { kind: 'Secret', namespace: 'prod', name: 'cache', digest: ROTATED },
    ] }]);
    assert.equal(h.record()?.state, 'committed');
    assert.equal(h.record(api)?.state, 'committed');
    assert.equal(h.events.filter((e) => e.reason === 'WriteBackCommitted').length, 2, 'one WriteBackCommitted per workload');
    h.syncRolled();
    h.syncRolled(api);
    await both();
    await both();
    assert.equal(h.events.filter((e) => e.reason === 'RestartFinished').length, 2, 'once each, however often looked at');
    assert.ok(!h.events.some((e) => e.reason === 'WriteBackFallback'), 'no fallback');
    assert.deepEqual(h.evicted, []);
    await h.engine().close();
  });

  it('a finished restart stays finished: a revert of the commit synced by Argo CD says nothing more, holds nothing, also across a controller restart', async () => {
    const { h, reconciler } = await rotatedAndCommitted();
    h.clock.advance(10_000);
    h.syncRolled();
    assert.equal(await reconciler.reconcile(h.key), undefined);
    assert.deepEqual(reasons(h.events), ['Normal RestartStarted', 'Normal WriteBackCommitted', 'Normal RestartFinished']);
    const synced = h.view.workload(h.key)?.annotations[WRITE_BACK_ANNOTATION];
    // A person reverts the commit and Argo CD syncs the revert (or `argocd app rollback` syncs the revision before it):
    // the template's hash is the one at submission again.
    h.clock.advance(10_000);
    h.syncRolled(h.key, 'v1:render-1');
    assert.equal(await reconciler.reconcile(h.key), undefined, 'nothing to wait for');
    assert.equal(reconciler.isRestarting(h.key), false, 'no restart in progress');
    await h.clock.advanceAsync(600_000);
    assert.equal(await reconciler.reconcile(h.key), undefined);
    // A controller started anew reads the same from the workload alone.
    const next = h.make();
    assert.equal(await next.reconcile(h.key), undefined);
    assert.equal(next.isRestarting(h.key), false);
    assert.deepEqual(reasons(h.events), ['Normal RestartStarted', 'Normal WriteBackCommitted', 'Normal RestartFinished'], 'no RestartSyncWaitExpired, nothing more');
    assert.equal(h.record()?.state, 'synced', 'the roll is recorded on the workload');
    assert.equal(h.view.workload(h.key)?.annotations[WRITE_BACK_ANNOTATION], synced, 'once, when it was seen');
    assert.deepEqual(h.evicted, []);
    assert.equal(h.git.jobs.length, 1);
    await h.engine().close();
  });

  it('a commit Argo CD never syncs: after --write-back-fallback-after one Warning, the restart stops waiting, nothing in the cluster', async () => {
    const { h, reconciler } = await rotatedAndCommitted();
    assert.equal(h.record()?.state, 'committed');
    await h.clock.advanceAsync(599_000);
    assert.deepEqual(await reconciler.reconcile(h.key), { requeueAfterMs: 500 }, 'still waiting for the sync');
    await h.clock.advanceAsync(1_000);
    assert.equal(await reconciler.reconcile(h.key), undefined);
    await reconciler.reconcile(h.key);
    assert.deepEqual(reasons(h.events), ['Normal RestartStarted', 'Normal WriteBackCommitted', 'Warning RestartSyncWaitExpired']);
    assert.match(h.events.at(-1)?.message ?? '', /^Secret db changed: commit c0ffee012345 on main: Argo CD synced no new render of the StatefulSet within 600s \(--write-back-fallback-after\); no longer waiting .* Nothing is restarted in the cluster: that would be a second rollout$/);
    assert.deepEqual(h.evicted, []);
    assert.deepEqual(h.restartAts, []);
    assert.equal(h.git.jobs.length, 1);
    await h.engine().close();
  });
});
