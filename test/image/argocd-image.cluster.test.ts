/**
 * The real Argo CD with the Driftless sidecars run from the plugin image:
 * argocd-cmp-server (Argo CD's own binary, in the var-files volume as the
 * copyutil init container puts it) and the render server, each from the
 * image's root filesystem as the shipped patch's container — its UID, a
 * read-only root, its volumes, its environment over the image's. Applications
 * rendered through them sync with the hashes the checkout computes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../cluster/api.ts';
import { startArgoCD, type ArgoCD } from '../cluster/argocd.ts';
import { startCluster, type Cluster } from '../cluster/harness.ts';
import { commitExample, hashOf, objectPath, pluginApplicationSpec, renderLocally, workloadsOf } from '../argocd/plugin-support.ts';
import type { Images } from './build.ts';
import { imagesOrDiagnostic } from './checked.ts';

describe('Argo CD with the sidecar and the render server from the plugin image', () => {
  let images: Images | undefined;
  let cluster: Cluster | undefined;
  let argocd: ArgoCD | undefined;
  before(async () => {
    cluster = await startCluster();
  }, { timeout: 60 * 60_000 });
  after(async () => {
    await argocd?.stop();
    await cluster?.stop();
  });

  it('starts argocd-cmp-server and the render server from the image\'s root filesystem', { timeout: 30 * 60_000 }, async (t) => {
    images = await imagesOrDiagnostic(t);
    if (images === undefined || cluster === undefined) return;
    argocd = await startArgoCD(cluster, { pluginImage: { rootfs: images.plugin.rootfs, env: images.plugin.env } });
    // The container's own path (from the patch, unmapped): the server runs inside the image's root.
    assert.match(await argocd.renderServerLog(), /^driftless serve: listening on \/tmp\/driftless\/render\.sock$/m);
  });

  for (const example of ['directory', 'helm'] as const) {
    it(`syncs the ${example} example rendered by the image's plugin, with the checkout's hashes`, { timeout: 5 * 60_000 }, async (t) => {
      if (images === undefined) return t.diagnostic('the images were not built (see the first test)');
      if (cluster === undefined || argocd === undefined) throw new Error('Argo CD did not start (see the first test)');
      const namespace = await cluster.newNamespace();
      const name = `${namespace}-${example}`;
      try {
        const served = async (): Promise<number> => ((await argocd?.renderServerLog()) ?? '').match(/^driftless serve: generate exit 0 in \d+ ms$/gm)?.length ?? 0;
        const before = await served();
        const app = await commitExample(argocd, name, example);
        await argocd.createApplication(name, pluginApplicationSpec(app, namespace));
        await argocd.sync(name, { revision: app.revision });
        await argocd.waitForApplication(name, `synced to ${app.revision}`, (status) => status.operationState?.phase === 'Succeeded' && status.sync?.status === 'Synced' && status.sync.revision === app.revision, {
          timeoutMs: 150_000,
        });
        const expected = workloadsOf(await renderLocally(argocd, app, name, namespace));
        assert.ok(expected.length > 0, 'the example has workloads');
        for (const workload of expected) {
          const live: KubeObject = await cluster.admin.request('GET', objectPath(workload, namespace));
          const label = `${workload.kind} ${workload.metadata?.name}`;
          assert.match(hashOf(live) ?? '', /\S/, `${label} has a hash in its pod template`);
          assert.equal(hashOf(live), hashOf(workload), `${label}: the hash the image's plugin rendered is the checkout's`);
        }
        assert.ok((await served()) > before, 'the renders went through the render server in the image');
      } catch (error) {
        process.stderr.write(`\n${name} failed; Argo CD:\n${await argocd.logs()}\n`);
        throw error;
      } finally {
        await argocd.deleteApplication(name).catch(() => undefined);
      }
    });
  }
});
