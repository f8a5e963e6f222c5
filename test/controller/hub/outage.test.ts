/**
 * When a hub says a cluster is down and back (ADR 0027): the pure rule (outage.ts) on scripted samples, its
 * words (no credential, no userinfo; a failure said from its code, never its message), and the sampler on a
 * fake clock, leader only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { inClusterDestination } from '../../../controller/hub/cluster-secret.ts';
import { clusterId, type Destination } from '../../../controller/hub/destinations.ts';
import type { HubObject } from '../../../controller/hub/hub-event.ts';
import { startOutageEvents } from '../../../controller/hub/outage-events.ts';
import { FORGET_MISSING_MS, decideOutages, displayServer, outageEvent, type ClusterSample, type Outage, type OutageNotice } from '../../../controller/hub/outage.ts';
import { KubeApiError, KubeConfigError, KubeTransportError, failureWords } from '../../../controller/kube/errors.ts';
import { FakeClock } from '../../support/fake-clock.ts';

const GRACE = 15_000;

/** Runs the rule over samples taken at the given times; returns every notice with the time it was said. */
function run(script: readonly (readonly [number, readonly ClusterSample[]])[]): { at: number; notice: OutageNotice }[] {
  let outages: ReadonlyMap<string, Outage> = new Map();
  const said: { at: number; notice: OutageNotice }[] = [];
  for (const [at, samples] of script) {
    const decision = decideOutages(outages, samples, at, GRACE);
    outages = decision.outages;
    for (const notice of decision.notices) said.push({ at, notice });
  }
  return said;
}

const down = (why = 'listing or watching secrets failed: connection refused'): ClusterSample => ({ server: 'https://a', name: 'a', whyDown: why });
const up: ClusterSample = { server: 'https://a', name: 'a', whyDown: undefined };
const other = (whyDown?: string): ClusterSample => ({ server: 'https://b', name: 'b', whyDown });

test('a blip shorter than the grace says nothing', () => {
  assert.deepEqual(run([[0, [up]], [1000, [down()]], [14_000, [down()]], [15_000, [up]], [40_000, [up]]]), []);
});

/** Samples every second from `from` to `to` (inclusive). */
function every(from: number, to: number, sample: ClusterSample[]): [number, ClusterSample[]][] {
  const script: [number, ClusterSample[]][] = [];
  for (let t = from; t <= to; t += 1000) script.push([t, sample]);
  return script;
}

test('an outage is one Warning once the grace has passed, however long it lasts, and one Normal once up for the grace', () => {
  assert.deepEqual(run([[0, [up]], ...every(1000, 120_000, [down()]), ...every(121_000, 200_000, [up])]), [
    { at: 16_000, notice: { kind: 'down', server: 'https://a', name: 'a', why: 'listing or watching secrets failed: connection refused', forMs: 15_000 } },
    { at: 136_000, notice: { kind: 'back', server: 'https://a', name: 'a', downForMs: 120_000 } },
  ]);
});

test('an API server coming back and failing again (429, 403 while it starts) is still the same outage', () => {
  const flapping = [...every(1000, 30_000, [down()]), [31_000, [up]], ...every(32_000, 40_000, [down('the API server answered 429 TooManyRequests')]), ...every(41_000, 60_000, [up])] as [number, ClusterSample[]][];
  assert.deepEqual(run(flapping).map(({ at, notice }) => `${at} ${notice.kind}`), ['16000 down', '56000 back']);
});

test('a cluster up now and then while mostly down is warned about all the same', () => {
  const script: [number, ClusterSample[]][] = [];
  for (let t = 0; t < 30_000; t += 1000) script.push([t, [t % 5000 === 0 ? up : down()]]);
  assert.deepEqual(run(script).map(({ at, notice }) => `${at} ${notice.kind}`), ['16000 down'], 'its outage started at its first down sample');
});

test('the Warning says what failed when it is said; a changed cause in the same outage says nothing more', () => {
  const said = run([[0, [down('its first lists have not completed')]], [15_000, [down()]], [30_000, [down('listing or watching secrets failed: the API server answered 403 Forbidden')]]]);
  assert.equal(said.length, 1);
  assert.equal(said[0]?.notice.kind === 'down' && said[0].notice.why, 'listing or watching secrets failed: connection refused');
});

test('a cluster missing from the samples while it reconnects keeps its outage: no second Warning, and its Normal', () => {
  const said = run([[0, [down()]], [20_000, [down()]], [21_000, []], [30_000, []], [31_000, [down()]], [50_000, [down()]], [51_000, [up]], [66_000, [up]]]);
  assert.deepEqual(said.map(({ at, notice }) => `${at} ${notice.kind}`), ['20000 down', '66000 back']);
  assert.equal(said[1]?.notice.kind === 'back' && said[1].notice.downForMs, 51_000, 'the outage is one, from its start');
});

