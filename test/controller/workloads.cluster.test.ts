/**
 * The controller against the real test cluster for the kinds beyond
 * Deployments: an out-of-band Secret change restarts a StatefulSet by
 * evictions highest ordinal first, one at a time, a DaemonSet on every node,
 * and an Argo Rollout through its own `spec.restartAt` (the real Rollouts
 * controller replaces its pods) — each without a new revision, and without
 * drift Argo CD would see under either diff strategy.
 */
import assert from 'node:assert/strict';
import type { ApiClient, KubeList, KubeObject } from '../cluster/api.ts';
import { podIsReady, useCluster } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { applyAsArgoCD, assertNoDrift } from '../support/drift-oracle.ts';
import { startControllerProcess } from './support/process.ts';
import { COLLECTIONS, createExternalSecret, eventsFor, podsOf, read, replicaSetNames, rotateSecret, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';

const fixture = useCluster({ nodes: 2, rolloutsController: true });

/** ControllerRevision names of a namespace: a new one would mean the controller changed a template. */
async function controllerRevisionNames(client: ApiClient, namespace: string): Promise<string[]> {
  const list = await client.request<KubeList>('GET', `/apis/apps/v1/namespaces/${namespace}/controllerrevisions`);
  return list.items.map((revision) => String(revision.metadata?.['name'])).sort();
}

/** Waits until the controller has recorded the first-sight digests on the workload. */
function waitForRecord(client: ApiClient, path: string): Promise<string> {
  return waitFor(`the first-sight record on ${path}`, async () => (await read(client, path)).metadata?.annotations?.['driftless.dev/restarted-for'], { timeoutMs: 60_000 });
}

/** Waits until `count` Ready pods run and none of them is one of `old`. */
function waitForAllReplaced(client: ApiClient, namespace: string, name: string, count: number, old: readonly KubeObject[]): Promise<KubeObject[]> {
  const oldUids = uids(old);
  return waitFor(`every pod of ${namespace}/${name} replaced`, async () => {
    const pods = await waitForReadyPods(client, namespace, name, count, 120_000);
    return uids(pods).every((uid) => !oldUids.includes(uid)) ? pods : undefined;
  }, { timeoutMs: 150_000 });
}

fixture.test('a StatefulSet is restarted by evictions, highest ordinal first and one at a time, with no new revision', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const path = `${COLLECTIONS.StatefulSet(namespace)}/app`;
  await createExternalSecret(api, namespace, 'db', 'v1');
  const manifest = workload('StatefulSet', 'app', { replicas: 3, uses: { secret: 'db' } });
  await applyAsArgoCD(cluster, manifest, { namespace });
  const podsBefore = await waitForReadyPods(api, namespace, 'app', 3, 120_000);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await controller.ready();
    await waitForRecord(api, path);
    const before = await read(api, path);
    const revisions = await controllerRevisionNames(api, namespace);
    assert.equal(revisions.length, 1);

    await rotateSecret(api, namespace, 'db', 'v2');
    // One at a time: sampled while the restart runs, never more than one pod is missing, not Ready or going.
    const oldUids = uids(podsBefore);
    let fewestServing = 3;
    await waitFor('every StatefulSet pod replaced', async () => {
      const pods = await podsOf(api, namespace, 'app');
      const serving = pods.filter((pod) => pod.metadata?.['deletionTimestamp'] === undefined && podIsReady(pod));
      fewestServing = Math.min(fewestServing, serving.length);
      return serving.length === 3 && pods.length === 3 && uids(serving).every((uid) => !oldUids.includes(uid));
    }, { timeoutMs: 150_000, intervalMs: 100 });
    assert.ok(fewestServing >= 2, `at most one pod unavailable at a time, saw ${fewestServing} serving`);
    const finished = await waitForEvent(api, namespace, 'app', 'RestartFinished', 60_000);
    assert.equal(finished['type'], 'Normal');

    const evicted = controller.lines.filter((line) => line.msg === 'evicted').map((line) => line['pod']);
    assert.deepEqual(evicted, ['app-2', 'app-1', 'app-0'], 'highest ordinal first, each once');
    const live = await read(api, path);
    assert.equal(live.metadata?.['generation'], before.metadata?.['generation'], 'annotations alone do not bump a StatefulSet\'s generation');
    assert.deepEqual(live.spec?.['template'], before.spec?.['template'], 'the pod template is untouched');
    assert.deepEqual(await controllerRevisionNames(api, namespace), revisions, 'no new ControllerRevision');
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 300_000 });

