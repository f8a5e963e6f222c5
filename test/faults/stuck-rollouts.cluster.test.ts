/**
 * Stuck restarts must not starve the fleet, on the real test cluster: 50
 * Deployments use one out-of-band Secret; 10 of them have a rollout that
 * cannot progress (their new pods ask for a node that does not exist, so they
 * stay Pending). The Secret is rotated: the 40 healthy ones are each restarted
 * (their pod replaced exactly once) even though the stuck ones outnumber
 * nothing but the slots of `--max-concurrent-restarts`, and each of the 10 is
 * halted with a Warning Event (reason RestartProgressDeadlineExceeded)
 * within `--restart-progress-deadline`.
 */
import assert from 'node:assert/strict';
import type { KubeList, KubeObject } from '../cluster/api.ts';
import { useCluster } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { COLLECTIONS, rotateSecret } from '../controller/support/fixtures.ts';
import { trackPods } from './support/pod-tracker.ts';
import { startReplicas, stopAll } from './support/replicas.ts';
import { createSecret, deployApps, elapsed, waitForRecords, waitForReplaced } from './support/scene.ts';

const fixture = useCluster({ auditLog: true });

const HEALTHY = Array.from({ length: 40 }, (_, index) => `ok-${String(index).padStart(2, '0')}`);
const STUCK = Array.from({ length: 10 }, (_, index) => `stuck-${String(index).padStart(2, '0')}`);
const PROGRESS_DEADLINE_S = 15;
/** The reason of the halt's Warning (controller/events.ts). */
const HALT_REASON = 'RestartProgressDeadlineExceeded';
/** How long after the deadline the Warning may take: a requeue or two of the controller. */
const GRACE_MS = 30_000;

/**
 * Driftless' RestartProgressDeadlineExceeded Warnings on the workload created from `since` to `until`
 * (local epoch ms; the API server's creationTimestamp, same host clock; whole seconds, hence the second
 * of slack).
 */
function warningsOn(namespace: string, name: string, events: readonly KubeObject[], since: number, until: number): KubeObject[] {
  return events.filter((event) => {
    const involved = event['involvedObject'] as { name?: string; namespace?: string } | undefined;
    const source = (event['source'] as { component?: string } | undefined)?.component ?? event['reportingComponent'];
    const created = Date.parse(String(event.metadata?.['creationTimestamp']));
    return involved?.name === name && involved.namespace === namespace && event['type'] === 'Warning' && event['reason'] === HALT_REASON && String(source).startsWith('driftless') && created >= since - 1000 && created <= until;
  });
}

fixture.test('50 dependants of one Secret, 10 with a rollout that cannot progress: the 40 restart, the 10 are halted with a Warning Event each', async ({ cluster, namespace }) => {
  const startedAt = Date.now();
  const tracker = trackPods(cluster.admin, namespace);
  await createSecret(cluster, namespace, 'shared');
  // Two replicas each: a one-replica restart starts with a Warning of its own, which must not pass for the halt's.
  await deployApps(cluster, namespace, [...HEALTHY, ...STUCK], { secret: 'shared', replicas: 2, readyDelay: '1s' });
  await tracker.ready();
  // A rollout that cannot progress: the new template's pods ask for a node no one has, and stay Pending.
  for (const name of STUCK) {
    await cluster.admin.request('PATCH', `${COLLECTIONS.Deployment(namespace)}/${name}`, { spec: { template: { spec: { nodeSelector: { 'driftless.dev/no-such-node': 'true' } } } } }, { contentType: 'application/merge-patch+json' });
  }
  // maxSurge 1, maxUnavailable 0 (the defaults' rounding for 2 replicas): 2 old pods and 1 Pending each.
  await waitFor('the stuck rollouts to have a Pending pod each', () => STUCK.every((name) => tracker.live(name).length === 3), { timeoutMs: 60_000 });

  const replicas = await startReplicas(cluster, namespace, {
    count: 1,
    args: ['--min-restart-interval=0', '--restart-rate=20', '--restart-burst=50', '--max-concurrent-restarts=10', `--restart-progress-deadline=${PROGRESS_DEADLINE_S}s`, '--breaker-threshold=100'],
  });
  try {
    await (replicas[0] as (typeof replicas)[number]).process.ready();
    await waitForRecords(cluster, namespace, [...HEALTHY, ...STUCK]);
    const old = new Map(HEALTHY.map((name) => [name, tracker.live(name)]));
    const rotatedAt = Date.now();
    await rotateSecret(cluster.admin, namespace, 'shared', 'v2');

    const missed: string[] = [];
    for (const name of HEALTHY) {
      // One deadline for the whole fleet: the later ones have had all the earlier ones' time.
      const left = Math.max(1_000, rotatedAt + 180_000 - Date.now());
      if (!(await waitForReplaced(cluster, tracker, namespace, name, old.get(name) ?? [], 2, left))) missed.push(name);
    }
    const doubled = HEALTHY.filter((name) => tracker.verdict(name, old.get(name) ?? [], rotatedAt).doubled.length > 0);

    let without: string[] = [...STUCK];
    const unwarned = await waitFor(`a ${HALT_REASON} Warning on each stuck workload`, async () => {
      const events = (await cluster.admin.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/events`)).items;
      without = [];
      const until = rotatedAt + PROGRESS_DEADLINE_S * 1000 + GRACE_MS;
      for (const name of STUCK) if (warningsOn(namespace, name, events, rotatedAt, until).length === 0) without.push(name);
      return without.length === 0 ? without : undefined;
    }, { timeoutMs: Math.max(1_000, rotatedAt + PROGRESS_DEADLINE_S * 1000 + GRACE_MS - Date.now()), intervalMs: 1000 }).catch(() => without);

    process.stderr.write(`stuck rollouts: ${HEALTHY.length - missed.length} of ${HEALTHY.length} healthy restarted, ${missed.length} missed, ${doubled.length} doubled; test took ${elapsed(startedAt)}\n`);
    assert.deepEqual(missed, [], 'healthy workloads never restarted while the stuck ones held their slots');
    assert.deepEqual(doubled, [], 'healthy workloads restarted more than once');
    assert.deepEqual(unwarned, [], `stuck workloads without a ${HALT_REASON} Warning within ${PROGRESS_DEADLINE_S} s (+${GRACE_MS / 1000} s)`);
    for (const name of STUCK) {
      assert.equal(tracker.live(name).length, 3, `${name}: the stuck rollout's pods (2 old, 1 Pending) are left alone`);
    }
  } finally {
    await stopAll(replicas);
    tracker.stop();
  }
}, { timeout: 600_000 });
