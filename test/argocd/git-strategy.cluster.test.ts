/**
 * The git strategy end to end (issue 15 §1, §6; ADR 0016): the real controller process, the real Argo CD
 * with the shipped sidecar, a Deployment annotated `driftless.dev/restart-strategy: git` using a Secret that
 * never passes through Git. The Secret rotated out of band → the controller commits the keyed digest to the
 * Application's `.driftless/out-of-band` (one commit) and evicts nothing → Argo CD syncs the commit, the
 * plugin folds the digest, the Deployment rolls → the controller says the restart finished. No eviction by
 * the controller, no second commit. And a finished restart stays finished
 * (issue 21 §2.1): an `argocd app rollback` to the revision before the commit,
 * a sync of the commit again, then a person's `git revert` of it synced —
 * no Event more, no restart in progress, past --write-back-fallback-after.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { runCommand } from '../cluster/exec.ts';
import { useArgoCD } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { WRITE_BACK_ANNOTATION, formatOutOfBandFile } from '../../core/index.ts';
import { parseWriteBackRecord } from '../../controller/writeback/record.ts';
import { startControllerProcess } from '../controller/support/process.ts';
import type { ApiClient } from '../cluster/api.ts';
import { applicationStatus } from '../cluster/argocd.ts';
import { eventsFor, eventSummary, read, waitForEvent } from '../controller/support/fixtures.ts';
import type { LogLine } from '../controller/support/process.ts';
import { commitExample, followCanary, hashOf, pluginApplicationSpec } from './plugin-support.ts';

// With the API server: `argocd app rollback` is its endpoint.
const fixture = useArgoCD({ rolloutsController: true, apiServer: true });

/** The directory example's Deployment `web`, restarted through Git, using Secret `oob-credentials` that never passes through Git. */
function gitDeployment(file: string, content: string): string {
  return file === 'deployment.yaml'
    ? content
      .replace('  labels:\n    app.kubernetes.io/name: web\nspec:', '  labels:\n    app.kubernetes.io/name: web\n  annotations:\n    secret.reloader.stakater.com/reload: oob-credentials\n    driftless.dev/restart-strategy: git\nspec:')
      .replace('                name: web-settings\n', '                name: web-settings\n            - secretRef:\n                name: oob-credentials\n')
    : content;
}

