/**
 * The sync-wait rule (ADR 0011): the reduced Application, the pure rule, the
 * index that wakes the workloads an Application tracks, and the reconciler on
 * fake time — a restart about to act waits while Argo CD is about to roll the
 * workload, finishes with nothing evicted once the sync replaced the pods,
 * and restarts anyway at T + the bound.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { restartNotActed, rolloutUpdateWait, rolloutUpdating, syncWait } from '../../controller/argocd-sync.ts';
import { formatTime } from '../../controller/bookkeeping.ts';
import { reduceApplication, reduceWorkload } from '../../controller/cache/reduce.ts';
import { ClusterView, workloadKey } from '../../controller/cache/cluster-view.ts';
import { BOOKKEEPING } from '../../core/index.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { eventMessage, type EventReason, type EventRecorder } from '../../controller/events.ts';
import type { OwnFields, Writes } from '../../controller/kube/writes.ts';
import type { ApplicationSummary, PodSummary, WorkloadSummary } from '../../controller/model.ts';
import { Reconciler } from '../../controller/reconciler.ts';
import { ANNOTATION_TRACKING, config, rawWorkload, workload } from './support/summaries.ts';
import { appliedOwnFields } from './support/apply.ts';

const START = Date.parse('2026-01-01T00:00:00Z');
const WAIT_MS = 60_000;

/** A raw Application as the API server lists it. */
function rawApp(shape: { operation?: boolean; phase?: string; refresh?: boolean; automated?: Record<string, unknown>; outOfSync?: readonly string[]; namespace?: string; version?: string } = {}): Record<string, unknown> {
  return {
    metadata: {
      name: 'shop',
      namespace: shape.namespace ?? 'argocd',
      resourceVersion: shape.version ?? '1',
      annotations: shape.refresh === true ? { 'argocd.argoproj.io/refresh': 'normal' } : {},
    },
    spec: { project: 'default', ...(shape.automated === undefined ? {} : { syncPolicy: { automated: shape.automated } }) },
    ...(shape.operation === true ? { operation: { sync: { revision: 'abc' } } } : {}),
    status: {
      sync: { status: (shape.outOfSync ?? []).length > 0 ? 'OutOfSync' : 'Synced' },
      resources: [
        { group: '', version: 'v1', kind: 'ConfigMap', namespace: 'prod', name: 'settings', status: 'Synced' },
        ...(shape.outOfSync ?? []).map((name) => ({ group: 'apps', version: 'v1', kind: 'StatefulSet', namespace: 'prod', name, status: 'OutOfSync' })),
      ],
      ...(shape.phase === undefined ? {} : { operationState: { phase: shape.phase } }),
    },
  };
}

const app = (shape: Parameters<typeof rawApp>[0] = {}): ApplicationSummary => reduceApplication(rawApp(shape), 'argocd');
const TARGET = { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'prod', name: 'web' } as const;

// ---- reduceApplication --------------------------------------------------------

test('reduceApplication keeps only what says a sync is pending, and the tracking ids that name the app', () => {
  assert.deepEqual(app(), { namespace: 'argocd', name: 'shop', resourceVersion: '1', trackingIds: ['shop', 'argocd_shop'], operationRunning: false, refreshRequested: false, automated: false, outOfSync: [], project: 'default', destination: { server: '', name: '', namespace: '' },
    writeBackSource: { metadata: { name: 'shop', namespace: 'argocd', annotations: {} }, spec: { source: undefined, sources: undefined } } });
  assert.equal(app({ operation: true }).operationRunning, true, '.operation set: a sync was asked for');
  assert.equal(app({ phase: 'Running' }).operationRunning, true);
  assert.equal(app({ phase: 'Succeeded' }).operationRunning, false);
  assert.equal(app({ refresh: true }).refreshRequested, true);
  assert.equal(app({ automated: {} }).automated, true, 'an empty automated block is on');
  assert.equal(app({ automated: { enabled: false } }).automated, false);
  assert.deepEqual(app({ outOfSync: ['web', 'api'] }).outOfSync, ['apps/StatefulSet/prod/api', 'apps/StatefulSet/prod/web']);
  assert.deepEqual(reduceApplication(rawApp({ namespace: 'team-a' }), 'argocd').trackingIds, ['team-a_shop'], 'apps in any namespace are tracked as <namespace>_<name>');
  assert.ok(Object.isFrozen(app()));
});

// ---- the rule ---------------------------------------------------------------------

