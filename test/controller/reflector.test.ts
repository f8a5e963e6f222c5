import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { FakeClock, settle } from '../support/fake-clock.ts';
import type { KubeClient, RequestOptions, WatchStream } from '../../controller/kube/client.ts';
import { KubeApiError, KubeTransportError } from '../../controller/kube/errors.ts';
import { FIRST_PAGE_LIMIT, INITIAL_EVENTS_END, PAGE_TARGET_BYTES, Reachability, Reflector, type ReflectorTiming } from '../../controller/kube/reflector.ts';

type Query = Readonly<Record<string, string | number | boolean | undefined>>;

/** A list answer: a page, or an error the request throws. */
type ListStep = { readonly items: unknown[]; readonly continue?: string; readonly resourceVersion?: string } | Error;
/** A watch answer: lines, then the server closes the stream or keeps it open; or an error opening it. */
type WatchStep = { readonly lines: readonly unknown[]; readonly end: 'close' | 'hang' } | Error;

function aborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal === undefined) return;
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** A KubeClient answering from scripts; once a script is used up, requests wait until aborted. */
class ScriptedClient implements KubeClient {
  readonly server = 'https://fake';
  readonly lists: Query[] = [];
  readonly watches: Query[] = [];
  readonly #listSteps: ListStep[];
  readonly #watchSteps: WatchStep[];

  constructor(lists: ListStep[], watches: WatchStep[]) {
    this.#listSteps = lists;
    this.#watchSteps = watches;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    assert.equal(method, 'GET');
    assert.equal(path, '/api/v1/namespaces/prod/configmaps');
    this.lists.push(options.query ?? {});
    const step = this.#listSteps.shift();
    if (step === undefined) {
      await aborted(options.signal);
      throw new Error('aborted');
    }
    if (step instanceof Error) throw step;
    const page = { items: step.items, metadata: { resourceVersion: step.resourceVersion ?? '', continue: step.continue } };
    options.onResponseBytes?.(Buffer.byteLength(JSON.stringify(page)));
    return page as T;
  }

  async watch(path: string, query: Query, signal: AbortSignal): Promise<WatchStream> {
    assert.equal(path, '/api/v1/namespaces/prod/configmaps');
    this.watches.push(query);
    const step = this.#watchSteps.shift();
    if (step instanceof Error) throw step;
    const lines = step?.lines ?? [];
    const end = step?.end ?? 'hang';
    return {
      lines: (async function* () {
        for (const line of lines) yield JSON.stringify(line);
        if (end === 'hang') await aborted(signal);
      })(),
    };
  }

  async close(): Promise<void> {}
}

interface Summary {
  readonly resourceVersion: string;
  readonly value: string;
}

function cm(name: string, resourceVersion: string, value = name): unknown {
  return { metadata: { name, namespace: 'prod', resourceVersion }, data: { v: value } };
}

const TIMING: ReflectorTiming = { silenceMs: 60_000, relistMs: 3_600_000, backoffBaseMs: 1_000, backoffMaxMs: 30_000 };

type Change = readonly [key: string, previous: string | undefined, next: string | undefined];

function start(client: ScriptedClient, options: { clock?: FakeClock; onChange?: (change: Change) => void; offWhenForbidden?: boolean; pageSize?: number; reachability?: Reachability; onList?: () => void; streamingList?: boolean } = {}) {
  const clock = options.clock ?? new FakeClock(1_000_000);
  const changes: Change[] = [];
  const reflector = new Reflector<Summary>({
    name: 'configmaps in prod',
    path: '/api/v1/namespaces/prod/configmaps',
    labelSelector: 'team=a',
    pageSize: options.pageSize ?? 2,
    ...(options.offWhenForbidden === undefined ? {} : { offWhenForbidden: options.offWhenForbidden }),
    ...(options.streamingList === undefined ? {} : { streamingList: options.streamingList }),
    reduce: (raw) => {
      const object = raw as { metadata: { resourceVersion: string }; data: { v: string } };
      return { resourceVersion: object.metadata.resourceVersion, value: object.data.v };
    },
  }, {
    client,
    timing: TIMING,
    clock,
    log: pino({ enabled: false }),
    ...(options.reachability === undefined ? {} : { reachability: options.reachability }),
    ...(options.onList === undefined ? {} : { hooks: { onList: options.onList } }),
    onChange: (key, previous, next) => {
      const change: Change = [key, previous?.value, next?.value];
      changes.push(change);
      options.onChange?.(change);
    },
  });
  reflector.start();
  return { reflector, clock, changes };
}

