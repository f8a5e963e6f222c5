/**
 * Progress deadlines, on fake time and a fake API: 50 workloads share a
 * rotated Secret, 10 of them have a rollout that cannot progress, and only 10
 * restarts may run at once. The 10 stuck ones take the slots first; each is
 * halted at --restart-progress-deadline with a Warning naming why and a
 * metric, gives its slot back, and the other 40 restart. A stalled restart
 * whose workload moves by itself resumes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { ClusterView, workloadKey } from '../../controller/cache/cluster-view.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { eventMessage, type EventReason, type EventRecorder } from '../../controller/events.ts';
import type { Writes } from '../../controller/kube/writes.ts';
import { createMetrics } from '../../controller/metrics.ts';
import type { PodSummary, WorkloadSummary } from '../../controller/model.ts';
import { Reconciler } from '../../controller/reconciler.ts';
import { config, workload } from './support/summaries.ts';
import { appliedOwnFields } from './support/apply.ts';

const START = Date.parse('2026-01-01T00:00:00Z');
const DEADLINE_MS = 10 * 60_000;
const CHECK_MS = 5000;

const nameOf = (key: string): string => key.split('/')[2] ?? '';
const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

interface Recorded {
  readonly name: string;
  readonly type: string;
  readonly reason: EventReason;
  readonly message: string;
}

function harness() {
  const clock = new FakeClock(START);
  const view = new ClusterView();
  const events: Recorded[] = [];
  const writes: Writes = {
    async applyOwnFields(target, fields) {
      const previous = view.workload(workloadKey(target.kind, target.namespace, target.name));
      if (previous === undefined) return;
      view.workloadChanged(previous, appliedOwnFields(previous, fields, `${Number(previous.resourceVersion) + 1}`));
    },
    async patchRestartAt() {},
    async evict(pod) {
      // The StatefulSet controller's part: the pod goes, its replacement is created now.
      view.podChanged(pod, undefined);
      view.podChanged(undefined, { ...pod, uid: `${pod.uid}-next`, createdAt: clock.now(), readySince: clock.now() });
      return { outcome: 'evicted', message: '' };
    },
  };
  const recorder: EventRecorder = {
    async record(target, event) {
      events.push({ name: target.name, type: event.type, reason: event.reason, message: eventMessage(event) });
    },
  };
  const metrics = createMetrics({ queueDepth: () => [], queueOldestSeconds: () => [], restartsInProgress: () => [], cacheSizes: () => [], isLeader: () => true });
  const reconciler = new Reconciler({
    view, writes, events: recorder, clock, log: pino({ enabled: false }), inScope: () => true, metrics,
    options: { mode: 'annotated', defaultStrategy: 'evict', debounceMs: 0, checkIntervalMs: CHECK_MS, maxConcurrentRestarts: 10, blockedWarningMs: 60_000, progressDeadlineMs: DEADLINE_MS },
  });
  const add = (name: string, stuck: boolean): string => {
    const base = workload('StatefulSet', name, { secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true' }, spec: { replicas: 1 } });
    // A rolling update that cannot progress: the update revision's pod never comes up.
    const summary: WorkloadSummary = stuck ? { ...base, status: { ...base.status, currentRevision: 'r1', updateRevision: 'r2', updatedReplicas: 0 } } : base;
    view.workloadChanged(undefined, summary);
    const pod: PodSummary = { namespace: 'prod', name: `${name}-0`, uid: `uid-${name}-0`, owner: { kind: 'StatefulSet', name, uid: summary.uid }, createdAt: START - 3_600_000, deleting: false, phase: 'Running', readySince: START - 3_590_000, nodeName: 'n' };
    view.podChanged(undefined, pod);
    return workloadKey('StatefulSet', 'prod', name);
  };
  /** A workqueue on fake time: each key runs when due, requeued as the reconcile says. */
  const runUntil = async (due: Map<string, number>, end: number): Promise<void> => {
    while (due.size > 0) {
      const [key, at] = [...due.entries()].reduce((a, b) => (b[1] < a[1] ? b : a));
      if (at > end) return;
      if (at > clock.now()) clock.advance(at - clock.now());
      due.delete(key);
      const result = await reconciler.reconcile(key);
      if (result?.requeueAfterMs !== undefined) due.set(key, clock.now() + result.requeueAfterMs);
    }
  };
  return { clock, view, events, metrics, reconciler, add, runUntil };
}

