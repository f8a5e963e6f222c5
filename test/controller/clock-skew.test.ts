/**
 * T on the API server's clock (ADR 0007): the write time of new content from
 * managedFields, the offset of this clock learnt from fresh writes, and the
 * reconciler with its clock 5 s ahead of or behind the API server's — no pod
 * missed, none doubled, on fake time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { formatTime } from '../../controller/bookkeeping.ts';
import { dataWriteTime, reduceConfig } from '../../controller/cache/reduce.ts';
import { ClusterView, workloadKey } from '../../controller/cache/cluster-view.ts';
import { BOOKKEEPING } from '../../core/index.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { ClockSkew } from '../../controller/clock-skew.ts';
import { compareDigests } from '../../controller/decide.ts';
import type { EventRecorder } from '../../controller/events.ts';
import type { Writes } from '../../controller/kube/writes.ts';
import type { ConfigSummary, PodSummary } from '../../controller/model.ts';
import { Reconciler } from '../../controller/reconciler.ts';
import { ANNOTATION_TRACKING, workload } from './support/summaries.ts';
import { appliedOwnFields } from './support/apply.ts';

/** The API server's time of the rotation (a whole second, as managedFields writes it). */
const WRITE = Date.parse('2026-01-01T00:10:00Z');

function rawSecret(value: string, managedFields: unknown[] | undefined, version: string): Record<string, unknown> {
  return {
    metadata: { name: 'db', namespace: 'prod', uid: 'uid-db', resourceVersion: version, ...(managedFields === undefined ? {} : { managedFields }) },
    data: { password: Buffer.from(value).toString('base64') },
  };
}

const entry = (manager: string, time: number, fields: Record<string, unknown>): Record<string, unknown> => ({ manager, operation: 'Update', apiVersion: 'v1', time: formatTime(time), fieldsType: 'FieldsV1', fieldsV1: fields });

test('dataWriteTime: the newest time of a manager owning the payload; any manager\'s without one; nothing without managedFields', () => {
  const fields = [
    entry('kubectl', WRITE - 60_000, { 'f:data': { 'f:password': {} } }),
    entry('eso', WRITE, { 'f:data': { 'f:password': {} } }),
    entry('labeller', WRITE + 30_000, { 'f:metadata': { 'f:labels': {} } }),
  ];
  assert.equal(dataWriteTime(fields), WRITE, 'a later label edit is not the content\'s write');
  assert.equal(dataWriteTime([entry('labeller', WRITE + 30_000, { 'f:metadata': {} })]), WRITE + 30_000);
  assert.equal(dataWriteTime(undefined), undefined);
  assert.equal(dataWriteTime([{ manager: 'x' }]), undefined);
});

test('reduceConfig keeps the write time while the content stays, and takes the new one when it changes', () => {
  const context = { key: undefined, tracking: ANNOTATION_TRACKING, now: WRITE + 7000 };
  const first = reduceConfig('Secret', rawSecret('a', [entry('eso', WRITE - 60_000, { 'f:data': {} })], '1'), undefined, context);
  assert.equal(first.changedAt, WRITE - 60_000);
  const relabelled = reduceConfig('Secret', rawSecret('a', [entry('eso', WRITE - 60_000, { 'f:data': {} }), entry('l', WRITE - 1000, { 'f:metadata': {} })], '2'), first, context);
  assert.equal(relabelled.changedAt, WRITE - 60_000, 'same content: same write');
  const rotated = reduceConfig('Secret', rawSecret('b', [entry('eso', WRITE, { 'f:data': {} })], '3'), relabelled, context);
  assert.equal(rotated.changedAt, WRITE);
  assert.equal(reduceConfig('Secret', rawSecret('c', undefined, '4'), rotated, context).changedAt, undefined);
});

test('compareDigests: T is the second after the API server\'s write, whatever this clock said at first sight', () => {
  const verdict = compareDigests({ 'Secret/db': 'v1:a' }, { 'Secret/db': 'v1:b' }, () => WRITE - 4900, WRITE, 0, () => WRITE);
  assert.deepEqual(verdict, { action: 'restart', restartAt: WRITE + 1000, changed: ['Secret/db'] });
  const local = compareDigests({ 'Secret/db': 'v1:a' }, { 'Secret/db': 'v1:b' }, () => WRITE + 200, WRITE + 300, 0);
  assert.deepEqual(local, { action: 'restart', restartAt: WRITE + 1000, changed: ['Secret/db'] }, 'without managedFields: first sight, rounded up');
});