/** Lets the loop run until `predicate` holds, within a bounded number of event-loop turns. */
async function until(description: string, predicate: () => boolean): Promise<void> {
  for (let turn = 0; turn < 200; turn++) {
    if (predicate()) return;
    await settle();
  }
  assert.fail(`never happened: ${description}`);
}

test('a paged list fills the store, marks synced, then watches from the list’s resourceVersion', async () => {
  const client = new ScriptedClient([
    { items: [cm('a', '1'), cm('b', '2')], continue: 'page-2' },
    { items: [cm('c', '3')], resourceVersion: '100' },
  ], []);
  const { reflector, changes } = start(client);
  assert.equal(reflector.synced, false);
  await reflector.whenSynced();
  assert.equal(reflector.synced, true);
  assert.deepEqual([...reflector.store.keys()], ['prod/a', 'prod/b', 'prod/c']);
  assert.deepEqual(changes, [['prod/a', undefined, 'a'], ['prod/b', undefined, 'b'], ['prod/c', undefined, 'c']]);
  assert.deepEqual(client.lists, [
    { labelSelector: 'team=a', fieldSelector: undefined, limit: 2, continue: undefined },
    { labelSelector: 'team=a', fieldSelector: undefined, limit: 2, continue: 'page-2' },
  ]);
  await until('the watch', () => client.watches.length === 1);
  assert.equal(client.watches[0]?.['resourceVersion'], '100');
  assert.equal(client.watches[0]?.['allowWatchBookmarks'], true);
  assert.equal(client.watches[0]?.['labelSelector'], 'team=a');
  await reflector.stop();
});

