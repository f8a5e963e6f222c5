import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readClusterSecret, sameConnection } from '../../../controller/hub/cluster-secret.ts';
import { clusterId, desiredClusters, sameDestination, type WatchedClusterSecret } from '../../../controller/hub/destinations.ts';

const b64 = (text: string): string => Buffer.from(text).toString('base64');

/** A cluster Secret as the API returns it (base64 data), through the real reader. */
function watched(name: string, data: Record<string, string>, resourceVersion = '1'): WatchedClusterSecret {
  const raw = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'argocd', uid: `uid-${name}`, resourceVersion }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])) };
  return { result: readClusterSecret(raw), uid: `uid-${name}`, resourceVersion };
}

const spoke = (name: string, server: string, config: object = { bearerToken: 'tok' }, extra: Record<string, string> = {}) => watched(name, { name, server, config: JSON.stringify(config), ...extra });

test('every accepted cluster Secret by server, and the implicit in-cluster destination', () => {
  const { destinations, refused } = desiredClusters([spoke('b', 'https://b.example'), spoke('a', 'https://a.example/', { bearerToken: 't' }, { namespaces: 'x, y' })], true);
  assert.deepEqual([...destinations.keys()].sort(), ['https://a.example', 'https://b.example', 'https://kubernetes.default.svc']);
  assert.deepEqual(destinations.get('https://a.example')?.namespaces, ['x', 'y']);
  assert.equal(destinations.get('https://a.example')?.id, clusterId('https://a.example'));
  assert.match(clusterId('https://a.example'), /^[0-9a-f]{12}$/);
  const inCluster = destinations.get('https://kubernetes.default.svc');
  assert.equal(inCluster?.name, 'in-cluster');
  assert.equal(inCluster?.inCluster, true);
  assert.deepEqual(refused, []);
});

test('a Secret for the in-cluster server replaces the implicit one, and is refused when argocd-cm turns in-cluster off', () => {
  const own = spoke('mine', 'https://kubernetes.default.svc', {}, { namespaces: 'apps' });
  const on = desiredClusters([own], true).destinations.get('https://kubernetes.default.svc');
  assert.equal(on?.name, 'mine');
  assert.deepEqual(on?.namespaces, ['apps']);
  assert.equal(on?.inCluster, true);
  const off = desiredClusters([own, spoke('a', 'https://a.example')], false);
  assert.deepEqual([...off.destinations.keys()], ['https://a.example'], 'no in-cluster destination at all');
  assert.deepEqual(off.refused.map((r) => [r.secret, r.reason]), [['mine', 'in-cluster-disabled']]);
});

test('a refused Secret and a second Secret for one server are refused with their reason; the first by name wins', () => {
  const { destinations, refused } = desiredClusters([
    spoke('z-dup', 'https://a.example', { bearerToken: 'other' }),
    spoke('eks', 'https://eks.example', { awsAuthConfig: { clusterName: 'eks' } }, {}),
    spoke('a-first', 'https://a.example'),
  ], true);
  assert.equal(destinations.get('https://a.example')?.cluster.secret, 'a-first');
  assert.deepEqual(refused.map((r) => [r.secret, r.reason, r.uid]), [['eks', 'aws-auth', 'uid-eks'], ['z-dup', 'duplicate-server', 'uid-z-dup']]);
  assert.ok(refused.every((r) => !r.detail.includes('other')), 'no credential in a refusal');
});

test('a cluster stays as it runs unless its connection or its scope changes', () => {
  const one = (token: string, extra: Record<string, string> = {}) => desiredClusters([spoke('a', 'https://a.example', { bearerToken: token }, extra)], false).destinations.get('https://a.example');
  const base = one('t1');
  assert.ok(base !== undefined);
  assert.equal(sameDestination(base, one('t1') ?? base, sameConnection), true, 'a new resourceVersion alone changes nothing');
  assert.equal(sameDestination(base, one('t2') ?? base, sameConnection), false, 'a rotated token reconnects');
  assert.equal(sameDestination(base, one('t1', { namespaces: 'x' }) ?? base, sameConnection), false, 'new namespaces restart the pipeline');
  assert.equal(sameDestination(one('t1', { namespaces: 'x,y' }) ?? base, one('t1', { namespaces: 'x, y' }) ?? base, sameConnection), true);
});