test('ClockSkew: the smallest arrival − write time of the window bounds the offset from above; none: 0', () => {
  const skew = new ClockSkew(60_000);
  assert.deepEqual(skew.reading(WRITE), { offsetUpperMs: 0, samples: 0 });
  skew.observe(WRITE - 3_600_000, WRITE + 5300); // an old pod of a first list: a large sample
  skew.observe(WRITE, WRITE + 5300); // a fresh write, delivered 300 ms after this clock's +5 s
  skew.observe(WRITE + 1000, WRITE + 6900);
  assert.deepEqual(skew.reading(WRITE + 7000), { offsetUpperMs: 5300, samples: 3 });
  assert.equal(skew.apiNow(WRITE + 7000), WRITE + 1700, 'never ahead of the API server\'s clock (WRITE + 2000 by then)');
  assert.equal(skew.reading(WRITE + 5300 + 60_001).samples, 1, 'samples leave the window');
  const behind = new ClockSkew();
  behind.observe(WRITE, WRITE - 4800);
  assert.equal(behind.reading(WRITE).offsetUpperMs, -4800, 'a sample below zero: this clock is behind');
});

/**
 * A Deployment-like StatefulSet of 2 with one pod from before the write (must be replaced) and one a sync
 * created 3 s after it (must be left alone), the controller's clock `offsetMs` off the API server's.
 */
async function restartWithOffset(offsetMs: number): Promise<{ evicted: string[]; restartAt: string | undefined }> {
  const local = (apiTime: number): number => apiTime + offsetMs;
  const clock = new FakeClock(local(WRITE - 120_000));
  const view = new ClusterView();
  const skew = new ClockSkew();
  const evicted: string[] = [];
  const writes: Writes = {
    async applyOwnFields(target, fields) {
      const previous = view.workload(workloadKey(target.kind, target.namespace, target.name));
      if (previous === undefined) return;
      view.workloadChanged(previous, appliedOwnFields(previous, fields, `${Number(previous.resourceVersion) + 1}`));
    },
    async patchRestartAt() {},
    async evict(pod) {
      evicted.push(pod.name);
      view.podChanged(pod, undefined);
      // The replacement is created by the API server, on its clock, Ready at once.
      const apiNow = clock.now() - offsetMs;
      view.podChanged(undefined, { ...pod, uid: `${pod.uid}-next`, createdAt: Math.floor(apiNow / 1000) * 1000, readySince: apiNow });
      skew.observe(Math.floor(apiNow / 1000) * 1000, clock.now());
      return { outcome: 'evicted', message: '' };
    },
  };
  const events: EventRecorder = { async record() {} };
  const reconciler = new Reconciler({
    view, writes, events, clock, log: pino({ enabled: false }), inScope: () => true, skew,
    options: { mode: 'annotated', defaultStrategy: 'evict', debounceMs: 0, checkIntervalMs: 500, maxConcurrentRestarts: 10, blockedWarningMs: 60_000 },
  });
  const summary = workload('StatefulSet', 'web', { secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true' }, spec: { replicas: 2 } });
  view.workloadChanged(undefined, summary);
  const pod = (name: string, createdAt: number): PodSummary => ({ namespace: 'prod', name, uid: `uid-${name}`, owner: { kind: 'StatefulSet', name: 'web', uid: summary.uid }, createdAt, deleting: false, phase: 'Running', readySince: createdAt + 500, nodeName: 'n' });
  view.podChanged(undefined, pod('web-0', WRITE - 2000));
  const context = { key: undefined, tracking: ANNOTATION_TRACKING, now: clock.now() };
  const before: ConfigSummary = reduceConfig('Secret', rawSecret('old', [entry('eso', WRITE - 600_000, { 'f:data': {} })], '1'), undefined, context);
  view.configChanged(undefined, before);
  const key = workloadKey('StatefulSet', 'prod', 'web');
  await reconciler.reconcile(key);
  // The rotation, delivered 100 ms after the API server wrote it; a sync's pod 3 s later.
  clock.advance(local(WRITE + 100) - clock.now());
  const rotated = reduceConfig('Secret', rawSecret('new', [entry('eso', WRITE, { 'f:data': {} })], '2'), before, { ...context, now: clock.now() });
  skew.observe(WRITE, clock.now());
  view.configChanged(before, rotated);
  clock.advance(3000);
  view.podChanged(undefined, pod('web-1', WRITE + 3000));
  skew.observe(WRITE + 3000, clock.now());
  for (let i = 0; i < 200 && reconciler.isRestarting(key) !== false || i === 0; i++) {
    const result = await reconciler.reconcile(key);
    clock.advance(result?.requeueAfterMs ?? 500);
  }
  return { evicted, restartAt: view.workload(key)?.annotations[BOOKKEEPING.restartAt] };
}

for (const offsetMs of [-5000, 0, 5000]) {
  test(`a controller clock ${offsetMs} ms off the API server's: the pod from before the write is replaced once, the sync's pod after it is left alone`, async () => {
    const { evicted, restartAt } = await restartWithOffset(offsetMs);
    assert.equal(restartAt, formatTime(WRITE + 1000), 'T is the second after the write, on the API server\'s clock');
    assert.deepEqual(evicted, ['web-0']);
  });
}