test('syncWait: a running operation, a requested refresh, or automated sync with the workload OutOfSync holds the restart', () => {
  const now = START + 5000;
  for (const pending of [app({ operation: true }), app({ phase: 'Running' }), app({ refresh: true }), app({ automated: {}, outOfSync: ['web'] })]) {
    const verdict = syncWait({ app: pending, workload: TARGET, restartAt: START, now, waitMs: WAIT_MS });
    assert.equal(verdict.action, 'wait', JSON.stringify(pending));
    assert.equal(verdict.action === 'wait' && verdict.remainingMs, 55_000, 'bounded from T, not from now');
  }
  assert.match((syncWait({ app: app({ refresh: true }), workload: TARGET, restartAt: START, now, waitMs: WAIT_MS }) as { reason: string }).reason, /^Application shop has a refresh requested$/);
});

test('syncWait: nothing pending, a manual-sync app OutOfSync, another resource OutOfSync, no app or a zero bound: go', () => {
  const cases: (ApplicationSummary | undefined)[] = [app(), app({ outOfSync: ['web'] }), app({ automated: {}, outOfSync: ['api'] }), app({ automated: { enabled: false }, outOfSync: ['web'] }), undefined];
  for (const given of cases) assert.deepEqual(syncWait({ app: given, workload: TARGET, restartAt: START, now: START, waitMs: WAIT_MS }), { action: 'go' }, JSON.stringify(given));
  assert.deepEqual(syncWait({ app: app({ operation: true }), workload: TARGET, restartAt: START, now: START, waitMs: 0 }), { action: 'go' });
});

