/**
 * The controller run from the controller image, as its Deployment runs it
 * (`driftless controller` on the image's PATH, UID 999, read-only root, the
 * kubeconfig on a read-only volume, an emptyDir /tmp): a Secret rotated out of
 * band restarts the Deployment that uses it, without drift from what Argo CD
 * applied.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { applyAsArgoCD, assertNoDrift } from '../support/drift-oracle.ts';
import { waitFor } from '../support/wait.ts';
import { createExternalSecret, eventsFor, rotateSecret, uids, waitForEvent, waitForReadyPods, workload } from '../controller/support/fixtures.ts';
import { startControllerProcess } from '../controller/support/process.ts';
import { imagesOrDiagnostic } from './checked.ts';

const fixture = useCluster();

fixture.test('the controller image restarts a Deployment when its Secret rotates, as UID 999 on a read-only root without a shell', async ({ cluster, namespace, t }) => {
  const images = await imagesOrDiagnostic(t);
  if (images === undefined) return;
  const api = cluster.admin;
  await createExternalSecret(api, namespace, 'db', 'v1');
  const manifest = workload('Deployment', 'app', { replicas: 2, uses: { secret: 'db' } });
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitForDeploymentRollout(api, namespace, 'app');
  const podsBefore = await waitForReadyPods(api, namespace, 'app', 2);

  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`], image: images.controller });
  try {
    await controller.ready();
    // The process itself (each wrapper execs the next): the image's user, and its root is the image's.
    const status = await readFile(`/proc/${controller.pid}/status`, 'utf8');
    assert.match(status, /^Uid:\s+999\s+999\s+999\s+999$/m, 'runs as UID 999');
    assert.match(status, /^Gid:\s+999\s+999\s+999\s+999$/m, 'runs as GID 999');
    await waitFor('the first-sight record of the Deployment', async () => {
      const live = await api.request('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/app`);
      return live.metadata?.annotations?.['driftless.dev/restarted-for'];
    });
    await rotateSecret(api, namespace, 'db', 'v2');
    await waitForEvent(api, namespace, 'app', 'RestartFinished', 150_000);
    const podsAfter = await waitForReadyPods(api, namespace, 'app', 2);
    const oldUids = uids(podsBefore);
    assert.ok(!uids(podsAfter).some((uid) => oldUids.includes(uid)), 'every pod was replaced');
    assert.ok((await eventsFor(api, namespace, 'app')).some((event) => event['reason'] === 'RestartFinished'));
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    assert.equal(await controller.stop(), 0, 'the controller exits 0 on SIGTERM');
  }
});
