/**
 * What the fault tests rely on, checked on the real cluster: the audit log
 * records each write with the ServiceAccount that made it (evictions included,
 * reads not), keeps recording across an API server restart; and a pod's
 * readiness delay can be set per pod by annotation.
 */
import assert from 'node:assert/strict';
import type { KubeObject } from './api.ts';
import { readyDelayAnnotation } from './harness.ts';
import { create, listPods, podIsReady, podTemplate, useCluster } from './testing.ts';
import { waitFor } from '../support/wait.ts';

const fixture = useCluster({ auditLog: true });

function deployment(name: string, annotations: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: podTemplate({ app: name }, annotations) },
  };
}

/** Seconds from a pod's creation to its Ready condition, from the timestamps the API server and kwok wrote. */
function secondsToReady(pod: KubeObject): number {
  const conditions = (pod.status?.['conditions'] ?? []) as { type: string; lastTransitionTime: string }[];
  const ready = conditions.find((condition) => condition.type === 'Ready');
  return (Date.parse(String(ready?.lastTransitionTime)) - Date.parse(String(pod.metadata?.['creationTimestamp']))) / 1000;
}

fixture.test('the audit log records writes with the ServiceAccount that made them, evictions included, reads not, across an API server restart', async ({ cluster, namespace }) => {
  const user = await cluster.createServiceAccount(namespace, 'robot');
  assert.equal(user, `system:serviceaccount:${namespace}:robot`);
  const robot = await cluster.clientFor(namespace, 'robot');
  try {
    await create(cluster.admin, `/apis/apps/v1/namespaces/${namespace}/deployments`, deployment('web'));
    const pod = await waitFor('the pod', async () => (await listPods(cluster.admin, namespace, 'app=web'))[0]);
    const name = String(pod.metadata?.name);
    await robot.request('GET', `/api/v1/namespaces/${namespace}/pods/${name}`);
    await robot.request('POST', `/api/v1/namespaces/${namespace}/pods/${name}/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } });
    const evictions = await cluster.audit({ user, namespace, resource: 'pods', subresource: 'eviction' });
    assert.equal(evictions.length, 1, 'one eviction by the robot');
    assert.equal(evictions[0]?.objectRef?.name, name);
    assert.equal(evictions[0]?.responseStatus?.code, 201);
    assert.deepEqual((await cluster.audit({ user })).map((event) => event.verb), ['create'], 'its GET is not logged');

    await cluster.restartApiServer();
    await robot.request('POST', `/api/v1/namespaces/${namespace}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-restart' } });
    const writes = await cluster.audit({ user });
    assert.deepEqual(writes.map((event) => `${event.verb} ${event.objectRef?.resource ?? ''}`), ['create pods', 'create configmaps'], 'the log goes on after the restart');
  } finally {
    robot.close();
  }
});

fixture.test('a pod annotated with a readiness delay becomes Ready no sooner than that', async ({ cluster, namespace }) => {
  await create(cluster.admin, `/apis/apps/v1/namespaces/${namespace}/deployments`, deployment('slow', { [readyDelayAnnotation]: '5s' }));
  const pod = await waitFor('the slow pod to be Ready', async () => {
    const [found] = await listPods(cluster.admin, namespace, 'app=slow');
    return found !== undefined && podIsReady(found) ? found : undefined;
  }, { timeoutMs: 60_000 });
  // Timestamps have whole seconds: 5 s of delay shows as at least 4.
  assert.ok(secondsToReady(pod) >= 4, `Ready ${secondsToReady(pod)} s after creation`);
});