test('a 410 on a later page (the continue token expired) lists again from the first page, and only that list syncs', async () => {
  const expired = new KubeApiError('GET', '/api/v1/namespaces/prod/configmaps', 410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.');
  const client = new ScriptedClient([
    { items: [cm('a', '1'), cm('b', '2')], continue: 'page-2', resourceVersion: '10' },
    expired,
    // Meanwhile a changed and b was deleted; d is new.
    { items: [cm('a', '12', 'a2'), cm('c', '3')], continue: 'page-2-again', resourceVersion: '20' },
    { items: [cm('d', '18')], resourceVersion: '20' },
  ], []);
  const { reflector, changes } = start(client);
  await reflector.whenSynced();
  assert.deepEqual(client.lists.map((query) => query['continue']), [undefined, 'page-2', undefined, 'page-2-again'], 'the relist starts without a continue token');
  assert.deepEqual([...reflector.store.keys()].sort(), ['prod/a', 'prod/c', 'prod/d'], 'the whole set of the complete list, nothing of the cut-short one left over');
  assert.equal(reflector.store.get('prod/a')?.value, 'a2');
  assert.equal(reflector.stats.errors, 0, 'an expired token is routine, not an error');
  assert.deepEqual(changes, [
    ['prod/a', undefined, 'a'],
    ['prod/b', undefined, 'b'],
    ['prod/a', 'a', 'a2'],
    ['prod/c', undefined, 'c'],
    ['prod/d', undefined, 'd'],
    ['prod/b', 'b', undefined],
  ]);
  await until('the watch', () => client.watches.length === 1);
  assert.equal(client.watches[0]?.['resourceVersion'], '20', 'watched from the complete list, not the cut-short one');
  await reflector.stop();
});

test('a paged list cut short twice in a row is listed again unpaged after a backoff, and paging comes back after it', async () => {
  const expired = (): Error => new KubeApiError('GET', '/api/v1/namespaces/prod/configmaps', 410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.');
  const client = new ScriptedClient([
    { items: [cm('a', '1'), cm('b', '2')], continue: 'page-2', resourceVersion: '10' },
    expired(),
    { items: [cm('a', '1'), cm('b', '2')], continue: 'page-2-again', resourceVersion: '20' },
    expired(),
    // The unpaged list: every object in one answer.
    { items: [cm('a', '1'), cm('b', '2'), cm('c', '3')], resourceVersion: '30' },
    // After a 410 on the watch, the next list is paged again.
    { items: [cm('a', '1'), cm('b', '2')], resourceVersion: '40' },
  ], [{ lines: [{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } }], end: 'close' }]);
  const { reflector, clock } = start(client);
  await until('the second cut-short list', () => client.lists.length === 4);
  await settle();
  assert.equal(client.lists.length, 4, 'no third list before the backoff');
  assert.equal(reflector.synced, false, 'nothing is synced from a cut-short list');
  clock.advance(TIMING.backoffBaseMs);
  await reflector.whenSynced();
  assert.deepEqual(client.lists.map((query) => [query['limit'], query['continue']]), [[2, undefined], [2, 'page-2'], [2, undefined], [2, 'page-2-again'], [undefined, undefined]], 'the list after the backoff is unpaged');
  assert.equal(reflector.stats.cutShortLists, 2);
  assert.equal(reflector.stats.errors, 0, 'an expired token is routine, not an error');
  assert.deepEqual([...reflector.store.keys()].sort(), ['prod/a', 'prod/b', 'prod/c']);
  await until('the list after the watch\'s 410', () => client.lists.length === 6);
  assert.equal(client.lists[5]?.['limit'], 2, 'a complete list ends the fallback: paging again');
  await reflector.stop();
});

test('a 410 on the watch relists; the relist removes vanished objects and skips unchanged ones', async () => {
  const client = new ScriptedClient([
    { items: [cm('a', '1'), cm('b', '2')], resourceVersion: '10' },
    { items: [cm('a', '1'), cm('c', '15')], resourceVersion: '20' },
  ], [
    { lines: [{ type: 'MODIFIED', object: cm('b', '11', 'b2') }, { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } }], end: 'hang' },
  ]);
  const { reflector, changes } = start(client);
  await until('the second watch', () => client.watches.length === 2);
  assert.equal(reflector.stats.lists, 2);
  assert.equal(reflector.stats.errors, 0, 'a 410 is routine, not an error');
  assert.equal(client.watches[1]?.['resourceVersion'], '20');
  assert.deepEqual([...reflector.store.keys()].sort(), ['prod/a', 'prod/c']);
  assert.deepEqual(changes, [
    ['prod/a', undefined, 'a'],
    ['prod/b', undefined, 'b'],
    ['prod/b', 'b', 'b2'],
    ['prod/c', undefined, 'c'],
    ['prod/b', 'b2', undefined],
  ]);
  await reflector.stop();
});

test('another watch error backs off, then watches again from the last resourceVersion', async () => {
  const client = new ScriptedClient([{ items: [cm('a', '1')], resourceVersion: '10' }], [
    { lines: [{ type: 'ADDED', object: cm('b', '11') }, { type: 'ERROR', object: { kind: 'Status', code: 500, reason: 'InternalError' } }], end: 'hang' },
    new KubeApiError('WATCH', '/api/v1/namespaces/prod/configmaps', 503, 'ServiceUnavailable', ''),
  ]);
  const { reflector, clock } = start(client);
  await until('the first error', () => reflector.stats.errors === 1);
  await clock.advanceAsync(999);
  assert.equal(client.watches.length, 1, 'still backing off');
  await clock.advanceAsync(1);
  await until('the second watch', () => client.watches.length === 2);
  assert.equal(client.watches[1]?.['resourceVersion'], '11');
  // The second attempt fails to open: the backoff doubles.
  await until('the second error', () => reflector.stats.errors === 2);
  await clock.advanceAsync(1_999);
  assert.equal(client.watches.length, 2);
  await clock.advanceAsync(1);
  await until('the third watch', () => client.watches.length === 3);
  assert.equal(client.watches[2]?.['resourceVersion'], '11');
  assert.equal(reflector.stats.lists, 1, 'no relist for a non-410 error');
  await reflector.stop();
});

