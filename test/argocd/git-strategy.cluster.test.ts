/**
 * The git strategy end to end (issue 15 §1, §6; ADR 0016): the real controller process, the real Argo CD
 * with the shipped sidecar, a Deployment annotated `driftless.dev/restart-strategy: git` using a Secret that
 * never passes through Git. The Secret rotated out of band → the controller commits the keyed digest to the
 * Application's `.driftless/out-of-band` (one commit) and evicts nothing → Argo CD syncs the commit, the
 * plugin folds the digest, the Deployment rolls → the controller says the restart finished. No eviction by
 * the controller, no second commit.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { runCommand } from '../cluster/exec.ts';
import { useArgoCD } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { formatOutOfBandFile } from '../../core/index.ts';
import { parseWriteBackRecord, WRITE_BACK_ANNOTATION } from '../../controller/writeback/record.ts';
import { startControllerProcess } from '../controller/support/process.ts';
import { eventsFor, read, waitForEvent } from '../controller/support/fixtures.ts';
import { commitExample, followCanary, hashOf, pluginApplicationSpec } from './plugin-support.ts';

const fixture = useArgoCD({ rolloutsController: true });

fixture.test('a Secret rotated out of band for a git-strategy Deployment: one commit, Argo CD syncs it, the Deployment rolls; nothing evicted', async ({ cluster, argocd, namespace }) => {
  const api = cluster.admin;
  const name = `${namespace}-git`;
  const app = await commitExample(argocd, name, 'directory', (file, content) =>
    file === 'deployment.yaml'
      ? content
        .replace('  labels:\n    app.kubernetes.io/name: web\nspec:', '  labels:\n    app.kubernetes.io/name: web\n  annotations:\n    secret.reloader.stakater.com/reload: oob-credentials\n    driftless.dev/restart-strategy: git\nspec:')
        .replace('                name: web-settings\n', '                name: web-settings\n            - secretRef:\n                name: oob-credentials\n')
      : content,
  );
  assert.match(await app.repo.read(`${app.path}/deployment.yaml`), /driftless\.dev\/restart-strategy: git[\s\S]*name: oob-credentials/);
  await api.request('POST', `/api/v1/namespaces/${namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'oob-credentials' }, stringData: { PASSWORD: 'first' } });
  await argocd.createApplication(name, pluginApplicationSpec(app, namespace));
  await argocd.sync(name, { revision: app.revision });
  await argocd.waitForSyncedAndHealthy(name, app.revision, { timeoutMs: 150_000 });
  const webPath = `/apis/apps/v1/namespaces/${namespace}/deployments/web`;
  const before = await read(api, webPath);

  const controller = await startControllerProcess(cluster, {
    args: [
      `--namespaces=${namespace}`,
      `--hash-key-file=${argocd.hashKeyFile}`,
      '--min-restart-interval=0',
      '--write-back-batch-window=1s',
      `--write-back-work-dir=${await mkdtemp(join(cluster.stateDir, 'write-back-'))}`,
    ],
  });
  try {
    await controller.ready();
    await waitFor('the first-sight record', async () => (await read(api, webPath)).metadata?.annotations?.['driftless.dev/restarted-for']);
    await api.request('PATCH', `/api/v1/namespaces/${namespace}/secrets/oob-credentials`, { stringData: { PASSWORD: 'rotated' } }, { contentType: 'application/merge-patch+json' });

    await waitForEvent(api, namespace, 'web', 'WriteBackCommitted', 120_000);
    const record = parseWriteBackRecord((await read(api, webPath)).metadata?.annotations?.[WRITE_BACK_ANNOTATION]);
    assert.equal(record?.state, 'committed');
    const sha = record?.sha ?? '';
    const digest = record?.configs['Secret/oob-credentials'] ?? '';
    assert.match(digest, /^v1:[0-9a-f]{64}$/);
    assert.equal(await readFileAt(app.repo.url, sha, `${app.path}/.driftless/out-of-band`), formatOutOfBandFile([{ kind: 'Secret', namespace, name: 'oob-credentials', digest }]));
    assert.equal(await headOf(app.repo.url, app.repo.branch), sha, 'one commit on top of the app\'s');

    await argocd.refresh(name);
    await argocd.waitForApplication(name, `compared at ${sha}`, (status) => status.sync?.revision === sha);
    await argocd.sync(name, { revision: sha });
    await argocd.waitForSyncedAndHealthy(name, sha, { timeoutMs: 150_000 });
    await waitForEvent(api, namespace, 'web', 'RestartFinished', 120_000);
    const after = await read(api, webPath);
    assert.notEqual(hashOf(after), hashOf(before), 'the sync rolled a new render');
    assert.deepEqual(controller.lines.filter((line) => line.msg === 'evicted'), [], 'the controller evicted nothing');
    assert.equal(await headOf(app.repo.url, app.repo.branch), sha, 'no second commit');
    const reasons = (await eventsFor(api, namespace, 'web')).map((e) => String(e['reason']));
    assert.ok(!reasons.includes('WriteBackFallback') && !reasons.includes('WriteBackFailed'), reasons.join(', '));
  } finally {
    await controller.stop();
  }
}, { timeout: 420_000 });

fixture.test('a canary Rollout with the git strategy: the commit takes it through its pause step, then it completes; no restartAt, no eviction', async ({ cluster, argocd, namespace }) => {
  const api = cluster.admin;
  const name = `${namespace}-canary`;
  const app = await commitExample(argocd, name, 'kustomize', (file, content) => {
    if (file === 'kustomization.yaml') return content.replace(/^namespace: shop$/m, `namespace: ${namespace}`);
    if (file !== 'rollout.yaml') return content;
    return content
      .replace('pause: {duration: 2m}', 'pause: {duration: 15s}')
      .replace('    configmap.reloader.stakater.com/reload: worker-settings\n', '    configmap.reloader.stakater.com/reload: worker-settings\n    secret.reloader.stakater.com/reload: oob-tls\n    driftless.dev/restart-strategy: git\n')
      .replace('                name: worker-settings\n', '                name: worker-settings\n            - secretRef:\n                name: oob-tls\n');
  });
  assert.match(await app.repo.read(`${app.path}/rollout.yaml`), /restart-strategy: git[\s\S]*secretRef:\n {16}name: oob-tls\n/);
  await api.request('POST', `/api/v1/namespaces/${namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'oob-tls' }, stringData: { CERT: 'first' } });
  await argocd.createApplication(name, pluginApplicationSpec(app, namespace));
  await argocd.sync(name, { revision: app.revision });
  await argocd.waitForSyncedAndHealthy(name, app.revision, { timeoutMs: 150_000 });
  const rolloutPath = `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/rollouts/worker`;
  const status = async (): Promise<Record<string, unknown>> => (await api.request<{ status?: Record<string, unknown> }>('GET', rolloutPath)).status ?? {};
  const initial = await waitFor('the Rollout Healthy', async () => {
    const s = await status();
    return s['phase'] === 'Healthy' && typeof s['stableRS'] === 'string' ? s : undefined;
  }, { timeoutMs: 90_000 });
  const stable = String(initial['stableRS']);

  const controller = await startControllerProcess(cluster, {
    args: [`--namespaces=${namespace}`, `--hash-key-file=${argocd.hashKeyFile}`, '--min-restart-interval=0', '--write-back-batch-window=1s', `--write-back-work-dir=${await mkdtemp(join(cluster.stateDir, 'write-back-'))}`],
  });
  try {
    await controller.ready();
    await waitFor('the first-sight record', async () => (await read(api, rolloutPath)).metadata?.annotations?.['driftless.dev/restarted-for']);
    await api.request('PATCH', `/api/v1/namespaces/${namespace}/secrets/oob-tls`, { stringData: { CERT: 'renewed' } }, { contentType: 'application/merge-patch+json' });
    await waitForEvent(api, namespace, 'worker', 'WriteBackCommitted', 120_000);
    const sha = parseWriteBackRecord((await read(api, rolloutPath)).metadata?.annotations?.[WRITE_BACK_ANNOTATION])?.sha ?? '';
    assert.equal(await headOf(app.repo.url, app.repo.branch), sha);
    await argocd.refresh(name);
    await argocd.waitForApplication(name, `compared at ${sha}`, (st) => st.sync?.revision === sha);
    await argocd.sync(name, { revision: sha });

    await followCanary(status, stable);
    await waitForEvent(api, namespace, 'worker', 'RestartFinished', 120_000);
    const rollout = await read(api, rolloutPath);
    assert.equal(rollout.spec?.['restartAt'], undefined, 'the controller wrote no spec.restartAt');
    assert.deepEqual(controller.lines.filter((line) => line.msg === 'evicted'), [], 'the controller evicted nothing');
    assert.equal(await headOf(app.repo.url, app.repo.branch), sha, 'no second commit');
    await argocd.waitForSyncedAndHealthy(name, sha);
  } finally {
    await controller.stop();
  }
}, { timeout: 420_000 });

function gitEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env['PATH'] ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1' };
}

/** A file's content at a commit of a file:// repository. */
async function readFileAt(url: string, sha: string, file: string): Promise<string> {
  const bare = new URL(url).pathname;
  return (await runCommand('git', ['--git-dir', bare, 'show', `${sha}:${file}`], { cwd: bare, env: gitEnv() })).stdout;
}

/** The branch head of a file:// repository. */
async function headOf(url: string, branch: string): Promise<string> {
  const bare = new URL(url).pathname;
  return (await runCommand('git', ['--git-dir', bare, 'rev-parse', `refs/heads/${branch}`], { cwd: bare, env: gitEnv() })).stdout.trim();
}