fixture.test('a DaemonSet on two nodes is restarted by evictions, with no new revision', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const path = `${COLLECTIONS.DaemonSet(namespace)}/agent`;
  await createExternalSecret(api, namespace, 'db', 'v1');
  const manifest = workload('DaemonSet', 'agent', { uses: { secret: 'db' } });
  await applyAsArgoCD(cluster, manifest, { namespace });
  const podsBefore = await waitForReadyPods(api, namespace, 'agent', 2, 120_000);
  assert.deepEqual(podsBefore.map((pod) => String(pod.spec?.['nodeName'])).sort(), ['fake-node-0', 'fake-node-1']);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await controller.ready();
    await waitForRecord(api, path);
    const before = await read(api, path);
    const revisions = await controllerRevisionNames(api, namespace);

    await rotateSecret(api, namespace, 'db', 'v2');
    const after = await waitForAllReplaced(api, namespace, 'agent', 2, podsBefore);
    assert.deepEqual(after.map((pod) => String(pod.spec?.['nodeName'])).sort(), ['fake-node-0', 'fake-node-1']);
    await waitForEvent(api, namespace, 'agent', 'RestartFinished', 60_000);

    const evicted = controller.lines.filter((line) => line.msg === 'evicted').map((line) => String(line['pod'])).sort();
    assert.deepEqual(evicted, podsBefore.map((pod) => String(pod.metadata?.['name'])).sort(), 'each old pod evicted once');
    const live = await read(api, path);
    assert.equal(live.metadata?.['generation'], before.metadata?.['generation'], 'generation unchanged');
    assert.deepEqual(live.spec?.['template'], before.spec?.['template'], 'the pod template is untouched');
    assert.deepEqual(await controllerRevisionNames(api, namespace), revisions, 'no new ControllerRevision');
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 300_000 });

/**
 * A Rollout as the Rollouts controller writes it back: `canary: {}` (it drops
 * empty steps) and non-empty `resources` (it writes an absent one as `{}`),
 * so the client-side diff sees none of the controller's own rewrites.
 */
function rolloutManifest(name: string, secretName: string): KubeObject {
  const manifest = workload('Rollout', name, { replicas: 2, uses: { secret: secretName }, extraSpec: { strategy: { canary: {} } } });
  const template = manifest.spec?.['template'] as { metadata: Record<string, unknown>; spec: { containers: Record<string, unknown>[] } };
  // Dropped as well when empty.
  delete template.metadata['annotations'];
  for (const container of template.spec.containers) container['resources'] = { requests: { cpu: '10m' } };
  return manifest;
}

/** Waits until the Rollout is Healthy at its generation with all replicas updated and available. */
function waitForHealthyRollout(client: ApiClient, path: string, replicas: number): Promise<KubeObject> {
  return waitFor(`Rollout ${path} Healthy`, async () => {
    const rollout = await read(client, path);
    const status = rollout.status ?? {};
    const healthy = String(status['observedGeneration']) === String(rollout.metadata?.['generation'])
      && status['phase'] === 'Healthy'
      && status['updatedReplicas'] === replicas
      && status['availableReplicas'] === replicas
      && status['replicas'] === replicas;
    return healthy ? rollout : undefined;
  }, { timeoutMs: 120_000 });
}