test('the first error status after an outage backs off from the base, not from the outage\'s grown backoff', async () => {
  const path = '/api/v1/namespaces/prod/configmaps';
  const down = (): Error => new KubeTransportError('WATCH', path, { cause: new Error('connect ECONNREFUSED') });
  // Four watches with no answer (backoffs of 1, 2, 4 and 8 s), then the server answers 429 while its storage initialises.
  const client = new ScriptedClient([{ items: [cm('a', '1')], resourceVersion: '10' }], [
    down(), down(), down(), down(),
    new KubeApiError('WATCH', path, 429, 'TooManyRequests', 'storage is (re)initializing'),
  ]);
  const { reflector, clock } = start(client);
  for (const [attempt, backoffMs] of [[1, 1_000], [2, 2_000], [3, 4_000], [4, 8_000]] as const) {
    await until(`failure ${attempt}`, () => reflector.stats.errors === attempt);
    assert.equal(reflector.failing, true);
    await clock.advanceAsync(backoffMs);
    await until(`watch ${attempt + 1}`, () => client.watches.length === attempt + 1);
  }
  await until('the 429', () => reflector.stats.errors === 5);
  await clock.advanceAsync(TIMING.backoffBaseMs - 1);
  assert.equal(client.watches.length, 5, 'still backing off');
  await clock.advanceAsync(1);
  await until('the watch after the base backoff, not after 16 s', () => client.watches.length === 6);
  assert.equal(client.watches[5]?.['resourceVersion'], '10');
  await reflector.stop();
});

test('an error status after "not installed" backs off from the base, not from the absent API\'s grown backoff', async () => {
  const path = '/api/v1/namespaces/prod/configmaps';
  const absent = (): Error => new KubeApiError('GET', path, 404, 'NotFound', 'the server could not find the requested resource');
  // Checked three times while absent (1, 2, 4 s apart), then a 403 of an API server whose RBAC cache is still filling.
  const client = new ScriptedClient([absent(), absent(), absent(), new KubeApiError('GET', path, 403, 'Forbidden', 'forbidden'), { items: [], resourceVersion: '10' }], []);
  const { reflector, clock } = start(client);
  for (const [attempt, backoffMs] of [[1, 1_000], [2, 2_000], [3, 4_000]] as const) {
    await until(`check ${attempt}`, () => reflector.stats.errors === attempt);
    await clock.advanceAsync(backoffMs);
  }
  await until('the 403', () => reflector.stats.errors === 4);
  assert.equal(reflector.failing, true);
  assert.equal(reflector.failure, 'the API server answered 403 Forbidden', 'what it met, from the status alone (a hub\'s down Event)');
  await clock.advanceAsync(TIMING.backoffBaseMs - 1);
  assert.equal(client.lists.length, 4, 'still backing off');
  await clock.advanceAsync(1);
  await until('listed after the base backoff, not after 8 s', () => client.lists.length === 5 && !reflector.failing);
  await reflector.stop();
});

test('the first reflector the API server answers again wakes the others of that server from their backoff', async () => {
  const path = '/api/v1/namespaces/prod/configmaps';
  const down = (): Error => new KubeTransportError('WATCH', path, { cause: new Error('connect ECONNREFUSED') });
  const reachability = new Reachability();
  const waiting = new ScriptedClient([{ items: [cm('a', '1')], resourceVersion: '10' }], [down(), down()]);
  const { reflector, clock } = start(waiting, { reachability });
  await until('the first failure', () => reflector.stats.errors === 1);
  await clock.advanceAsync(TIMING.backoffBaseMs);
  await until('the second failure', () => reflector.stats.errors === 2);
  // In a backoff of 2 s when another reflector of the same server gets an answer, half a second into it.
  await clock.advanceAsync(500);
  assert.equal(waiting.watches.length, 2, 'still backing off');
  const other = start(new ScriptedClient([{ items: [cm('b', '1')], resourceVersion: '20' }], []), { clock, reachability });
  await until('the other reflector listed', () => other.reflector.synced);
  await until('woken: watching again at once, not 1.5 s later', () => waiting.watches.length === 3);
  assert.equal(reflector.failing, false);
  await Promise.all([reflector.stop(), other.reflector.stop()]);
});

