/**
 * A PodDisruptionBudget that keeps refusing a restart's evictions must not
 * flood the workload with Warning Events (issue 18, item 5): however many
 * times the controller retries, the workload gets one RestartBlocked Event
 * (repeats fold into it, its count rising). Judged after many refusals,
 * counted in the audit log, and once the Event's count has risen (the
 * recorder writes a series' count at most once per --event-series-interval,
 * a minute by default as in client-go, 5 s here), rather than after a stretch
 * of time.
 */
import assert from 'node:assert/strict';
import type { KubeObject } from '../cluster/api.ts';
import { useCluster } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { eventsFor, rotateSecret } from '../controller/support/fixtures.ts';
import { startReplicas, stopAll } from './support/replicas.ts';
import { createSecret, deployApps, elapsed, waitForRecords } from './support/scene.ts';

const fixture = useCluster({ auditLog: true });

const REFUSALS = 12;

fixture.test('a PodDisruptionBudget blocking a restart through many retries gives one RestartBlocked Event', async ({ cluster, namespace }) => {
  const startedAt = Date.now();
  await createSecret(cluster, namespace, 'db');
  await deployApps(cluster, namespace, ['app'], { secret: 'db', replicas: 2, readyDelay: '1s' });
  await cluster.admin.request('POST', `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`, {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: 'app' },
    spec: { minAvailable: 2, selector: { matchLabels: { app: 'app' } } },
  });
  const replicas = await startReplicas(cluster, namespace, { count: 1, args: ['--min-restart-interval=0', '--eviction-blocked-warning=1s', '--restart-check-interval=500ms', '--event-series-interval=5s'] });
  try {
    const controller = replicas[0] as (typeof replicas)[number];
    await controller.process.ready();
    await waitForRecords(cluster, namespace, ['app']);
    await rotateSecret(cluster.admin, namespace, 'db', 'v2');
    const refusals = await waitFor(`${REFUSALS} evictions refused by the budget`, async () => {
      const refused = await cluster.audit({ user: controller.user, namespace, resource: 'pods', subresource: 'eviction', succeeded: false });
      return refused.length >= REFUSALS ? refused.length : undefined;
    }, { timeoutMs: 180_000, intervalMs: 500 });
    const blockedEvents = async (): Promise<KubeObject[]> => (await eventsFor(cluster.admin, namespace, 'app')).filter((event) => event['reason'] === 'RestartBlocked');
    // The repeats show as a count above 1 on the one Event (or as a second Event, which fails below).
    const blocked = await waitFor('the RestartBlocked Event to count its repeats', async () => {
      const now = await blockedEvents();
      return now.length > 1 || now.some((event) => Number(event['count']) > 1) ? now : undefined;
    }, { timeoutMs: 150_000, intervalMs: 1000 }).catch(() => blockedEvents());
    const refusedInAll = (await cluster.audit({ user: controller.user, namespace, resource: 'pods', subresource: 'eviction', succeeded: false })).length;
    const summary = blocked.map((event) => `count ${String(event['count'])}: ${String(event['message'])}`).join('\n');
    process.stderr.write(`blocked restart: ${refusedInAll} refused evictions (${refusals} when first counted), ${blocked.length} RestartBlocked Events (${summary}); test took ${elapsed(startedAt)}\n`);
    assert.ok(blocked.length >= 1, 'the block is reported');
    assert.equal(blocked.length, 1, `one RestartBlocked Event, repeats folded into it; got:\n${summary}`);
    assert.ok(Number((blocked[0] as KubeObject)['count']) > 1, `the Event's count rises with the repeats; got:\n${summary}`);
  } finally {
    await stopAll(replicas);
  }
}, { timeout: 300_000 });
