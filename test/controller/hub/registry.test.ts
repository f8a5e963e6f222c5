import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { inClusterDestination } from '../../../controller/hub/cluster-secret.ts';
import { clusterId, type Destination } from '../../../controller/hub/destinations.ts';
import { ClusterRegistry, type RunningCluster } from '../../../controller/hub/registry.ts';

const log = pino({ level: 'silent' });

function destination(server: string, name: string, token = 't1', namespaces?: string[]): Destination & { token: string } {
  // The connection is the fake `token` here (`same` compares it); the cluster is never connected to.
  return { server, name, id: clusterId(server), namespaces, clusterResources: true, cluster: inClusterDestination(), inCluster: false, token };
}

/** A registry whose pipelines are entries in a log: `start a`, `stop a`; a stop resolves when `release` says. */
function harness(options: { failOn?: string; owns?: (d: Destination) => boolean; forget?: true } = {}) {
  const events: string[] = [];
  const pendingStops: (() => void)[] = [];
  let holdStops = false;
  const registry = new ClusterRegistry({
    log,
    same: (a, b) => (a as Destination & { token: string }).token === (b as Destination & { token: string }).token && a.name === b.name,
    ...(options.owns === undefined ? {} : { owns: options.owns }),
    ...(options.forget === undefined ? {} : {
      forget: async (name: string) => {
        events.push(`forget ${name}`);
      },
    }),
    start(d): RunningCluster {
      if (d.name === options.failOn) throw new Error('exec plugin not found');
      const token = (d as Destination & { token: string }).token;
      events.push(`start ${d.name} ${token}`);
      return {
        up: () => true,
        whyDown: () => undefined,
        stop: (removed) => new Promise<void>((resolve) => {
          const done = (): void => {
            events.push(`stop ${d.name} ${token}${removed ? '' : ' (shutdown)'}`);
            resolve();
          };
          if (holdStops) pendingStops.push(done);
          else done();
        }),
      };
    },
  });
  return {
    registry, events,
    hold: () => {
      holdStops = true;
    },
    release: () => {
      holdStops = false;
      for (const done of pendingStops.splice(0)) done();
    },
  };
}

const map = (...ds: Destination[]): Map<string, Destination> => new Map(ds.map((d) => [d.server, d]));

test('a cluster starts when it appears, keeps running while nothing it depends on changes, and stops when it goes', async () => {
  const h = harness();
  await h.registry.update(map(destination('https://a', 'a'), destination('https://b', 'b')));
  assert.deepEqual(h.events, ['start a t1', 'start b t1']);
  await h.registry.update(map(destination('https://a', 'a'), destination('https://b', 'b')));
  assert.deepEqual(h.events, ['start a t1', 'start b t1'], 'the same destinations again: nothing restarts');
  await h.registry.update(map(destination('https://b', 'b')));
  assert.deepEqual(h.events.slice(2), ['stop a t1']);
  assert.deepEqual(h.registry.states(), [{ name: 'b', server: 'https://b', up: true }]);
});

test('new credentials stop the old pipeline before the new one starts, and other clusters wait for neither', async () => {
  const h = harness();
  await h.registry.update(map(destination('https://a', 'a'), destination('https://b', 'b')));
  h.hold();
  const change = h.registry.update(map(destination('https://a', 'a', 't2'), destination('https://b', 'b'), destination('https://c', 'c')));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(h.events.slice(2), ['start c t1'], 'c starts while a is still stopping; a\'s new pipeline waits');
  h.release();
  await change;
  assert.deepEqual(h.events.slice(2), ['start c t1', 'stop a t1', 'start a t2']);
});

test('changes of one cluster are applied in order, however fast they come', async () => {
  const h = harness();
  await h.registry.update(map(destination('https://a', 'a')));
  h.hold();
  const first = h.registry.update(map(destination('https://a', 'a', 't2')));
  const second = h.registry.update(map(destination('https://a', 'a', 't3')));
  h.release();
  await Promise.all([first, second]);
  // The second change waits for the first; the first's stop was held, the second's not.
  assert.deepEqual(h.events, ['start a t1', 'stop a t1', 'start a t2', 'stop a t2', 'start a t3']);
});