test('a BOOKMARK advances the resourceVersion without a change', async () => {
  const client = new ScriptedClient([{ items: [cm('a', '1')], resourceVersion: '10' }], [
    { lines: [{ type: 'BOOKMARK', object: { kind: 'ConfigMap', metadata: { resourceVersion: '50' } } }], end: 'close' },
  ]);
  const { reflector, changes } = start(client);
  await until('the second watch', () => client.watches.length === 2);
  assert.equal(client.watches[1]?.['resourceVersion'], '50');
  assert.deepEqual(changes, [['prod/a', undefined, 'a']]);
  assert.equal(reflector.stats.errors, 0);
  await reflector.stop();
});

test('a 404 on the list means absent and synced; a later list clears absent; only the list that completed counts as one (driftless_relists_total)', async () => {
  const client = new ScriptedClient([
    new KubeApiError('GET', '/api/v1/namespaces/prod/configmaps', 404, 'NotFound', 'the server could not find the requested resource'),
    { items: [cm('a', '1')], resourceVersion: '10' },
  ], []);
  let lists = 0;
  const { reflector, clock } = start(client, { onList: () => lists++ });
  await reflector.whenSynced();
  assert.equal(reflector.absent, true);
  assert.equal(reflector.synced, true);
  assert.equal(reflector.store.size, 0);
  assert.equal(client.watches.length, 0, 'nothing to watch');
  await clock.advanceAsync(1_000);
  await until('the second list', () => client.lists.length === 2 && client.watches.length === 1);
  assert.equal(reflector.absent, false);
  assert.deepEqual([...reflector.store.keys()], ['prod/a']);
  assert.equal(lists, 1, 'the check that found the API absent is not a list');
  await reflector.stop();
});

test('a throwing handler does not stop the loop, and the store is updated all the same', async () => {
  const client = new ScriptedClient([{ items: [cm('a', '1'), cm('b', '2')], resourceVersion: '10' }], [
    { lines: [{ type: 'ADDED', object: cm('c', '11') }, { type: 'DELETED', object: cm('a', '12') }], end: 'hang' },
  ]);
  const { reflector, changes } = start(client, {
    onChange: () => {
      throw new Error('handler bug');
    },
  });
  await until('every event', () => changes.length === 4);
  assert.deepEqual([...reflector.store.keys()].sort(), ['prod/b', 'prod/c']);
  assert.equal(reflector.synced, true);
  assert.equal(reflector.stats.errors, 0);
  assert.equal(client.watches.length, 1);
  await reflector.stop();
});

test('stop() ends the loop, in a watch or in a backoff', async () => {
  const watching = new ScriptedClient([{ items: [], resourceVersion: '10' }], []);
  const first = start(watching);
  await until('the watch', () => watching.watches.length === 1);
  await first.reflector.stop();
  await first.clock.advanceAsync(TIMING.relistMs * 2);
  assert.equal(watching.watches.length, 1);
  assert.equal(watching.lists.length, 1);

  const failing = new ScriptedClient([new KubeApiError('GET', '/api/v1/namespaces/prod/configmaps', 500, 'InternalError', '')], []);
  const second = start(failing);
  await until('the error', () => second.reflector.stats.errors === 1);
  await second.reflector.stop();
  await second.clock.advanceAsync(TIMING.backoffMaxMs * 2);
  assert.equal(failing.lists.length, 1);
  assert.equal(second.clock.pendingTimers, 0, 'no timer left armed');
  assert.equal(second.reflector.synced, false, 'a failed list never counts as synced');
  await second.reflector.whenSynced();
});

