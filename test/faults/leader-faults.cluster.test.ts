/**
 * Fault tests of leader election on the real test cluster, each with two
 * `driftless controller --leader-elect` replicas under their own
 * ServiceAccounts and a 4-pod Deployment whose pods become Ready 3 s after
 * binding (so a restart, one pod at a time, lasts ~15 s), every fault injected
 * once the restart has replaced some but not all old pods:
 * - the leader frozen (SIGSTOP) until the standby holds the Lease and has
 *   evicted, then resumed: the audit log shows no write by it after the
 *   standby acquired the Lease; the standby completes;
 * - the leader SIGKILLed; the API server restarted; both replicas stopped and
 *   the Secret rotated again before both start.
 * Every time: every old pod replaced exactly once (pod watch and audit log),
 * none missed, no replacement evicted, never more than one pod down.
 */
import assert from 'node:assert/strict';
import { auditTime, describeAudit } from '../cluster/audit.ts';
import { useCluster } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { rotateSecret } from '../controller/support/fixtures.ts';
import type { Cluster } from '../cluster/harness.ts';
import { trackPods, type PodTracker } from './support/pod-tracker.ts';
import { leaseHolder, startReplicas, stopAll, waitForLeader, type Replica } from './support/replicas.ts';
import { assertReplacedExactlyOnce, createSecret, deployApps, elapsed, waitForMidRestart, waitForRecords, waitForReplaced, waitForSettled } from './support/scene.ts';

const fixture = useCluster({ auditLog: true });

const REPLICAS = 4;
const RESTART_TIMEOUT_MS = 120_000;
/** Fast restarts: no cooldown between rounds, starts not rate-limited. */
const ARGS = ['--min-restart-interval=0', '--restart-rate=10', '--restart-burst=10'];

/** The other replica. */
function other(replicas: readonly Replica[], one: Replica): Replica {
  return replicas.find((replica) => replica !== one) as Replica;
}

/**
 * Every test's scene: a 4-pod Deployment using Secret db, its pods tracked, two replicas started with a
 * leader elected and the Deployment's record written. On a failure here everything started is stopped.
 */
async function startScene(cluster: Cluster, namespace: string): Promise<{ tracker: PodTracker; replicas: Replica[]; leader: Replica }> {
  const tracker = trackPods(cluster.admin, namespace);
  let replicas: Replica[] = [];
  try {
    await createSecret(cluster, namespace, 'db');
    await deployApps(cluster, namespace, ['app'], { secret: 'db', replicas: REPLICAS });
    await tracker.ready();
    replicas = await startReplicas(cluster, namespace, { args: ARGS });
    const leader = await waitForLeader(cluster, namespace, replicas);
    await waitForRecords(cluster, namespace, ['app']);
    return { tracker, replicas, leader };
  } catch (error) {
    await stopAll(replicas);
    tracker.stop();
    throw error;
  }
}

fixture.test('the leader frozen mid-restart for longer than the lease, then resumed: no write by it after the standby took the Lease; the standby completes; every pod replaced once', async ({ cluster, namespace }) => {
  const startedAt = Date.now();
  const { tracker, replicas, leader } = await startScene(cluster, namespace);
  try {
    const standby = other(replicas, leader);
    const old = tracker.live('app');
    tracker.measure('app', REPLICAS, 1);
    const rotatedAt = Date.now();
    await rotateSecret(cluster.admin, namespace, 'db', 'v2');

    const replacedAtFault = await waitForMidRestart(tracker, old);
    const frozenAt = Date.now();
    leader.freeze();
    await waitFor('the standby to hold the Lease', async () => (await leaseHolder(cluster, namespace)) === standby.name, { timeoutMs: 60_000 });
    // The standby acts before the old leader wakes, so a write by the old leader would collide with its work.
    await waitFor('the standby to evict', async () => (await cluster.audit({ user: standby.user, namespace, resource: 'pods', subresource: 'eviction', succeeded: true })).length > 0, { timeoutMs: 60_000 });
    const frozenForMs = Date.now() - frozenAt;
    leader.resume();

    const done = await waitForReplaced(cluster, tracker, namespace, 'app', old, REPLICAS, RESTART_TIMEOUT_MS);
    // Give the resumed leader its chance to misbehave: it must have noticed the loss (or exited) by the time the Lease is renewed twice more.
    const acquisitions = await cluster.audit({ user: standby.user, namespace, resource: 'leases', succeeded: true, since: frozenAt });
    assert.ok(acquisitions.length > 0, 'the standby wrote the Lease');
    const acquiredAt = auditTime((acquisitions[0] as (typeof acquisitions)[number]).stageTimestamp);
    await waitFor('two more renewals by the new leader', async () => (await cluster.audit({ user: standby.user, resource: 'leases', succeeded: true })).filter((entry) => auditTime(entry.requestReceivedTimestamp) > acquiredAt).length >= 2, { timeoutMs: 30_000 });

    process.stderr.write(`leader frozen for ${(frozenForMs / 1000).toFixed(1)} s with ${replacedAtFault} of ${old.length} pods replaced; test took ${elapsed(startedAt)}\n`);
    const lateWrites = (await cluster.audit({ user: leader.user }))
      .filter((entry) => auditTime(entry.requestReceivedTimestamp) > acquiredAt)
      // A refused Lease update is how a deposed leader may learn of its loss; it changes nothing.
      .filter((entry) => !(entry.objectRef?.resource === 'leases' && (entry.responseStatus?.code ?? 0) >= 300));
    assert.equal(lateWrites.length, 0, `writes by the old leader after the standby acquired the Lease at ${new Date(acquiredAt).toISOString()}:\n${describeAudit(lateWrites)}`);
    assert.ok(done, 'the standby completed the restart');
    await assertReplacedExactlyOnce(cluster, tracker, namespace, 'app', old, rotatedAt);
    const disruption = tracker.disruption('app');
    assert.equal(disruption.breaches, 0, `never more than ${disruption.budget} pod down (worst ${disruption.worst})`);
  } finally {
    await stopAll(replicas);
    tracker.stop();
  }
}, { timeout: 300_000 });

