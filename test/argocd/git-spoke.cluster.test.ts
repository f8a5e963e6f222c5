/**
 * The git strategy for a workload in a spoke (issue 22 §2, §6; ADR 0026): the real Argo CD in a hub deploys a
 * Deployment annotated `driftless.dev/restart-strategy: git` into a spoke registered as `argocd cluster add`
 * registers it; the controller runs in the hub (`--argocd-clusters`). A Secret rotated out of band in the spoke →
 * the controller commits the keyed digest to the Application's repository (the hub's Argo CD credentials) →
 * Argo CD syncs the commit into the spoke, the Deployment rolls → RestartFinished in the spoke. Nothing evicted,
 * one commit, and Argo CD never sees the spoke's live state drift: at every poll the Application is Synced, or
 * OutOfSync only towards the controller's commit before its sync.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { WRITE_BACK_ANNOTATION } from '../../core/index.ts';
import { parseWriteBackRecord } from '../../controller/writeback/record.ts';
import { applicationStatus, type ArgoCD } from '../cluster/argocd.ts';
import { runCommand } from '../cluster/exec.ts';
import { createSpokeApplication } from '../cluster/spokes.ts';
import { useSpokes } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { eventsFor, read, waitForEvent } from '../controller/support/fixtures.ts';
import { startControllerProcess } from '../controller/support/process.ts';
import { commitExample, hashOf, pluginApplicationSpec } from './plugin-support.ts';

// One spoke: the scene needs no second one (hub.cluster.test.ts shows the spokes apart), and a third control plane
// on a loaded machine only slows the start.
const fixture = useSpokes({ spokeNames: ['spoke-a'] });

/** The directory example's Deployment `web`, restarted through Git, using Secret `oob-credentials` that never passes through Git. */
function gitDeployment(file: string, content: string): string {
  return file === 'deployment.yaml'
    ? content
      .replace('  labels:\n    app.kubernetes.io/name: web\nspec:', '  labels:\n    app.kubernetes.io/name: web\n  annotations:\n    secret.reloader.stakater.com/reload: oob-credentials\n    driftless.dev/restart-strategy: git\nspec:')
      .replace('                name: web-settings\n', '                name: web-settings\n            - secretRef:\n                name: oob-credentials\n')
    : content;
}

/** Argo CD's verdict at one poll: the sync status and the revision it compared. */
interface Observation {
  readonly sync: string;
  readonly revision: string | undefined;
}

/** Polls the Application's sync status, a new poll 200 ms after the previous answered, until stopped. */
function pollSync(argocd: ArgoCD, app: string): { stop(): Promise<readonly Observation[]> } {
  const seen: Observation[] = [];
  let stopping = false;
  const running = waitFor('the sync-status poller to be stopped', async () => {
    seen.push(await argocd.getApplication(app).then(
      (object) => ({ sync: applicationStatus(object).sync?.status ?? '(no status)', revision: applicationStatus(object).sync?.revision }),
      (error: unknown) => ({ sync: `(GET failed: ${(error as Error).message})`, revision: undefined }),
    ));
    return stopping;
  }, { timeoutMs: 15 * 60_000, intervalMs: 200 });
  return {
    async stop() {
      stopping = true;
      await running;
      return seen;
    },
  };
}

/** The branch head of a file:// repository. */
async function headOf(url: string, branch: string): Promise<string> {
  const bare = new URL(url).pathname;
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1' };
  return (await runCommand('git', ['--git-dir', bare, 'rev-parse', `refs/heads/${branch}`], { cwd: bare, env })).stdout.trim();
}