test('the first page asks for a few objects; later pages are sized by the bytes per object seen, up to the page size', async () => {
  const big = (name: string): unknown => cm(name, '1', 'x'.repeat(64 * 1024));
  const small = (name: string): unknown => cm(name, '1');
  const client = new ScriptedClient([
    { items: Array.from({ length: FIRST_PAGE_LIMIT }, (_, index) => big(`b${index}`)), continue: 'page-2' },
    { items: [small('s')], resourceVersion: '100' },
  ], []);
  const { reflector } = start(client, { pageSize: 100 });
  await reflector.whenSynced();
  // An unknown collection's first page is bounded by count (a page of 100 Secrets of 1 MiB would be ~140 MB of JSON)...
  assert.equal(client.lists[0]?.['limit'], FIRST_PAGE_LIMIT);
  // ...and the next one by PAGE_TARGET_BYTES (512 KiB) over the little more than 64 KiB per object of the first.
  assert.equal(PAGE_TARGET_BYTES, 512 * 1024);
  assert.equal(client.lists[1]?.['limit'], 7);
});

test('an optional watch refused (403) is synced, empty and off for good, with one Warning; a required one keeps retrying', async () => {
  const forbidden = (): KubeApiError => new KubeApiError('GET', '/api/v1/namespaces/prod/configmaps', 403, 'Forbidden', 'configmaps is forbidden');
  const warnings: string[] = [];
  const client = new ScriptedClient([forbidden(), { items: [cm('a', '1')], resourceVersion: '10' }], []);
  const clock = new FakeClock(1_000_000);
  const reflector = new Reflector<Summary>({
    name: 'configmaps in prod',
    path: '/api/v1/namespaces/prod/configmaps',
    pageSize: 2,
    offWhenForbidden: true,
    reduce: (raw) => ({ resourceVersion: (raw as { metadata: { resourceVersion: string } }).metadata.resourceVersion, value: '' }),
  }, {
    client,
    timing: TIMING,
    clock,
    log: pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) }),
    onChange: () => {},
  });
  reflector.start();
  await reflector.whenSynced();
  assert.equal(reflector.disabled, true);
  assert.equal(reflector.store.size, 0);
  await clock.advanceAsync(120_000);
  await settle();
  assert.equal(client.lists.length, 1, 'never listed again');
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? '', /"level":40.*not allowed to list; this optional watch is off/);
  await reflector.stop();

  const required = new ScriptedClient([forbidden(), { items: [cm('a', '1')], resourceVersion: '10' }], []);
  const second = start(required);
  await second.clock.advanceAsync(1_000);
  await until('the retried list', () => required.lists.length === 2);
  assert.equal(second.reflector.disabled, false);
  await second.reflector.stop();
});

test('a watch that closes at once with no event is opened again only after a growing backoff, not in a tight loop', async () => {
  const client = new ScriptedClient([{ items: [cm('a', '1')], resourceVersion: '10' }], [
    { lines: [], end: 'close' },
    { lines: [], end: 'close' },
    { lines: [{ type: 'ADDED', object: cm('b', '11') }], end: 'close' },
  ]);
  const { reflector, clock } = start(client);
  await until('the first short watch', () => reflector.stats.shortWatches === 1);
  assert.equal(client.watches.length, 1);
  await clock.advanceAsync(TIMING.backoffBaseMs - 1);
  assert.equal(client.watches.length, 1, 'still backing off after the first short watch');
  await clock.advanceAsync(1);
  await until('the second short watch', () => reflector.stats.shortWatches === 2);
  await clock.advanceAsync(2 * TIMING.backoffBaseMs - 1);
  assert.equal(client.watches.length, 2, 'the backoff doubled');
  await clock.advanceAsync(1);
  await until('the third watch', () => client.watches.length >= 3);
  assert.equal(reflector.stats.errors, 0, 'a short watch is not an error');
  assert.equal(reflector.stats.lists, 1, 'and no reason to relist');
  await reflector.stop();
});

