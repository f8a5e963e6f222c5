/**
 * Folded Events: the reconciler words a blocked restart the same way for as
 * long as the block lasts, and the real recorder folds the rechecks into one
 * Event whose count rises — on fake time, against a scripted API client.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { ClusterView, workloadKey } from '../../controller/cache/cluster-view.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { createEventRecorder, warningEvent, type EventRecorder } from '../../controller/events.ts';
import type { KubeClient } from '../../controller/kube/client.ts';
import type { Writes } from '../../controller/kube/writes.ts';
import type { PodSummary } from '../../controller/model.ts';
import { Reconciler } from '../../controller/reconciler.ts';
import { config, workload } from './support/summaries.ts';
import { appliedOwnFields } from './support/apply.ts';

const START = Date.parse('2026-01-01T00:00:00Z');

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly body: Record<string, unknown>;
}

/** A client that takes every Event write and answers as the API server would. */
function scriptedClient(sent: Sent[], fail: (method: string) => boolean = () => false): KubeClient {
  return {
    server: 'https://scripted',
    async request(method, path, options) {
      sent.push({ method, path, body: (options?.body ?? {}) as Record<string, unknown> });
      if (fail(method)) throw new Error('refused');
      return {} as never;
    },
    async watch() {
      throw new Error('no watch here');
    },
    async close() {},
  };
}

test('a PodDisruptionBudget blocking a restart for 10 minutes of fake time gives one RestartBlocked Event, its count rising', async () => {
  const clock = new FakeClock(START);
  const view = new ClusterView();
  const sent: Sent[] = [];
  const recorder = createEventRecorder({ client: scriptedClient(sent), log: pino({ enabled: false }), now: () => clock.now(), instance: 'test', repeatMs: 10 * 60_000 });
  let occurrences = 0;
  const events: EventRecorder = {
    record(target, event) {
      if (event.reason === 'RestartBlocked') occurrences++;
      return recorder.record(target, event);
    },
  };
  const message = 'Cannot evict pod as it would violate the pod\'s disruption budget.';
  const writes: Writes = {
    async applyOwnFields(target, fields) {
      const previous = view.workload(workloadKey(target.kind, target.namespace, target.name));
      if (previous === undefined) return;
      view.workloadChanged(previous, appliedOwnFields(previous, fields, `${Number(previous.resourceVersion) + 1}`));
    },
    async patchRestartAt() {},
    async evict() {
      return { outcome: 'blocked', message };
    },
  };
  const summary = workload('StatefulSet', 'db', { secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true' }, spec: { replicas: 1 } });
  view.workloadChanged(undefined, summary);
  const pod: PodSummary = { namespace: 'prod', name: 'db-0', uid: 'uid-db-0', owner: { kind: 'StatefulSet', name: 'db', uid: summary.uid }, createdAt: START - 3_600_000, deleting: false, phase: 'Running', readySince: START - 3_590_000, nodeName: 'n' };
  view.podChanged(undefined, pod);
  view.configChanged(undefined, config('Secret', 'db', { digest: 'v1:1', seenAt: START }));
  const reconciler = new Reconciler({
    view, writes, events, clock, log: pino({ enabled: false }), inScope: () => true,
    options: { mode: 'annotated', defaultStrategy: 'evict', debounceMs: 0, checkIntervalMs: 5000, maxConcurrentRestarts: 10, blockedWarningMs: 60_000 },
  });
  const key = workloadKey('StatefulSet', 'prod', 'db');
  await reconciler.reconcile(key);
  clock.advance(1000);
  view.configChanged(view.configLookup('prod').get('Secret', 'db'), config('Secret', 'db', { digest: 'v1:2', seenAt: clock.now() }));
  let rechecks = 0;
  const end = clock.now() + 10 * 60_000;
  while (clock.now() < end) {
    const result = await reconciler.reconcile(key);
    rechecks++;
    clock.advance(result?.requeueAfterMs ?? 5000);
  }
  // One more recheck a minute later writes the count so far.
  clock.advance(60_000);
  await reconciler.reconcile(key);
  const created = sent.filter((s) => s.method === 'POST' && s.body['reason'] === 'RestartBlocked');
  assert.ok(rechecks > 100, `the restart was rechecked every few seconds (${rechecks})`);
  assert.equal(created.length, 1, 'one Event, however often the restart was rechecked');
  const name = (created[0]?.body['metadata'] as { name: string } | undefined)?.name;
  assert.match(String(created[0]?.body['message']), /^eviction of pod db-0 refused since 2026-01-01T00:00:01Z: Cannot evict pod/);
  const updates = sent.filter((s) => s.method === 'PATCH');
  assert.ok(updates.length >= 8, `the count was written as it rose (${updates.length} updates)`);
  assert.ok(updates.every((u) => u.path === `/api/v1/namespaces/prod/events/${name}`), 'every update goes to that Event');
  const counts = updates.map((u) => u.body['count'] as number);
  assert.deepEqual(counts, [...counts].sort((a, b) => a - b), 'the count only rises');
  assert.ok(occurrences > 100, `the Warning was due on every recheck (${occurrences})`);
  assert.equal(counts.at(-1), occurrences, 'the last count is every occurrence');
});

test('the recorder starts a new Event after repeatMs of quiet, and after an update the API server refused', async () => {
  const clock = new FakeClock(START);
  const sent: Sent[] = [];
  let failPatch = false;
  const events = createEventRecorder({ client: scriptedClient(sent, (method) => method === 'PATCH' && failPatch), log: pino({ enabled: false }), now: () => clock.now(), instance: 'test', repeatMs: 600_000, seriesUpdateMs: 60_000 });
  const target = workload('Deployment', 'api');
  const blocked = warningEvent('RestartBlocked', 'eviction of pod api-0 refused since 2026-01-01T00:00:00Z: no');
  await events.record(target, blocked);
  clock.advance(30_000);
  await events.record(target, blocked);
  assert.deepEqual(sent.map((s) => s.method), ['POST'], 'within seriesUpdateMs a repeat is only counted');
  clock.advance(30_000);
  await events.record(target, blocked);
  assert.deepEqual(sent.map((s) => [s.method, s.body['count']]), [['POST', 1], ['PATCH', 3]]);
  clock.advance(600_000);
  await events.record(target, blocked);
  assert.deepEqual(sent.at(-1)?.method, 'POST', 'quiet for repeatMs: a new Event');
  failPatch = true;
  clock.advance(60_000);
  await events.record(target, blocked);
  clock.advance(1000);
  await events.record(target, blocked);
  assert.deepEqual(sent.slice(-2).map((s) => s.method), ['PATCH', 'POST'], 'an update refused (the Event expired): a new Event');
  const other = warningEvent('RestartBlocked', 'eviction of pod api-1 refused since 2026-01-01T00:00:00Z: no');
  await events.record(target, other);
  assert.equal(sent.at(-1)?.method, 'POST', 'another message is another Event');
});
