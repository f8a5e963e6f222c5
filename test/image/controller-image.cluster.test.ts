/**
 * The controller run from the controller image, as its Deployment runs it
 * (`driftless controller` on the image's PATH, UID 999, read-only root, the
 * kubeconfig on a read-only volume, an emptyDir /tmp): a Secret rotated out of
 * band restarts the Deployment that uses it, without drift from what Argo CD
 * applied; and with the git strategy, the controller from the image commits
 * the keyed digest over HTTPS with the git, CA certificates and askpass the
 * image carries (no shell: the image's shells are masked).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { installArgoCdCrds } from '../cluster/argocd.ts';
import { create } from '../cluster/testing.ts';
import { COLLECTIONS, secret } from '../controller/support/fixtures.ts';
import { createPlayground, startGitHttpServer } from '../controller/writeback/git-server.ts';
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

fixture.test('the controller image runs the git strategy: one commit of the keyed digest over HTTPS, with the image\'s git and no shell', async ({ cluster, namespace, t }) => {
  const images = await imagesOrDiagnostic(t);
  if (images === undefined) return;
  const api = cluster.admin;
  const password = `git-${randomUUID()}`;
  const playground = await createPlayground();
  const server = await startGitHttpServer(playground, 'writer', password);
  try {
    await installArgoCdCrds(cluster);
    const argocd = `${namespace}-argocd`;
    await create(api, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: argocd } });
    const repo = `${namespace}-shop`;
    await playground.createRepo(repo, 'main', { 'apps/shop/deployment.yaml': '# rendered by the plugin\n' });
    const url = server.url(repo);
    await create(api, `/api/v1/namespaces/${argocd}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'repo-shop', labels: { 'argocd.argoproj.io/secret-type': 'repository' } },
      stringData: { type: 'git', url, username: 'writer', password },
    });
    await create(api, `/apis/argoproj.io/v1alpha1/namespaces/${argocd}/applications`, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'shop', namespace: argocd },
      spec: { project: 'default', destination: { server: 'https://kubernetes.default.svc', namespace }, source: { repoURL: url, path: 'apps/shop', targetRevision: 'main', plugin: { name: 'driftless-v1' } } },
    });
    await create(api, COLLECTIONS.Secret(namespace), secret('db', 'v1'));
    await create(api, COLLECTIONS.Deployment(namespace), workload('Deployment', 'web', {
      replicas: 1,
      uses: { secret: 'db' },
      annotations: { 'reloader.stakater.com/auto': 'true', 'driftless.dev/restart-strategy': 'git', 'argocd.argoproj.io/tracking-id': `shop:apps/Deployment:${namespace}/web` },
      templateAnnotations: { 'driftless.dev/config-hash': 'v1:render-0' },
    }));
    await waitForDeploymentRollout(api, namespace, 'web');
    // The hash key as a Secret volume gives it: a file the image's user can read.
    const keyDir = await mkdtemp(path.join(cluster.stateDir, 'hash-key-'));
    await mkdir(path.join(keyDir, 'key'));
    await writeFile(path.join(keyDir, 'key', 'hash-key'), randomBytes(32).toString('hex'), { mode: 0o644 });
    await chmod(path.join(keyDir, 'key'), 0o755);
    const before = await playground.headSha(repo, 'main');
    const controller = await startControllerProcess(cluster, {
      args: [`--namespaces=${namespace}`, `--argocd-namespace=${argocd}`, '--hash-key-file=/etc/driftless/hash-key/hash-key', '--min-restart-interval=0', '--write-back-batch-window=1s'],
      image: images.controller,
      volumes: [{ source: path.join(keyDir, 'key'), target: '/etc/driftless/hash-key', readOnly: true }],
    });
    try {
      await controller.ready();
      await waitFor('the first-sight record of web', async () => (await api.request('GET', `${COLLECTIONS.Deployment(namespace)}/web`)).metadata?.annotations?.['driftless.dev/restarted-for']);
      await rotateSecret(api, namespace, 'db', 'v2');
      await waitForEvent(api, namespace, 'web', 'WriteBackCommitted', 120_000);
      const after = await playground.headSha(repo, 'main');
      assert.notEqual(after, before, 'a commit landed');
      assert.equal(await playground.headSha(repo, 'main~1'), before, 'exactly one commit');
      const file = (await playground.show(repo, 'main', 'apps/shop/.driftless/out-of-band')) ?? '';
      assert.match(file, new RegExp(`- kind: Secret\\n  namespace: "${namespace}"\\n  name: "db"\\n  digest: v1:[0-9a-f]{64}\\n`), file);
      const restarts = (await eventsFor(api, namespace, 'web')).filter((event) => event['reason'] === 'RestartFinished');
      assert.equal(restarts.length, 0, 'nothing restarted in the cluster');
    } finally {
      assert.equal(await controller.stop(), 0, 'the controller exits 0 on SIGTERM');
    }
  } finally {
    await server.close();
    await playground.dispose();
  }
}, { timeout: 180_000 });
