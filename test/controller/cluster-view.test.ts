import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterView, parseWorkloadKey, workloadKey } from '../../controller/cache/cluster-view.ts';
import type { ProviderPodStatusSummary } from '../../controller/cache/reduce.ts';
import type { PodSummary } from '../../controller/model.ts';
import { config, workload } from './support/summaries.ts';

const WEB = workloadKey('Deployment', 'prod', 'web');

test('workloadKey and parseWorkloadKey round-trip', () => {
  assert.equal(WEB, 'Deployment/prod/web');
  assert.deepEqual(parseWorkloadKey(WEB), { kind: 'Deployment', namespace: 'prod', name: 'web' });
});

test('the dependents index follows reference changes and deletion', () => {
  const view = new ClusterView();
  const v1 = workload('Deployment', 'web', { secrets: ['db'] });
  assert.deepEqual(view.workloadChanged(undefined, v1), [WEB]);
  assert.deepEqual(view.dependentsOf('prod', 'Secret', 'db'), [WEB]);
  assert.deepEqual(view.dependentsOf('staging', 'Secret', 'db'), [], 'namespaced');
  const v2 = workload('Deployment', 'web', { secrets: ['db-v2'], configMaps: ['app'] });
  view.workloadChanged(v1, v2);
  assert.deepEqual(view.dependentsOf('prod', 'Secret', 'db'), []);
  assert.deepEqual(view.dependentsOf('prod', 'Secret', 'db-v2'), [WEB]);
  assert.deepEqual(view.dependentsOf('prod', 'ConfigMap', 'app'), [WEB]);
  assert.equal(view.workload(WEB), v2);
  view.workloadChanged(v2, undefined);
  assert.deepEqual(view.dependentsOf('prod', 'Secret', 'db-v2'), []);
  assert.equal(view.workload(WEB), undefined);
  assert.equal(view.workloadCount, 0);
});

test('a Rollout borrowing a Deployment depends on what the Deployment references', () => {
  const view = new ClusterView();
  view.workloadChanged(undefined, workload('Deployment', 'web', { secrets: ['db'] }));
  const rollout = workload('Rollout', 'web-rollout', { spec: { template: undefined, workloadRef: { kind: 'Deployment', name: 'web' } } });
  view.workloadChanged(undefined, rollout);
  const rolloutKey = workloadKey('Rollout', 'prod', 'web-rollout');
  assert.deepEqual(view.dependentsOf('prod', 'Secret', 'db'), [WEB, rolloutKey]);
  // A change of the Deployment (its template) is a change of the Rollout too.
  assert.deepEqual(view.workloadChanged(view.workload(WEB), workload('Deployment', 'web', { secrets: ['db'] })), [WEB, rolloutKey]);
});

test('workloads with named patterns are found for configs they do not reference', () => {
  const view = new ClusterView();
  view.workloadChanged(undefined, workload('Deployment', 'web', { annotations: { 'secret.reloader.stakater.com/reload': 'tls-.*' } }));
  view.workloadChanged(undefined, workload('Deployment', 'api', { secrets: ['db'] }));
  assert.deepEqual(view.configChanged(undefined, config('Secret', 'tls-web')), [WEB]);
  assert.deepEqual(view.configChanged(undefined, config('Secret', 'other')), []);
  assert.deepEqual(view.configChanged(undefined, config('ConfigMap', 'tls-web')), [], 'the pattern is for Secrets only');
  assert.deepEqual([...view.configLookup('prod').names('Secret')].sort(), ['other', 'tls-web']);
  assert.equal(view.configLookup('prod').get('Secret', 'tls-web')?.name, 'tls-web');
  assert.equal(view.configLookup('staging').get('Secret', 'tls-web'), undefined);
});

test('a metadata-only config update enqueues nothing; content, policy annotations and tracking do', () => {
  const view = new ClusterView();
  view.workloadChanged(undefined, workload('Deployment', 'web', { secrets: ['db'] }));
  const v1 = config('Secret', 'db', { digest: 'v1:a' });
  assert.deepEqual(view.configChanged(undefined, v1), [WEB]);
  const relabelled = config('Secret', 'db', { digest: 'v1:a', resourceVersion: '2' });
  assert.deepEqual(view.configChanged(v1, relabelled), []);
  assert.equal(view.configLookup('prod').get('Secret', 'db'), relabelled, 'the store is updated all the same');
  const changed = config('Secret', 'db', { digest: 'v1:b', resourceVersion: '3' });
  assert.deepEqual(view.configChanged(relabelled, changed), [WEB]);
  const ignored = config('Secret', 'db', { digest: 'v1:b', resourceVersion: '4', annotations: { 'reloader.stakater.com/ignore': 'true' } });
  assert.deepEqual(view.configChanged(changed, ignored), [WEB]);
  const tracked = config('Secret', 'db', { digest: 'v1:b', resourceVersion: '5', annotations: ignored.annotations, tracking: { app: 'shop', namesItself: true } });
  assert.deepEqual(view.configChanged(ignored, tracked), [WEB]);
  assert.deepEqual(view.configChanged(tracked, undefined), [WEB], 'a deletion is a change');
  assert.equal(view.configLookup('prod').get('Secret', 'db'), undefined);
  assert.deepEqual([...view.configLookup('prod').names('Secret')], []);
});

function pod(name: string, owner: PodSummary['owner']): PodSummary {
  return Object.freeze({ namespace: 'prod', name, uid: `uid-${name}`, owner, createdAt: 0, deleting: false, phase: 'Running', readySince: 0, nodeName: 'n' });
}

