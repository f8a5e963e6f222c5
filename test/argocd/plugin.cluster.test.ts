/**
 * The Driftless plugin under the real Argo CD: Applications with
 * `plugin: {name: driftless-v1}` rendered by argocd-cmp-server from the shipped
 * manifests/plugin/ (its renders done by the shipped render server), synced by
 * the real application controller into the test cluster (kwok runs the pods). The Rollout in the Kustomize example needs the
 * Argo Rollouts controller to become Healthy.
 */
import assert from 'node:assert/strict';
import type { ApiClient, KubeObject } from '../cluster/api.ts';
import { applicationStatus, type ArgoCD } from '../cluster/argocd.ts';
import { useArgoCD, listPods, podIsReady } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import {
  commitExample,
  hashOf,
  objectPath,
  pluginApplicationSpec,
  podTemplateOf,
  renderLocally,
  replicaSets,
  workloadsOf,
  type CommittedApp,
  type PluginParameter,
} from './plugin-support.ts';

const fixture = useArgoCD({ rolloutsController: true });

/**
 * Creates the Application, syncs it to the committed revision and waits for
 * Synced/Healthy; then every workload's live pod template must carry exactly
 * the hash a local render with the sidecar's key gives.
 * @returns the live workloads.
 */
async function syncAndCheckHashes(
  argocd: ArgoCD,
  client: ApiClient,
  app: CommittedApp,
  name: string,
  namespace: string,
  parameters: readonly PluginParameter[] = [],
): Promise<KubeObject[]> {
  await argocd.createApplication(name, pluginApplicationSpec(app, namespace, parameters.length ? { parameters } : {}));
  await argocd.sync(name, { revision: app.revision });
  await argocd.waitForSyncedAndHealthy(name, app.revision, { timeoutMs: 150_000 });
  const expected = workloadsOf(await renderLocally(argocd, app, name, namespace, parameters));
  assert.ok(expected.length > 0, 'the example has workloads');
  const live: KubeObject[] = [];
  for (const workload of expected) {
    const object = await client.request('GET', objectPath(workload, namespace));
    const label = `${workload.kind} ${workload.metadata?.name}`;
    assert.match(hashOf(object) ?? '', /\S/, `${label} has a hash in its pod template`);
    assert.equal(hashOf(object), hashOf(workload), `${label}: the live hash is the plugin's`);
    live.push(object);
  }
  return live;
}

/**
 * Commits, asks for a refresh, and waits until Argo CD has compared that commit.
 * @returns the commit and the sync status Argo CD found for it.
 */
async function commitAndRefresh(
  argocd: ArgoCD,
  app: CommittedApp,
  name: string,
  files: Readonly<Record<string, string | null>>,
): Promise<{ revision: string; syncStatus: string | undefined }> {
  const revision = await app.repo.commit(files, 'change');
  await argocd.refresh(name);
  const compared = await argocd.waitForApplication(name, `compared at ${revision}`, (status) => status.sync?.revision === revision);
  return { revision, syncStatus: applicationStatus(compared).sync?.status };
}

fixture.test('the directory example syncs through the plugin to Synced/Healthy with the hash in its Deployment', async ({ cluster, argocd, namespace }) => {
  // Only the cmp-server's `driftless generate` knows the socket (renderLocally renders in-process).
  const served = async (): Promise<number> => ((await argocd.renderServerLog()).match(/^driftless serve: generate exit 0 in \d+ ms$/gm) ?? []).length;
  const before = await served();
  const app = await commitExample(argocd, `${namespace}-directory`, 'directory');
  await syncAndCheckHashes(argocd, cluster.admin, app, `${namespace}-directory`, namespace);
  assert.ok((await served()) > before, 'this app\'s renders went through the render server');
});

