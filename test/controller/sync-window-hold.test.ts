/**
 * Sync windows in the restart path (ADR 0016), the reconciler on the fake
 * clock with a fake API: a rotation inside an active deny window restarts
 * nothing and says so once, until when; a second rotation inside the window
 * joins it; when the window ends, one restart. A workload of a project
 * without windows is unaffected; a held restart holds no restart slot; an
 * allow window that opens later releases the restart then.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { reduceApplication, reduceAppProject } from '../../controller/cache/reduce.ts';
import { ClusterView, workloadKey } from '../../controller/cache/cluster-view.ts';
import { BOOKKEEPING } from '../../core/index.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { eventMessage, type EventReason, type EventRecorder } from '../../controller/events.ts';
import type { Writes } from '../../controller/kube/writes.ts';
import type { PodSummary, WorkloadSummary } from '../../controller/model.ts';
import { Reconciler } from '../../controller/reconciler.ts';
import { config, workload } from './support/summaries.ts';
import { appliedOwnFields } from './support/apply.ts';

// Wednesday 2026-12-02, 22:30 UTC: inside a deny window 22:00–06:00 UTC.
const START = Date.parse('2026-12-02T22:30:00Z');
const WINDOW_END = Date.parse('2026-12-03T06:00:00Z');

interface Recorded {
  readonly type: 'Normal' | 'Warning';
  readonly reason: EventReason;
  readonly message: string;
}

function rawProject(name: string, syncWindows: unknown[]): Record<string, unknown> {
  return { metadata: { name, namespace: 'argocd', resourceVersion: '1' }, spec: { syncWindows } };
}

/** StatefulSets `web` (Application shop, project prod) and `blog` (Application blog, project default), each with one old pod, using Secret `db`. */
function harness(projectWindows: unknown[]) {
  const clock = new FakeClock(START);
  const view = new ClusterView();
  const events: (Recorded & { workload: string })[] = [];
  const evicted: string[] = [];
  let version = 1;
  const writes: Writes = {
    async applyOwnFields(target, fields) {
      const previous = view.workload(workloadKey(target.kind, target.namespace, target.name)) as WorkloadSummary;
      view.workloadChanged(previous, appliedOwnFields(previous, fields, String(++version)));
    },
    async patchRestartAt() {},
    async evict(pod) {
      evicted.push(pod.name);
      view.podChanged(pod, undefined);
      view.podChanged(undefined, { ...pod, uid: `${pod.uid}-next`, createdAt: clock.now(), readySince: clock.now() });
      return { outcome: 'evicted', message: '' };
    },
  };
  const recorder: EventRecorder = {
    async record(target, event) {
      events.push({ workload: target.name, type: event.type, reason: event.reason, message: eventMessage(event) });
    },
  };
  for (const [name, app] of [['web', 'shop'], ['blog', 'blog']] as const) {
    const summary = workload('StatefulSet', name, { app, secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true' }, spec: { replicas: 1 } });
    view.workloadChanged(undefined, summary);
    const pod: PodSummary = { namespace: 'prod', name: `${name}-0`, uid: `uid-${name}`, owner: { kind: 'StatefulSet', name, uid: summary.uid }, createdAt: START - 3_600_000, deleting: false, phase: 'Running', readySince: START - 3_590_000, nodeName: 'n' };
    view.podChanged(undefined, pod);
  }
  view.applicationChanged(undefined, reduceApplication({ metadata: { name: 'shop', namespace: 'argocd', resourceVersion: '1' }, spec: { project: 'prod', destination: { server: 'https://kubernetes.default.svc', namespace: 'prod' } } }, 'argocd'));
  view.applicationChanged(undefined, reduceApplication({ metadata: { name: 'blog', namespace: 'argocd', resourceVersion: '1' }, spec: { project: 'default', destination: { server: 'https://kubernetes.default.svc', namespace: 'prod' } } }, 'argocd'));
  view.projectChanged(undefined, reduceAppProject(rawProject('prod', projectWindows)));
  view.projectChanged(undefined, reduceAppProject(rawProject('default', [])));
  let digest = 0;
  const rotate = (): void => {
    view.configChanged(view.configLookup('prod').get('Secret', 'db'), config('Secret', 'db', { digest: `v1:${++digest}`, seenAt: clock.now() }));
  };
  const make = (maxConcurrentRestarts = 100): Reconciler => new Reconciler({
    view,
    writes,
    events: recorder,
    clock,
    log: pino({ enabled: false }),
    inScope: () => true,
    options: { mode: 'annotated', defaultStrategy: 'evict', debounceMs: 0, checkIntervalMs: 500, maxConcurrentRestarts, blockedWarningMs: 60_000 },
  });
  rotate();
  return { clock, view, events, evicted, make, rotate, web: workloadKey('StatefulSet', 'prod', 'web'), blog: workloadKey('StatefulSet', 'prod', 'blog') };
}

const DENY_NIGHT = { kind: 'deny', schedule: '0 22 * * *', duration: '8h', applications: ['shop'] };
const held = (events: readonly (Recorded & { workload: string })[], name: string): Recorded[] => events.filter((e) => e.workload === name && e.reason === 'RestartWaitingForSyncWindow');

test('a rotation inside a deny window restarts nothing and says so once; a second rotation joins it; at the window\'s end one restart', async () => {
  const h = harness([DENY_NIGHT]);
  const reconciler = h.make();
  await reconciler.reconcile(h.web);
  h.clock.advance(1_000);
  h.rotate();
  const first = await reconciler.reconcile(h.web);
  assert.deepEqual(first, { requeueAfterMs: WINDOW_END - h.clock.now() }, 'looked at again when the window ends');
  assert.deepEqual(h.evicted, []);
  assert.deepEqual(held(h.events, 'web').map((e) => e.message), [
    'deny window spec.syncWindows[0] (schedule "0 22 * * *", duration 8h) of AppProject prod is active: the restart waits until 2026-12-03T06:00:00Z (the restart at 2026-12-02T22:30:01Z; changes meanwhile join it)',
  ]);
  h.clock.advance(3_600_000);
  h.rotate();
  await reconciler.reconcile(h.web);
  h.clock.advance(500);
  await reconciler.reconcile(h.web);
  assert.deepEqual(h.evicted, [], 'still nothing in the window');
  assert.equal(held(h.events, 'web').length, 1, 'one Event for the hold, however many rotations');
  const restartAt = Date.parse(h.view.workload(h.web)?.annotations[BOOKKEEPING.restartAt] ?? '');
  assert.ok(restartAt > START + 3_600_000, 'the second rotation moved T: one restart covers both');
  h.clock.advance(WINDOW_END - h.clock.now() - 1);
  await reconciler.reconcile(h.web);
  assert.deepEqual(h.evicted, [], 'the window\'s end is open: not a millisecond early');
  h.clock.advance(1);
  await reconciler.reconcile(h.web);
  assert.deepEqual(h.evicted, ['web-0'], 'one restart when the window ends');
  h.clock.advance(500);
  await reconciler.reconcile(h.web);
  assert.deepEqual(h.evicted, ['web-0']);
  assert.ok(h.events.some((e) => e.workload === 'web' && e.reason === 'RestartFinished'));
});

test('a workload of a project without windows is unaffected by another project\'s deny window', async () => {
  const h = harness([DENY_NIGHT]);
  const reconciler = h.make();
  await reconciler.reconcile(h.blog);
  h.clock.advance(1_000);
  h.rotate();
  await reconciler.reconcile(h.blog);
  assert.deepEqual(h.evicted, ['blog-0']);
  assert.deepEqual(held(h.events, 'blog'), []);
});

test('a held restart holds no restart slot: another workload restarts meanwhile', async () => {
  const h = harness([DENY_NIGHT]);
  const reconciler = h.make(1);
  await reconciler.reconcile(h.web);
  await reconciler.reconcile(h.blog);
  h.clock.advance(1_000);
  h.rotate();
  await reconciler.reconcile(h.web);
  assert.ok(reconciler.isRestarting(h.web));
  await reconciler.reconcile(h.blog);
  assert.deepEqual(h.evicted, ['blog-0'], 'the one slot was free for blog');
});

test('outside an allow window the restart waits for the next one; a project change that opens one releases it at once', async () => {
  const h = harness([{ kind: 'allow', schedule: '0 9 * * *', duration: '1h', applications: ['shop'] }]);
  const reconciler = h.make();
  await reconciler.reconcile(h.web);
  h.clock.advance(1_000);
  h.rotate();
  const first = await reconciler.reconcile(h.web);
  assert.equal(first?.requeueAfterMs, Date.parse('2026-12-03T09:00:00.001Z') - h.clock.now());
  assert.match(held(h.events, 'web')[0]?.message ?? '', /^outside the allow window spec\.syncWindows\[0\] \(schedule "0 9 \* \* \*", duration 1h\) of AppProject prod: the restart waits until 2026-12-03T09:00:00Z/);
  const woken = h.view.projectChanged(h.view.projectOf({ project: 'prod' }), reduceAppProject(rawProject('prod', [])));
  assert.deepEqual(woken, [h.web], 'the project change wakes its workloads');
  await reconciler.reconcile(h.web);
  assert.deepEqual(h.evicted, ['web-0']);
});

test('one Event per hold, even when the restart first waits for T to pass on the clock', async () => {
  const h = harness([DENY_NIGHT]);
  const reconciler = h.make();
  await reconciler.reconcile(h.web);
  // Half a second into a second: T (the next whole second) is ahead of the clock at the first look.
  h.clock.advance(1_500);
  h.rotate();
  await reconciler.reconcile(h.web);
  for (let i = 0; i < 4; i++) {
    h.clock.advance(300);
    await reconciler.reconcile(h.web);
  }
  assert.equal(held(h.events, 'web').length, 1);
  // A second rotation, again half a second into a second: its T is ahead of the clock for a moment too.
  h.clock.advance(60_200);
  h.rotate();
  for (let i = 0; i < 4; i++) {
    await reconciler.reconcile(h.web);
    h.clock.advance(300);
  }
  assert.deepEqual(h.evicted, []);
  assert.equal(held(h.events, 'web').length, 1, 'the same hold: no second Event');
});
