/**
 * The watch table (controller/wiring/watches.ts): which reflectors the flags
 * ask for, in which order and with which selectors, and what each change
 * does — the handlers update the cache and return the workload keys to
 * enqueue, nothing else. Real ClusterView and reducers; the reconciler's
 * memory of restarts is a stand-in (its own tests cover it).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { ClusterView } from '../../controller/cache/cluster-view.ts';
import { ClockSkew } from '../../controller/clock-skew.ts';
import { FakeClock } from '../support/fake-clock.ts';
import type { ControllerConfig } from '../../controller/config/model.ts';
import { parseControllerConfig } from '../../controller/config/parse.ts';
import { RecordCache } from '../../controller/record/store.ts';
import { createSkewSampler } from '../../controller/wiring/skew-sampler.ts';
import { HELM_RELEASE_FIELD_SELECTOR, watchTable, type AnyWatch, type WatchTargets } from '../../controller/wiring/watches.ts';
import { rawWorkload } from './support/summaries.ts';

function configOf(argv: readonly string[]): ControllerConfig {
  const config = parseControllerConfig(argv, {});
  assert.ok(config.command !== 'help');
  return config;
}

function targets(restarting: ReadonlySet<string> = new Set()): WatchTargets & { view: ClusterView } {
  const clock = new FakeClock(1_000_000);
  return {
    view: new ClusterView(),
    recordCache: new RecordCache(),
    namespaceLabels: new Map(),
    skew: createSkewSampler(new ClockSkew(), { clock, log: pino({ level: 'silent' }), maxClockSkew: { ms: 5000, text: '5s' } }),
    restarts: { isRestarting: (key) => restarting.has(key) },
    clock,
    hashKey: undefined,
  };
}

function names(watches: readonly AnyWatch[]): string[] {
  return watches.map((w) => `${w.resource.plural}${w.namespace === undefined ? '' : ` in ${w.namespace}`}`);
}

const PER_NAMESPACE = ['configmaps', 'secrets', 'deployments', 'statefulsets', 'daemonsets', 'cronjobs', 'rollouts', 'deploymentconfigs', 'replicasets', 'pods', 'secretproviderclasspodstatuses'];

test('in hub mode Argo CD\'s objects are read from the hub, and only the Applications deploying to the pipeline\'s cluster are kept', () => {
  const hub = { id: 'c0ffee', server: 'https://spoke.example', name: 'spoke' };
  const table = watchTable(configOf(['--namespaces=a', '--argocd-sync-windows']), 'home', targets(), hub);
  const apps = table.find((w) => w.resource.plural === 'applications');
  const projects = table.find((w) => w.resource.plural === 'appprojects');
  assert.equal(apps?.home, true);
  assert.equal(projects?.home, true);
  assert.equal(table.filter((w) => w.home === true).length, 3, 'records, Applications, AppProjects: nothing else from the hub');
  const app = (destination: Record<string, string>) => ({ metadata: { name: 'shop', namespace: 'argocd', resourceVersion: '1' }, spec: { project: 'p', destination } });
  assert.equal(apps.reduce(app({ server: 'https://spoke.example/', namespace: 'a' }), undefined) !== undefined, true, 'by server (a trailing slash as Argo CD trims it)');
  assert.equal(apps.reduce(app({ name: 'spoke', namespace: 'a' }), undefined) !== undefined, true, 'by name');
  assert.equal(apps.reduce(app({ server: 'https://other.example', namespace: 'a' }), undefined), undefined, 'another cluster\'s Application is dropped');
  assert.equal(apps.reduce(app({ name: 'other', namespace: 'a' }), undefined), undefined);
  const single = watchTable(configOf(['--namespaces=a', '--argocd-sync-windows']), 'home', targets()).find((w) => w.resource.plural === 'applications');
  assert.equal(single?.home, undefined, 'without a hub, read from the one cluster');
  assert.notEqual(single?.reduce(app({ server: 'https://other.example', namespace: 'a' }), undefined), undefined, 'and every Application kept, as before');
});

test('with the spoke option Argo CD\'s objects are read from the hub, the records stay in the pipeline\'s cluster, unlabelled', () => {
  const spoke = { id: undefined, server: 'https://spoke.example', name: '' };
  const table = watchTable(configOf(['--namespaces=a', '--argocd-sync-windows']), 'home', targets(), spoke);
  assert.deepEqual(table.filter((w) => w.home === true).map((w) => w.resource.plural), ['applications', 'appprojects'], 'only Argo CD\'s objects from the hub');
  const records = table[0];
  assert.equal(records?.resource.plural, 'configmaps');
  assert.equal(records.home, false, 'the records are this cluster\'s');
  assert.equal(records.labelSelector, 'driftless.dev/record,!driftless.dev/record-cluster', 'selected as a single cluster\'s: a hub\'s records are never its to judge');
  const apps = table.find((w) => w.resource.plural === 'applications');
  const app = (destination: Record<string, string>) => ({ metadata: { name: 'shop', namespace: 'argocd', resourceVersion: '1' }, spec: { project: 'p', destination } });
  assert.notEqual(apps?.reduce(app({ server: 'https://spoke.example//', namespace: 'a' }), undefined), undefined, 'by server');
  assert.equal(apps?.reduce(app({ name: 'spoke', namespace: 'a' }), undefined), undefined, 'no name given: an Application naming a cluster does not count');
  assert.equal(apps?.reduce(app({ namespace: 'a' }), undefined), undefined, 'nor one naming none');
  const byName = watchTable(configOf(['--argocd-sync-windows']), 'home', targets(), { id: undefined, server: '', name: 'spoke' }).find((w) => w.resource.plural === 'applications');
  assert.notEqual(byName?.reduce(app({ name: 'spoke', namespace: 'a' }), undefined), undefined, 'by name');
  assert.equal(byName?.reduce(app({ server: 'https://spoke.example', namespace: 'a' }), undefined), undefined, 'no server given: an Application naming a server does not count');
});

test('the records first, then every namespace\'s watches in order; the optional ones only when a flag needs them', () => {
  const plain = watchTable(configOf(['--namespaces=a,b', '--argocd-sync-wait=0', '--argocd-sync-windows=false']), 'home', targets());
  assert.deepEqual(names(plain), ['configmaps in home', ...PER_NAMESPACE.map((p) => `${p} in a`), ...PER_NAMESPACE.map((p) => `${p} in b`)]);
  const records = plain[0];
  assert.equal(records?.labelSelector, 'driftless.dev/record,!driftless.dev/record-cluster', 'a hub\'s records are never a single cluster\'s to judge');
  assert.equal(records.home, false, 'without a hub the records are read from the one cluster');
  const hubRecords = watchTable(configOf(['--namespaces=a']), 'home', targets(), { id: 'c0ffee', server: 'https://spoke', name: 'spoke' })[0];
  assert.equal(hubRecords?.labelSelector, 'driftless.dev/record,driftless.dev/record-cluster=c0ffee', 'in hub mode only its own cluster\'s records');
  assert.equal(hubRecords.home, true, 'in hub mode the records are read from the hub');
  assert.equal(records.offWhenForbidden, true);
  assert.equal(plain.find((w) => w.resource.plural === 'secrets')?.fieldSelector, HELM_RELEASE_FIELD_SELECTOR);
  assert.equal(plain.find((w) => w.resource.plural === 'configmaps' && w.namespace === 'a')?.fieldSelector, undefined);

  const syncWaitOnly = watchTable(configOf(['--namespaces=a', '--argocd-sync-wait=30s', '--argocd-sync-windows=false']), 'home', targets());
  assert.deepEqual(names(syncWaitOnly).slice(-1), ['applications in argocd'], 'the sync wait needs the Applications only');
  const everything = watchTable(configOf(['--argocd-sync-windows', '--argocd-namespace=argo', '--namespace-selector=team=x', '--resource-label-selector=watch=yes']), 'home', targets());
  assert.deepEqual(names(everything), ['configmaps in home', ...PER_NAMESPACE, 'applications in argo', 'appprojects in argo', 'namespaces']);
  assert.equal(everything[1]?.labelSelector, 'watch=yes', 'the configs carry --resource-label-selector');
  assert.ok(everything.filter((w) => w.resource.group === 'argoproj.io' && w.resource.plural !== 'rollouts').every((w) => w.offWhenForbidden === true));
});

test('a workload change returns its key; a pod change (a deletion too) returns its workload\'s key only while it restarts', () => {
  const restarting = new Set<string>();
  const t = targets(restarting);
  const table = watchTable(configOf(['--namespaces=prod']), 'home', t);
  const byPlural = (plural: string): AnyWatch => table.find((w) => w.resource.plural === plural && w.namespace === 'prod') ?? assert.fail(plural);
  const statefulSets = byPlural('statefulsets');
  const web = statefulSets.reduce(rawWorkload('StatefulSet', 'web'), undefined);
  assert.deepEqual([...statefulSets.keys(undefined, web)], ['StatefulSet/prod/web']);

  const pods = byPlural('pods');
  const pod = pods.reduce({ metadata: { name: 'web-0', namespace: 'prod', uid: 'pod-1', resourceVersion: '2', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'uid-web', controller: true }] } }, undefined);
  assert.deepEqual([...pods.keys(undefined, pod)], [], 'no restart in progress: a pod event enqueues nothing');
  assert.equal(t.view.podCount, 1, 'but the cache has the pod');
  restarting.add('StatefulSet/prod/web');
  assert.deepEqual([...pods.keys(pod, undefined)], ['StatefulSet/prod/web']);
  assert.equal(t.view.podCount, 0);
});

test('a namespace\'s labels are kept for the scope, and a change enqueues every workload in it', () => {
  const t = targets();
  const table = watchTable(configOf(['--namespace-selector=team=x']), 'home', t);
  const deployments = table.find((w) => w.resource.plural === 'deployments') ?? assert.fail('deployments');
  deployments.keys(undefined, deployments.reduce(rawWorkload('Deployment', 'api', { namespace: 'prod' }), undefined));
  const namespaces = table.at(-1) ?? assert.fail('namespaces');
  const prod = namespaces.reduce({ metadata: { name: 'prod', resourceVersion: '5', labels: { team: 'x' } } }, undefined);
  assert.deepEqual([...namespaces.keys(undefined, prod)], ['Deployment/prod/api']);
  assert.deepEqual(t.namespaceLabels.get('prod'), { team: 'x' });
  namespaces.keys(prod, undefined);
  assert.equal(t.namespaceLabels.has('prod'), false);
});
