/**
 * The spoke option (`--argocd-kubeconfig`, ADR 0025) against two real control planes: the controller runs
 * in a spoke with the spoke's own credentials, and reads Argo CD's Applications and AppProjects from a hub
 * (Argo CD's CRDs, no Argo CD: the objects are written as Argo CD's users and controllers write them)
 * through a second kubeconfig, whose identity has exactly the shipped hub RBAC
 * (manifests/controller/spoke/hub). One rotation of a Secret three workloads use:
 * - `shop`'s Application deploys here and its AppProject has a deny window: held, an Event says why; the
 *   window removed in the hub → restarted;
 * - `api`'s Application deploys here and has a sync operation running: held (the sync wait); the
 *   operation gone → restarted;
 * - `blog`'s Application, of the same frozen project, deploys to another cluster: it does not count here,
 *   so `blog` restarts at once;
 * - `web` takes the `git` strategy: its Application's source and the repository Secret (the Git password)
 *   are in the hub only, so the commit it pushes (real Git over HTTP) shows the write-back read them there.
 * The restart records stay in the spoke, nothing is refused by the hub's RBAC, and neither kubeconfig's
 * credentials appear in the controller's output (process.ts checks both at stop).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { ApiClient, KubeObject } from '../cluster/api.ts';
import { installArgoCdCrds } from '../cluster/argocd.ts';
import { startClusters, type Cluster } from '../cluster/harness.ts';
import { create, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { ensureTools } from '../tools.ts';
import { COLLECTIONS, read, rotateSecret, secret, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';
import { explainJson } from './support/explain.ts';
import { findLeak } from './support/leak.ts';
import { startControllerProcess, type ControllerProcess } from './support/process.ts';
import { createPlayground, startGitHttpServer, type GitHttpServer, type GitPlayground } from './writeback/git-server.ts';

const ARGOCD = 'argocd';
const ARGO = `/apis/argoproj.io/v1alpha1/namespaces/${ARGOCD}`;
const HUB_RBAC = join(import.meta.dirname, '..', '..', 'manifests', 'controller', 'spoke', 'hub');
const run = promisify(execFile);
/** The Git server's password: only in the hub's repository Secret. */
const PASSWORD = `git-${randomUUID()}`;
const APPS = ['shop', 'api', 'blog', 'web'] as const;

interface Scene {
  readonly hub: Cluster;
  readonly spoke: Cluster;
  readonly ns: string;
  readonly controller: ControllerProcess;
  /** Pod UIDs of each workload before the rotation. */
  readonly pods: Record<(typeof APPS)[number], string[]>;
  readonly git: { readonly playground: GitPlayground; readonly server: GitHttpServer; readonly repo: string };
}

/** The shipped hub RBAC for the spoke controllers, applied in the hub as a user applies it. */
async function applyHubRbac(hub: Cluster): Promise<void> {
  const { kustomize } = await ensureTools();
  const { stdout } = await run(kustomize, ['build', HUB_RBAC], { maxBuffer: 4 << 20 });
  const applied = await hub.kubectl(['apply', '--server-side', '-f', '-'], { stdin: stdout });
  assert.equal(applied.code, 0, applied.stderr);
}

function application(name: string, project: string, destination: Record<string, string>, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name, namespace: ARGOCD },
    spec: { project, destination, source: { repoURL: 'https://example.invalid/shop.git', path: name } },
    ...extra,
  };
}