fixture.test('the Kustomize example (StatefulSet and Rollout) syncs through the plugin with the hash in both', async ({ cluster, argocd, namespace }) => {
  // The overlay pins `namespace: shop`; each test has its own namespace.
  const app = await commitExample(argocd, `${namespace}-kustomize`, 'kustomize', (path, content) =>
    path === 'kustomization.yaml' ? content.replace(/^namespace: shop$/m, `namespace: ${namespace}`) : content,
  );
  const live = await syncAndCheckHashes(argocd, cluster.admin, app, `${namespace}-kustomize`, namespace);
  assert.deepEqual(live.map((object) => object.kind ?? '').sort(), ['Rollout', 'StatefulSet']);
});

fixture.test('the Helm example syncs through the plugin with the hash in its Deployment and CronJob', async ({ cluster, argocd, namespace }) => {
  const app = await commitExample(argocd, `${namespace}-helm`, 'helm');
  const live = await syncAndCheckHashes(argocd, cluster.admin, app, `${namespace}-helm`, namespace);
  assert.deepEqual(live.map((object) => object.kind ?? '').sort(), ['CronJob', 'Deployment']);
});

fixture.test('plugin parameters set in the Application reach the plugin', async ({ cluster, argocd, namespace }) => {
  const helm = await commitExample(argocd, `${namespace}-helm`, 'helm');
  const parameters: PluginParameter[] = [
    { name: 'values-files', array: ['values-production.yaml'] },
    { name: 'set', map: { 'image.tag': '9.9.9' } },
  ];
  const [deployment] = (await syncAndCheckHashes(argocd, cluster.admin, helm, `${namespace}-prod`, namespace, parameters)).filter(
    (object) => object.kind === 'Deployment',
  );
  assert.ok(deployment);
  assert.equal(deployment.spec?.['replicas'], 4, 'values-production.yaml was used');
  const containers = podTemplateOf(deployment)?.spec?.['containers'] as { image: string }[] | undefined;
  assert.equal(containers?.[0]?.image, 'ghcr.io/example/shop-api:9.9.9', 'set image.tag was used');
  const settings = await cluster.admin.request('GET', `/api/v1/namespaces/${namespace}/configmaps/${namespace}-prod-shop-api-settings`);
  assert.equal((settings['data'] as Record<string, string>)['LOG_LEVEL'], 'warn');

  // mode=annotated: the directory example's Deployment has no Reloader annotation, so no hash.
  const directory = await commitExample(argocd, `${namespace}-annotated`, 'directory');
  const name = `${namespace}-annotated`;
  await argocd.createApplication(name, pluginApplicationSpec(directory, namespace, { parameters: [{ name: 'mode', string: 'annotated' }] }));
  await argocd.sync(name, { revision: directory.revision });
  await argocd.waitForSyncedAndHealthy(name, directory.revision);
  const web = await cluster.admin.request('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/web`);
  assert.equal(hashOf(web), undefined, 'mode annotated reached the plugin');
});

/** The directory example's Deployment, its ReplicaSets and its ready pods. */
async function webState(client: ApiClient, namespace: string): Promise<{ hash: string | undefined; replicaSets: string[]; generation: number | undefined }> {
  const web = await client.request('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/web`);
  return { hash: hashOf(web), replicaSets: await replicaSets(client, namespace), generation: web.metadata?.generation };
}

fixture.test('a ConfigMap change in Git rolls the Deployment to a new ReplicaSet and the app returns to Synced', async ({ cluster, argocd, namespace }) => {
  const name = `${namespace}-web`;
  const app = await commitExample(argocd, name, 'directory');
  await syncAndCheckHashes(argocd, cluster.admin, app, name, namespace);
  const before = await webState(cluster.admin, namespace);
  assert.equal(before.replicaSets.length, 1);

  const configMap = (await app.repo.read(`${app.path}/configmap.yaml`)).replace('LOG_LEVEL: info', 'LOG_LEVEL: debug');
  const { revision, syncStatus } = await commitAndRefresh(argocd, app, name, { [`${app.path}/configmap.yaml`]: configMap });
  assert.equal(syncStatus, 'OutOfSync', 'the ConfigMap and the Deployment differ from Git');
  await argocd.sync(name, { revision });
  await argocd.waitForSyncedAndHealthy(name, revision);

  const [expected] = workloadsOf(await renderLocally(argocd, app, name, namespace));
  const after = await webState(cluster.admin, namespace);
  assert.notEqual(after.hash, before.hash, 'the hash changed with the ConfigMap');
  assert.equal(after.hash, expected && hashOf(expected), 'the live hash is the plugin\'s for the new commit');
  assert.equal(after.generation, (before.generation ?? 0) + 1, 'the sync changed the pod template once');
  // The Deployment controller creates the ReplicaSet after the apply; the app may report Healthy before.
  const newReplicaSets = await waitFor('the new ReplicaSet', async () => {
    const created = (await replicaSets(cluster.admin, namespace)).filter((replicaSet) => !before.replicaSets.includes(replicaSet));
    return created.length > 0 ? created : undefined;
  });
  assert.equal(newReplicaSets.length, 1, 'exactly one new ReplicaSet');
  const replicaSet = await cluster.admin.request('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets/${newReplicaSets[0]}`);
  const podHash = replicaSet.metadata?.labels?.['pod-template-hash'] ?? '';
  await waitFor('two ready pods of the new ReplicaSet', async () => {
    const pods = await listPods(cluster.admin, namespace, `pod-template-hash=${podHash}`);
    return pods.filter(podIsReady).length === 2;
  }, { timeoutMs: 60_000 });
  await argocd.waitForSyncedAndHealthy(name, revision);
});

fixture.test('a Git change to nothing the workload uses creates no new ReplicaSet', async ({ cluster, argocd, namespace }) => {
  const name = `${namespace}-web`;
  const app = await commitExample(argocd, name, 'directory');
  await syncAndCheckHashes(argocd, cluster.admin, app, name, namespace);
  const before = await webState(cluster.admin, namespace);

  const unused = ['apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: unused-settings', 'data:', '  COLOR: blue', ''].join('\n');
  const service = (await app.repo.read(`${app.path}/service.yaml`)).replace('port: 80', 'port: 8081');
  const { revision, syncStatus } = await commitAndRefresh(argocd, app, name, {
    [`${app.path}/unused-configmap.yaml`]: unused,
    [`${app.path}/service.yaml`]: service,
  });
  assert.equal(syncStatus, 'OutOfSync', 'a new ConfigMap and a changed Service');
  await argocd.sync(name, { revision });
  await argocd.waitForSyncedAndHealthy(name, revision);
  const service2 = await cluster.admin.request('GET', `/api/v1/namespaces/${namespace}/services/web`);
  assert.equal((service2.spec?.['ports'] as { port: number }[] | undefined)?.[0]?.port, 8081, 'the sync was applied');
  assert.deepEqual(await webState(cluster.admin, namespace), before, 'the Deployment is untouched');
});

fixture.test('an invalid manifest gives a ComparisonError with the plugin\'s message, applies nothing and leaks no Secret value', async ({ cluster, argocd, namespace }) => {
  const name = `${namespace}-broken`;
  const secret = (data: Record<string, string>): string =>
    ['apiVersion: v1', 'kind: Secret', 'metadata:', '  name: web-db', 'data:', ...Object.entries(data).map(([key, value]) => `  ${key}: "${value}"`), ''].join('\n');
  const app = await commitExample(argocd, name, 'directory');
  const path = (file: string): string => `${app.path}/${file}`;
  const first = await app.repo.commit({ [path('db-secret.yaml')]: secret({ password: Buffer.from('first-password').toString('base64') }) }, 'a second Secret');
  await syncAndCheckHashes(argocd, cluster.admin, { ...app, revision: first }, name, namespace);
  const before = await webState(cluster.admin, namespace);

  const sentinel = 'rotated-password-7f3a';
  const invalid = '%%%not-base64-c41e%%%';
  const configMap = (await app.repo.read(path('configmap.yaml'))).replace('LOG_LEVEL: info', 'LOG_LEVEL: debug');
  const revision = await app.repo.commit(
    { [path('configmap.yaml')]: configMap, [path('db-secret.yaml')]: secret({ password: Buffer.from(sentinel).toString('base64'), token: invalid }) },
    'rotate the password, break the token',
  );
  // Argo CD cannot resolve what it cannot render: the status then shows the targetRevision
  // (`main`) and sync status Unknown, so wait for the condition itself.
  await argocd.refresh(name);
  const failed = await argocd.waitForApplication(name, 'a ComparisonError', (status) =>
    (status.conditions ?? []).some((condition) => condition.type === 'ComparisonError'),
  );
  const status = applicationStatus(failed);
  assert.equal(status.sync?.status, 'Unknown');
  const message = (status.conditions ?? []).find((condition) => condition.type === 'ComparisonError')?.message ?? '';
  const pluginMessage = `driftless: db-secret.yaml#0 Secret ${namespace}/web-db: data.token: is not valid base64`;
  assert.ok(
    message.includes(pluginMessage),
    `the plugin's message names file, document, object and field: ${message}`,
  );

  await argocd.sync(name, { revision });
  const synced = await argocd.waitForApplication(name, 'the sync to end', (status, object) =>
    object.operation === undefined && ['Failed', 'Error'].includes(status.operationState?.phase ?? ''),
  );
  const operation = applicationStatus(synced).operationState;
  assert.equal(operation?.phase, 'Error', 'the sync refuses to run');
  assert.ok(operation?.message?.includes(pluginMessage), `the sync says why: ${operation?.message}`);
  const settings = await cluster.admin.request('GET', `/api/v1/namespaces/${namespace}/configmaps/web-settings`);
  assert.equal((settings['data'] as Record<string, string>)['LOG_LEVEL'], 'info', 'the ConfigMap of the broken commit was not applied');
  const liveSecret = await cluster.admin.request('GET', `/api/v1/namespaces/${namespace}/secrets/web-db`);
  assert.equal((liveSecret['data'] as Record<string, string>)['password'], Buffer.from('first-password').toString('base64'));
  assert.deepEqual(await webState(cluster.admin, namespace), before, 'the Deployment is untouched');

  const events = await cluster.admin.request('GET', '/api/v1/events');
  const seen = [JSON.stringify(synced), JSON.stringify(events), await argocd.logs(10_000)].join('\n');
  for (const value of [sentinel, Buffer.from(sentinel).toString('base64'), invalid]) {
    assert.equal(seen.includes(value), false, 'no Secret value in the status, events or Argo CD logs');
  }
});

/** One sample of the kustomize example's Rollout while it rolls: its status and its pods by pod-template hash. */
interface RolloutSample {
  readonly step: number | undefined;
  readonly phase: string | undefined;
  readonly currentPodHash: string | undefined;
  readonly stableRS: string | undefined;
  /** Ready, not terminating pods per `rollouts-pod-template-hash`. */
  readonly readyPods: Readonly<Record<string, number>>;
  readonly appHealth: string | undefined;
}

async function sampleRollout(client: ApiClient, argocd: ArgoCD, namespace: string, app: string): Promise<RolloutSample> {
  const rollout = await client.request('GET', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/rollouts/worker`);
  const status = rollout.status ?? {};
  const readyPods: Record<string, number> = {};
  for (const pod of await listPods(client, namespace, 'app.kubernetes.io/name=worker')) {
    if (pod.metadata?.['deletionTimestamp'] !== undefined || !podIsReady(pod)) continue;
    const hash = pod.metadata?.labels?.['rollouts-pod-template-hash'] ?? '?';
    readyPods[hash] = (readyPods[hash] ?? 0) + 1;
  }
  return {
    step: status['currentStepIndex'] as number | undefined,
    phase: status['phase'] as string | undefined,
    currentPodHash: status['currentPodHash'] as string | undefined,
    stableRS: status['stableRS'] as string | undefined,
    readyPods,
    appHealth: applicationStatus(await argocd.getApplication(app)).health?.status,
  };
}

fixture.test('a ConfigMap change in Git takes the Rollout through its canary steps and the app returns to Synced', async ({ cluster, argocd, namespace, t }) => {
  const name = `${namespace}-canary`;
  // The example pauses 2m at 25%; 15s keeps the pause observable on loaded cores without a long test.
  const app = await commitExample(argocd, name, 'kustomize', (path, content) => {
    if (path === 'kustomization.yaml') return content.replace(/^namespace: shop$/m, `namespace: ${namespace}`);
    return path === 'rollout.yaml' ? content.replace('pause: {duration: 2m}', 'pause: {duration: 15s}') : content;
  });
  await syncAndCheckHashes(argocd, cluster.admin, app, name, namespace);
  const initial = await waitFor('the Rollout Healthy with 4 stable pods', async () => {
    const sample = await sampleRollout(cluster.admin, argocd, namespace, name);
    return sample.phase === 'Healthy' && sample.stableRS !== undefined && sample.readyPods[sample.stableRS] === 4 ? sample : undefined;
  }, { timeoutMs: 90_000 });
  const stable = initial.stableRS ?? '';

  const kustomization = (await app.repo.read(`${app.path}/kustomization.yaml`)).replace('CONCURRENCY=8', 'CONCURRENCY=16');
  const { revision, syncStatus } = await commitAndRefresh(argocd, app, name, { [`${app.path}/kustomization.yaml`]: kustomization });
  assert.equal(syncStatus, 'OutOfSync', 'the ConfigMap and the Rollout differ from Git');
  await argocd.sync(name, { revision });

  // Every distinct state seen, in order, so a failure shows what the Rollout actually did.
  const seen: RolloutSample[] = [];
  const record = (sample: RolloutSample): void => {
    const last = seen.at(-1);
    if (last === undefined || JSON.stringify(last) !== JSON.stringify(sample)) seen.push(sample);
  };
  const canary = await waitFor('the Rollout paused at step 1 with one canary pod of four', async () => {
    const sample = await sampleRollout(cluster.admin, argocd, namespace, name);
    record(sample);
    const hash = sample.currentPodHash;
    const atPause = sample.step === 1 && hash !== undefined && hash !== stable && sample.stableRS === stable;
    return atPause && sample.readyPods[hash] === 1 && sample.readyPods[stable] === 3 ? sample : undefined;
  }, { timeoutMs: 90_000, intervalMs: 200 }).catch((error: unknown) => {
    throw new Error(`states seen: ${JSON.stringify(seen)}`, { cause: error });
  });
  const canaryHash = canary.currentPodHash ?? '';
  const done = await waitFor('the Rollout promoted: Healthy with 4 pods of the new ReplicaSet', async () => {
    const sample = await sampleRollout(cluster.admin, argocd, namespace, name);
    record(sample);
    return sample.phase === 'Healthy' && sample.stableRS === canaryHash && sample.step === 2 &&
      sample.readyPods[canaryHash] === 4 && Object.keys(sample.readyPods).length === 1 ? sample : undefined;
  }, { timeoutMs: 120_000, intervalMs: 200 }).catch((error: unknown) => {
    throw new Error(`states seen: ${JSON.stringify(seen)}`, { cause: error });
  });
  t.diagnostic(`Rollout states seen: ${JSON.stringify(seen)}`);
  assert.equal(done.readyPods[stable], undefined, 'no pod of the old ReplicaSet is left');
  assert.ok(seen.some((sample) => sample.phase === 'Paused'), `the Rollout reported Paused during the pause step: ${JSON.stringify(seen)}`);
  assert.ok(seen.some((sample) => sample.appHealth === 'Suspended'), `Argo CD showed the paused Rollout as Suspended: ${JSON.stringify(seen)}`);
  const [expected] = workloadsOf(await renderLocally(argocd, app, name, namespace)).filter((object) => object.kind === 'Rollout');
  const live = await cluster.admin.request('GET', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/rollouts/worker`);
  assert.equal(hashOf(live), expected && hashOf(expected), 'the live hash is the plugin\'s for the new commit');
  await argocd.waitForSyncedAndHealthy(name, revision);
}, { timeout: 360_000 });
