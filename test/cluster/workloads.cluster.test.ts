/**
 * The built-in controllers and the fake kubelet really run: Deployments,
 * ReplicaSets, StatefulSets, DaemonSets, Jobs, PodDisruptionBudgets and the Eviction API
 * behave as in a real cluster.
 */
import assert from 'node:assert/strict';
import type { KubeList, KubeObject } from './api.ts';
import { readinessAnnotation } from './harness.ts';
import { create, listPods, podIsReady, podTemplate, useCluster, waitForDeploymentRollout } from './testing.ts';
import { waitFor } from '../support/wait.ts';

const fixture = useCluster({ nodes: 2 });

function deployment(name: string, replicas: number, annotations: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: podTemplate({ app: name }, annotations),
    },
  };
}

fixture.test('a Deployment’s pods are scheduled onto fake nodes and become Ready', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  await create(admin, `/apis/apps/v1/namespaces/${namespace}/deployments`, deployment('web', 3));
  await waitForDeploymentRollout(admin, namespace, 'web');
  const pods = await listPods(admin, namespace, 'app=web');
  assert.equal(pods.length, 3);
  for (const pod of pods) {
    assert.ok(podIsReady(pod), `${pod.metadata?.name} is Ready`);
    assert.match(String(pod.spec?.['nodeName']), /^fake-node-/, 'bound by the scheduler');
    assert.equal(pod.status?.['phase'], 'Running');
  }
});

