/**
 * A `kubectl replace` of a Deployment in the middle of its eviction restart,
 * on the real test cluster: the replace writes the manifest as it is in Git,
 * so every annotation the controller keeps on the Deployment is gone, while
 * the pod template (and so the pods) is unchanged. The restart must still
 * complete: every pod that predates the rotation replaced exactly once.
 * (Argo CD's `Replace=true` sync is the same write; its test with the real
 * Argo CD is test/argocd/replace-sync.test.ts.)
 */
import assert from 'node:assert/strict';
import { useCluster } from '../cluster/testing.ts';
import { read, COLLECTIONS, rotateSecret } from '../controller/support/fixtures.ts';
import { applyAsArgoCD } from '../support/drift-oracle.ts';
import { trackPods } from './support/pod-tracker.ts';
import { startReplicas, stopAll } from './support/replicas.ts';
import { appManifest, assertReplacedExactlyOnce, createSecret, elapsed, kubectlReplace, waitForMidRestart, waitForRecords, waitForReplaced, waitForSettled } from './support/scene.ts';

const fixture = useCluster({ auditLog: true });

const REPLICAS = 3;

fixture.test('kubectl replace of a Deployment mid-restart: the restart completes, every old pod replaced once', async ({ cluster, namespace }) => {
  const startedAt = Date.now();
  const tracker = trackPods(cluster.admin, namespace);
  await createSecret(cluster, namespace, 'db');
  const manifest = appManifest('app', { secret: 'db', replicas: REPLICAS });
  await applyAsArgoCD(cluster, manifest, { namespace });
  assert.ok(await waitForSettled(cluster, namespace, 'app', REPLICAS, 90_000), 'the Deployment rolled out');
  await tracker.ready();
  const replicas = await startReplicas(cluster, namespace, { count: 1, args: ['--min-restart-interval=0'] });
  try {
    await (replicas[0] as (typeof replicas)[number]).process.ready();
    await waitForRecords(cluster, namespace, ['app']);
    const old = tracker.live('app');
    tracker.measure('app', REPLICAS, 1);
    const rotatedAt = Date.now();
    await rotateSecret(cluster.admin, namespace, 'db', 'v2');

    const replacedAtFault = await waitForMidRestart(tracker, old);
    const before = await read(cluster.admin, `${COLLECTIONS.Deployment(namespace)}/app`);
    await kubectlReplace(cluster, namespace, manifest);
    const after = await read(cluster.admin, `${COLLECTIONS.Deployment(namespace)}/app`);
    const lost = Object.keys(before.metadata?.annotations ?? {}).filter((key) => key.startsWith('driftless.dev/') && after.metadata?.annotations?.[key] === undefined);
    // Where the controller keeps its record is its own business; the replace must only have happened.
    assert.notEqual(after.metadata?.resourceVersion, before.metadata?.resourceVersion, 'the replace wrote the Deployment');

    const done = await waitForReplaced(cluster, tracker, namespace, 'app', old, REPLICAS, 120_000);
    process.stderr.write(`kubectl replace with ${replacedAtFault} of ${old.length} pods replaced (annotations it removed: ${lost.join(', ') || 'none'}); test took ${elapsed(startedAt)}\n`);
    assert.ok(done, `every old pod replaced; still running: ${old.filter((uid) => tracker.live('app').includes(uid)).map((uid) => tracker.pods.get(uid)?.name).join(', ')}`);
    await assertReplacedExactlyOnce(cluster, tracker, namespace, 'app', old, rotatedAt);
    assert.equal(tracker.disruption('app').breaches, 0, 'never more than one pod down');
  } finally {
    await stopAll(replicas);
    tracker.stop();
  }
}, { timeout: 300_000 });
