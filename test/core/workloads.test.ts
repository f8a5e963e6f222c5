import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WORKLOAD_KINDS, isRollout, podTemplatePath, rolloutWorkloadRef } from '../../core/index.ts';
import { manifest } from './helpers.ts';

const object = (apiVersion: string, kind: string, spec: unknown = {}): ReturnType<typeof manifest> =>
  manifest({ apiVersion, kind, metadata: { name: 'w' }, spec });

describe('podTemplatePath', () => {
  const cases: [string, string, string[] | undefined][] = [
    ['apps/v1', 'Deployment', ['spec', 'template']],
    ['apps/v1', 'StatefulSet', ['spec', 'template']],
    ['apps/v1', 'DaemonSet', ['spec', 'template']],
    ['apps/v1', 'ReplicaSet', ['spec', 'template']],
    ['argoproj.io/v1alpha1', 'Rollout', ['spec', 'template']],
    ['batch/v1', 'CronJob', ['spec', 'jobTemplate', 'spec', 'template']],
    ['apps.openshift.io/v1', 'DeploymentConfig', ['spec', 'template']],
    ['batch/v1', 'Job', undefined],
    ['v1', 'Pod', undefined],
    ['v1', 'ReplicationController', undefined],
    ['v1', 'ConfigMap', undefined],
    ['example.com/v1', 'Deployment', undefined],
    ['v1', 'DeploymentConfig', undefined],
  ];
  for (const [apiVersion, kind, path] of cases) {
    it(`${apiVersion} ${kind} → ${path === undefined ? 'not stamped' : path.join('.')}`, () => {
      assert.deepEqual(podTemplatePath(object(apiVersion, kind)), path);
    });
  }
  it('a Rollout with spec.workloadRef has no template of its own', () => {
    const rollout = object('argoproj.io/v1alpha1', 'Rollout', { workloadRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' } });
    assert.equal(podTemplatePath(rollout), undefined);
  });
  it('a Rollout with a null workloadRef keeps its template', () => {
    assert.deepEqual(podTemplatePath(object('argoproj.io/v1alpha1', 'Rollout', { workloadRef: null })), ['spec', 'template']);
  });
  it('WORKLOAD_KINDS lists exactly the seven stamped kinds, never Job or Pod', () => {
    assert.deepEqual(WORKLOAD_KINDS.map((k) => `${k.group}/${k.kind}`), [
      'apps/Deployment', 'apps/StatefulSet', 'apps/DaemonSet', 'apps/ReplicaSet', 'argoproj.io/Rollout', 'batch/CronJob', 'apps.openshift.io/DeploymentConfig',
    ]);
  });
});

describe('rollouts', () => {
  it('isRollout is true only for argoproj.io Rollout', () => {
    assert.equal(isRollout(object('argoproj.io/v1alpha1', 'Rollout')), true);
    assert.equal(isRollout(object('example.com/v1', 'Rollout')), false);
    assert.equal(isRollout(object('apps/v1', 'Deployment')), false);
  });
  it('rolloutWorkloadRef reads the referenced workload in the Rollout namespace', () => {
    const rollout = manifest({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', metadata: { name: 'r', namespace: 'shop' }, spec: { workloadRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', scaleDown: 'never' } } });
    assert.deepEqual(rolloutWorkloadRef(rollout), { group: 'apps', kind: 'Deployment', name: 'web', namespace: 'shop' });
  });
  it('rolloutWorkloadRef is undefined without a workloadRef or a name', () => {
    assert.equal(rolloutWorkloadRef(object('argoproj.io/v1alpha1', 'Rollout', { template: {} })), undefined);
    assert.equal(rolloutWorkloadRef(object('argoproj.io/v1alpha1', 'Rollout', { workloadRef: { kind: 'Deployment' } })), undefined);
    assert.equal(rolloutWorkloadRef(object('apps/v1', 'Deployment', { workloadRef: { name: 'x' } })), undefined);
  });
});