fixture.test('a pod whose readiness is switched off keeps a Deployment unavailable', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  await create(admin, `/apis/apps/v1/namespaces/${namespace}/deployments`, deployment('gated', 1, { [readinessAnnotation]: 'false' }));
  const pod = await waitFor('the pod to run', async () => {
    const [found] = await listPods(admin, namespace, 'app=gated');
    return found?.status?.['phase'] === 'Running' ? found : undefined;
  });
  assert.equal(podIsReady(pod), false);
  const status: Record<string, unknown> = (await admin.request('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/gated`)).status ?? {};
  assert.equal(status['readyReplicas'] ?? 0, 0);
});

fixture.test('a template change creates a new ReplicaSet and replaces every pod', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  const path = `/apis/apps/v1/namespaces/${namespace}/deployments`;
  await create(admin, path, deployment('app', 2));
  await waitForDeploymentRollout(admin, namespace, 'app');
  const before = new Set((await listPods(admin, namespace, 'app=app')).map((pod) => pod.metadata?.uid));

  await admin.request(
    'PATCH',
    `${path}/app`,
    { spec: { template: { metadata: { annotations: { 'driftless.dev/config-hash': 'changed' } } } } },
    { contentType: 'application/strategic-merge-patch+json' },
  );
  await waitForDeploymentRollout(admin, namespace, 'app');

  const replicaSets = await admin.request<KubeList>('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets`);
  assert.equal(replicaSets.items.length, 2, 'old and new ReplicaSet');
  const replicasOf = (rs: KubeObject) => rs.spec?.['replicas'];
  assert.deepEqual(replicaSets.items.map(replicasOf).sort((a, b) => Number(a) - Number(b)), [0, 2]);
  const after = await waitFor('old pods to be gone', async () => {
    const pods = await listPods(admin, namespace, 'app=app');
    return pods.length === 2 ? pods : undefined;
  });
  for (const pod of after) {
    assert.ok(!before.has(pod.metadata?.uid), 'every pod was replaced');
    assert.equal(pod.metadata?.annotations?.['driftless.dev/config-hash'], 'changed');
    assert.ok(podIsReady(pod));
  }
});

fixture.test('deleting a Deployment garbage-collects its ReplicaSet and pods', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  await create(admin, `/apis/apps/v1/namespaces/${namespace}/deployments`, deployment('doomed', 2));
  await waitForDeploymentRollout(admin, namespace, 'doomed');
  await admin.request('DELETE', `/apis/apps/v1/namespaces/${namespace}/deployments/doomed`, {
    apiVersion: 'v1',
    kind: 'DeleteOptions',
    propagationPolicy: 'Background',
  });
  await waitFor('the garbage collector to remove the ReplicaSet and its pods', async () => {
    const replicaSets = await admin.request<KubeList>('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets`);
    return replicaSets.items.length === 0 && (await listPods(admin, namespace, 'app=doomed')).length === 0;
  });
});

fixture.test('a StatefulSet rolls its pods highest ordinal first', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  const path = `/apis/apps/v1/namespaces/${namespace}/statefulsets`;
  await create(admin, path, {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'db' },
    spec: { replicas: 3, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: podTemplate({ app: 'db' }) },
  });
  const readyAll = async () => {
    const sts = await admin.request('GET', `${path}/db`);
    const status: Record<string, unknown> = sts.status ?? {};
    return status['observedGeneration'] === sts.metadata?.generation &&
      status['readyReplicas'] === 3 &&
      status['updatedReplicas'] === 3 &&
      status['currentRevision'] === status['updateRevision']
      ? sts
      : undefined;
  };
  await waitFor('the StatefulSet to be ready', readyAll, { timeoutMs: 60_000 });

  const pods = await admin.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods`);
  const abort = new AbortController();
  const deletions: string[] = [];
  const watching = (async () => {
    const events = admin.watch<KubeObject>(
      `/api/v1/namespaces/${namespace}/pods?resourceVersion=${pods.metadata.resourceVersion}`,
      abort.signal,
    );
    for await (const event of events) {
      // The controller may delete a pod it just recreated from a stale cache; the order of
      // first deletions is what the update strategy promises.
      const name = event.object.metadata?.name ?? '';
      if (event.type === 'DELETED' && !deletions.includes(name)) deletions.push(name);
    }
  })();
  await admin.request(
    'PATCH',
    `${path}/db`,
    { spec: { template: { metadata: { annotations: { 'driftless.dev/config-hash': 'changed' } } } } },
    { contentType: 'application/merge-patch+json' },
  );
  await waitFor('the StatefulSet update to finish', readyAll, { timeoutMs: 90_000 });
  abort.abort();
  await watching;
  assert.deepEqual(deletions, ['db-2', 'db-1', 'db-0']);
});

fixture.test('a DaemonSet puts one Ready pod on each node', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  const path = `/apis/apps/v1/namespaces/${namespace}/daemonsets`;
  await create(admin, path, {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'agent' },
    spec: { selector: { matchLabels: { app: 'agent' } }, template: podTemplate({ app: 'agent' }) },
  });
  await waitFor('the DaemonSet to be ready on both nodes', async () => {
    const status: Record<string, unknown> = (await admin.request('GET', `${path}/agent`)).status ?? {};
    return status['desiredNumberScheduled'] === 2 && status['numberReady'] === 2;
  });
  const nodes = (await listPods(admin, namespace, 'app=agent')).map((pod) => String(pod.spec?.['nodeName'])).sort();
  assert.deepEqual(nodes, ['fake-node-0', 'fake-node-1']);
});

fixture.test('a Job’s pod completes and the Job succeeds', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  await create(admin, `/apis/batch/v1/namespaces/${namespace}/jobs`, {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'once' },
    spec: { template: { ...podTemplate({ job: 'once' }), spec: { ...podTemplate({}).spec, restartPolicy: 'Never' } } },
  });
  await waitFor('the Job to succeed', async () => {
    const job = await admin.request('GET', `/apis/batch/v1/namespaces/${namespace}/jobs/once`);
    return job.status?.['succeeded'] === 1;
  });
});

fixture.test('the Eviction API answers 429 while a PDB forbids it and 201 once it allows it', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  await create(admin, `/apis/apps/v1/namespaces/${namespace}/deployments`, deployment('guarded', 2));
  await waitForDeploymentRollout(admin, namespace, 'guarded');
  const pdbPath = `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`;
  await create(admin, pdbPath, {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: 'guarded' },
    spec: { minAvailable: 2, selector: { matchLabels: { app: 'guarded' } } },
  });
  const pdbSettled = (allowed: number) => async () => {
    const pdb = await admin.request('GET', `${pdbPath}/guarded`);
    const status: Record<string, unknown> = pdb.status ?? {};
    return status['observedGeneration'] === pdb.metadata?.generation &&
      status['currentHealthy'] === 2 &&
      status['disruptionsAllowed'] === allowed;
  };
  await waitFor('the disruption controller to compute the PDB', pdbSettled(0));

  const [victim] = await listPods(admin, namespace, 'app=guarded');
  const victimName = victim?.metadata?.name ?? '';
  const evict = () =>
    admin.send('POST', `/api/v1/namespaces/${namespace}/pods/${victimName}/eviction`, {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: victimName, namespace },
    });
  const refused = await evict();
  assert.equal(refused.status, 429, JSON.stringify(refused.body));

  await admin.request('PATCH', `${pdbPath}/guarded`, { spec: { minAvailable: 1 } }, { contentType: 'application/merge-patch+json' });
  await waitFor('the PDB to allow one disruption', pdbSettled(1));
  const allowed = await evict();
  assert.equal(allowed.status, 201, JSON.stringify(allowed.body));
  const evicted = await admin.request('GET', `/api/v1/namespaces/${namespace}/pods/${victimName}`);
  assert.ok(evicted.metadata?.deletionTimestamp, 'the evicted pod is terminating');
});