test('no periodic relist by default: with relistMs 0 the only list is the first', async () => {
  const client = new ScriptedClient([{ items: [cm('a', '1')], resourceVersion: '10' }], []);
  const clock = new FakeClock(1_000_000);
  const reflector = new Reflector<Summary>({
    name: 'configmaps in prod',
    path: '/api/v1/namespaces/prod/configmaps',
    pageSize: 2,
    reduce: (raw) => ({ resourceVersion: (raw as { metadata: { resourceVersion: string } }).metadata.resourceVersion, value: '' }),
  }, { client, timing: { ...TIMING, relistMs: 0 }, clock, log: pino({ enabled: false }), onChange: () => undefined });
  reflector.start();
  await until('the watch', () => client.watches.length === 1);
  await clock.advanceAsync(24 * 3_600_000);
  assert.equal(client.lists.length, 1);
  assert.equal(client.lists[0]?.['resourceVersion'], undefined, 'a consistent list, not resourceVersion=0');
  await reflector.stop();
});

test('failing from a failed list until the API server answers again, whether with a page or with "not installed"', async () => {
  const refused = (): Error => new Error('connect ECONNREFUSED 127.0.0.1:6443');
  const notInstalled = (): Error => new KubeApiError('GET', '/api/v1/namespaces/prod/configmaps', 404, 'NotFound', 'the server could not find the requested resource');
  // An optional API: unreachable, then absent (the cluster's API server came back without the CRD), then served.
  const client = new ScriptedClient([refused(), notInstalled(), { items: [cm('a', '1')], resourceVersion: '10' }], []);
  const { reflector, clock } = start(client);
  await until('the first error', () => reflector.stats.errors === 1);
  assert.equal(reflector.failing, true, 'unreachable');
  assert.equal(reflector.failure, 'no answer from the API server', 'an error without a code: its message is never said');
  await clock.advanceAsync(1_000);
  await until('the second list', () => client.lists.length === 2 && reflector.absent);
  assert.equal(reflector.failing, false, 'a 404 is an answer: the cluster is up, the API absent');
  assert.equal(reflector.failure, undefined, 'nothing failing, nothing said');
  await clock.advanceAsync(2_000);
  await until('the third list', () => client.lists.length === 3 && client.watches.length === 1);
  assert.equal(reflector.failing, false);
  await reflector.stop();
});

/** The bookmark that closes a streaming list's initial events, at `resourceVersion`. */
function initialEventsEnd(resourceVersion: string): unknown {
  return { type: 'BOOKMARK', object: { kind: 'ConfigMap', metadata: { resourceVersion, annotations: { [INITIAL_EVENTS_END]: 'true' } } } };
}

const added = (object: unknown): unknown => ({ type: 'ADDED', object });

test('a streaming list: one watch with sendInitialEvents and no LIST; synced at the closing bookmark, not before; the stream goes on as the watch', async () => {
  const client = new ScriptedClient([], [
    { lines: [added(cm('a', '7')), added(cm('b', '3'))], end: 'close' },
    { lines: [added(cm('a', '7')), added(cm('b', '3')), initialEventsEnd('20'), { type: 'MODIFIED', object: cm('a', '21', 'a2') }], end: 'hang' },
  ]);
  let lists = 0;
  const { reflector, changes } = start(client, { streamingList: true, onList: () => lists++ });
  // The first stream ends before its bookmark: not synced, and its objects' versions are none to watch from.
  await until('the paged list after the cut stream', () => client.lists.length === 1);
  assert.equal(reflector.synced, false, 'a stream that never said it was whole does not sync');
  assert.equal(reflector.stats.streamedLists, 0);
  assert.equal(client.watches[0]?.['resourceVersion'], undefined, 'a consistent read: no resourceVersion');
  assert.deepEqual(client.watches[0], { labelSelector: 'team=a', fieldSelector: undefined, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true, timeoutSeconds: client.watches[0]?.['timeoutSeconds'] });
  await reflector.stop();
  assert.deepEqual(changes, [['prod/a', undefined, 'a'], ['prod/b', undefined, 'b']]);

  const streamed = new ScriptedClient([], [
    { lines: [added(cm('a', '7')), added(cm('b', '3')), initialEventsEnd('20'), { type: 'MODIFIED', object: cm('a', '21', 'a2') }], end: 'hang' },
  ]);
  const second = start(streamed, { streamingList: true, onList: () => lists++ });
  await second.reflector.whenSynced();
  await until('the event after the bookmark', () => second.changes.length === 3);
  assert.equal(streamed.lists.length, 0, 'no LIST request');
  assert.equal(streamed.watches.length, 1, 'one request: the list and the watch');
  assert.deepEqual(second.changes, [['prod/a', undefined, 'a'], ['prod/b', undefined, 'b'], ['prod/a', 'a', 'a2']]);
  assert.equal(second.reflector.stats.streamedLists, 1);
  assert.equal(second.reflector.stats.lists, 1);
  assert.equal(lists, 1, 'the streamed list counts as the one list (driftless_relists_total); the cut one did not');
  await second.reflector.stop();
});

