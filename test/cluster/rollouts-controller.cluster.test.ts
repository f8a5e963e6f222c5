/**
 * The real Argo Rollouts controller runs in the test cluster: a Rollout gets
 * its ReplicaSet and Ready pods, and `spec.restartAt` really restarts them.
 */
import assert from 'node:assert/strict';
import type { KubeObject } from './api.ts';
import { create, listPods, podIsReady, podTemplate, useCluster } from './testing.ts';
import { waitFor } from '../support/wait.ts';

const fixture = useCluster({ rolloutsController: true });

fixture.test('spec.restartAt restarts every pod of a Rollout', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  const path = `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/rollouts`;
  await create(admin, path, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'canary' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'canary' } },
      template: podTemplate({ app: 'canary' }),
      strategy: { canary: { steps: [] } },
    },
  });
  const healthy = async (): Promise<KubeObject | undefined> => {
    const rollout = await admin.request('GET', `${path}/canary`);
    const status = rollout.status ?? {};
    return status['phase'] === 'Healthy' && status['readyReplicas'] === 2 ? rollout : undefined;
  };
  await waitFor('the Rollout to become Healthy', healthy, { timeoutMs: 90_000 });
  const before = await listPods(admin, namespace, 'app=canary');
  assert.equal(before.length, 2);
  const beforeUids = new Set(before.map((pod) => pod.metadata?.uid));

  // Whole seconds: restartAt is compared with pod creation timestamps, which have no fraction.
  const restartAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000).toISOString().replace('.000Z', 'Z');
  await admin.request('PATCH', `${path}/canary`, { spec: { restartAt } }, { contentType: 'application/merge-patch+json' });

  const after = await waitFor(
    'every pod to be replaced',
    async () => {
      const pods = await listPods(admin, namespace, 'app=canary');
      const fresh = pods.filter((pod) => !beforeUids.has(pod.metadata?.uid) && !pod.metadata?.deletionTimestamp);
      return fresh.length === 2 && pods.length === 2 && fresh.every(podIsReady) ? fresh : undefined;
    },
    { timeoutMs: 90_000 },
  );
  assert.equal(after.length, 2);
  // The controller records the restart once its last pod is replaced, on a later sync.
  await waitFor('status.restartedAt to record the restart', async () => {
    const rollout = await admin.request('GET', `${path}/canary`);
    return rollout.status?.['restartedAt'] === restartAt;
  });
});