test('syncWait: a Rollout with a workloadRef waits while automated sync lists the Deployment it takes its template from OutOfSync', () => {
  const rollout = { apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', namespace: 'prod', name: 'web', workloadRef: { kind: 'Deployment', name: 'web-template' } } as const;
  const listing = (outOfSync: readonly string[], automated = true): ApplicationSummary => ({ ...app(automated ? { automated: {} } : {}), outOfSync });
  const verdict = syncWait({ app: listing(['apps/Deployment/prod/web-template']), workload: rollout, restartAt: START, now: START, waitMs: WAIT_MS });
  assert.deepEqual(verdict, { action: 'wait', reason: 'Application shop has automated sync and lists the Deployment web-template this Rollout takes its pod template from OutOfSync', remainingMs: WAIT_MS });
  // Another Deployment, the same name in another namespace, a manual-sync app, or no workloadRef: go.
  for (const [given, workload] of [
    [listing(['apps/Deployment/prod/other']), rollout],
    [listing(['apps/Deployment/staging/web-template']), rollout],
    [listing(['apps/Deployment/prod/web-template'], false), rollout],
    [listing(['apps/Deployment/prod/web-template']), { ...rollout, workloadRef: undefined }],
  ] as const) assert.deepEqual(syncWait({ app: given, workload, restartAt: START, now: START, waitMs: WAIT_MS }), { action: 'go' }, JSON.stringify([given.outOfSync, workload.workloadRef]));
});

test('restartNotActed: the rule may hold a restart only until it has acted (the reconciler and explain --live ask the same)', () => {
  const at = formatTime(START);
  const before = formatTime(START - 60_000);
  assert.equal(restartNotActed('restart-at', { restartAt: undefined, templateRestartedAt: undefined }, START, true), true);
  assert.equal(restartNotActed('restart-at', { restartAt: before, templateRestartedAt: undefined }, START, true), true, 'an earlier restart asked for');
  assert.equal(restartNotActed('restart-at', { restartAt: at, templateRestartedAt: undefined }, START, true), false, 'spec.restartAt is T: the Rollouts controller has it');
  assert.equal(restartNotActed('template', { restartAt: undefined, templateRestartedAt: before }, START, true), true);
  assert.equal(restartNotActed('template', { restartAt: undefined, templateRestartedAt: at }, START, true), false);
  assert.equal(restartNotActed('evict', { restartAt: undefined, templateRestartedAt: undefined }, START, true), true);
  assert.equal(restartNotActed('evict', { restartAt: undefined, templateRestartedAt: undefined }, START, false), false, 'no pod from before T left');
});

test('syncWait: at T + the bound a sync still pending no longer holds the restart', () => {
  const pending = app({ operation: true });
  assert.equal(syncWait({ app: pending, workload: TARGET, restartAt: START, now: START + WAIT_MS - 1, waitMs: WAIT_MS }).action, 'wait');
  assert.deepEqual(syncWait({ app: pending, workload: TARGET, restartAt: START, now: START + WAIT_MS, waitMs: WAIT_MS }), { action: 'expired', reason: 'Application shop has a sync operation running' });
});

// ---- the index ----------------------------------------------------------------------

test('an Application change wakes the workloads it tracks, and only when what the rule reads changed', () => {
  const view = new ClusterView();
  view.workloadChanged(undefined, workload('StatefulSet', 'web', { app: 'shop', secrets: ['db'] }));
  view.workloadChanged(undefined, workload('Deployment', 'other', { app: 'blog', secrets: ['db'] }));
  assert.deepEqual(view.applicationChanged(undefined, app()), ['StatefulSet/prod/web']);
  assert.deepEqual(view.applicationChanged(app(), app({ version: '2' })), [], 'status churn wakes nothing');
  assert.deepEqual(view.applicationChanged(app({ version: '2' }), app({ operation: true, version: '3' })), ['StatefulSet/prod/web']);
  assert.equal(view.application('shop')?.operationRunning, true);
  assert.equal(view.application('argocd_shop')?.operationRunning, true);
  assert.deepEqual(view.applicationChanged(app({ operation: true, version: '3' }), undefined), ['StatefulSet/prod/web']);
  assert.equal(view.application('shop'), undefined);
});

// ---- the reconciler ------------------------------------------------------------------

interface Recorded {
  readonly type: 'Normal' | 'Warning';
  readonly reason: EventReason;
  readonly message: string;
}

/** One StatefulSet `web` (one pod, created an hour ago) tracked by Application `shop`, using Secret `db`; a fake API. */
function harness(options: { syncWaitMs?: number; annotations?: Record<string, string> } = {}) {
  const clock = new FakeClock(START);
  const view = new ClusterView();
  const events: Recorded[] = [];
  const applied: OwnFields[] = [];
  const evicted: string[] = [];
  let version = 1;
  const writes: Writes = {
    async applyOwnFields(target, fields) {
      applied.push(fields);
      const previous = view.workload(workloadKey(target.kind, target.namespace, target.name)) as WorkloadSummary;
      view.workloadChanged(previous, appliedOwnFields(previous, fields, String(++version)));
    },
    async patchRestartAt() {},
    async evict(pod) {
      evicted.push(pod.name);
      replacePod(pod);
      return { outcome: 'evicted', message: '' };
    },
  };
  const recorder: EventRecorder = {
    async record(_target, event) {
      events.push({ type: event.type, reason: event.reason, message: eventMessage(event) });
    },
  };
  const summary = workload('StatefulSet', 'web', { app: 'shop', secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true', ...options.annotations }, spec: { replicas: 1 } });
  view.workloadChanged(undefined, summary);
  let pod: PodSummary = { namespace: 'prod', name: 'web-0', uid: 'uid-0', owner: { kind: 'StatefulSet', name: 'web', uid: summary.uid }, createdAt: START - 3_600_000, deleting: false, phase: 'Running', readySince: START - 3_590_000, nodeName: 'n' };
  view.podChanged(undefined, pod);
  /** The StatefulSet controller (or a sync's rollout) replaces the pod now. */
  function replacePod(old: PodSummary): void {
    view.podChanged(old, undefined);
    pod = { ...old, uid: `${old.uid}-next`, createdAt: clock.now(), readySince: clock.now() };
    view.podChanged(undefined, pod);
  }
  let digest = 0;
  const rotate = (): void => {
    view.configChanged(view.configLookup('prod').get('Secret', 'db'), config('Secret', 'db', { digest: `v1:${++digest}`, seenAt: clock.now() }));
  };
  let appVersion = 0;
  const setApp = (shape: Parameters<typeof rawApp>[0]): string[] => view.applicationChanged(view.application('shop'), reduceApplication(rawApp({ ...shape, version: String(++appVersion) }), 'argocd'));
  const make = (): Reconciler => new Reconciler({
    view,
    writes,
    events: recorder,
    clock,
    log: pino({ enabled: false }),
    inScope: () => true,
    options: { mode: 'annotated', defaultStrategy: 'evict', debounceMs: 0, checkIntervalMs: 500, maxConcurrentRestarts: 100, blockedWarningMs: 60_000, ...(options.syncWaitMs === undefined ? {} : { argocdSyncWaitMs: options.syncWaitMs }) },
  });
  rotate();
  return { clock, view, events, applied, evicted, make, rotate, setApp, replaceWeb: () => replacePod(pod), key: workloadKey('StatefulSet', 'prod', 'web') };
}

/** The Events, without the evict strategy's warnings about a one-replica StatefulSet. */
const reasons = (events: readonly Recorded[]): string[] => events.filter((e) => e.reason !== 'RestartWarning').map((e) => `${e.type} ${e.reason}`);

test('a restart waits while the Application syncs, then finishes with nothing evicted: the sync replaced the pod after T', async () => {
  const h = harness({ syncWaitMs: WAIT_MS });
  const reconciler = h.make();
  await reconciler.reconcile(h.key);
  h.setApp({ operation: true });
  h.clock.advance(300);
  h.rotate();
  assert.deepEqual(await reconciler.reconcile(h.key), { requeueAfterMs: 500 }, 'looked at again each check interval');
  const restartAt = Date.parse(h.view.workload(h.key)?.annotations[BOOKKEEPING.restartAt] ?? '');
  assert.equal(restartAt, START + 1000, 'T is first sight, recorded at once');
  assert.deepEqual(reasons(h.events), ['Normal RestartStarted', 'Normal RestartWaitingForSync']);
  assert.match(h.events.find((e) => e.reason === 'RestartWaitingForSync')?.message ?? '', /^Application shop has a sync operation running: its sync replaces the pods, so the restart at 2026-01-01T00:00:01Z waits for it \(at most 60s\)$/);
  h.clock.advance(500);
  assert.deepEqual(await reconciler.reconcile(h.key), { requeueAfterMs: 500 });
  assert.equal(reasons(h.events).length, 2, 'the wait is announced once');
  assert.ok(reconciler.isRestarting(h.key), 'a waiting restart is in progress: pod events wake it');
  // The sync rolls the StatefulSet after T and completes.
  h.clock.advance(2000);
  h.replaceWeb();
  assert.deepEqual(h.setApp({ phase: 'Succeeded' }), [h.key], 'the Application change wakes the workload');
  assert.equal(await reconciler.reconcile(h.key), undefined);
  assert.deepEqual(h.evicted, [], 'nothing evicted: the sync did the restart');
  assert.deepEqual(reasons(h.events), ['Normal RestartStarted', 'Normal RestartWaitingForSync', 'Normal RestartFinished']);
});

test('a sync still pending at T + --argocd-sync-wait no longer holds the restart: a Warning, then the evictions', async () => {
  const h = harness({ syncWaitMs: WAIT_MS });
  const reconciler = h.make();
  await reconciler.reconcile(h.key);
  h.setApp({ refresh: true });
  h.rotate();
  const first = await reconciler.reconcile(h.key);
  assert.equal(first?.requeueAfterMs, 500);
  h.clock.advance(WAIT_MS - 500);
  assert.deepEqual(await reconciler.reconcile(h.key), { requeueAfterMs: 500 }, 'still within the bound from T');
  assert.deepEqual(h.evicted, []);
  h.clock.advance(500);
  await reconciler.reconcile(h.key);
  assert.deepEqual(h.evicted, ['web-0']);
  const warning = h.events.find((e) => e.reason === 'RestartSyncWaitExpired');
  assert.equal(warning?.type, 'Warning');
  assert.match(warning?.message ?? '', /^Application shop has a refresh requested 60s after 2026-01-01T00:00:00Z \(--argocd-sync-wait\): restarting anyway$/);
  h.clock.advance(500);
  await reconciler.reconcile(h.key);
  assert.equal(h.events.filter((e) => e.reason === 'RestartSyncWaitExpired').length, 1, 'said once');
});

test('a controller restarted while waiting resumes from the recorded T: still waiting, bounded from the same T', async () => {
  const h = harness({ syncWaitMs: WAIT_MS });
  await h.make().reconcile(h.key);
  h.setApp({ automated: {}, outOfSync: ['web'] });
  h.rotate();
  await h.make().reconcile(h.key);
  h.clock.advance(30_000);
  // A new process: the Secret's first sight is now (same content), but T is read from the workload.
  h.view.configChanged(h.view.configLookup('prod').get('Secret', 'db'), config('Secret', 'db', { digest: 'v1:2', seenAt: h.clock.now() }));
  const result = await h.make().reconcile(h.key);
  assert.deepEqual(result, { requeueAfterMs: 500 });
  assert.deepEqual(h.evicted, []);
  h.clock.advance(31_000);
  await h.make().reconcile(h.key);
  assert.deepEqual(h.evicted, ['web-0'], 'the bound ran from the recorded T');
});

test('a manual-sync Application OutOfSync does not hold the restart', async () => {
  const h = harness({ syncWaitMs: WAIT_MS });
  const reconciler = h.make();
  await reconciler.reconcile(h.key);
  h.setApp({ outOfSync: ['web'] });
  h.clock.advance(1000);
  h.rotate();
  await reconciler.reconcile(h.key);
  assert.deepEqual(h.evicted, ['web-0']);
  assert.ok(!h.events.some((e) => e.reason === 'RestartWaitingForSync'));
});

test('without --argocd-sync-wait the restart acts at once, as before', async () => {
  const h = harness();
  const reconciler = h.make();
  await reconciler.reconcile(h.key);
  h.setApp({ operation: true });
  h.clock.advance(1000);
  h.rotate();
  await reconciler.reconcile(h.key);
  assert.deepEqual(h.evicted, ['web-0']);
  assert.deepEqual(reasons(h.events), ['Normal RestartStarted']);
});

test('the rollout strategy records T at once and writes the template annotation only once the sync is done', async () => {
  const h = harness({ syncWaitMs: WAIT_MS, annotations: { [BOOKKEEPING.strategy]: 'rollout' } });
  const reconciler = h.make();
  await reconciler.reconcile(h.key);
  h.setApp({ operation: true });
  h.clock.advance(1000);
  h.rotate();
  await reconciler.reconcile(h.key);
  assert.equal(h.view.workload(h.key)?.annotations[BOOKKEEPING.restartAt], '2026-01-01T00:00:01Z');
  assert.equal(h.view.workload(h.key)?.templateRestartedAt, undefined, 'no template change while Argo CD syncs');
  h.setApp({ phase: 'Failed' });
  await reconciler.reconcile(h.key);
  assert.equal(h.view.workload(h.key)?.templateRestartedAt, '2026-01-01T00:00:01Z', 'a sync that replaced nothing: the restart goes on');
});

test('rolloutUpdating: a Rollout whose generation is not observed yet, or whose replicas are not all updated, is still updating', () => {
  const base = workload('Rollout', 'r', { spec: { replicas: 2 } });
  const at = (fields: Partial<WorkloadSummary['status']>, generation = 1): WorkloadSummary => ({ ...base, generation, status: { ...base.status, ...fields } });
  assert.equal(rolloutUpdating(at({ observedGeneration: 1, replicas: 2, updatedReplicas: 2 })), undefined);
  assert.match(rolloutUpdating(at({ observedGeneration: 1, replicas: 2, updatedReplicas: 2 }, 2)) ?? '', /observed generation 1 of 2/);
  assert.match(rolloutUpdating(at({ replicas: 3, updatedReplicas: 1 })) ?? '', /1 of 3 replicas updated/);
  assert.match(rolloutUpdating(at({ replicas: 3, updatedReplicas: 3 })) ?? '', /3 replicas for 2 desired/);
});

test('rolloutUpdateWait: a tracked Rollout\'s restart-at waits for its own update until T + the bound (the reconciler and explain --live ask the same)', () => {
  const base = workload('Rollout', 'r', { spec: { replicas: 2 } });
  const updating: WorkloadSummary = { ...base, status: { ...base.status, observedGeneration: 1, replicas: 3, updatedReplicas: 1 } };
  const settled: WorkloadSummary = { ...base, status: { ...base.status, observedGeneration: 1, replicas: 2, updatedReplicas: 2 } };
  const input = { app: app(), workload: updating, strategy: 'restart-at', restartAt: START, now: START + 5000, waitMs: WAIT_MS } as const;
  assert.deepEqual(rolloutUpdateWait(input), { reason: 'an update is in progress: 1 of 3 replicas updated', remainingMs: 55_000 }, 'bounded from T');
  assert.equal(rolloutUpdateWait({ ...input, now: START + WAIT_MS - 1 })?.remainingMs, 1);
  assert.equal(rolloutUpdateWait({ ...input, now: START + WAIT_MS }), undefined, 'at T + the bound the restart goes on');
  assert.equal(rolloutUpdateWait({ ...input, workload: settled }), undefined, 'the update is done');
  assert.equal(rolloutUpdateWait({ ...input, app: undefined }), undefined, 'without Argo CD nothing changes');
  assert.equal(rolloutUpdateWait({ ...input, waitMs: 0 }), undefined, 'the rule is off');
  assert.equal(rolloutUpdateWait({ ...input, waitMs: 0, now: START - 1000 }), undefined, 'off even before T');
  for (const strategy of ['evict', 'template', 'record-only'] as const) assert.equal(rolloutUpdateWait({ ...input, strategy }), undefined, strategy);
});

test('reduceWorkload reads Argo Rollouts\' observedGeneration, which it writes as a string', () => {
  const raw = { ...rawWorkload('Rollout', 'r'), status: { observedGeneration: '3' } };
  assert.equal(reduceWorkload({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout' }, raw, ANNOTATION_TRACKING).status.observedGeneration, 3);
});