test('a stream cut before its bookmark: one paged list, then the watch from its resourceVersion; the next relist streams again', async () => {
  const client = new ScriptedClient([{ items: [cm('a', '1')], resourceVersion: '10' }], [
    { lines: [added(cm('a', '1'))], end: 'close' },
    { lines: [{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } }], end: 'hang' },
    { lines: [added(cm('a', '1')), added(cm('c', '12')), initialEventsEnd('30')], end: 'hang' },
  ]);
  const { reflector, changes } = start(client, { streamingList: true });
  await until('the stream after the 410', () => client.watches.length === 3);
  assert.equal(client.watches[1]?.['resourceVersion'], '10', 'the watch after the paged list');
  assert.equal(client.watches[2]?.['sendInitialEvents'], true, 'paged once only: the relist after the 410 streams');
  await until('the streamed relist', () => reflector.stats.streamedLists === 1);
  assert.equal(client.lists.length, 1);
  assert.deepEqual(changes, [['prod/a', undefined, 'a'], ['prod/c', undefined, 'c']], 'a unchanged (same resourceVersion): not reduced again');
  await reflector.stop();
});

test('an API server that refuses the streaming list (422, WatchList off) is listed in pages from then on, after a 410 too', async () => {
  const refused = new KubeApiError('WATCH', '/api/v1/namespaces/prod/configmaps', 422, 'Invalid', 'sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled');
  const client = new ScriptedClient([
    { items: [cm('a', '1')], resourceVersion: '10' },
    { items: [cm('a', '1'), cm('b', '11')], resourceVersion: '12' },
  ], [
    refused,
    { lines: [{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } }], end: 'hang' },
  ]);
  const { reflector } = start(client, { streamingList: true });
  await reflector.whenSynced();
  assert.equal(reflector.stats.errors, 0, 'a refusal is an answer, not a failure to back off from');
  await until('the watch after the relist', () => client.watches.length === 3);
  assert.equal(client.lists.length, 2);
  assert.equal(client.watches[2]?.['resourceVersion'], '12');
  assert.equal(client.watches[2]?.['sendInitialEvents'], undefined);
  assert.deepEqual([...reflector.store.keys()], ['prod/a', 'prod/b']);
  await reflector.stop();
});

test('a streamed relist removes the objects its initial events did not name', async () => {
  const client = new ScriptedClient([], [
    { lines: [added(cm('a', '1')), added(cm('b', '2')), initialEventsEnd('10'), { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } }], end: 'hang' },
    { lines: [added(cm('b', '2')), initialEventsEnd('20')], end: 'hang' },
  ]);
  const { reflector, changes } = start(client, { streamingList: true });
  await until('the second stream whole', () => reflector.stats.streamedLists === 2);
  assert.deepEqual([...reflector.store.keys()], ['prod/b']);
  assert.deepEqual(changes, [['prod/a', undefined, 'a'], ['prod/b', undefined, 'b'], ['prod/a', 'a', undefined]]);
  await reflector.stop();
});
