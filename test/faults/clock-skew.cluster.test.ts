/**
 * The controller's wall clock shifted against the API server's (libfaketime),
 * on the real test cluster. T is compared with pod creation timestamps, which
 * the API server writes with its own clock, so:
 * - 5 s behind: a pod created just before the rotation (here: the replacement
 *   of a pod deleted by hand) must still be replaced, not taken as fresh;
 * - 5 s ahead: the replacements created in the first seconds of the restart
 *   must not be taken as stale and evicted again (pods are Ready 1 s after
 *   binding, so all three are replaced within those 5 s).
 * Each time: none missed, none doubled, every old pod replaced exactly once.
 */
import assert from 'node:assert/strict';
import type { Cluster } from '../cluster/harness.ts';
import { useCluster } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { rotateSecret } from '../controller/support/fixtures.ts';
import type { ControllerProcess } from '../controller/support/process.ts';
import { trackPods, type PodTracker } from './support/pod-tracker.ts';
import { startReplicas, stopAll } from './support/replicas.ts';
import { assertReplacedExactlyOnce, createSecret, deployApps, elapsed, waitForRecords, waitForReplaced, waitForSettled } from './support/scene.ts';

const fixture = useCluster({ auditLog: true });

const REPLICAS = 3;
const SHIFT_SECONDS = 5;
const ARGS = ['--min-restart-interval=0', '--restart-rate=10', '--restart-burst=10'];

/**
 * The controller's clock offset, measured: the `time` of its first log line
 * from `mark` on against this process's clock when it arrived (the same host
 * clock as the API server's; polled every 50 ms). Proves the shift took effect.
 */
async function measuredOffsetSeconds(controller: ControllerProcess, mark: number): Promise<number> {
  const line = await controller.waitForLog('any new log line', (entry) => entry['time'] !== undefined, { fromIndex: mark, timeoutMs: 30_000 });
  return (Date.parse(String(line['time'])) - Date.now()) / 1000;
}

/** Deletes one pod by hand and waits for its replacement to exist: a pod created seconds before the rotation. */
async function freshPodJustBefore(cluster: Cluster, tracker: PodTracker, namespace: string): Promise<{ uid: string; createdAt: number }> {
  const before = tracker.live('app');
  const name = tracker.pods.get(before[0] as string)?.name;
  await cluster.admin.request('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}`);
  const fresh = await waitFor('the replacement of the deleted pod', () => {
    const live = tracker.live('app');
    return live.length === REPLICAS ? live.map((uid) => tracker.pods.get(uid)).find((pod) => pod !== undefined && !before.includes(pod.uid)) : undefined;
  }, { timeoutMs: 30_000, intervalMs: 50 });
  return { uid: fresh.uid, createdAt: fresh.createdAt };
}

for (const shift of [-SHIFT_SECONDS, SHIFT_SECONDS]) {
  const label = shift < 0 ? `${-shift} s behind` : `${shift} s ahead of`;
  fixture.test(`the controller's clock ${label} the API server's: none missed, none doubled`, async ({ cluster, namespace }) => {
    const startedAt = Date.now();
    const tracker = trackPods(cluster.admin, namespace);
    await createSecret(cluster, namespace, 'db');
    // Ready 1 s after binding: the pod created just before the rotation is Ready by then, so it costs no availability.
    await deployApps(cluster, namespace, ['app'], { secret: 'db', replicas: REPLICAS, readyDelay: '1s' });
    await tracker.ready();
    const replicas = await startReplicas(cluster, namespace, { count: 1, args: ARGS, clockShiftSeconds: [shift] });
    try {
      const controller = (replicas[0] as (typeof replicas)[number]).process;
      await controller.ready();
      await waitForRecords(cluster, namespace, ['app']);

      // A pod created within the shift before the rotation: a controller behind takes it as fresh.
      const fresh = await freshPodJustBefore(cluster, tracker, namespace);
      assert.ok(await waitForSettled(cluster, namespace, 'app', REPLICAS, 30_000), 'the replacement of the deleted pod is Ready');
      const old = tracker.live('app');
      tracker.measure('app', REPLICAS, 1);
      const rotatedAt = Date.now();
      const mark = controller.lines.length;
      await rotateSecret(cluster.admin, namespace, 'db', 'v2');
      // What the rotation makes it log shows its clock.
      const offset = await measuredOffsetSeconds(controller, mark);
      assert.ok(Math.abs(offset - shift) < 2, `the controller's clock is ${offset.toFixed(1)} s off, expected ${shift}`);
      assert.ok(rotatedAt - fresh.createdAt < SHIFT_SECONDS * 1000, `the fresh pod was created ${rotatedAt - fresh.createdAt} ms before the rotation, within the shift`);

      const done = await waitForReplaced(cluster, tracker, namespace, 'app', old, REPLICAS, 90_000);
      // A controller ahead evicts replacements once they are Ready; wait for its own verdict (the record is written when it is done).
      await waitFor('the controller to finish the restart', async () => {
        const events = await cluster.admin.request<{ items: { reason?: string; involvedObject?: { name?: string } }[] }>('GET', `/api/v1/namespaces/${namespace}/events`);
        return events.items.some((event) => event.reason === 'RestartFinished' && event.involvedObject?.name === 'app');
      }, { timeoutMs: 90_000 }).catch(() => undefined);
      process.stderr.write(`clock ${label} the API server's (measured ${offset.toFixed(1)} s); test took ${elapsed(startedAt)}\n`);
      assert.ok(done, `every old pod replaced (the pod created ${((rotatedAt - fresh.createdAt) / 1000).toFixed(1)} s before the rotation included)`);
      await assertReplacedExactlyOnce(cluster, tracker, namespace, 'app', old, rotatedAt);
      assert.equal(tracker.disruption('app').breaches, 0, 'never more than one pod down');
    } finally {
      await stopAll(replicas);
      tracker.stop();
    }
  }, { timeout: 300_000 });
}