fixture.test('a Secret rotated in a spoke for a git-strategy Deployment: the hub\'s controller commits, Argo CD syncs it into the spoke, the Deployment rolls; Synced at every poll', async ({ hub, argocd, spokes, namespace, t }) => {
  const started = Date.now();
  const [spoke] = spokes;
  assert.ok(spoke !== undefined, 'a spoke');
  const api = spoke.cluster.admin;
  const name = `${namespace}-git`;
  const app = await commitExample(argocd, name, 'directory', gitDeployment);
  await api.request('POST', `/api/v1/namespaces/${namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'oob-credentials' }, stringData: { PASSWORD: 'first' } });
  await createSpokeApplication(argocd, name, { spoke, namespace }, { source: pluginApplicationSpec(app, namespace)['source'] });
  await argocd.sync(name, { revision: app.revision });
  await argocd.waitForSyncedAndHealthy(name, app.revision, { timeoutMs: 150_000 });
  const webPath = `/apis/apps/v1/namespaces/${namespace}/deployments/web`;
  const before = await read(api, webPath);

  const controller = await startControllerProcess(hub, {
    args: [
      '--argocd-clusters',
      '--argocd-namespace=argocd',
      `--namespaces=${namespace}`,
      `--hash-key-file=${argocd.hashKeyFile}`,
      '--min-restart-interval=0',
      '--write-back-batch-window=1s',
      `--write-back-work-dir=${await mkdtemp(join(hub.stateDir, 'write-back-'))}`,
    ],
  });
  const poller = pollSync(argocd, name);
  let observations: readonly Observation[] = [];
  let sha = '';
  try {
    await controller.ready();
    await waitFor('the first-sight record in the spoke', async () => (await read(api, webPath)).metadata?.annotations?.['driftless.dev/restarted-for'], { timeoutMs: 120_000 });
    await api.request('PATCH', `/api/v1/namespaces/${namespace}/secrets/oob-credentials`, { stringData: { PASSWORD: 'rotated' } }, { contentType: 'application/merge-patch+json' });

    await waitForEvent(api, namespace, 'web', 'WriteBackCommitted', 120_000);
    const record = parseWriteBackRecord((await read(api, webPath)).metadata?.annotations?.[WRITE_BACK_ANNOTATION]);
    assert.equal(record?.state, 'committed');
    sha = record?.sha ?? '';
    assert.equal(await headOf(app.repo.url, app.repo.branch), sha, 'one commit on top of the app\'s');

    await argocd.refresh(name);
    await argocd.waitForApplication(name, `compared at ${sha}`, (status) => status.sync?.revision === sha);
    await argocd.sync(name, { revision: sha });
    await argocd.waitForSyncedAndHealthy(name, sha, { timeoutMs: 150_000 });
    await waitForEvent(api, namespace, 'web', 'RestartFinished', 120_000);
    assert.notEqual(hashOf(await read(api, webPath)), hashOf(before), 'the sync rolled a new render into the spoke');
    // A last verdict after the roll, then the poller's record of them all.
    await argocd.refresh(name);
    await argocd.waitForApplication(name, 'a refresh after the roll', (status, object) => object.metadata?.annotations?.['argocd.argoproj.io/refresh'] === undefined && status.sync?.status === 'Synced');
    observations = await poller.stop();
    assert.deepEqual(controller.lines.filter((line) => line.msg === 'evicted'), [], 'the controller evicted nothing');
    assert.equal(await headOf(app.repo.url, app.repo.branch), sha, 'no second commit');
    const reasons = (await eventsFor(api, namespace, 'web')).map((e) => String(e['reason']));
    assert.ok(!reasons.includes('WriteBackFallback') && !reasons.includes('WriteBackFailed'), reasons.join(', '));
  } finally {
    await poller.stop();
    await controller.stop();
  }
  assert.ok(observations.length >= 20, `the Application was polled throughout (${observations.length} polls)`);
  const drift = observations.filter((o) => o.sync !== 'Synced' && !(o.sync === 'OutOfSync' && o.revision === sha));
  assert.deepEqual(drift, [], 'Synced at every poll, or OutOfSync only towards the write-back commit before its sync');
  assert.equal(observations.at(-1)?.sync, 'Synced');
  // A figure for the report (the hub, Argo CD and the spokes start in the fixture's before hook, outside this).
  t.diagnostic(`the scene took ${((Date.now() - started) / 1000).toFixed(1)} s (${observations.length} polls)`);
}, { timeout: 420_000 });
