/**
 * The restart record (ADR 0007): a copy of a workload's bookkeeping keyed by
 * its UID, so that a Replace=true sync (kubectl replace) that removes the
 * annotations loses no restart — between a rotation and its restart, in the
 * middle of one, and across a controller restart. On fake time, with the real
 * record store against a scripted API that answers as the API server would
 * (and delivers its writes to the record cache, as the watch does).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { ClusterView, workloadKey } from '../../controller/cache/cluster-view.ts';
import { BOOKKEEPING } from '../../core/index.ts';
import { FakeClock } from '../support/fake-clock.ts';
import type { EventRecorder } from '../../controller/events.ts';
import type { KubeClient } from '../../controller/kube/client.ts';
import { unfenced } from '../../controller/kube/fence.ts';
import type { Writes } from '../../controller/kube/writes.ts';
import type { PodSummary, WorkloadSummary } from '../../controller/model.ts';
import { Reconciler } from '../../controller/reconciler.ts';
import { isRestartRecord, recordHolds, recordManifest, recordName, reduceRecord, type RestartRecord } from '../../controller/record/record.ts';
import { RecordCache, createRecordStore, type RecordStore } from '../../controller/record/store.ts';
import { config, workload } from './support/summaries.ts';

const START = Date.parse('2026-01-01T00:00:00Z');

test('a hub\'s record names its cluster: by label and name, read back only as that cluster\'s (ADR 0019)', () => {
  const target = { kind: 'Deployment' as const, namespace: 'prod', name: 'api', uid: 'u-1' };
  const manifest = recordManifest(target, { restartedFor: '{}', restartAt: undefined }, 'driftless', undefined, 'c0ffee');
  const metadata = manifest['metadata'] as { name: string; labels: Record<string, string> };
  assert.equal(metadata.name, 'driftless-record-c0ffee-u-1');
  assert.equal(metadata.labels['driftless.dev/record-cluster'], 'c0ffee');
  assert.equal(reduceRecord(manifest, 'c0ffee')?.name, 'driftless-record-c0ffee-u-1');
  assert.equal(reduceRecord(manifest, 'beef00'), undefined, 'another cluster\'s pipeline never takes it for its own');
  assert.equal(reduceRecord(manifest), undefined, 'nor does a controller that is no hub');
  assert.equal(reduceRecord(recordManifest(target, { restartedFor: '{}', restartAt: undefined }, 'driftless'), 'c0ffee'), undefined, 'a single cluster\'s record is no hub cluster\'s');
});

test('reduceRecord reads back what recordManifest writes, and nothing that is not a record', () => {
  const target = { kind: 'Deployment' as const, namespace: 'prod', name: 'api', uid: 'u-1' };
  const manifest = recordManifest(target, { restartedFor: '{"Secret/db":"v1:a"}', restartAt: '2026-01-01T00:00:01Z' }, 'driftless');
  assert.deepEqual(reduceRecord({ ...manifest, metadata: { ...(manifest['metadata'] as object), resourceVersion: '5' } }), {
    name: recordName('u-1'), resourceVersion: '5', workload: target, restartedFor: '{"Secret/db":"v1:a"}', restartAt: '2026-01-01T00:00:01Z',
  });
  assert.equal(reduceRecord({ metadata: { name: 'driftless-record-u-2' }, data: { ...(manifest['data'] as object) } }), undefined, 'a name that is not its UID\'s');
  assert.equal(reduceRecord({ metadata: { name: recordName('u-1') }, data: { kind: 'Pod', namespace: 'prod', name: 'x', uid: 'u-1', restartedFor: '{}' } }), undefined);
  assert.equal(reduceRecord({ metadata: { name: recordName('u-1') } }), undefined);
  assert.equal(isRestartRecord(manifest), true, 'the config watch drops records: no workload can select one');
  assert.equal(isRestartRecord({ metadata: { name: 'app', labels: { app: 'x' } } }), false);
  assert.equal(isRestartRecord({}), false);
  // The git strategy's record rides along (ADR 0016): a Replace=true sync of its own commit must not lose it.
  const withWriteBack = recordManifest(target, { restartedFor: '{}', restartAt: '2026-01-01T00:00:01Z', writeBack: '{"state":"committed"}' }, 'driftless');
  const read = reduceRecord(withWriteBack);
  assert.equal(read?.writeBack, '{"state":"committed"}');
  assert.equal(recordHolds(read, { restartedFor: '{}', restartAt: '2026-01-01T00:00:01Z' }), false, 'a record without the write-back is not the same');
  assert.equal(recordHolds(read, { restartedFor: '{}', restartAt: '2026-01-01T00:00:01Z', writeBack: '{"state":"committed"}' }), true);
});

/** A scripted API for the records: writes land in the cache, as the record watch would deliver them. */
function recordApi(cache: RecordCache, calls: string[]): KubeClient {
  let version = 100;
  const stored = new Map<string, RestartRecord>();
  return {
    server: 'https://scripted',
    async request(method, path, options) {
      calls.push(`${method} ${path}`);
      const name = path.split('/').at(-1) ?? '';
      if (method === 'DELETE') {
        const previous = stored.get(name);
        stored.delete(name);
        cache.changed(previous, undefined);
        return {} as never;
      }
      const body = options?.body as { metadata: Record<string, unknown> };
      const next = reduceRecord({ ...body, metadata: { ...body.metadata, resourceVersion: String(++version) } });
      assert.ok(next !== undefined, 'the store writes well-formed records');
      if (method === 'PUT') assert.equal(body.metadata['resourceVersion'], stored.get(next.name)?.resourceVersion, 'an update names the version it replaces');
      cache.changed(stored.get(next.name), next);
      stored.set(next.name, next);
      return {} as never;
    },
    async watch() {
      throw new Error('no watch here');
    },
    async close() {},
  };
}

