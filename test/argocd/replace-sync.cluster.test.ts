/**
 * A `Replace=true` sync by the real Argo CD racing an out-of-band Secret
 * rotation (issue 18): the sync replaces the Deployment with the manifest from
 * Git, so whatever the controller keeps on the object is gone, while the pod
 * template is unchanged (no new commit: the sync rolls nothing). Whether the
 * sync lands right after the rotation (before the restart began) or in the
 * middle of the restart, the restart must complete: every pod that predates
 * the rotation replaced exactly once, none missed.
 *
 * The controller runs as its own ServiceAccount and Argo CD as admin, so the
 * API server's audit log orders the sync's replace and the evictions.
 */
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { auditTime, describeAudit } from '../cluster/audit.ts';
import { useArgoCD } from '../cluster/testing.ts';
import { rotateSecret } from '../controller/support/fixtures.ts';
import { trackPods } from '../faults/support/pod-tracker.ts';
import { startReplicas, stopAll } from '../faults/support/replicas.ts';
import { appManifest, assertReplacedExactlyOnce, createSecret, elapsed, waitForMidRestart, waitForRecords, waitForReplaced, waitForSettled } from '../faults/support/scene.ts';

const fixture = useArgoCD({ auditLog: true });

const REPLICAS = 3;
const REPLACE = ['Replace=true'];

for (const when of ['right after the rotation, before the restart began', 'in the middle of the restart'] as const) {
  fixture.test(`a Replace=true sync by Argo CD ${when}: the restart completes, every old pod replaced once`, async ({ cluster, argocd, namespace }) => {
    const startedAt = Date.now();
    const tracker = trackPods(cluster.admin, namespace);
    await createSecret(cluster, namespace, 'db');
    const repo = await argocd.createRepo(`replace-${namespace}`);
    const sha = await repo.commit({ 'app/deployment.yaml': stringify(appManifest('app', { secret: 'db', replicas: REPLICAS })) }, 'app');
    const appName = `replace-${namespace}`;
    await argocd.createApplication(appName, {
      source: { repoURL: repo.url, targetRevision: 'main', path: 'app' },
      destination: { server: 'https://kubernetes.default.svc', namespace },
      syncPolicy: { syncOptions: REPLACE },
    });
    await argocd.sync(appName, { syncOptions: REPLACE });
    await argocd.waitForSyncedAndHealthy(appName, sha, { timeoutMs: 180_000 });
    assert.ok(await waitForSettled(cluster, namespace, 'app', REPLICAS, 90_000), 'the Deployment rolled out');
    await tracker.ready();
    // Before the restart began: a debounce long enough for the sync to land first (checked below in the audit log).
    const debounce = when.startsWith('right after') ? ['--debounce=8s'] : [];
    const replicas = await startReplicas(cluster, namespace, { count: 1, args: ['--min-restart-interval=0', ...debounce] });
    try {
      await (replicas[0] as (typeof replicas)[number]).process.ready();
      await waitForRecords(cluster, namespace, ['app']);
      const old = tracker.live('app');
      tracker.measure('app', REPLICAS, 1);
      const rotatedAt = Date.now();
      await rotateSecret(cluster.admin, namespace, 'db', 'v2');
      const replacedAtSync = when.startsWith('right after') ? 0 : await waitForMidRestart(tracker, old);
      const syncedAt = Date.now();
      await argocd.sync(appName, { syncOptions: REPLACE });
      await argocd.waitForApplication(appName, 'the Replace=true sync to finish', (_status, app) => {
        const operation = app.status?.['operationState'] as { phase?: string; startedAt?: string } | undefined;
        return operation?.phase === 'Succeeded' && Date.parse(String(operation.startedAt)) >= syncedAt - 1000;
      }, { timeoutMs: 120_000 });

      // The Deployment itself, not its status (the controller manager also writes as admin here).
      const replaces = await cluster.audit({ user: 'admin', namespace, resource: 'deployments', subresource: '', name: 'app', verbs: ['update'], succeeded: true, since: syncedAt - 1000 });
      assert.ok(replaces.length > 0, 'Argo CD replaced the Deployment (an update by its user)');
      const replacedAt = auditTime((replaces[0] as (typeof replaces)[number]).requestReceivedTimestamp);
      const evictions = await cluster.audit({ namespace, resource: 'pods', subresource: 'eviction', succeeded: true, since: rotatedAt });
      const evictedBefore = evictions.filter((entry) => auditTime(entry.requestReceivedTimestamp) < replacedAt).length;
      if (when.startsWith('right after')) {
        assert.equal(evictedBefore, 0, `the sync landed before the restart began:\n${describeAudit(evictions)}`);
      } else {
        assert.ok(evictedBefore > 0 && evictedBefore < old.length, `the sync landed mid-restart (${evictedBefore} of ${old.length} evicted before it)`);
      }

      const done = await waitForReplaced(cluster, tracker, namespace, 'app', old, REPLICAS, 150_000);
      process.stderr.write(`Replace=true sync ${when} (${replacedAtSync} of ${old.length} replaced when it started); test took ${elapsed(startedAt)}\n`);
      assert.ok(done, `every old pod replaced; still running: ${old.filter((uid) => tracker.live('app').includes(uid)).map((uid) => tracker.pods.get(uid)?.name).join(', ')}`);
      await assertReplacedExactlyOnce(cluster, tracker, namespace, 'app', old, rotatedAt);
      assert.equal(tracker.disruption('app').breaches, 0, 'never more than one pod down');
    } finally {
      await stopAll(replicas);
      tracker.stop();
    }
  }, { timeout: 480_000 });
}
