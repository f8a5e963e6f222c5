/**
 * Fleet safety in the reconciler, on fake time and a fake API: the restart
 * token bucket requeues instead of blocking, a second change within the
 * minimum interval is deferred (also by a freshly started reconciler: the
 * state is the recorded restart-at), the breaker pauses every start while
 * enough halts are recorded, a halted workload is not restarted, and dry-run
 * decides from what it would have written.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { ClusterView, workloadKey } from '../../controller/cache/cluster-view.ts';
import { BOOKKEEPING, FLEET_ANNOTATIONS } from '../../core/index.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { eventMessage, type EventReason, type EventRecorder } from '../../controller/events.ts';
import { formatHalt, type FleetOptions } from '../../controller/fleet/safety.ts';
import type { OwnFields, Writes } from '../../controller/kube/writes.ts';
import type { PodSummary, WorkloadSummary } from '../../controller/model.ts';
import { Reconciler, type StartLimiter } from '../../controller/reconciler.ts';
import { TokenBucket } from '../../controller/token-bucket.ts';
import { config, workload } from './support/summaries.ts';

const FLEET: FleetOptions = Object.freeze({ minRestartIntervalMs: 60_000, pausePeriodMs: 0, healthGateTimeoutMs: 300_000, breakerThreshold: 2, breakerWindowMs: 600_000 });
const START = Date.parse('2026-01-01T00:00:00Z');

interface Recorded {
  readonly type: 'Normal' | 'Warning';
  readonly name: string;
  readonly reason: EventReason;
  readonly message: string;
}

/** A fake API: applies update the view as the watch would; Events are kept. */
function harness(options: { fleet?: FleetOptions; limiter?: (clock: FakeClock) => StartLimiter; dryRun?: boolean } = {}) {
  const clock = new FakeClock(START);
  const view = new ClusterView();
  const events: Recorded[] = [];
  const applied: { name: string; fields: OwnFields }[] = [];
  let version = 1;
  const writes: Writes = {
    async applyOwnFields(target, fields) {
      applied.push({ name: target.name, fields });
      if (options.dryRun === true) return;
      const previous = view.workload(workloadKey(target.kind, target.namespace, target.name));
      if (previous === undefined) return;
      const annotations: Record<string, string> = { ...previous.annotations, [BOOKKEEPING.restartedFor]: fields.restartedFor };
      if (fields.restartAt !== undefined) annotations[BOOKKEEPING.restartAt] = fields.restartAt;
      if (fields.restartHalted !== undefined) annotations[FLEET_ANNOTATIONS.restartHalted] = fields.restartHalted;
      else delete annotations[FLEET_ANNOTATIONS.restartHalted];
      view.workloadChanged(previous, { ...previous, annotations, resourceVersion: String(++version) });
    },
    async patchRestartAt() {},
    async evict(pod) {
      // The StatefulSet controller's part: the pod goes, its same-named replacement is created now, not Ready.
      view.podChanged(pod, undefined);
      view.podChanged(undefined, { ...pod, uid: `${pod.uid}-next`, createdAt: clock.now(), readySince: undefined });
      return { outcome: 'evicted', message: '' };
    },
  };
  const recorder: EventRecorder = {
    async record(target, event) {
      events.push({ type: event.type, name: target.name, reason: event.reason, message: eventMessage(event) });
    },
  };
  const make = (): Reconciler => new Reconciler({
    view,
    writes,
    events: recorder,
    clock,
    log: pino({ enabled: false }),
    inScope: () => true,
    options: { mode: 'annotated', defaultStrategy: 'evict', debounceMs: 0, checkIntervalMs: 500, maxConcurrentRestarts: 100, blockedWarningMs: 60_000, fleet: options.fleet ?? FLEET, dryRun: options.dryRun ?? false },
    ...(options.limiter === undefined ? {} : { startLimiter: options.limiter(clock) }),
  });
  let digest = 0;
  const rotate = (): void => {
    const previous = view.configLookup('prod').get('Secret', 'db');
    view.configChanged(previous, config('Secret', 'db', { digest: `v1:${++digest}`, seenAt: clock.now() }));
  };
  const add = (name: string, annotations: Record<string, string> = {}, kind: 'Deployment' | 'StatefulSet' = 'Deployment'): string => {
    const summary: WorkloadSummary = workload(kind, name, { secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true', ...annotations }, ...(kind === 'StatefulSet' ? { spec: { replicas: 1 } } : {}) });
    view.workloadChanged(undefined, summary);
    if (kind === 'StatefulSet') {
      const pod: PodSummary = { namespace: 'prod', name: `${name}-0`, uid: `uid-${name}-0`, owner: { kind, name, uid: summary.uid }, createdAt: START - 3_600_000, deleting: false, phase: 'Running', readySince: START - 3_590_000, nodeName: 'n' };
      view.podChanged(undefined, pod);
    }
    return workloadKey(kind, 'prod', name);
  };
  rotate();
  return { clock, view, events, applied, make, rotate, add };
}

const started = (events: readonly Recorded[]): string[] => events.filter((e) => e.reason === 'RestartStarted').map((e) => e.name);

test('restart starts beyond the burst are requeued for the next token, never waited for', async () => {
  const h = harness({
    limiter: (clock) => {
      const bucket = new TokenBucket({ ratePerSecond: 1, burst: 2, clock });
      return { tryTake: () => bucket.tryTake(), retryAfterMs: 1000 };
    },
  });
  const keys = ['a', 'b', 'c', 'd'].map((name) => h.add(name));
  const reconciler = h.make();
  for (const key of keys) assert.equal(await reconciler.reconcile(key), undefined, 'first sight records');
  h.clock.advance(5000);
  h.rotate();
  const results = [];
  for (const key of keys) results.push(await reconciler.reconcile(key));
  assert.deepEqual(started(h.events), ['a', 'b']);
  assert.deepEqual(results.slice(2), [{ requeueAfterMs: 1000 }, { requeueAfterMs: 1000 }]);
  h.clock.advance(1000);
  for (const key of keys.slice(2)) await reconciler.reconcile(key);
  assert.deepEqual(started(h.events), ['a', 'b', 'c'], 'one token a second');
});

test('a second change within --min-restart-interval is deferred with a Warning naming the config, also after a controller restart', async () => {
  const h = harness();
  const key = h.add('app');
  const reconciler = h.make();
  await reconciler.reconcile(key);
  h.clock.advance(1000);
  h.rotate();
  await reconciler.reconcile(key);
  assert.deepEqual(started(h.events), ['app']);
  const restartAt = Date.parse(h.view.workload(key)?.annotations[BOOKKEEPING.restartAt] ?? '');
  h.clock.advance(10_000);
  h.rotate();
  const deferred = await reconciler.reconcile(key);
  assert.deepEqual(deferred, { requeueAfterMs: restartAt + 60_000 - h.clock.now() });
  const warning = h.events.find((e) => e.reason === 'RestartDeferred');
  assert.equal(warning?.type, 'Warning');
  assert.match(warning?.message ?? '', /^Secret db changed again within --min-restart-interval \(60s\) of the restart at 2026-01-01T00:00:01Z: at most one restart per interval, next at 2026-01-01T00:01:01Z$/);
  // A new process reads the same restart-at: still deferred, by the same amount.
  h.clock.advance(20_000);
  assert.deepEqual(await h.make().reconcile(key), { requeueAfterMs: restartAt + 60_000 - h.clock.now() });
  h.clock.advance(restartAt + 60_000 - h.clock.now());
  await reconciler.reconcile(key);
  assert.deepEqual(started(h.events), ['app', 'app'], 'one restart once the interval has passed');
});

test('Reloader\'s pause-period annotation is a cooldown, longer than the interval, with a Normal Event', async () => {
  const h = harness();
  const key = h.add('app', { [FLEET_ANNOTATIONS.pausePeriod]: '5m' });
  const reconciler = h.make();
  await reconciler.reconcile(key);
  h.rotate();
  await reconciler.reconcile(key);
  h.clock.advance(90_000);
  h.rotate();
  const result = await reconciler.reconcile(key);
  assert.ok((result?.requeueAfterMs ?? 0) > 200_000, JSON.stringify(result));
  const event = h.events.find((e) => e.reason === 'RestartDeferred');
  assert.equal(event?.type, 'Normal');
  assert.match(event?.message ?? '', /within the pause period \(300s\)/);
});

test('the breaker pauses every start while enough recent halts are recorded; a halted workload is never restarted', async () => {
  const h = harness();
  const halt = (at: number): string => formatHalt({ at, reason: 'replacement pod x not Ready' });
  const a = h.add('a', { [FLEET_ANNOTATIONS.restartHalted]: halt(START - 60_000) });
  const b = h.add('b', { [FLEET_ANNOTATIONS.restartHalted]: halt(START - 30_000) });
  const c = h.add('c');
  const reconciler = h.make();
  for (const key of [a, b, c]) await reconciler.reconcile(key);
  h.clock.advance(1000);
  h.rotate();
  assert.equal(await reconciler.reconcile(a), undefined);
  assert.deepEqual(await reconciler.reconcile(c), { requeueAfterMs: 500 });
  assert.deepEqual(started(h.events), []);
  assert.ok(reconciler.breakerOpen);
  assert.match(h.events.find((e) => e.name === 'a')?.message ?? '', /^Secret db changed; not restarted: restarts of this workload are halted \(replacement pod x not Ready\)/);
  assert.match(h.events.find((e) => e.name === 'c' && e.reason === 'RestartPaused')?.message ?? '', /^Secret db changed; every restart is paused: 2 restarts halted/);
  assert.equal(h.applied.filter((w) => w.name !== 'c' && w.fields.restartAt !== undefined).length, 0, 'no restart recorded on a halted workload');
  // The operator removes one halt: below the threshold, the breaker closes (checked at most once a second).
  const previous = h.view.workload(b) as WorkloadSummary;
  const annotations = { ...previous.annotations };
  delete annotations[FLEET_ANNOTATIONS.restartHalted];
  h.view.workloadChanged(previous, { ...previous, annotations, resourceVersion: 'cleared' });
  h.clock.advance(1000);
  await reconciler.reconcile(c);
  assert.deepEqual(started(h.events), ['c']);
  assert.equal(reconciler.breakerOpen, false);
});

test('dry-run decides from what it would have recorded, and the API is never changed', async () => {
  const h = harness({ dryRun: true });
  const key = h.add('app');
  const reconciler = h.make();
  await reconciler.reconcile(key);
  h.clock.advance(1000);
  h.rotate();
  await reconciler.reconcile(key);
  assert.deepEqual(started(h.events), ['app'], 'the restart is decided and reported');
  assert.deepEqual(h.events.map((e) => e.reason), ['RestartStarted', 'RestartFinished']);
  assert.equal(h.view.workload(key)?.annotations[BOOKKEEPING.restartedFor], undefined, 'nothing written');
  // Nothing changed since: no second report.
  h.clock.advance(1000);
  await reconciler.reconcile(key);
  assert.equal(started(h.events).length, 1);
});

test('a replacement not Ready within the health gate halts its workload on the API server, and the halt opens the breaker', async () => {
  const h = harness({ fleet: { ...FLEET, breakerThreshold: 1 } });
  const db = h.add('db', {}, 'StatefulSet');
  const other = h.add('other');
  const reconciler = h.make();
  for (const key of [db, other]) await reconciler.reconcile(key);
  h.clock.advance(1000);
  h.rotate();
  assert.deepEqual(await reconciler.reconcile(db), { requeueAfterMs: 500 }, 'evicted db-0; its replacement is not Ready');
  h.clock.advance(299_000);
  assert.deepEqual(await reconciler.reconcile(db), { requeueAfterMs: 500 }, 'not finished while the replacement is not Ready');
  assert.equal(h.events.some((e) => e.reason === 'RestartFinished'), false);
  h.clock.advance(1000);
  assert.equal(await reconciler.reconcile(db), undefined);
  const halted = h.events.find((e) => e.reason === 'RestartHalted');
  assert.equal(halted?.type, 'Warning');
  assert.match(halted?.message ?? '', /^replacement pod db-0 not Ready 300s after its creation \(health gate 300s\): no further restart/);
  const annotation = h.view.workload(db)?.annotations[FLEET_ANNOTATIONS.restartHalted] ?? '';
  assert.equal(annotation, formatHalt({ at: START + 301_000, reason: 'replacement pod db-0 not Ready 300s after its creation (health gate 300s)' }));
  // The digests and T stay as they were: removing the halt resumes this very restart.
  assert.ok(h.view.workload(db)?.annotations[BOOKKEEPING.restartAt] !== undefined);
  // One halt is the threshold here: the other workload's restart waits.
  assert.deepEqual(await reconciler.reconcile(other), { requeueAfterMs: 500 });
  assert.deepEqual(started(h.events), ['db']);
  assert.ok(reconciler.breakerOpen);
});
