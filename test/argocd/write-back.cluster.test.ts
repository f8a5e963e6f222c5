/**
 * The write-back engine and the plugin end to end, with the real Argo CD and
 * the shipped sidecar: a digest committed by the engine to the app's
 * `.driftless/out-of-band` is read by the plugin from that commit and folded
 * into the workload's hash, so the ordinary sync rolls it. (The controller's
 * `git` strategy, which will submit on a live change, is not part of this.)
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { KubeObject } from '../cluster/api.ts';
import { applicationStatus } from '../cluster/argocd.ts';
import { runCommand } from '../cluster/exec.ts';
import { useArgoCD } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { formatOutOfBandFile } from '../../core/index.ts';
import { systemClock } from '../../controller/clock.ts';
import { createWriteBack, WRITE_BACK_DEFAULTS } from '../../controller/writeback/engine.ts';
import type { ApplicationLike } from '../../controller/writeback/source.ts';
import { commitExample, followCanary, hashOf, pluginApplicationSpec, renderLocally, workloadsOf } from './plugin-support.ts';

const fixture = useArgoCD({ rolloutsController: true });

fixture.test('a digest the engine commits is folded by the plugin into the hash: one commit, one sync, the Deployment rolls', async ({ cluster, argocd, namespace }) => {
  const name = `${namespace}-web`;
  // The example's Deployment also takes its environment from a Secret that never passes through Git.
  const app = await commitExample(argocd, name, 'directory', (file, content) =>
    file === 'deployment.yaml' ? content.replace('                name: web-settings\n', '                name: web-settings\n            - secretRef:\n                name: oob-credentials\n') : content,
  );
  assert.match(await app.repo.read(`${app.path}/deployment.yaml`), /name: oob-credentials/);
  await cluster.admin.request('POST', `/api/v1/namespaces/${namespace}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'oob-credentials' },
    stringData: { PASSWORD: 'rotated-out-of-band' },
  });
  await argocd.createApplication(name, pluginApplicationSpec(app, namespace));
  await argocd.sync(name, { revision: app.revision });
  await argocd.waitForSyncedAndHealthy(name, app.revision, { timeoutMs: 150_000 });
  const readWeb = (): Promise<KubeObject> => cluster.admin.request('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/web`);
  const before = await readWeb();

  // The Application as the API returns it, narrowed to what the engine reads.
  const application = (await argocd.getApplication(name)) as unknown as ApplicationLike;
  const wb = createWriteBack(
    { ...WRITE_BACK_DEFAULTS, workDir: join(app.repo.workDir, '..', 'write-back'), batchWindowMs: 0 },
    { clock: systemClock(), credentialsFor: async () => ({ kind: 'none', from: 'file:// repository' }), knownHosts: async () => undefined },
  );
  const config = { kind: 'Secret' as const, namespace, name: 'oob-credentials', digest: `v1:${createHash('sha256').update('rotation 1').digest('hex')}` };
  const result = await wb.submit({ application, configs: [config], workloads: [{ kind: 'Deployment', namespace, name: 'web' }] });
  assert.equal(result.status, 'committed', JSON.stringify(result));
  const sha = result.status === 'committed' ? result.sha : '';
  assert.equal(await readFileAt(app.repo.url, sha, `${app.path}/.driftless/out-of-band`), formatOutOfBandFile([config]));

  await argocd.refresh(name);
  const compared = await argocd.waitForApplication(name, `compared at ${sha}`, (status) => status.sync?.revision === sha);
  assert.equal(applicationStatus(compared).sync?.status, 'OutOfSync', 'the commit changes the Deployment\'s hash');
  await argocd.sync(name, { revision: sha });
  await argocd.waitForSyncedAndHealthy(name, sha, { timeoutMs: 150_000 });

  // The live hash is what the plugin renders from the engine's commit, and differs from before.
  const clone = join(app.repo.workDir, '..', 'write-back-check');
  await runCommand('git', ['clone', '--quiet', app.repo.url, clone], { cwd: app.repo.workDir, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: clone, GIT_CONFIG_NOSYSTEM: '1' } });
  const [expected] = workloadsOf(await renderLocally(argocd, { ...app, repo: { ...app.repo, workDir: clone }, revision: sha }, name, namespace));
  const after = await waitFor('the synced Deployment', async () => {
    const web = await readWeb();
    return hashOf(web) === hashOf(before) ? undefined : web;
  });
  assert.equal(hashOf(after), expected && hashOf(expected));
  assert.notEqual(hashOf(after), hashOf(before));

  // The same digest again: no second commit.
  const again = await wb.submit({ application, configs: [config], workloads: [] });
  assert.equal(again.status, 'unchanged');
  await wb.close();
});

fixture.test('through a Rollout: the engine\'s commit takes it through its canary steps (paused at 25%), then promoted; no restartAt', async ({ cluster, argocd, namespace }) => {
  const name = `${namespace}-canary`;
  const app = await commitExample(argocd, name, 'kustomize', (file, content) => {
    if (file === 'kustomization.yaml') return content.replace(/^namespace: shop$/m, `namespace: ${namespace}`);
    if (file !== 'rollout.yaml') return content;
    // A 15 s pause keeps the paused step observable without a long test; the Rollout also uses an out-of-band Secret.
    return content
      .replace('pause: {duration: 2m}', 'pause: {duration: 15s}')
      .replace('    configmap.reloader.stakater.com/reload: worker-settings\n', '    configmap.reloader.stakater.com/reload: worker-settings\n    secret.reloader.stakater.com/reload: oob-tls\n')
      .replace('                name: worker-settings\n', '                name: worker-settings\n            - secretRef:\n                name: oob-tls\n');
  });
  assert.match(await app.repo.read(`${app.path}/rollout.yaml`), /reload: oob-tls[\s\S]*secretRef:\n {16}name: oob-tls\n/);
  await cluster.admin.request('POST', `/api/v1/namespaces/${namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'oob-tls' }, stringData: { CERT: 'first' } });
  await argocd.createApplication(name, pluginApplicationSpec(app, namespace));
  await argocd.sync(name, { revision: app.revision });
  await argocd.waitForSyncedAndHealthy(name, app.revision, { timeoutMs: 150_000 });
  const rolloutPath = `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/rollouts/worker`;
  const status = async (): Promise<Record<string, unknown>> => (await cluster.admin.request<{ status?: Record<string, unknown> }>('GET', rolloutPath)).status ?? {};
  const initial = await waitFor('the Rollout Healthy', async () => {
    const s = await status();
    return s['phase'] === 'Healthy' && typeof s['stableRS'] === 'string' ? s : undefined;
  }, { timeoutMs: 90_000 });
  const stable = String(initial['stableRS']);

  const wb = createWriteBack(
    { ...WRITE_BACK_DEFAULTS, workDir: join(app.repo.workDir, '..', 'write-back-canary'), batchWindowMs: 0 },
    { clock: systemClock(), credentialsFor: async () => ({ kind: 'none', from: 'file:// repository' }), knownHosts: async () => undefined },
  );
  const application = (await argocd.getApplication(name)) as unknown as ApplicationLike;
  const config = { kind: 'Secret' as const, namespace, name: 'oob-tls', digest: `v1:${createHash('sha256').update('renewed').digest('hex')}` };
  const result = await wb.submit({ application, configs: [config], workloads: [{ kind: 'Rollout', namespace, name: 'worker' }] });
  await wb.close();
  assert.equal(result.status, 'committed', JSON.stringify(result));
  const sha = result.status === 'committed' ? result.sha : '';
  await argocd.refresh(name);
  const compared = await argocd.waitForApplication(name, `compared at ${sha}`, (st) => st.sync?.revision === sha);
  assert.equal(applicationStatus(compared).sync?.status, 'OutOfSync');
  await argocd.sync(name, { revision: sha });

  const { seen } = await followCanary(status, stable);
  assert.ok(seen.some((text) => text.startsWith('["Paused",1,')), `the Rollout reported Paused at its pause step: ${seen.join(' ')}`);
  const rollout = await cluster.admin.request('GET', rolloutPath);
  assert.equal(rollout.spec?.['restartAt'], undefined, 'nothing restarted it in the cluster');
  await argocd.waitForSyncedAndHealthy(name, sha);
}, { timeout: 360_000 });

/** A file's content at a commit of a file:// repository. */
async function readFileAt(url: string, sha: string, file: string): Promise<string> {
  const bare = new URL(url).pathname;
  return (await runCommand('git', ['--git-dir', bare, 'show', `${sha}:${file}`], { cwd: bare, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1' } })).stdout;
}
