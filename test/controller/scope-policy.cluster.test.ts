/**
 * The controller's scope, CSI rotation and policy against the real test
 * cluster: it runs as a ServiceAccount with nothing but a namespaced Role and
 * leaves every other namespace alone; a SecretProviderClassPodStatus version
 * change restarts the pods of that class once; and the Reloader policy of
 * `core/` (mode, ignore, exclude, named patterns) and the `none` strategy
 * decide what a changed out-of-band Secret restarts.
 */
import assert from 'node:assert/strict';
import type { ApiClient, KubeObject } from '../cluster/api.ts';
import { create, useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { applyAsArgoCD, assertNoDrift } from '../support/drift-oracle.ts';
import { startControllerProcess, type ControllerProcess } from './support/process.ts';
import { COLLECTIONS, eventsFor, read, replicaSetNames, rotateSecret, secret, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';

const fixture = useCluster();

/**
 * The least RBAC the controller needs in each namespace it is given with
 * `--namespaces` (nothing cluster-scoped): it lists and watches what it caches,
 * patches (server-side apply of its own annotations; a Rollout's
 * `spec.restartAt`) the workloads it restarts, and creates evictions and
 * Events. It never reads an object by name, so no `get`; its applies carry the
 * workload's UID and it never creates a workload, so no `create` on them.
 *
 * - "" configmaps, secrets, pods: list, watch
 * - apps replicasets: list, watch
 * - apps deployments, statefulsets, daemonsets: list, watch, patch
 * - batch cronjobs: list, watch, patch (first sight records on a CronJob too)
 * - argoproj.io rollouts: list, watch, patch
 * - apps.openshift.io deploymentconfigs: list, watch, patch (absent APIs still need the grant: authorization comes before the 404)
 * - secrets-store.csi.x-k8s.io secretproviderclasspodstatuses: list, watch
 * - "" pods/eviction: create
 * - "" events: create
 */
const NAMESPACED_RULES = [
  { apiGroups: [''], resources: ['configmaps', 'secrets', 'pods'], verbs: ['list', 'watch'] },
  { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['list', 'watch'] },
  { apiGroups: ['apps'], resources: ['deployments', 'statefulsets', 'daemonsets'], verbs: ['list', 'watch', 'patch'] },
  { apiGroups: ['batch'], resources: ['cronjobs'], verbs: ['list', 'watch', 'patch'] },
  { apiGroups: ['argoproj.io'], resources: ['rollouts'], verbs: ['list', 'watch', 'patch'] },
  { apiGroups: ['apps.openshift.io'], resources: ['deploymentconfigs'], verbs: ['list', 'watch', 'patch'] },
  { apiGroups: ['secrets-store.csi.x-k8s.io'], resources: ['secretproviderclasspodstatuses'], verbs: ['list', 'watch'] },
  { apiGroups: [''], resources: ['pods/eviction', 'events'], verbs: ['create'] },
];

const RESTARTED_FOR = 'driftless.dev/restarted-for';

function deploymentPath(namespace: string, name: string): string {
  return `${COLLECTIONS.Deployment(namespace)}/${name}`;
}

/** Waits until the controller has recorded the Deployment once, and returns the record. */
function waitForRecord(api: ApiClient, namespace: string, name: string): Promise<string> {
  return waitFor(`${namespace}/${name} recorded`, async () => (await read(api, deploymentPath(namespace, name))).metadata?.annotations?.[RESTARTED_FOR]);
}

/** Waits until none of `before` remains and `count` new pods are Ready. */
function waitForAllReplaced(api: ApiClient, namespace: string, name: string, before: readonly KubeObject[], count: number): Promise<KubeObject[]> {
  const old = uids(before);
  return waitFor(`every pod of ${namespace}/${name} replaced`, async () => {
    const pods = await waitForReadyPods(api, namespace, name, count, 90_000);
    return uids(pods).every((uid) => !old.includes(uid)) ? pods : undefined;
  }, { timeoutMs: 120_000 });
}

function evictionsOf(controller: ControllerProcess, namespace: string, name: string): number {
  return controller.lines.filter((line) => line.msg === 'evicted' && line['workload'] === `Deployment/${namespace}/${name}`).length;
}

/** A Deployment that saw nothing: same pods, same record, no eviction, no Event. */
async function assertUntouched(api: ApiClient, controller: ControllerProcess, namespace: string, name: string, pods: readonly KubeObject[], record: string | undefined): Promise<void> {
  assert.deepEqual(uids(await waitForReadyPods(api, namespace, name, pods.length)), uids(pods), `${name}: the pods keep their UIDs`);
  assert.equal((await read(api, deploymentPath(namespace, name))).metadata?.annotations?.[RESTARTED_FOR], record, `${name}: the record is unchanged`);
  assert.equal(evictionsOf(controller, namespace, name), 0, `${name}: no eviction`);
  assert.deepEqual((await eventsFor(api, namespace, name)).map((event) => event['reason']), [], `${name}: no Event`);
}

fixture.test('as a ServiceAccount with only a namespaced Role, it restarts in its namespace and leaves the others alone', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const home = await cluster.newNamespace('controller');
  const other = await cluster.newNamespace('other');
  try {
    await create(api, `/api/v1/namespaces/${home}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'driftless' } });
    await create(api, `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'driftless' }, rules: NAMESPACED_RULES,
    });
    await create(api, `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'driftless' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'driftless' },
      subjects: [{ kind: 'ServiceAccount', name: 'driftless', namespace: home }],
    });
    // The controller's own namespace: its restart records (ADR 0007 §3a), as manifests/controller/base grants them.
    await create(api, `/apis/rbac.authorization.k8s.io/v1/namespaces/${home}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'driftless-own' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch', 'create', 'update', 'delete'] }],
    });
    await create(api, `/apis/rbac.authorization.k8s.io/v1/namespaces/${home}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'driftless-own' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'driftless-own' },
      subjects: [{ kind: 'ServiceAccount', name: 'driftless', namespace: home }],
    });
    const manifest = workload('Deployment', 'app', { uses: { secret: 'db' } });
    for (const ns of [namespace, other]) {
      await create(api, COLLECTIONS.Secret(ns), secret('db', 'one'));
      await applyAsArgoCD(cluster, manifest, { namespace: ns });
      await waitForDeploymentRollout(api, ns, 'app');
    }
    const podsBefore = await waitForReadyPods(api, namespace, 'app', 2);
    const otherPods = await waitForReadyPods(api, other, 'app', 2);
    const replicaSets = await replicaSetNames(api, namespace);
    const controller = await startControllerProcess(cluster, { kubeconfig: await cluster.kubeconfigFor(home, 'driftless'), args: [`--namespaces=${namespace}`, `--leader-election-namespace=${home}`] });
    try {
      await controller.ready();
      await waitForRecord(api, namespace, 'app');
      for (const ns of [other, namespace]) await rotateSecret(api, ns, 'db', 'two');
      await waitForAllReplaced(api, namespace, 'app', podsBefore, 2);
      await waitForEvent(api, namespace, 'app', 'RestartFinished', 90_000);
      assert.equal(evictionsOf(controller, namespace, 'app'), 2);
      assert.deepEqual(await replicaSetNames(api, namespace), replicaSets, 'no new ReplicaSet');
      await assertNoDrift(cluster, manifest, { namespace });

      // The other namespace was never watched: its change did nothing.
      assert.deepEqual(uids(await waitForReadyPods(api, other, 'app', 2)), uids(otherPods), 'the unwatched pods keep their UIDs');
      const annotations = (await read(api, deploymentPath(other, 'app'))).metadata?.annotations ?? {};
      assert.deepEqual(Object.keys(annotations).filter((key) => key.startsWith('driftless.dev/')), [], 'no driftless annotations outside the scope');
      assert.deepEqual(await eventsFor(api, other, 'app'), []);
      // The Role was enough: no list, watch or write was refused.
      // (Every failed request is logged with its `err`; the start-up warning about --hash-key-file has none.)
      // The exceptions are optional: this Role grants nothing on Argo CD's Applications and AppProjects (in
      // argocd), so each of those watches says so once, as a Warning, and turns itself off (ADR 0011, 0016);
      // the restart above ran regardless.
      const refused = controller.lines.filter((line) => line['err'] !== undefined || /forbidden/i.test(JSON.stringify(line)));
      const optional = refused.filter((line) => line['reflector'] === 'applications in argocd' || line['reflector'] === 'appprojects in argocd');
      assert.deepEqual(optional.map((line) => [line['reflector'], line['level'], line['msg']]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))), [
        ['applications in argocd', 40, 'not allowed to list; this optional watch is off until the controller restarts'],
        ['appprojects in argocd', 40, 'not allowed to list; this optional watch is off until the controller restarts'],
      ], 'one Warning for each optional Argo CD watch');
      assert.deepEqual(refused.filter((line) => !optional.includes(line)), [], 'no other failed request (e.g. 403) in the controller log');
    } finally {
      await controller.stop();
    }
  } finally {
    for (const ns of [home, other]) await api.send('DELETE', `/api/v1/namespaces/${ns}`);
  }
}, { timeout: 240_000 });

/** A SecretProviderClassPodStatus as the CSI driver writes it for one pod, owned by the pod. */
function providerPodStatus(pod: KubeObject, version: string): KubeObject {
  const podName = String(pod.metadata?.['name']);
  // The driver makes the pod the owner, so the garbage collector removes a replaced pod's status.
  const owner: Record<string, unknown> = { apiVersion: 'v1', kind: 'Pod', name: podName, uid: String(pod.metadata?.['uid']) };
  return {
    apiVersion: 'secrets-store.csi.x-k8s.io/v1',
    kind: 'SecretProviderClassPodStatus',
    metadata: { name: `${podName}-vault-db`, ownerReferences: [owner] } as KubeObject['metadata'],
    status: { podName, secretProviderClassName: 'vault-db', mounted: true, targetPath: `/var/lib/kubelet/pods/${String(pod.metadata?.['uid'])}/volumes/csi`, objects: [{ id: 'db', version }] },
  };
}

fixture.test('a SecretProviderClassPodStatus version change restarts the pods of that class once', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const manifest = workload('Deployment', 'csi', { uses: {} });
  const template = (manifest.spec as { template: { spec: Record<string, unknown> } }).template.spec;
  template['volumes'] = [{ name: 'secrets', csi: { driver: 'secrets-store.csi.k8s.io', readOnly: true, volumeAttributes: { secretProviderClass: 'vault-db' } } }];
  (template['containers'] as Record<string, unknown>[])[0] = { ...(template['containers'] as Record<string, unknown>[])[0], volumeMounts: [{ name: 'secrets', mountPath: '/mnt/secrets', readOnly: true }] };
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitForDeploymentRollout(api, namespace, 'csi');
  const podsBefore = await waitForReadyPods(api, namespace, 'csi', 2);
  const statuses = `/apis/secrets-store.csi.x-k8s.io/v1/namespaces/${namespace}/secretproviderclasspodstatuses`;
  for (const pod of podsBefore) await create(api, statuses, providerPodStatus(pod, '1'));
  const replicaSets = await replicaSetNames(api, namespace);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await controller.ready();
    assert.match(await waitForRecord(api, namespace, 'csi'), /^\{"SecretProviderClass\/vault-db":"v1:[0-9a-f]{64}"\}$/);
    assert.deepEqual(uids(await waitForReadyPods(api, namespace, 'csi', 2)), uids(podsBefore), 'first sight restarts nothing');

    // The driver rotates: it updates each pod's status in turn.
    for (const pod of podsBefore) {
      await api.request('PATCH', `${statuses}/${String(pod.metadata?.['name'])}-vault-db`, { status: { objects: [{ id: 'db', version: '2' }] } }, { contentType: 'application/merge-patch+json' });
    }
    await waitForAllReplaced(api, namespace, 'csi', podsBefore, 2);
    await waitForEvent(api, namespace, 'csi', 'RestartFinished', 90_000);
    const started = (await eventsFor(api, namespace, 'csi')).filter((event) => event['reason'] === 'RestartStarted');
    assert.equal(started.length, 1, 'one restart for the rotation, not one per pod status');
    assert.match(String(started[0]?.['message']), /SecretProviderClass vault-db changed/);
    assert.equal(evictionsOf(controller, namespace, 'csi'), 2, 'each old pod evicted once');
    assert.deepEqual(await replicaSetNames(api, namespace), replicaSets, 'no new ReplicaSet');
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 240_000 });

fixture.test('mode annotated applies core/ policy: no annotation, ignore and exclude do nothing; a named pattern restarts; strategy none only records', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  await create(api, COLLECTIONS.Secret(namespace), secret('plain', 'one'));
  await create(api, COLLECTIONS.Secret(namespace), secret('ignored', 'one', { annotations: { 'reloader.stakater.com/ignore': 'true' } }));
  await create(api, COLLECTIONS.Secret(namespace), secret('excluded', 'one'));
  await create(api, COLLECTIONS.Secret(namespace), secret('own', 'one'));
  await create(api, COLLECTIONS.Secret(namespace), secret('db-creds', 'one'));
  await create(api, COLLECTIONS.Secret(namespace), secret('quiet', 'one'));
  const quiet = ['plain', 'ignored', 'excluded'] as const;
  const manifests = {
    plain: workload('Deployment', 'plain', { replicas: 1, uses: { secret: 'plain' }, annotations: {} }),
    ignored: workload('Deployment', 'ignored', { replicas: 1, uses: { secret: 'ignored' } }),
    excluded: workload('Deployment', 'excluded', { replicas: 1, uses: { secret: 'excluded' }, annotations: { 'reloader.stakater.com/auto': 'true', 'secrets.exclude.reloader.stakater.com/reload': 'excluded' } }),
    // The pattern names a Secret the pod never references: Reloader's named annotation selects it anyway.
    pattern: workload('Deployment', 'pattern', { uses: { secret: 'own' }, annotations: { 'secret.reloader.stakater.com/reload': 'db-.*' } }),
    none: workload('Deployment', 'none', { replicas: 1, uses: { secret: 'quiet' }, annotations: { 'reloader.stakater.com/auto': 'true', 'driftless.dev/restart-strategy': 'none' } }),
  };
  for (const manifest of Object.values(manifests)) await applyAsArgoCD(cluster, manifest, { namespace });
  for (const name of Object.keys(manifests)) await waitForDeploymentRollout(api, namespace, name);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await controller.ready();
    const records = new Map<string, string>();
    for (const name of Object.keys(manifests)) {
      if ((quiet as readonly string[]).includes(name)) continue;
      records.set(name, await waitForRecord(api, namespace, name));
    }
    // Nothing selected: no bookkeeping at all (the first reconcile pass is over).
    for (const name of quiet) {
      const live = await api.request('GET', `${COLLECTIONS.Deployment(namespace)}/${name}`);
      assert.equal(live.metadata?.annotations?.['driftless.dev/restarted-for'], undefined, `${name}: nothing selected, nothing written`);
    }
    assert.match(records.get('pattern') ?? '', /^\{"Secret\/db-creds":"v1:[0-9a-f]{64}"\}$/, 'the pattern selects db-creds, not the referenced Secret');
    const pods = new Map<string, KubeObject[]>();
    for (const name of Object.keys(manifests)) pods.set(name, await waitForReadyPods(api, namespace, name, name === 'pattern' ? 2 : 1));

    for (const name of ['plain', 'ignored', 'excluded', 'own', 'quiet', 'db-creds']) await rotateSecret(api, namespace, name, 'two');
    // The two that act tell when the controller has seen every change (all were made before them).
    const skipped = await waitForEvent(api, namespace, 'none', 'RestartSkipped', 90_000);
    assert.match(String(skipped['message']), /Secret quiet changed; restart-strategy none: recorded only/);
    await waitForAllReplaced(api, namespace, 'pattern', pods.get('pattern') ?? [], 2);
    await waitForEvent(api, namespace, 'pattern', 'RestartFinished', 90_000);
    assert.match(String((await eventsFor(api, namespace, 'pattern')).find((event) => event['reason'] === 'RestartStarted')?.['message']), /Secret db-creds changed/);
    await assertNoDrift(cluster, manifests.pattern, { namespace });

    const none = await read(api, deploymentPath(namespace, 'none'));
    assert.notEqual(none.metadata?.annotations?.[RESTARTED_FOR], records.get('none'), 'strategy none records the new digest');
    assert.deepEqual(uids(await waitForReadyPods(api, namespace, 'none', 1)), uids(pods.get('none') ?? []), 'strategy none evicts nothing');
    assert.equal(evictionsOf(controller, namespace, 'none'), 0);
    await assertNoDrift(cluster, manifests.none, { namespace });
    for (const name of quiet) await assertUntouched(api, controller, namespace, name, pods.get(name) ?? [], records.get(name));
  } finally {
    await controller.stop();
  }
}, { timeout: 240_000 });

fixture.test('mode all restarts a workload without any Reloader annotation', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  await create(api, COLLECTIONS.Secret(namespace), secret('plain', 'one'));
  const manifest = workload('Deployment', 'plain', { uses: { secret: 'plain' }, annotations: {} });
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitForDeploymentRollout(api, namespace, 'plain');
  const podsBefore = await waitForReadyPods(api, namespace, 'plain', 2);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`, '--mode=all'] });
  try {
    await controller.ready();
    assert.match(await waitForRecord(api, namespace, 'plain'), /^\{"Secret\/plain":"v1:[0-9a-f]{64}"\}$/);
    await rotateSecret(api, namespace, 'plain', 'two');
    await waitForAllReplaced(api, namespace, 'plain', podsBefore, 2);
    await waitForEvent(api, namespace, 'plain', 'RestartFinished', 90_000);
    assert.equal(evictionsOf(controller, namespace, 'plain'), 2);
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 180_000 });