test('a cluster removed while down says nothing more; a minute later its outage is forgotten', () => {
  const said = run([[0, [down()]], [20_000, [down()]], [21_000, []], [21_000 + FORGET_MISSING_MS, []], [90_000, [up]], [91_000, [down()]], [100_000, [down()]]]);
  assert.deepEqual(said.map(({ at, notice }) => `${at} ${notice.kind}`), ['20000 down'], 'back under the same server: a new cluster, up, with no outage to end');
});

test('clusters are judged apart', () => {
  const said = run([[0, [down(), other()]], [10_000, [down(), other('x')]], [20_000, [down(), other('x')]], [25_000, [up, other('x')]], [26_000, [up, other()]], [40_000, [up, other()]], [41_000, [up, other()]]]);
  assert.deepEqual(said.map(({ at, notice }) => `${at} ${notice.name} ${notice.kind}`), ['20000 a down', '25000 b down', '40000 a back', '41000 b back']);
});

test('the Events name the cluster and its server without userinfo, a query or a token', () => {
  const warning = outageEvent({ kind: 'down', server: 'https://admin:s3cret@spoke.example:6443/k8s?token=abc#x', name: 'prod', why: 'connection refused', forMs: 15_400 });
  assert.equal(warning.type, 'Warning');
  assert.equal(warning.reason, 'ClusterUnreachable');
  assert.equal(warning.message, 'Cluster prod (https://spoke.example:6443/k8s) has been down for Driftless for 15s: connection refused. Its restarts wait until it is back; the other clusters go on.');
  const normal = outageEvent({ kind: 'back', server: 'https://spoke.example', name: 'prod', downForMs: 192_000 });
  assert.deepEqual(normal, { type: 'Normal', reason: 'ClusterReachable', message: 'Cluster prod (https://spoke.example) is back after 3m12s: its watches are listed again and its restarts resume.' });
  assert.equal(displayServer('not a url'), 'an unparsable server URL');
});

test('a failure is said from its status or code, never from its message', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:6443 https://user:pw@x'), { code: 'ECONNREFUSED' });
  assert.equal(failureWords(new KubeTransportError('GET', '/api/v1/secrets', { cause: refused })), 'connection refused');
  const tls = Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' });
  assert.equal(failureWords(new KubeTransportError('GET', '/x', { cause: new Error('fetch failed', { cause: tls }) })), 'TLS verification failed (CERT_HAS_EXPIRED)');
  assert.equal(failureWords(new KubeTransportError('GET', '/x', { cause: new DOMException('timed out', 'TimeoutError') })), 'no answer within the request deadline');
  assert.equal(failureWords(new KubeTransportError('GET', '/x', { cause: new Error('Bearer abc leaked?') })), 'no answer from the API server');
  assert.equal(failureWords(new KubeApiError('GET', '/api/v1/secrets', 403, 'Forbidden', 'secrets is forbidden: User "system:serviceaccount:x" cannot list')), 'the API server answered 403 Forbidden');
  assert.equal(failureWords(new KubeConfigError('exec plugin printed token abc')), 'its credentials could not be obtained (the controller\'s log says why)');
});

function destination(server: string, name: string, secret: string): Destination {
  return { server, name, id: clusterId(server), namespaces: undefined, clusterResources: true, cluster: { ...inClusterDestination(), secret, server, name }, inCluster: false, secretUid: `uid-${secret}` };
}

test('the sampler: only the leader speaks, a replica that becomes leader starts from no outage, and stop() ends it', async () => {
  const clock = new FakeClock(1_000_000);
  const a = destination('https://a', 'a', 'cluster-a');
  let whyDown: string | undefined;
  let leader = false;
  const written: { about: HubObject; reason: string }[] = [];
  const sampler = startOutageEvents({
    clusters: () => [{ destination: a, whyDown }],
    isLeader: () => leader,
    about: (d) => ({ kind: 'Secret', namespace: 'argocd', name: d.cluster.secret, uid: d.secretUid }),
    write: async (about, event) => {
      written.push({ about, reason: event.reason });
    },
    clock,
    log: pino({ level: 'silent' }),
    graceMs: GRACE,
  });
  whyDown = 'listing or watching secrets failed: connection refused';
  await clock.advanceAsync(30_000);
  assert.equal(written.length, 0, 'a standby says nothing');
  leader = true;
  await clock.advanceAsync(GRACE - 1000);
  assert.equal(written.length, 0, 'the new leader waits out its own grace');
  await clock.advanceAsync(2000);
  assert.deepEqual(written, [{ about: { kind: 'Secret', namespace: 'argocd', name: 'cluster-a', uid: 'uid-cluster-a' }, reason: 'ClusterUnreachable' }]);
  await clock.advanceAsync(60_000);
  assert.equal(written.length, 1, 'once per outage');
  whyDown = undefined;
  await clock.advanceAsync(GRACE);
  assert.equal(written.length, 1, 'not back before it has been up for the grace');
  await clock.advanceAsync(1000);
  assert.deepEqual(written.map((w) => w.reason), ['ClusterUnreachable', 'ClusterReachable']);
  sampler.stop();
  whyDown = 'x';
  await clock.advanceAsync(60_000);
  assert.equal(written.length, 2, 'nothing after stop()');
});