/** A repository the plugin renders `apps/web` of, its repository Secret in the hub, and `web`'s Application there. */
async function gitSource(hub: Cluster, spoke: Cluster, ns: string): Promise<{ playground: GitPlayground; server: GitHttpServer; repo: string }> {
  const playground = await createPlayground();
  const server = await startGitHttpServer(playground, 'writer', PASSWORD);
  const repo = 'shop';
  await playground.createRepo(repo, 'main', { 'README.md': 'shop\n', 'apps/web/deployment.yaml': '# rendered by the plugin\n' });
  await create(hub.admin, `/api/v1/namespaces/${ARGOCD}/secrets`, {
    apiVersion: 'v1', kind: 'Secret',
    metadata: { name: 'repo-shop', labels: { 'argocd.argoproj.io/secret-type': 'repository' } },
    stringData: { type: 'git', url: server.url(repo), username: 'writer', password: PASSWORD },
  });
  await create(hub.admin, `${ARGO}/applications`, {
    apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'web', namespace: ARGOCD },
    spec: { project: 'open', destination: { server: spoke.server, namespace: ns }, source: { repoURL: server.url(repo), path: 'apps/web', targetRevision: 'main', plugin: { name: 'driftless-v1' } } },
  });
  return { playground, server, repo };
}

async function argoCdObjects(hub: Cluster, spoke: Cluster, ns: string): Promise<void> {
  await create(hub.admin, `${ARGO}/appprojects`, {
    apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'frozen', namespace: ARGOCD },
    spec: { sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }], syncWindows: [{ kind: 'deny', schedule: '* * * * *', duration: '1h', applications: ['*'] }] },
  });
  await create(hub.admin, `${ARGO}/appprojects`, {
    apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'open', namespace: ARGOCD },
    spec: { sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }] },
  });
  // A trailing slash, as users write it: Argo CD (and the controller) compare servers without it.
  await create(hub.admin, `${ARGO}/applications`, application('shop', 'frozen', { server: `${spoke.server}/`, namespace: ns }));
  await create(hub.admin, `${ARGO}/applications`, application('blog', 'frozen', { server: 'https://elsewhere.example.invalid', namespace: ns }));
  // A sync running: Argo CD's `operation` field, set when a sync is asked for and cleared when it ends.
  await create(hub.admin, `${ARGO}/applications`, application('api', 'open', { server: spoke.server, namespace: ns }, { operation: { sync: { revision: 'HEAD' } } }));
}

async function deployApps(spoke: Cluster): Promise<string> {
  const ns = await spoke.newNamespace('apps');
  await create(spoke.admin, COLLECTIONS.Secret(ns), secret('cfg', 'v1'));
  for (const app of APPS) {
    await create(spoke.admin, COLLECTIONS.Deployment(ns), workload('Deployment', app, {
      replicas: 1, uses: { secret: 'cfg' },
      annotations: {
        'reloader.stakater.com/auto': 'true', 'argocd.argoproj.io/tracking-id': `${app}:apps/Deployment:${ns}/${app}`,
        ...(app === 'web' ? { 'driftless.dev/restart-strategy': 'git' } : {}),
      },
    }));
  }
  await Promise.all(APPS.map((app) => waitForDeploymentRollout(spoke.admin, ns, app)));
  return ns;
}

async function startScene(): Promise<Scene> {
  const t0 = Date.now();
  const [hub, spoke] = await startClusters([{}, {}]) as [Cluster, Cluster];
  const t1 = Date.now();
  const [, ns] = await Promise.all([
    (async () => {
      await hub.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ARGOCD } });
      await Promise.all([installArgoCdCrds(hub), applyHubRbac(hub)]);
    })(),
    deployApps(spoke),
  ]);
  await argoCdObjects(hub, spoke, ns);
  const git = await gitSource(hub, spoke, ns);
  // The git strategy writes keyed digests only.
  const hashKeyFile = join(spoke.stateDir, 'hash-key');
  await writeFile(hashKeyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  process.stderr.write(`two clusters started in ${((t1 - t0) / 1000).toFixed(1)} s, set up in ${((Date.now() - t1) / 1000).toFixed(1)} s more\n`);
  const hubKubeconfig = join(spoke.stateDir, 'argocd-hub.kubeconfig');
  await writeFile(hubKubeconfig, await hub.kubeconfigFor(ARGOCD, 'driftless-spoke'), { mode: 0o600 });
  const controller = await startControllerProcess(spoke, {
    args: [`--argocd-kubeconfig=${hubKubeconfig}`, `--argocd-destination-server=${spoke.server}`, `--argocd-namespace=${ARGOCD}`, `--namespaces=${ns}`, '--min-restart-interval=0', '--argocd-sync-wait=5m',
      `--hash-key-file=${hashKeyFile}`, '--write-back-batch-window=1s', `--write-back-work-dir=${join(git.playground.root, 'work')}`],
  });
  await controller.ready();
  for (const app of APPS) {
    await waitFor(`the first-sight record of ${app}`, async () => (await read(spoke.admin, `${COLLECTIONS.Deployment(ns)}/${app}`)).metadata?.annotations?.['driftless.dev/restarted-for']);
  }
  const pods = { shop: [] as string[], api: [] as string[], blog: [] as string[], web: [] as string[] };
  for (const app of APPS) pods[app] = uids(await waitForReadyPods(spoke.admin, ns, app, 1));
  return { hub, spoke, ns, controller, pods, git };
}