test('a cluster that cannot connect is down, and the others run', async () => {
  const h = harness({ failOn: 'bad' });
  await h.registry.update(map(destination('https://bad', 'bad'), destination('https://ok', 'ok')));
  assert.deepEqual(h.registry.states(), [{ name: 'bad', server: 'https://bad', up: false }, { name: 'ok', server: 'https://ok', up: true }]);
  assert.deepEqual(h.registry.health().map((c) => [c.destination.name, c.whyDown]), [
    ['bad', 'its connection could not be built from the cluster Secret (the controller\'s log says why)'],
    ['ok', undefined],
  ], 'why it is down names no error message (it may hold a field of the Secret)');
});

test('only the clusters this replica owns run; close stops every one and starts none after', async () => {
  const h = harness({ owns: (d) => d.name !== 'theirs' });
  await h.registry.update(map(destination('https://mine', 'mine'), destination('https://theirs', 'theirs')));
  assert.deepEqual(h.events, ['start mine t1']);
  await h.registry.close();
  await h.registry.update(map(destination('https://other', 'other')));
  assert.deepEqual(h.events, ['start mine t1', 'stop mine t1 (shutdown)'], 'at shutdown, in-flight work may finish');
  assert.deepEqual(h.registry.states(), []);
});

test('a cluster\'s name is forgotten (its metric series removed) when it leaves or is renamed, not when it reconnects', async () => {
  const h = harness({ forget: true });
  await h.registry.update(map(destination('https://a', 'a'), destination('https://b', 'b')));
  await h.registry.update(map(destination('https://a', 'a', 't2'), destination('https://b', 'b')));
  assert.deepEqual(h.events.slice(2), ['stop a t1', 'start a t2'], 'a reconnect keeps the name\'s series');
  await h.registry.update(map(destination('https://a', 'a2', 't2'), destination('https://b', 'b')));
  assert.deepEqual(h.events.slice(4), ['stop a t2', 'forget a', 'start a2 t2'], 'renamed: the old name\'s series go before the new name starts');
  await h.registry.update(map(destination('https://a', 'a2', 't2')));
  assert.deepEqual(h.events.slice(7), ['stop b t1', 'forget b']);
  await h.registry.close();
  assert.deepEqual(h.events.slice(9), ['stop a2 t2 (shutdown)'], 'nothing is forgotten at shutdown');
});

test('a name two servers share is forgotten only when neither runs', async () => {
  const h = harness({ forget: true });
  await h.registry.update(map(destination('https://a', 'same'), destination('https://b', 'same')));
  await h.registry.update(map(destination('https://b', 'same')));
  assert.deepEqual(h.events.slice(2), ['stop same t1'], 'the other server still reports under the name');
  await h.registry.update(map());
  assert.deepEqual(h.events.slice(3), ['stop same t1', 'forget same']);
});

test('a Lease lost while a start waits behind a stop starts nothing; a hand-over stops as at shutdown, a lost Lease as a removal', async () => {
  const owned = new Set(['a', 'b']);
  const h = harness({ owns: (d) => owned.has(d.name) });
  await h.registry.update(map(destination('https://a', 'a'), destination('https://b', 'b')));
  h.hold();
  // a reconnects (its stop held), and before its new pipeline can start, its Lease is lost.
  const change = h.registry.update(map(destination('https://a', 'a', 't2'), destination('https://b', 'b')));
  owned.delete('a');
  h.release();
  await change;
  assert.deepEqual(h.events.slice(2), ['stop a t1'], 'no pipeline started for a cluster no longer owned');
  owned.delete('b');
  await h.registry.stopServer('https://b', 'handed over');
  owned.add('a');
  await h.registry.update(map(destination('https://a', 'a', 't2'), destination('https://b', 'b')));
  owned.delete('a');
  await h.registry.stopServer('https://a', 'lease lost');
  assert.deepEqual(h.events.slice(3), ['stop b t1 (shutdown)', 'start a t2', 'stop a t2']);
});