fixture.test('the leader SIGKILLed mid-restart: the standby completes it; every pod replaced once, none missed', async ({ cluster, namespace }) => {
  const startedAt = Date.now();
  const { tracker, replicas, leader } = await startScene(cluster, namespace);
  try {
    const standby = other(replicas, leader);
    const old = tracker.live('app');
    tracker.measure('app', REPLICAS, 1);
    const rotatedAt = Date.now();
    await rotateSecret(cluster.admin, namespace, 'db', 'v2');

    const replacedAtFault = await waitForMidRestart(tracker, old);
    await leader.kill();
    await waitFor('the standby to hold the Lease', async () => (await leaseHolder(cluster, namespace)) === standby.name, { timeoutMs: 60_000 });
    const done = await waitForReplaced(cluster, tracker, namespace, 'app', old, REPLICAS, RESTART_TIMEOUT_MS);
    process.stderr.write(`leader killed with ${replacedAtFault} of ${old.length} pods replaced; test took ${elapsed(startedAt)}\n`);
    assert.ok(done, 'the standby completed the restart');
    await assertReplacedExactlyOnce(cluster, tracker, namespace, 'app', old, rotatedAt);
    assert.equal(tracker.disruption('app').breaches, 0, 'never more than one pod down');
  } finally {
    await stopAll(replicas);
    tracker.stop();
  }
}, { timeout: 300_000 });

fixture.test('the API server restarted mid-restart: the restart completes; every pod replaced once, none missed', async ({ cluster, namespace }) => {
  const startedAt = Date.now();
  const { tracker, replicas } = await startScene(cluster, namespace);
  try {
    const old = tracker.live('app');
    tracker.measure('app', REPLICAS, 1);
    const rotatedAt = Date.now();
    await rotateSecret(cluster.admin, namespace, 'db', 'v2');

    const replacedAtFault = await waitForMidRestart(tracker, old);
    await cluster.restartApiServer();
    const done = await waitForReplaced(cluster, tracker, namespace, 'app', old, REPLICAS, RESTART_TIMEOUT_MS);
    process.stderr.write(`API server restarted with ${replacedAtFault} of ${old.length} pods replaced; test took ${elapsed(startedAt)}\n`);
    assert.ok(done, 'the restart completed across the API server restart');
    await assertReplacedExactlyOnce(cluster, tracker, namespace, 'app', old, rotatedAt);
    // The watch may miss states while the API server is down; breaches seen are real ones.
    assert.equal(tracker.disruption('app').breaches, 0, 'never more than one pod down');
  } finally {
    await stopAll(replicas);
    tracker.stop();
  }
}, { timeout: 300_000 });

fixture.test('both replicas stopped mid-restart, the Secret rotated again, both started: every pod replaced once, none missed', async ({ cluster, namespace }) => {
  const startedAt = Date.now();
  const { tracker, replicas } = await startScene(cluster, namespace);
  try {
    const first = tracker.live('app');
    await rotateSecret(cluster.admin, namespace, 'db', 'v2');
    const replacedAtFault = await waitForMidRestart(tracker, first);
    for (const replica of replicas) await replica.stop();

    // Whatever the first restart left: every pod running now predates the second rotation and must go once.
    assert.ok(await waitForSettled(cluster, namespace, 'app', REPLICAS, 60_000), 'the Deployment settles with the controllers down');
    const old = tracker.live('app');
    assert.ok(old.some((uid) => first.includes(uid)), 'some pods of the first rotation were never restarted before the stop');
    tracker.measure('app', REPLICAS, 1);
    const rotatedAt = Date.now();
    await rotateSecret(cluster.admin, namespace, 'db', 'v3');
    for (const replica of replicas) await replica.start();
    await waitForLeader(cluster, namespace, replicas);

    const done = await waitForReplaced(cluster, tracker, namespace, 'app', old, REPLICAS, RESTART_TIMEOUT_MS);
    process.stderr.write(`both stopped with ${replacedAtFault} of ${first.length} pods replaced; test took ${elapsed(startedAt)}\n`);
    assert.ok(done, 'the restart completed after both replicas started');
    await assertReplacedExactlyOnce(cluster, tracker, namespace, 'app', old, rotatedAt);
    assert.equal(tracker.disruption('app').breaches, 0, 'never more than one pod down');
  } finally {
    await stopAll(replicas);
    tracker.stop();
  }
}, { timeout: 300_000 });