/** Waits until every pod of `app` is a new one. */
function replaced(api: ApiClient, ns: string, app: string, before: readonly string[], timeoutMs = 90_000): Promise<KubeObject[]> {
  return waitFor(`${app} restarted`, async () => {
    const pods = await waitForReadyPods(api, ns, app, 1, 5_000).catch(() => undefined);
    return pods !== undefined && uids(pods).every((uid) => !before.includes(uid)) ? pods : undefined;
  }, { timeoutMs });
}

/** A log line about a refused API call (`METHOD /path: 403 Forbidden: …`). */
function refusedCall(line: unknown): boolean {
  return /: 40[13] (?:Forbidden|Unauthorized)\b/.test(JSON.stringify(line));
}

describe('the spoke option: a controller per cluster reads Argo CD\'s Applications and AppProjects from the hub', { timeout: 300_000 }, () => {
  let scene: Scene | undefined;
  before(async () => {
    scene = await startScene();
  });
  after(async () => {
    try {
      await scene?.controller.stop();
      // The hub's Git password: process.ts scans the Secrets of the cluster the controller runs in, not the hub's.
      const said = `${(scene?.controller.lines ?? []).map((line) => JSON.stringify(line)).join('\n')}\n${scene?.controller.stderr() ?? ''}`;
      assert.equal(findLeak(said, PASSWORD), undefined, 'the hub\'s Git password in the controller\'s output');
    } finally {
      await scene?.git.server.close();
      await scene?.git.playground.dispose();
      await Promise.all([scene?.hub.stop(), scene?.spoke.stop()]);
    }
  });

  test('a rotation: the hub\'s deny window and running sync hold their workloads here, an Application deploying elsewhere does not; each goes once the hub says so', async () => {
    const { hub, spoke, ns, pods, controller } = scene as Scene;
    const started = Date.now();
    await rotateSecret(spoke.admin, ns, 'cfg', 'v2');
    await replaced(spoke.admin, ns, 'blog', pods.blog);
    const window = await waitForEvent(spoke.admin, ns, 'shop', 'RestartWaitingForSyncWindow');
    assert.match(String(window['message']), /deny window spec\.syncWindows\[0\] .* of AppProject frozen is active/);
    const sync = await waitForEvent(spoke.admin, ns, 'api', 'RestartWaitingForSync');
    assert.match(String(sync['message']), /^Application api has a sync operation running/);
    assert.deepEqual(uids(await waitForReadyPods(spoke.admin, ns, 'shop', 1)), pods.shop, 'shop held by its window');
    assert.deepEqual(uids(await waitForReadyPods(spoke.admin, ns, 'api', 1)), pods.api, 'api held by its sync');

    // explain --live from the spoke says why, reading the hub as the controller does; without the hub it cannot
    // (the spoke has no Argo CD), and another cluster's Application of the same project never counts here.
    const explain = (hubFlags: readonly string[]) => explainJson(spoke.kubeconfigPath, [`--namespace=${ns}`, 'deployment/shop', `--argocd-namespace=${ARGOCD}`, ...hubFlags]);
    const hubFlags = [`--argocd-kubeconfig=${join(spoke.stateDir, 'argocd-hub.kubeconfig')}`, `--argocd-destination-server=${spoke.server}`];
    const withHub = await explain(hubFlags);
    assert.equal(withHub.workloads[0]?.application, 'shop');
    assert.deepEqual(withHub.workloads[0]?.restart.blockedBy.map((b) => [b.kind, b.name]), [['sync-window', 'frozen']], JSON.stringify(withHub.workloads[0]?.restart));
    const withoutHub = await explain([]);
    assert.equal(withoutHub.workloads[0]?.restart.blockedBy.some((b) => b.kind === 'sync-window'), false, 'no Application is read in the spoke itself');
    const elsewhere = await explain([`--argocd-kubeconfig=${join(spoke.stateDir, 'argocd-hub.kubeconfig')}`, '--argocd-destination-server=https://elsewhere.example:6443']);
    assert.equal(elsewhere.workloads[0]?.restart.blockedBy.some((b) => b.kind === 'sync-window'), false, 'an Application deploying elsewhere does not hold shop');

    // The sync ends in the hub: api goes; shop is still in its window.
    await hub.admin.request('PATCH', `${ARGO}/applications/api`, { operation: null }, { contentType: 'application/merge-patch+json' });
    await replaced(spoke.admin, ns, 'api', pods.api);
    assert.deepEqual(uids(await waitForReadyPods(spoke.admin, ns, 'shop', 1)), pods.shop, 'shop still held');

    // The window removed in the hub: shop goes.
    await hub.admin.request('PATCH', `${ARGO}/appprojects/frozen`, { spec: { syncWindows: null } }, { contentType: 'application/merge-patch+json' });
    await replaced(spoke.admin, ns, 'shop', pods.shop);
    await waitForEvent(spoke.admin, ns, 'shop', 'RestartFinished');
    process.stderr.write(`rotation to the last restart: ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

    assert.deepEqual(controller.lines.filter(refusedCall), [], 'nothing refused: the shipped hub RBAC is enough');
    assert.deepEqual(uids(await waitForReadyPods(spoke.admin, ns, 'web', 1)), pods.web, 'web is not restarted in the cluster: its change goes through Git');
    const records = (cluster: Cluster) => cluster.admin.request<{ items: KubeObject[] }>('GET', `/api/v1/configmaps?labelSelector=${encodeURIComponent('driftless.dev/record')}`);
    const here = (await records(spoke)).items;
    assert.deepEqual(here.map((r) => (r['data'] as Record<string, string>)['name'] ?? '').sort((a, b) => a.localeCompare(b)), ['api', 'blog', 'shop', 'web'], 'the records stay in the spoke');
    assert.ok(here.every((r) => r.metadata?.labels?.['driftless.dev/record-cluster'] === undefined), 'unlabelled, as a single cluster\'s');
    assert.deepEqual((await records(hub)).items, [], 'nothing written in the hub');
  });

  test('the git strategy: the Application\'s source and Git credentials are read in the hub, and the out-of-band change is pushed', async () => {
    const { spoke, ns, git } = scene as Scene;
    // The rotation is the test above's (node:test runs them in order); this one only looks at web.
    const committed = await waitForEvent(spoke.admin, ns, 'web', 'WriteBackCommitted');
    assert.equal(committed['type'], 'Normal');
    const file = await git.playground.show(git.repo, 'main', 'apps/web/.driftless/out-of-band');
    assert.ok((file?.includes(`namespace: "${ns}"`) ?? false) && file?.includes('name: "cfg"'), `the out-of-band file names the Secret: ${String(file)}`);
  });
});