fixture.test('an Argo Rollout is restarted through spec.restartAt by the Rollouts controller, with no new ReplicaSet', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const path = `${COLLECTIONS.Rollout(namespace)}/app`;
  await createExternalSecret(api, namespace, 'db', 'v1');
  const manifest = rolloutManifest('app', 'db');
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitForHealthyRollout(api, path, 2);
  const podsBefore = await waitForReadyPods(api, namespace, 'app', 2, 120_000);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await controller.ready();
    await waitForRecord(api, path);
    const before = await read(api, path);
    const replicaSets = await replicaSetNames(api, namespace);
    assert.equal(replicaSets.length, 1);

    await rotateSecret(api, namespace, 'db', 'v2');
    const asked = await waitFor('spec.restartAt on the Rollout', async () => {
      const rollout = await read(api, path);
      const at = rollout.spec?.['restartAt'];
      return typeof at === 'string' ? rollout : undefined;
    }, { timeoutMs: 60_000 });
    const restartAt = asked.metadata?.annotations?.['driftless.dev/restart-at'];
    assert.match(restartAt ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(asked.spec?.['restartAt'], restartAt, 'spec.restartAt is the recorded T');

    await waitForAllReplaced(api, namespace, 'app', 2, podsBefore);
    await waitForEvent(api, namespace, 'app', 'RestartFinished', 90_000);
    const live = await read(api, path);
    const restartedAt = live.status?.['restartedAt'];
    assert.ok(typeof restartedAt === 'string' && Date.parse(restartedAt) >= Date.parse(restartAt ?? ''), `status.restartedAt ${String(restartedAt)} ≥ ${String(restartAt)}`);
    assert.equal(live.metadata?.['generation'], (before.metadata?.['generation'] as number) + 1, 'only spec.restartAt changed the spec');
    assert.deepEqual(live.spec?.['template'], before.spec?.['template'], 'the pod template is untouched');
    assert.deepEqual(await replicaSetNames(api, namespace), replicaSets, 'no new ReplicaSet');
    assert.equal(controller.lines.filter((line) => line.msg === 'evicted').length, 0, 'the Rollouts controller replaces the pods, not Driftless');
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 300_000 });

fixture.test('a Rollout borrowing a Deployment\'s template by workloadRef is restarted the same way', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const path = `${COLLECTIONS.Rollout(namespace)}/web`;
  await createExternalSecret(api, namespace, 'db', 'v1');
  // The Deployment only lends its template (scaled to zero, as Argo Rollouts' migration guide has it). Its
  // annotations carry the policy, as for the plugin, which stamps the borrowed template's hash into it.
  const borrowed = workload('Deployment', 'web', { replicas: 0, uses: { secret: 'db' } });
  const rollout: KubeObject = {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'web' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      workloadRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
      strategy: { canary: {} },
    },
  };
  await applyAsArgoCD(cluster, borrowed, { namespace });
  await applyAsArgoCD(cluster, rollout, { namespace });
  await waitForHealthyRollout(api, path, 2);
  const podsBefore = await waitForReadyPods(api, namespace, 'web', 2, 120_000);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await controller.ready();
    const recorded = await waitForRecord(api, path);
    assert.match(recorded, /"Secret\/db"/, 'the borrowed template\'s Secret is tracked');
    const deploymentBefore = await read(api, `${COLLECTIONS.Deployment(namespace)}/web`);
    const replicaSets = await replicaSetNames(api, namespace);

    await rotateSecret(api, namespace, 'db', 'v2');
    await waitForAllReplaced(api, namespace, 'web', 2, podsBefore);
    // The Deployment that lends its template is named web too (and, scaled to zero, finishes its own restart at
    // once): wait for the Rollout's Event.
    await waitFor('Event RestartFinished on the Rollout web', async () => (await eventsFor(api, namespace, 'web'))
      .find((event) => event['reason'] === 'RestartFinished' && (event['involvedObject'] as { kind?: string } | undefined)?.kind === 'Rollout'), { timeoutMs: 90_000 });
    const live = await read(api, path);
    const restartAt = live.metadata?.annotations?.['driftless.dev/restart-at'];
    assert.equal(live.spec?.['restartAt'], restartAt, 'spec.restartAt is the recorded T');
    const restartedAt = live.status?.['restartedAt'];
    assert.ok(typeof restartedAt === 'string' && Date.parse(restartedAt) >= Date.parse(restartAt ?? ''), `status.restartedAt ${String(restartedAt)} ≥ ${String(restartAt)}`);
    assert.deepEqual(await replicaSetNames(api, namespace), replicaSets, 'no new ReplicaSet');
    const deploymentAfter = await read(api, `${COLLECTIONS.Deployment(namespace)}/web`);
    assert.deepEqual(deploymentAfter.spec?.['template'], deploymentBefore.spec?.['template'], 'the borrowed template is untouched');
    await assertNoDrift(cluster, rollout, { namespace });
    await assertNoDrift(cluster, borrowed, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 300_000 });
