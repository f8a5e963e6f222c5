/**
 * The cluster Secret `registerSpoke` writes is the one Argo CD's `argocd cluster add` writes: the
 * name from `URIToSecretName` (checked against Argo CD's own test vectors, util/db/cluster_test.go)
 * and the data `clusterToSecret` encodes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterSecret, clusterSecretName, fnv1a32 } from './spokes.ts';

test('fnv1a32 is Go’s hash/fnv New32a', () => {
  assert.equal(fnv1a32(''), 0x81_1c_9d_c5);
  assert.equal(fnv1a32('a'), 0xe4_0c_29_2c);
  assert.equal(fnv1a32('foobar'), 0xbf_9c_f9_68);
});

test('clusterSecretName matches Argo CD’s URIToSecretName', () => {
  assert.equal(clusterSecretName('http://foo'), 'cluster-foo-752281925');
  assert.equal(
    clusterSecretName('http://thelongestdomainnameintheworld.argocd-project.com:3000'),
    'cluster-thelongestdomainnameintheworld.argocd-project.com-2721640553',
  );
  assert.equal(clusterSecretName('http://[fe80::1ff:fe23:4567:890a]'), 'cluster-fe80--1ff-fe23-4567-890a-3877258831');
  assert.equal(clusterSecretName('http://[fe80::1ff:fe23:4567:890a]:8000'), 'cluster-fe80--1ff-fe23-4567-890a-664858999');
  assert.equal(clusterSecretName('http://[FE80::1FF:FE23:4567:890A]:8000'), 'cluster-fe80--1ff-fe23-4567-890a-682802007');
});

test('clusterSecret encodes what clusterToSecret writes, and only the fields that are set', () => {
  const decode = (secret: ReturnType<typeof clusterSecret>): Record<string, string> =>
    Object.fromEntries(
      Object.entries((secret['data'] ?? {}) as Record<string, string>).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
    );
  const minimal = clusterSecret({ name: 'spoke-a', server: 'https://127.0.0.1:6443/', config: { bearerToken: 'not-a-real-token' } });
  assert.equal(minimal.metadata?.namespace, 'argocd');
  assert.equal(minimal.metadata?.labels?.['argocd.argoproj.io/secret-type'], 'cluster');
  assert.equal(minimal.metadata?.annotations?.['managed-by'], 'argocd.argoproj.io');
  assert.deepEqual(decode(minimal), { server: 'https://127.0.0.1:6443', name: 'spoke-a', config: '{"bearerToken":"not-a-real-token"}' });

  const full = clusterSecret({
    name: 'spoke-b',
    server: 'https://127.0.0.1:7443',
    config: {},
    namespaces: ['shop', 'web'],
    clusterResources: true,
    project: 'team',
    shard: 2,
    labels: { env: 'test' },
  });
  assert.deepEqual(decode(full), {
    server: 'https://127.0.0.1:7443',
    name: 'spoke-b',
    config: '{}',
    namespaces: 'shop,web',
    shard: '2',
    clusterResources: 'true',
    project: 'team',
  });
  assert.equal(full.metadata?.labels?.['env'], 'test');
});