test('10 of 50 restarts stuck: each is halted at the progress deadline with a Warning and a metric, and the other 40 restart', async () => {
  const h = harness();
  const stuck = Array.from({ length: 10 }, (_, i) => h.add(`a-stuck-${i}`, true));
  const healthy = Array.from({ length: 40 }, (_, i) => h.add(`b-app-${i}`, false));
  const keys = [...stuck, ...healthy];
  h.view.configChanged(undefined, config('Secret', 'db', { digest: 'v1:1', seenAt: START }));
  for (const key of keys) await h.reconciler.reconcile(key);
  h.clock.advance(1000);
  h.view.configChanged(h.view.configLookup('prod').get('Secret', 'db'), config('Secret', 'db', { digest: 'v1:2', seenAt: h.clock.now() }));
  const rotatedAt = h.clock.now();
  // Stuck first: they take every slot, as an unlucky queue order would.
  const due = new Map(keys.map((key) => [key, h.clock.now()] as const));
  await h.runUntil(due, rotatedAt + DEADLINE_MS / 2);
  const started = (): string[] => h.events.filter((e) => e.reason === 'RestartStarted').map((e) => e.name);
  assert.deepEqual(started().sort(byName), stuck.map(nameOf).sort(byName), 'the stuck ones hold all 10 slots');
  assert.equal(h.reconciler.restartingCount, 10);

  await h.runUntil(due, rotatedAt + DEADLINE_MS + 10 * 60_000);
  const halted = h.events.filter((e) => e.reason === 'RestartProgressDeadlineExceeded');
  assert.deepEqual(halted.map((e) => e.name).sort(byName), stuck.map(nameOf).sort(byName), 'one Warning per stuck restart');
  for (const event of halted) {
    assert.equal(event.type, 'Warning');
    assert.match(event.message, /made no progress for 600s \(--restart-progress-deadline\): a rolling update is in progress: 0 of 1 pods updated; it holds no restart slot now/);
  }
  const finished = h.events.filter((e) => e.reason === 'RestartFinished').map((e) => e.name).sort(byName);
  assert.deepEqual(finished, healthy.map(nameOf).sort(byName), 'the other 40 restarted');
  assert.equal(h.reconciler.restartingCount, 0, 'no slot is held');
  const metric = await h.metrics.registry.getSingleMetric('driftless_restarts_progress_deadline_exceeded_total')?.get();
  assert.deepEqual(metric?.values.map((v) => [v.labels['cause'], v.value]), [['rollout-in-progress', 10]]);
});

test('a stalled restart resumes once its workload moves by itself, and finishes', async () => {
  const h = harness();
  const key = h.add('web', true);
  h.view.configChanged(undefined, config('Secret', 'db', { digest: 'v1:1', seenAt: START }));
  await h.reconciler.reconcile(key);
  h.clock.advance(1000);
  h.view.configChanged(h.view.configLookup('prod').get('Secret', 'db'), config('Secret', 'db', { digest: 'v1:2', seenAt: h.clock.now() }));
  const due = new Map([[key, h.clock.now()]]);
  await h.runUntil(due, h.clock.now() + DEADLINE_MS + 60_000);
  assert.equal(h.events.filter((e) => e.reason === 'RestartProgressDeadlineExceeded').length, 1);
  assert.equal(h.reconciler.isRestarting(key), false);
  // Nothing moves: it stays halted, without a second Warning.
  await h.runUntil(due, h.clock.now() + DEADLINE_MS * 2);
  assert.equal(h.events.filter((e) => e.reason === 'RestartProgressDeadlineExceeded').length, 1);
  assert.equal(h.events.some((e) => e.reason === 'RestartFinished'), false);
  // The rollout completes (quota raised, node added): the restart resumes and replaces the pod.
  const previous = h.view.workload(key) as WorkloadSummary;
  h.view.workloadChanged(previous, { ...previous, status: { ...previous.status, currentRevision: 'r2', updatedReplicas: 1 }, resourceVersion: `${Number(previous.resourceVersion) + 1}` });
  await h.runUntil(due, h.clock.now() + 60_000);
  assert.equal(h.events.filter((e) => e.reason === 'RestartFinished').length, 1);
});
