/**
 * Which workloads use the git strategy: the workload's annotation first (git in, evict/rollout/none out),
 * Reloader's Rollout strategy, then --write-back-namespaces and --write-back-applications (a bare name is an
 * Application in Argo CD's namespace, `namespace/name` any).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reduceApplication } from '../../../controller/cache/reduce.ts';
import { selectGit } from '../../../controller/writeback/select.ts';

const NONE = { namespaces: [], applications: [] };
const workload = (annotations: Record<string, string> = {}, kind: 'Deployment' | 'Rollout' | 'CronJob' = 'Deployment', namespace = 'shop') => ({ kind, namespace, annotations });
const app = (namespace: string, name: string) => reduceApplication({ metadata: { namespace, name } }, 'argocd');

test('the annotation git selects the write-back; evict, rollout and none opt out of every default', () => {
  assert.deepEqual(selectGit(workload({ 'driftless.dev/restart-strategy': 'git' }), undefined, NONE), { git: true, via: 'annotation' });
  for (const other of ['evict', 'rollout', 'none']) {
    assert.deepEqual(selectGit(workload({ 'driftless.dev/restart-strategy': other }), app('argocd', 'web'), { namespaces: ['shop'], applications: ['web'] }), { git: false }, other);
  }
  assert.deepEqual(selectGit(workload(), undefined, NONE), { git: false }, 'nothing selects it');
  assert.deepEqual(selectGit(workload({ 'driftless.dev/restart-strategy': 'git' }, 'CronJob'), undefined, NONE), { git: false }, 'a CronJob is only recorded');
});

test('an annotation that is no strategy falls through to the defaults; Reloader\'s Rollout strategy is an explicit choice', () => {
  assert.deepEqual(selectGit(workload({ 'driftless.dev/restart-strategy': 'gti' }), undefined, { namespaces: ['shop'], applications: [] }), { git: true, via: 'namespace' });
  assert.deepEqual(selectGit(workload({ 'reloader.stakater.com/rollout-strategy': 'restart' }, 'Rollout'), undefined, { namespaces: ['shop'], applications: [] }), { git: false });
  assert.deepEqual(selectGit(workload({ 'reloader.stakater.com/rollout-strategy': 'restart' }, 'Rollout'), undefined, { namespaces: [], applications: [] }), { git: false });
});

test('--write-back-namespaces and --write-back-applications select by namespace, by Application name in Argo CD\'s namespace, or by namespace/name', () => {
  assert.deepEqual(selectGit(workload({}, 'Deployment', 'blog'), undefined, { namespaces: ['shop'], applications: [] }), { git: false });
  assert.deepEqual(selectGit(workload(), app('argocd', 'web'), { namespaces: [], applications: ['web'] }), { git: true, via: 'application' });
  assert.deepEqual(selectGit(workload(), app('team-a', 'web'), { namespaces: [], applications: ['web'] }), { git: false }, 'a bare name is an Application in Argo CD\'s namespace');
  assert.deepEqual(selectGit(workload(), app('team-a', 'web'), { namespaces: [], applications: ['team-a/web'] }), { git: true, via: 'application' });
  assert.deepEqual(selectGit(workload(), app('argocd', 'web'), { namespaces: [], applications: ['argocd/web'] }), { git: true, via: 'application' });
  assert.deepEqual(selectGit(workload(), undefined, { namespaces: [], applications: ['web'] }), { git: false }, 'untracked: no Application to match');
});