test('podsOf finds a Deployment’s pods through its ReplicaSets, and a StatefulSet’s directly', () => {
  const view = new ClusterView();
  const web = workload('Deployment', 'web', { uid: 'd-web' });
  const db = workload('StatefulSet', 'db', { uid: 's-db' });
  view.workloadChanged(undefined, web);
  view.workloadChanged(undefined, db);
  view.replicaSetChanged(undefined, { namespace: 'prod', name: 'web-old', uid: 'rs-old', owner: { kind: 'Deployment', name: 'web', uid: 'd-web' } });
  view.replicaSetChanged(undefined, { namespace: 'prod', name: 'web-new', uid: 'rs-new', owner: { kind: 'Deployment', name: 'web', uid: 'd-web' } });
  view.replicaSetChanged(undefined, { namespace: 'prod', name: 'api-1', uid: 'rs-api', owner: { kind: 'Deployment', name: 'api', uid: 'd-api' } });
  assert.equal(view.podChanged(undefined, pod('web-new-b', { kind: 'ReplicaSet', name: 'web-new', uid: 'rs-new' })), WEB);
  view.podChanged(undefined, pod('web-old-a', { kind: 'ReplicaSet', name: 'web-old', uid: 'rs-old' }));
  view.podChanged(undefined, pod('api-1-a', { kind: 'ReplicaSet', name: 'api-1', uid: 'rs-api' }));
  assert.equal(view.podChanged(undefined, pod('db-0', { kind: 'StatefulSet', name: 'db', uid: 's-db' })), workloadKey('StatefulSet', 'prod', 'db'));
  assert.equal(view.podChanged(undefined, pod('orphan', undefined)), undefined);
  assert.equal(view.podChanged(undefined, pod('stray', { kind: 'ReplicaSet', name: 'unknown', uid: 'rs-unknown' })), undefined);
  assert.deepEqual(view.podsOf(web).map((p) => p.name), ['web-new-b', 'web-old-a']);
  assert.deepEqual(view.podsOf(db).map((p) => p.name), ['db-0']);
  view.podChanged(view.podsOf(web)[1], undefined);
  assert.deepEqual(view.podsOf(web).map((p) => p.name), ['web-new-b']);
  view.replicaSetChanged({ namespace: 'prod', name: 'web-new', uid: 'rs-new', owner: { kind: 'Deployment', name: 'web', uid: 'd-web' } }, undefined);
  assert.deepEqual(view.podsOf(web), [], 'a pod of a deleted ReplicaSet is no longer the Deployment’s');
});

function providerStatus(podName: string, versions: string): ProviderPodStatusSummary {
  return Object.freeze({ namespace: 'prod', name: `${podName}-prod-vault`, resourceVersion: '1', className: 'vault', podName, versions });
}

test('a SecretProviderClass rotation across several pod statuses is one content change', () => {
  const view = new ClusterView();
  view.workloadChanged(undefined, workload('Deployment', 'web', { annotations: { 'secretproviderclass.reloader.stakater.com/reload': 'vault' } }));
  const pods = ['web-1', 'web-2', 'web-3'];
  const before = pods.map((name) => providerStatus(name, 'v1:old'));
  assert.deepEqual(view.providerStatusChanged(undefined, before[0], 1_000), [WEB]);
  assert.deepEqual(view.providerStatusChanged(undefined, before[1], 1_100), []);
  assert.deepEqual(view.providerStatusChanged(undefined, before[2], 1_200), []);
  assert.equal(view.configLookup('prod').get('SecretProviderClass', 'vault')?.seenAt, 1_000);
  assert.deepEqual([...view.configLookup('prod').names('SecretProviderClass')], ['vault']);

  const after = pods.map((name) => providerStatus(name, 'v1:new'));
  assert.deepEqual(view.providerStatusChanged(before[0], after[0], 5_000), [WEB]);
  assert.deepEqual(view.providerStatusChanged(before[1], after[1], 5_100), []);
  // A pod status not rotated yet, updated for another reason, does not flip the content back.
  const touched = { ...before[2] as ProviderPodStatusSummary, resourceVersion: '2' };
  assert.deepEqual(view.providerStatusChanged(before[2], touched, 5_150), []);
  assert.equal(view.configLookup('prod').get('SecretProviderClass', 'vault')?.digest, 'v1:new');
  assert.deepEqual(view.providerStatusChanged(touched, after[2], 5_200), []);
  const summary = view.configLookup('prod').get('SecretProviderClass', 'vault');
  assert.equal(summary?.digest, 'v1:new');
  assert.equal(summary?.seenAt, 5_000, 'first seen when the first pod reported it');
});

test('pod statuses listed at start in mixed order: the one written last decides, an older one never moves the class back', () => {
  const view = new ClusterView();
  view.workloadChanged(undefined, workload('Deployment', 'web', { annotations: { 'secretproviderclass.reloader.stakater.com/reload': 'vault' } }));
  const rotated = { ...providerStatus('web-1', 'v1:new'), resourceVersion: '120' };
  const stale = { ...providerStatus('web-2', 'v1:old'), resourceVersion: '90' };
  view.providerStatusChanged(undefined, rotated, 1_000);
  assert.deepEqual(view.providerStatusChanged(undefined, stale, 1_001), [], 'an older status listed later is not a change');
  assert.equal(view.configLookup('prod').get('SecretProviderClass', 'vault')?.digest, 'v1:new');
  // A pod created after the rotation (a newer status) with other versions is news, and counts.
  const newer = { ...providerStatus('web-3', 'v1:newest'), resourceVersion: '130' };
  assert.deepEqual(view.providerStatusChanged(undefined, newer, 2_000), [WEB]);
  assert.equal(view.configLookup('prod').get('SecretProviderClass', 'vault')?.digest, 'v1:newest');
});