fixture.test('a Secret rotated out of band for a git-strategy Deployment: one commit, Argo CD syncs it, the Deployment rolls; nothing evicted', async ({ cluster, argocd, namespace }) => {
  const api = cluster.admin;
  const name = `${namespace}-git`;
  const app = await commitExample(argocd, name, 'directory', gitDeployment);
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

fixture.test('a finished git restart stays finished: an Argo CD rollback, the commit synced again, a person\'s git revert synced; no Event more, nothing in progress past --write-back-fallback-after', async ({ cluster, argocd, namespace }) => {
  const api = cluster.admin;
  const name = `${namespace}-revert`;
  const app = await commitExample(argocd, name, 'directory', gitDeployment);
  await api.request('POST', `/api/v1/namespaces/${namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'oob-credentials' }, stringData: { PASSWORD: 'first' } });
  await argocd.createApplication(name, pluginApplicationSpec(app, namespace));
  await argocd.sync(name, { revision: app.revision });
  await argocd.waitForSyncedAndHealthy(name, app.revision, { timeoutMs: 150_000 });
  const webPath = `/apis/apps/v1/namespaces/${namespace}/deployments/web`;
  const renderBefore = hashOf(await read(api, webPath)) ?? '';
  const workload = `Deployment/${namespace}/web`;
  // Long enough for three syncs and their rolls after the commit (about 10 s on a loaded 2-core machine): the revert
  // must land inside the bound, where the finished restart was re-opened and the bound then said RestartSyncWaitExpired.
  const fallbackAfterMs = 30_000;

  const controller = await startControllerProcess(cluster, {
    args: [
      `--namespaces=${namespace}`,
      `--hash-key-file=${argocd.hashKeyFile}`,
      '--min-restart-interval=0',
      '--write-back-batch-window=1s',
      `--write-back-fallback-after=${fallbackAfterMs / 1000}s`,
      // Every workload looked at again every 2 s: the looks past the bound that show nothing happens.
      '--resync-period=2s',
      `--write-back-work-dir=${await mkdtemp(join(cluster.stateDir, 'write-back-'))}`,
    ],
  });
  try {
    const http = String((await controller.waitForLog('started', (line) => line.msg === 'started'))['http']);
    await controller.ready();
    await waitFor('the first-sight record', async () => (await read(api, webPath)).metadata?.annotations?.['driftless.dev/restarted-for']);
    await api.request('PATCH', `/api/v1/namespaces/${namespace}/secrets/oob-credentials`, { stringData: { PASSWORD: 'rotated' } }, { contentType: 'application/merge-patch+json' });
    await waitForEvent(api, namespace, 'web', 'WriteBackCommitted', 120_000);
    const committed = parseWriteBackRecord((await read(api, webPath)).metadata?.annotations?.[WRITE_BACK_ANNOTATION]);
    assert.equal(committed?.state, 'committed');
    const sha = committed?.sha ?? '';
    // The controller's sync-wait bound: --write-back-fallback-after after the commit.
    const bound = (committed?.at ?? 0) + fallbackAfterMs;

    await argocd.refresh(name);
    await argocd.waitForApplication(name, `compared at ${sha}`, (status) => status.sync?.revision === sha);
    await argocd.sync(name, { revision: sha });
    await argocd.waitForSyncedAndHealthy(name, sha, { timeoutMs: 150_000 });
    await waitForEvent(api, namespace, 'web', 'RestartFinished', 120_000);
    const renderCommitted = hashOf(await read(api, webPath)) ?? '';
    assert.notEqual(renderCommitted, renderBefore, 'the sync rolled a new render');
    const finished = (await eventsFor(api, namespace, 'web')).map(eventSummary);

    // `argocd app rollback` to the sync of the revision before the commit: the template's hash at submission again.
    const history = applicationStatus(await argocd.getApplication(name)).history ?? [];
    const earlier = history.find((entry) => entry.revision === app.revision);
    assert.ok(earlier !== undefined, `a history entry for ${app.revision}: ${JSON.stringify(history)}`);
    await argocd.rollback(name, earlier.id);
    await argocd.waitForApplication(name, `rolled back to ${app.revision}`, (status, found) =>
      found.operation === undefined && status.operationState?.phase === 'Succeeded' && status.operationState.syncResult?.revision === app.revision && status.health?.status === 'Healthy', { timeoutMs: 150_000 });
    await rolledTo(api, webPath, renderBefore);
    // The commit synced again, then a person reverts it in Git and Argo CD syncs the revert.
    await argocd.sync(name, { revision: sha });
    await argocd.waitForSyncedAndHealthy(name, sha, { timeoutMs: 150_000 });
    await rolledTo(api, webPath, renderCommitted);
    const revert = await revertAsAPerson(app.repo.url, app.repo.branch, sha);
    await argocd.refresh(name);
    await argocd.waitForApplication(name, `compared at ${revert}`, (status) => status.sync?.revision === revert);
    await argocd.sync(name, { revision: revert });
    await argocd.waitForSyncedAndHealthy(name, revert, { timeoutMs: 150_000 });
    await rolledTo(api, webPath, renderBefore);
    process.stderr.write(`the revert was synced and rolled ${((bound - Date.now()) / 1000).toFixed(1)} s before the sync-wait bound (--write-back-fallback-after=${fallbackAfterMs / 1000}s)\n`);
    assert.ok(Date.now() < bound, `the revert was synced and rolled ${Math.round((Date.now() - bound) / 1000)} s after the bound: raise --write-back-fallback-after here, or this shows nothing`);

    // Past the bound the controller has looked at the workload again, twice: the first look's Events are written by then.
    const lookedPast = (line: LogLine): boolean => line['workload'] === workload && Date.parse(String(line['time'])) > bound;
    await controller.waitForLog('a look at web past the bound', lookedPast, { timeoutMs: fallbackAfterMs + 60_000 });
    const past = controller.lines.findIndex(lookedPast);
    const told = await waitFor('another look at web, or an Event more', async () => {
      const events = (await eventsFor(api, namespace, 'web')).map(eventSummary);
      return !isDeepStrictEqual(events, finished) || controller.lines.slice(past + 1).some((line) => line['workload'] === workload) ? events : undefined;
    });
    assert.deepEqual(told, finished, 'no Event since RestartFinished: no RestartSyncWaitExpired, no second RestartFinished');
    const record = parseWriteBackRecord((await read(api, webPath)).metadata?.annotations?.[WRITE_BACK_ANNOTATION]);
    assert.equal(record?.state, 'synced', 'the finished restart is recorded on the workload');
    assert.equal(record?.sha, sha);
    const metrics = await (await fetch(`http://${http}/metrics`)).text();
    assert.match(metrics, /^driftless_restarts_in_progress 0$/m, 'no restart in progress');
    assert.match(metrics, new RegExp(`^driftless_restarts_finished_total\\{kind="Deployment",namespace="${namespace}",strategy="git"\\} 1$`, 'm'));
    assert.equal(controller.lines.filter((line) => line.msg === 'write-back submitted').length, 1, 'one submission');
    assert.deepEqual(controller.lines.filter((line) => line.msg === 'evicted'), [], 'nothing evicted');
  } finally {
    await controller.stop();
  }
}, { timeout: 600_000 });

/** Waits until the Deployment's template has the render `hash` and its controller rolled it. */
async function rolledTo(api: ApiClient, path: string, hash: string): Promise<void> {
  await waitFor(`${path} rolled to the render ${hash}`, async () => {
    const deployment = await read(api, path);
    const status = (deployment.status ?? {}) as { observedGeneration?: number; replicas?: number; updatedReplicas?: number };
    const desired = (deployment.spec?.['replicas'] as number | undefined) ?? 1;
    return hashOf(deployment) === hash && status.observedGeneration === deployment.metadata?.generation && status.updatedReplicas === desired && (status.replicas ?? 0) <= desired;
  }, { timeoutMs: 120_000 });
}

/** What a person does: `git revert` of the commit in a clone of the repository, pushed. Returns the revert's SHA. */
async function revertAsAPerson(url: string, branch: string, sha: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-revert-'));
  const env = { ...gitEnv(), HOME: dir, GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 'A Person', GIT_AUTHOR_EMAIL: 'person@driftless.invalid', GIT_COMMITTER_NAME: 'A Person', GIT_COMMITTER_EMAIL: 'person@driftless.invalid' };
  try {
    const git = async (...args: string[]): Promise<string> => (await runCommand('git', args, { cwd: dir, env })).stdout.trim();
    await git('clone', '--quiet', '--branch', branch, url, 'work');
    await git('-C', 'work', '-c', 'commit.gpgsign=false', 'revert', '--no-edit', sha);
    await git('-C', 'work', 'push', '--quiet', 'origin', branch);
    return await git('-C', 'work', 'rev-parse', 'HEAD');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

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