/** A StatefulSet `web` of 3 whose pods the API replaces on eviction; `replace()` is a kubectl replace of it. */
function harness(options: { records: boolean; debounceMs?: number }) {
  const clock = new FakeClock(START);
  const view = new ClusterView();
  const cache = new RecordCache();
  const recordCalls: string[] = [];
  const recordClient = recordApi(cache, recordCalls);
  const records: RecordStore | undefined = options.records ? createRecordStore({ client: recordClient, cache, namespace: 'driftless', log: pino({ enabled: false }), fence: unfenced(), timeoutMs: 5_000, watches: (namespace) => namespace === 'prod' }) : undefined;
  const evicted: string[] = [];
  let version = 1;
  /** While set, the watch does not deliver the controller's applies (they wait here), as when it lags. */
  let held: (() => void)[] | undefined;
  const writes: Writes = {
    async applyOwnFields(target, fields) {
      if (held !== undefined) {
        held.push(() => void writes.applyOwnFields(target, fields));
        // The workload's controller updates its status while the apply is in flight: a newer version without it.
        const current = view.workload(workloadKey(target.kind, target.namespace, target.name));
        if (current !== undefined) view.workloadChanged(current, { ...current, resourceVersion: String(++version) });
        return;
      }
      const previous = view.workload(workloadKey(target.kind, target.namespace, target.name));
      if (previous === undefined || previous.uid !== target.uid) return;
      const annotations: Record<string, string> = { ...previous.annotations, [BOOKKEEPING.restartedFor]: fields.restartedFor };
      if (fields.restartAt !== undefined) annotations[BOOKKEEPING.restartAt] = fields.restartAt;
      view.workloadChanged(previous, { ...previous, annotations, resourceVersion: String(++version) });
    },
    async patchRestartAt() {},
    async evict(pod) {
      evicted.push(pod.name);
      view.podChanged(pod, undefined);
      view.podChanged(undefined, { ...pod, uid: `${pod.uid}-next`, createdAt: clock.now(), readySince: clock.now() });
      return { outcome: 'evicted', message: '' };
    },
  };
  const events: EventRecorder = { async record() {} };
  const make = (): Reconciler => new Reconciler({
    view, writes, events, clock, log: pino({ enabled: false }), inScope: () => true,
    ...(records === undefined ? {} : { records }),
    options: { mode: 'annotated', defaultStrategy: 'evict', debounceMs: options.debounceMs ?? 0, checkIntervalMs: 500, maxConcurrentRestarts: 10, blockedWarningMs: 60_000 },
  });
  const summary = workload('StatefulSet', 'web', { secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true' }, spec: { replicas: 3 } });
  view.workloadChanged(undefined, summary);
  for (let i = 0; i < 3; i++) {
    const pod: PodSummary = { namespace: 'prod', name: `web-${i}`, uid: `uid-web-${i}`, owner: { kind: 'StatefulSet', name: 'web', uid: summary.uid }, createdAt: START - 3_600_000, deleting: false, phase: 'Running', readySince: START - 3_590_000, nodeName: 'n' };
    view.podChanged(undefined, pod);
  }
  view.configChanged(undefined, config('Secret', 'db', { digest: 'v1:1', seenAt: START }));
  const key = workloadKey('StatefulSet', 'prod', 'web');
  const rotate = (): void => {
    clock.advance(1000);
    view.configChanged(view.configLookup('prod').get('Secret', 'db'), config('Secret', 'db', { digest: 'v1:2', seenAt: clock.now() }));
  };
  /** PUT of the workload as Git renders it: same UID, the controller's annotations gone. */
  const replace = (): void => {
    const previous = view.workload(key) as WorkloadSummary;
    view.workloadChanged(previous, { ...previous, annotations: { 'reloader.stakater.com/auto': 'true' }, resourceVersion: String(++version) });
  };
  /** Reconciles as the queue would, until the restart is over (bounded). */
  const settle = async (reconciler: Reconciler, steps = 100): Promise<void> => {
    for (let i = 0; i < steps; i++) {
      const result = await reconciler.reconcile(key);
      if (result?.requeueAfterMs === undefined && !reconciler.isRestarting(key)) return;
      clock.advance(result?.requeueAfterMs ?? 500);
    }
  };
  const holdWrites = (): void => {
    held = [];
  };
  const deliverWrites = (): void => {
    const pending = held ?? [];
    held = undefined;
    for (const write of pending) write();
  };
  /** A status update of the workload (its controller's), a newer version without the controller's writes. */
  const statusUpdate = (): void => {
    const previous = view.workload(key) as WorkloadSummary;
    view.workloadChanged(previous, { ...previous, resourceVersion: String(++version) });
  };
  return { clock, view, cache, recordClient, recordCalls, evicted, key, make, rotate, replace, settle, summary, holdWrites, deliverWrites, statusUpdate };
}

test('kubectl replace in the middle of a restart: the annotations come back from the record and every old pod is replaced once', async () => {
  const h = harness({ records: true });
  const reconciler = h.make();
  await h.settle(reconciler);
  assert.equal(h.cache.get(h.summary.uid)?.restartedFor, '{"Secret/db":"v1:1"}', 'first sight writes the record too');
  h.rotate();
  await reconciler.reconcile(h.key);
  h.clock.advance(500);
  await reconciler.reconcile(h.key);
  assert.ok(h.evicted.length > 0 && h.evicted.length < 3, `the restart is under way (${h.evicted.join(', ')})`);
  const restartAt = h.view.workload(h.key)?.annotations[BOOKKEEPING.restartAt];
  h.replace();
  assert.equal(h.view.workload(h.key)?.annotations[BOOKKEEPING.restartAt], undefined);
  await h.settle(reconciler);
  assert.deepEqual(h.evicted, ['web-2', 'web-1', 'web-0'], 'each old pod once, highest ordinal first');
  assert.equal(h.view.workload(h.key)?.annotations[BOOKKEEPING.restartAt], restartAt, 'the same T, restored');
  assert.equal(h.view.workload(h.key)?.annotations[BOOKKEEPING.restartedFor], '{"Secret/db":"v1:2"}');
});

test('a watch that lags behind the restore (a status update first): the record is never taken for first sight, and the restart goes on', async () => {
  const h = harness({ records: true });
  const reconciler = h.make();
  await h.settle(reconciler);
  h.rotate();
  await reconciler.reconcile(h.key);
  h.clock.advance(500);
  await reconciler.reconcile(h.key);
  const record = h.cache.get(h.summary.uid);
  assert.ok(record?.restartAt !== undefined, 'the record holds T');
  h.replace();
  h.holdWrites();
  for (let i = 0; i < 5; i++) {
    await reconciler.reconcile(h.key);
    h.statusUpdate();
    h.clock.advance(500);
  }
  assert.deepEqual(h.cache.get(h.summary.uid), record, 'the record still holds the restart, untouched');
  h.deliverWrites();
  await h.settle(reconciler);
  assert.deepEqual([...h.evicted].sort(), ['web-0', 'web-1', 'web-2'], 'each old pod once');
  assert.equal(h.view.workload(h.key)?.annotations[BOOKKEEPING.restartAt], record?.restartAt);
});

test('a Replace=true sync right after a rotation, before the restart began, also across a controller restart: the restart happens', async () => {
  for (const restartController of [false, true]) {
    const h = harness({ records: true });
    const reconciler = h.make();
    await h.settle(reconciler);
    h.rotate();
    h.replace();
    // The controller sees the rotation and the replace before it reconciles (or a new process starts then).
    await h.settle(restartController ? h.make() : reconciler);
    assert.deepEqual([...h.evicted].sort(), ['web-0', 'web-1', 'web-2'], `every old pod replaced (controller restarted: ${restartController})`);
    assert.equal(h.cache.get(h.summary.uid)?.restartedFor, '{"Secret/db":"v1:2"}');
  }
});

test('without the record (the defect this fixes) the same replace loses the restart: first sight, nothing replaced', async () => {
  const h = harness({ records: false });
  await h.settle(h.make());
  h.rotate();
  h.replace();
  await h.settle(h.make());
  assert.deepEqual(h.evicted, []);
});

test('records are written only when they differ, and forgotten with their workload; a workload created anew is first sight', async () => {
  const h = harness({ records: true });
  const reconciler = h.make();
  await h.settle(reconciler);
  await h.settle(reconciler);
  assert.deepEqual(h.recordCalls, [`POST /api/v1/namespaces/driftless/configmaps`], 'one write, however often reconciled');
  // Deleted and created again (kubectl replace --force, Helm --force): a new UID, fresh pods.
  h.view.workloadChanged(h.view.workload(h.key), undefined);
  const recreated = { ...h.summary, uid: 'uid-new', resourceVersion: '900' };
  h.view.workloadChanged(undefined, recreated);
  await h.settle(reconciler);
  assert.ok(h.recordCalls.includes(`DELETE /api/v1/namespaces/driftless/configmaps/${recordName(h.summary.uid)}`), 'the old UID\'s record is deleted');
  assert.equal(h.cache.get(h.summary.uid), undefined);
  assert.equal(h.cache.get('uid-new')?.restartedFor, '{"Secret/db":"v1:1"}', 'the new object is recorded at first sight');
  assert.deepEqual(h.evicted, []);
});

test('another install beside this one (same namespace, other namespaces watched) leaves its records alone: a Replace=true sync inside the debounce of a rotation still restarts', async () => {
  const h = harness({ records: true, debounceMs: 2000 });
  const reconciler = h.make();
  await h.settle(reconciler);
  // A second controller whose records share the namespace `driftless`, watching `team-b` only: its record watch
  // shows it this install's records, and it reconciles their keys (that is how a deleted workload's record goes).
  const theirs = new Reconciler({
    view: new ClusterView(),
    writes: { async applyOwnFields() {}, async patchRestartAt() {}, async evict() { return { outcome: 'evicted', message: '' }; } },
    events: { async record() {} },
    clock: h.clock,
    log: pino({ enabled: false }),
    inScope: () => true,
    records: createRecordStore({ client: h.recordClient, cache: h.cache, namespace: 'driftless', log: pino({ enabled: false }), fence: unfenced(), timeoutMs: 5_000, watches: (namespace) => namespace === 'team-b' }),
    options: { mode: 'annotated', defaultStrategy: 'evict', debounceMs: 2000, checkIntervalMs: 500, maxConcurrentRestarts: 10, blockedWarningMs: 60_000 },
  });
  await theirs.reconcile(h.key);
  assert.equal(h.cache.get(h.summary.uid)?.restartedFor, '{"Secret/db":"v1:1"}', 'the idle workload\'s record is still there');
  assert.deepEqual(h.recordCalls.filter((call) => call.startsWith('DELETE')), [], 'no record deleted by the other install');
  // Idle a minute, then the rotation (seen: debounce), and the replace 200 ms later, inside the debounce.
  h.clock.advance(60_000);
  h.rotate();
  assert.deepEqual(await reconciler.reconcile(h.key), { requeueAfterMs: 2000 });
  h.clock.advance(200);
  h.replace();
  await h.settle(reconciler);
  assert.deepEqual([...h.evicted].sort(), ['web-0', 'web-1', 'web-2'], 'every old pod replaced: the rotation was not taken for the baseline');
});

test('a record of a workload gone from a watched namespace is still deleted; one of an unwatched namespace is not', async () => {
  const cache = new RecordCache();
  const calls: string[] = [];
  const store = createRecordStore({ client: recordApi(cache, calls), cache, namespace: 'driftless', log: pino({ enabled: false }), fence: unfenced(), timeoutMs: 5_000, watches: (namespace) => namespace === 'prod' });
  for (const namespace of ['prod', 'team-b']) {
    const target = workload('Deployment', 'api', { namespace, uid: `uid-${namespace}` });
    await store.write(target, { restartedFor: '{}', restartAt: undefined });
  }
  assert.equal(store.hasStale('Deployment', 'prod', 'api', undefined), true, 'deleted from a watched namespace');
  assert.equal(store.hasStale('Deployment', 'team-b', 'api', undefined), false, 'not ours to judge: another install\'s, or a namespace no longer watched');
  await store.forget('Deployment', 'team-b', 'api', undefined);
  await store.forget('Deployment', 'prod', 'api', undefined);
  assert.deepEqual(calls.filter((call) => call.startsWith('DELETE')), [`DELETE /api/v1/namespaces/driftless/configmaps/${recordName('uid-prod')}`]);
  assert.ok(cache.get('uid-team-b') !== undefined);
});
