/**
 * The controller's out-of-band restarts judged by the real Argo CD. Workloads
 * rendered by the Driftless plugin use three configs that are not in their
 * app's render — a Secret written for an ExternalSecret, a cert-manager TLS
 * Secret, and a ConfigMap that a second Application syncs from a second
 * repository — and the real `driftless controller` restarts them when those
 * change. One Application per (diff, sync) cell, each in its own namespace
 * with all four kinds, so the whole matrix shares one cluster and one restart
 * wave: Argo CD must report every app Synced at every poll, and a hard
 * refresh plus a sync afterwards must neither create a ReplicaSet nor evict.
 * The opt-in template strategy has tests of its own: Replace=true undoing it,
 * and each documented caveat (ADR 0007 §5) exactly as Argo CD shows it.
 */
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { ApiClient, KubeList, KubeObject } from '../cluster/api.ts';
import { applicationStatus, pluginName, type Application, type ArgoCD } from '../cluster/argocd.ts';
import type { Cluster } from '../cluster/harness.ts';
import { podIsReady, useArgoCD } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { hashOf, podTemplateOf } from './plugin-support.ts';
import { startControllerProcess, type ControllerProcess } from '../controller/support/process.ts';
import { COLLECTIONS, createExternalSecret, eventsFor, read, rotateSecret, storedSecretValue, uids } from '../controller/support/fixtures.ts';

// Two fake nodes: the DaemonSet has two pods, like the others.
const fixture = useArgoCD({ nodes: 2, rolloutsController: true });

const KINDS = ['Deployment', 'StatefulSet', 'DaemonSet', 'Rollout'] as const;
type Kind = (typeof KINDS)[number];
const NAMES: Readonly<Record<Kind, string>> = { Deployment: 'web', StatefulSet: 'db', DaemonSet: 'agent', Rollout: 'worker' };
const PODS_PER_WORKLOAD = 2;

/** The three out-of-band configs every workload uses. */
const EXTERNAL_SECRET = 'db-credentials';
const TLS_SECRET = 'web-tls';
const SHARED_CONFIGMAP = 'shared-settings';
/** And one config in the render, so that the plugin stamps a hash and only the provenance of the three decides. */
const IN_BAND_CONFIGMAP = 'app-settings';

const RESTART_AT = 'driftless.dev/restart-at';
const RESTARTED_FOR = 'driftless.dev/restarted-for';
const COMPARE_OPTIONS = 'argocd.argoproj.io/compare-options';
const destinationServer = 'https://kubernetes.default.svc';

/** One cell of the matrix: a diff strategy and the sync options the app is synced with. */
interface Cell {
  readonly label: string;
  /** The compare-options annotation, explicit both ways: ServerSideApply=true alone would switch Argo CD v3.6 to Server-Side Diff. */
  readonly compareOptions: string;
  readonly syncOptions: readonly string[];
}

const CELLS: readonly Cell[] = ['ServerSideDiff=false', 'ServerSideDiff=true'].flatMap((compareOptions) =>
  [[], ['ServerSideApply=true'], ['Replace=true']].map((syncOptions) => ({
    label: `${compareOptions === 'ServerSideDiff=true' ? 'server-side diff' : 'legacy diff'} + ${syncOptions[0] ?? 'default sync'}`,
    compareOptions,
    syncOptions,
  })),
);

/** A cell set up in its own namespace. */
interface LiveCell extends Cell {
  readonly namespace: string;
  /** The workload Application (plugin-rendered). */
  readonly app: string;
  /** The Application syncing the shared ConfigMap from the config repository into the same namespace. */
  readonly configApp: string;
}

/** The REST path of one of the test's workloads. */
function workloadPath(kind: Kind, namespace: string, name = NAMES[kind]): string {
  return `${COLLECTIONS[kind](namespace)}/${name}`;
}

/**
 * A workload as Git holds it: it reads the ExternalSecret's Secret by env, the
 * TLS Secret by volume and the shared ConfigMap by envFrom, none of them in
 * its app's render.
 */
function workloadManifest(kind: Kind, options: {
  name?: string;
  annotations?: Record<string, string>;
  templateAnnotations?: Record<string, string> | null;
  /** Also read the ConfigMap in the render (default true); without it the plugin stamps nothing. */
  inBand?: boolean;
} = {}): KubeObject {
  const name = options.name ?? NAMES[kind];
  const labels = { app: name };
  const templateMetadata: Record<string, unknown> = { labels };
  if (options.templateAnnotations !== undefined) templateMetadata['annotations'] = options.templateAnnotations;
  const template = {
    metadata: templateMetadata,
    spec: {
      // The fake kubelet honours the grace period before it removes a pod.
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'app',
        image: 'registry.invalid/app:1',
        env: [{ name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: EXTERNAL_SECRET, key: 'password' } } }],
        envFrom: [{ configMapRef: { name: SHARED_CONFIGMAP } }, ...(options.inBand === false ? [] : [{ configMapRef: { name: IN_BAND_CONFIGMAP } }])],
        volumeMounts: [{ name: 'tls', mountPath: '/etc/tls', readOnly: true }],
      }],
      volumes: [{ name: 'tls', secret: { secretName: TLS_SECRET } }],
    },
  };
  return {
    apiVersion: kind === 'Rollout' ? 'argoproj.io/v1alpha1' : 'apps/v1',
    kind,
    metadata: { name, annotations: options.annotations ?? { 'reloader.stakater.com/auto': 'true' } },
    spec: {
      selector: { matchLabels: labels },
      template,
      ...(kind === 'DaemonSet' ? {} : { replicas: PODS_PER_WORKLOAD }),
      ...(kind === 'StatefulSet' ? { serviceName: name } : {}),
      ...(kind === 'Rollout' ? { strategy: { canary: {} } } : {}),
    },
  };
}

/** A ConfigMap as Git holds it. */
function configMapYaml(name: string, data: Record<string, string>): string {
  return stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });
}

/** The workload repository's files: the workloads and the in-band ConfigMap they also read. */
function workloadFiles(manifests: readonly KubeObject[]): Record<string, string> {
  return {
    'workloads/app-settings.yaml': configMapYaml(IN_BAND_CONFIGMAP, { COLOR: 'blue' }),
    ...Object.fromEntries(manifests.map((manifest) => [`workloads/${String(manifest.metadata?.name)}.yaml`, stringify(manifest)])),
  };
}

/**
 * Writes the TLS Secret as cert-manager's issuing controller does: server-side
 * apply under its field manager, type kubernetes.io/tls, the cert-manager.io/*
 * annotations and the `controller.cert-manager.io/fao` label. No owner
 * reference: cert-manager adds one only with --enable-certificate-owner-ref.
 */
async function issueCertificate(client: ApiClient, namespace: string, serial: string): Promise<void> {
  const pem = (type: string): string => `-----BEGIN ${type}-----\n${Buffer.from(storedSecretValue(`${type}-${serial}`)).toString('base64')}\n-----END ${type}-----\n`;
  const dnsName = `web.${namespace}.svc`;
  await client.request('PATCH', `${COLLECTIONS.Secret(namespace)}/${TLS_SECRET}?fieldManager=cert-manager-certificates-issuing&force=true`, {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: {
      name: TLS_SECRET,
      labels: { 'controller.cert-manager.io/fao': 'true' },
      annotations: {
        'cert-manager.io/alt-names': dnsName,
        'cert-manager.io/certificate-name': TLS_SECRET,
        'cert-manager.io/common-name': dnsName,
        'cert-manager.io/ip-sans': '',
        'cert-manager.io/issuer-group': 'cert-manager.io',
        'cert-manager.io/issuer-kind': 'ClusterIssuer',
        'cert-manager.io/issuer-name': 'internal-ca',
        'cert-manager.io/uri-sans': '',
      },
    },
    data: {
      'ca.crt': Buffer.from(pem('CERTIFICATE')).toString('base64'),
      'tls.crt': Buffer.from(pem('CERTIFICATE')).toString('base64'),
      'tls.key': Buffer.from(pem('PRIVATE KEY')).toString('base64'),
    },
  }, { contentType: 'application/apply-patch+yaml' });
}

/** Names of the objects of a collection (ReplicaSets, ControllerRevisions): a new one means a template changed. */
async function names(client: ApiClient, collection: string): Promise<string[]> {
  return (await client.request<KubeList>('GET', collection)).items.map((item) => String(item.metadata?.name)).sort();
}

/** ReplicaSets and ControllerRevisions of a namespace. */
async function revisionsOf(client: ApiClient, namespace: string): Promise<{ replicaSets: string[]; controllerRevisions: string[] }> {
  return {
    replicaSets: await names(client, `/apis/apps/v1/namespaces/${namespace}/replicasets`),
    controllerRevisions: await names(client, `/apis/apps/v1/namespaces/${namespace}/controllerrevisions`),
  };
}

/** Pods of a namespace grouped by their `app` label. */
async function podsByApp(client: ApiClient, namespace: string): Promise<Map<string, KubeObject[]>> {
  const pods = (await client.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods`)).items;
  const grouped = new Map<string, KubeObject[]>();
  for (const pod of pods) {
    const app = pod.metadata?.labels?.['app'] ?? '';
    grouped.set(app, [...(grouped.get(app) ?? []), pod]);
  }
  return grouped;
}

/** The workload's pods when exactly the expected number run, all Ready, none terminating; else undefined. */
function settledPods(pods: readonly KubeObject[] | undefined): KubeObject[] | undefined {
  if (pods === undefined || pods.length !== PODS_PER_WORKLOAD) return undefined;
  return pods.every((pod) => pod.metadata?.['deletionTimestamp'] === undefined && podIsReady(pod)) ? [...pods] : undefined;
}

/**
 * Waits until `check` holds for every item; on timeout the error names the items still pending.
 */
async function waitForEach<T>(description: string, items: readonly T[], label: (item: T) => string, check: (item: T) => Promise<boolean>, timeoutMs: number): Promise<void> {
  let pending = items.map(label);
  try {
    await waitFor(description, async () => {
      const results = await Promise.all(items.map(async (item) => ({ item, ok: await check(item).catch(() => false) })));
      pending = results.filter((result) => !result.ok).map((result) => label(result.item));
      return pending.length === 0;
    }, { timeoutMs, intervalMs: 500 });
  } catch (error) {
    throw new Error(`${(error as Error).message}; still pending: ${pending.join(', ')}`, { cause: error });
  }
}

/** What one poll of one Application saw. */
interface Observation {
  readonly at: string;
  readonly app: string;
  readonly sync: string;
}

/** A poller of the apps' sync status. */
interface SyncStatusPoller {
  /** Completed polls so far (each reads every app once). */
  polls(): number;
  /** Stops polling (idempotent); returns every observation that was not Synced, and the poll count. */
  stop(): Promise<{ polls: number; observations: number; notSynced: Observation[] }>;
}

/**
 * Reads `status.sync.status` of every app, a new poll 200 ms after the
 * previous one answered, until stopped. A failed GET counts as an observation
 * that is not Synced: the claim is "Synced at every poll".
 */
function pollSyncStatus(argocd: ArgoCD, apps: readonly string[]): SyncStatusPoller {
  const notSynced: Observation[] = [];
  let polls = 0;
  let observations = 0;
  let stopping = false;
  const running = waitFor('the sync-status poller to be stopped', async () => {
    await Promise.all(apps.map(async (app) => {
      const sync = await argocd.getApplication(app).then(
        (object) => applicationStatus(object).sync?.status ?? '(no status)',
        (error: unknown) => `(GET failed: ${(error as Error).message})`,
      );
      observations++;
      if (sync !== 'Synced') notSynced.push({ at: new Date().toISOString(), app, sync });
    }));
    polls++;
    return stopping;
  }, { timeoutMs: 30 * 60_000, intervalMs: 200 });
  return {
    polls: () => polls,
    async stop() {
      stopping = true;
      await running;
      return { polls, observations, notSynced };
    },
  };
}

/**
 * Asks Argo CD to compare the live state now (a normal refresh, the UI's Refresh) and waits for
 * its verdict. Needed because the comparisons that resource changes trigger update the sync status
 * but not `reconciledAt`, and status-only changes (pods becoming Ready) trigger none: without it the
 * last word after a restart would be the periodic refresh, up to three minutes later. The refresh
 * annotation is removed only after the new status is written.
 */
async function compareNow(argocd: ArgoCD, app: string): Promise<Application> {
  await argocd.refresh(app);
  return argocd.waitForApplication(app, 'a refresh to be done', (_status, object) =>
    object.metadata?.annotations?.['argocd.argoproj.io/refresh'] === undefined, { timeoutMs: 180_000 });
}

/**
 * Hard refresh (the manifest cache bypassed: the plugin renders again), wait
 * for it, then a sync with the cell's options; waits for Synced/Healthy.
 * @returns the finished operation's state.
 */
async function hardRefreshAndSync(argocd: ArgoCD, app: string, syncOptions: readonly string[]): Promise<Record<string, unknown>> {
  await argocd.refresh(app, 'hard');
  await argocd.waitForApplication(app, 'the hard refresh to be done', (_status, object) =>
    object.metadata?.annotations?.['argocd.argoproj.io/refresh'] === undefined, { timeoutMs: 180_000 });
  await argocd.sync(app, { syncOptions });
  const synced = await argocd.waitForSyncedAndHealthy(app, undefined, { timeoutMs: 180_000 });
  return (synced.status?.['operationState'] ?? {}) as Record<string, unknown>;
}

/** Creates the app and syncs it with its options; resolves when Synced/Healthy. */
async function createAndSync(
  argocd: ArgoCD,
  name: string,
  source: Record<string, unknown>,
  namespace: string,
  cell: Pick<Cell, 'compareOptions' | 'syncOptions'>,
): Promise<void> {
  await argocd.createApplication(name, {
    source,
    destination: { server: destinationServer, namespace },
    // Also in the spec, where teams keep them; only the operation's own options drive a sync.
    ...(cell.syncOptions.length ? { syncPolicy: { syncOptions: cell.syncOptions } } : {}),
  }, { annotations: { [COMPARE_OPTIONS]: cell.compareOptions } });
  await argocd.sync(name, { syncOptions: cell.syncOptions });
  await argocd.waitForSyncedAndHealthy(name, undefined, { timeoutMs: 240_000 });
}

/** Starts the controller on the namespaces, waits until it has recorded every workload (first sight). */
async function startController(cluster: Cluster, argocd: ArgoCD, namespaces: readonly string[], workloads: readonly { kind: Kind; namespace: string; name?: string }[]): Promise<ControllerProcess> {
  const controller = await startControllerProcess(cluster, {
    args: [
      `--namespaces=${namespaces.join(',')}`,
      // The key the plugin uses, as one install shares it.
      `--hash-key-file=${argocd.hashKeyFile}`,
      // Three changes in a row: the default one-minute spacing would only make the test wait.
      '--min-restart-interval=0',
      // All 24 workloads restart in one wave rather than ten at a time.
      `--max-concurrent-restarts=${workloads.length}`,
      `--restart-burst=${workloads.length}`,
    ],
  });
  await controller.ready();
  await waitForEach('the controller\'s first-sight record on every workload', workloads, (w) => `${w.namespace}/${w.kind}`,
    async (w) => (await read(cluster.admin, workloadPath(w.kind, w.namespace, w.name))).metadata?.annotations?.[RESTARTED_FOR] !== undefined, 120_000);
  return controller;
}

fixture.test('out-of-band changes restart every kind in every diff × sync mode, and Argo CD sees Synced at every poll', async ({ cluster, argocd, namespace, t }) => {
  const api = cluster.admin;
  // Where the minutes go, in the test's diagnostics (the box is shared; the numbers are not asserted).
  let phaseStart = Date.now();
  const phaseDone = (what: string): void => {
    t.diagnostic(`${what}: ${((Date.now() - phaseStart) / 1000).toFixed(1)} s`);
    phaseStart = Date.now();
  };
  const workloadRepo = await argocd.createRepo(`${namespace}-workloads`);
  await workloadRepo.commit(workloadFiles(KINDS.map((kind) => workloadManifest(kind))), 'the workloads');
  const configRepo = await argocd.createRepo(`${namespace}-configs`);
  await configRepo.commit({ 'settings/configmap.yaml': configMapYaml(SHARED_CONFIGMAP, { LOG_LEVEL: 'info' }) }, 'the shared settings');

  const cells: LiveCell[] = [];
  for (const [index, cell] of CELLS.entries()) {
    const cellNamespace = await cluster.newNamespace(`${namespace}-c${index}`);
    cells.push({ ...cell, namespace: cellNamespace, app: `${cellNamespace}-workloads`, configApp: `${cellNamespace}-configs` });
  }
  const workloads = cells.flatMap((cell) => KINDS.map((kind) => ({ kind, namespace: cell.namespace, cell })));
  const label = (w: { kind: Kind; cell: LiveCell }): string => `${w.kind} (${w.cell.label})`;

  // The out-of-band configs exist before any workload, as an operator and the config app would have them.
  await Promise.all(cells.map(async (cell) => {
    await createExternalSecret(api, cell.namespace, EXTERNAL_SECRET, 'v1');
    await issueCertificate(api, cell.namespace, '1');
    await createAndSync(argocd, cell.configApp, { repoURL: configRepo.url, targetRevision: configRepo.branch, path: 'settings' }, cell.namespace,
      { compareOptions: 'ServerSideDiff=false', syncOptions: [] });
  }));
  await Promise.all(cells.map((cell) => createAndSync(argocd, cell.app,
    { repoURL: workloadRepo.url, targetRevision: workloadRepo.branch, path: 'workloads', plugin: { name: pluginName } }, cell.namespace, cell)));
  await waitForEach('every workload\'s pods Ready', workloads, label,
    async (w) => settledPods((await podsByApp(api, w.namespace)).get(NAMES[w.kind])) !== undefined, 180_000);
  // The plugin rendered them (the hash is in the template), so only the configs' provenance makes them out-of-band.
  const deployment = await read(api, workloadPath('Deployment', cells[0]?.namespace ?? ''));
  assert.match(hashOf(deployment) ?? '', /^v1:/, 'the plugin stamped the hash');

  phaseDone('6 config apps and 6 workload apps Synced/Healthy, pods Ready');
  const revisionsBefore = await Promise.all(cells.map((cell) => revisionsOf(api, cell.namespace)));
  const controller = await startController(cluster, argocd, cells.map((cell) => cell.namespace), workloads);
  phaseDone('the controller ready, every workload recorded');
  let poller: SyncStatusPoller | undefined;
  try {
    // The in-band rule: the ConfigMap in the render is Argo CD's to roll; the other three are the controller's.
    for (const w of workloads) {
      const recorded = (await read(api, workloadPath(w.kind, w.namespace))).metadata?.annotations?.[RESTARTED_FOR] ?? '{}';
      assert.deepEqual(Object.keys(JSON.parse(recorded) as object).sort(),
        [`ConfigMap/${SHARED_CONFIGMAP}`, `Secret/${EXTERNAL_SECRET}`, `Secret/${TLS_SECRET}`], `${label(w)}: the out-of-band configs`);
    }
    poller = pollSyncStatus(argocd, cells.map((cell) => cell.app));

    /** Makes one change and waits until every workload has been restarted for it. */
    const restartRound = async (what: string, change: () => Promise<void>): Promise<void> => {
      const before = new Map(await Promise.all(workloads.map(async (w) => {
        const object = await read(api, workloadPath(w.kind, w.namespace));
        const pods = (await podsByApp(api, w.namespace)).get(NAMES[w.kind]) ?? [];
        return [label(w), { restartAt: object.metadata?.annotations?.[RESTART_AT], uids: uids(pods) }] as const;
      })));
      await change();
      await waitForEach(`every workload restarted for ${what}`, workloads, label, async (w) => {
        const previous = before.get(label(w));
        const object = await read(api, workloadPath(w.kind, w.namespace));
        const restartAt = object.metadata?.annotations?.[RESTART_AT];
        if (restartAt === undefined || restartAt === previous?.restartAt) return false;
        // A Rollout is restarted by its own controller through spec.restartAt = T.
        if (w.kind === 'Rollout' && object.spec?.['restartAt'] !== restartAt) return false;
        const pods = settledPods((await podsByApp(api, w.namespace)).get(NAMES[w.kind]));
        return pods !== undefined && uids(pods).every((uid) => !previous?.uids.includes(uid));
      }, 300_000);
      phaseDone(`24 workloads restarted for ${what}`);
    };

    await restartRound('the ExternalSecret\'s Secret rotated', async () => {
      for (const cell of cells) await rotateSecret(api, cell.namespace, EXTERNAL_SECRET, 'v2');
    });
    await restartRound('the TLS Secret re-issued', async () => {
      for (const cell of cells) await issueCertificate(api, cell.namespace, '2');
    });
    await restartRound('the shared ConfigMap changed in its own repository', async () => {
      const revision = await configRepo.commit({ 'settings/configmap.yaml': configMapYaml(SHARED_CONFIGMAP, { LOG_LEVEL: 'debug' }) }, 'LOG_LEVEL debug');
      await Promise.all(cells.map(async (cell) => {
        await argocd.refresh(cell.configApp);
        await argocd.sync(cell.configApp, { revision });
        await argocd.waitForSyncedAndHealthy(cell.configApp, revision, { timeoutMs: 180_000 });
      }));
    });
    // "After": Argo CD's verdict on the state the restarts left.
    await Promise.all(cells.map((cell) => compareNow(argocd, cell.app)));
    const polled = await poller.stop();
    phaseDone('every app compared after the restarts');
    t.diagnostic(`${polled.polls} polls, ${polled.observations} observations of ${cells.length} apps`);
    assert.ok(polled.polls >= 50, `the apps were polled throughout (${polled.polls} polls)`);
    assert.deepEqual(polled.notSynced, [], 'every app Synced at every poll');

    for (const [index, cell] of cells.entries()) {
      assert.deepEqual(await revisionsOf(api, cell.namespace), revisionsBefore[index], `${cell.label}: no new ReplicaSet or ControllerRevision`);
    }
    const evicted = controller.lines.filter((line) => line.msg === 'evicted').length;
    // Deployments, StatefulSets and DaemonSets by eviction (2 pods each, 3 rounds); Rollouts by their own controller.
    assert.equal(evicted, cells.length * 3 * 3 * PODS_PER_WORKLOAD, 'each old pod of the three evicting kinds evicted once per change');

    // A hard refresh (the plugin renders again) and a sync with the cell's options restart nothing.
    const podsBefore = await Promise.all(cells.map((cell) => podsByApp(api, cell.namespace)));
    const logIndex = controller.lines.length;
    const syncStarted = Date.now();
    await Promise.all(cells.map(async (cell) => {
      const operation = await hardRefreshAndSync(argocd, cell.app, cell.syncOptions);
      assert.equal(operation['phase'], 'Succeeded', `${cell.label}: the sync succeeded`);
      const ran = (operation['operation'] as { sync?: { syncOptions?: string[] } } | undefined)?.sync?.syncOptions ?? [];
      assert.deepEqual(ran, cell.syncOptions, `${cell.label}: synced with its options`);
    }));
    // Replace=true drops the bookkeeping: wait for the controller's record again, then for Argo CD's last word.
    await waitForEach('the controller\'s record after the sync', workloads, label,
      async (w) => (await read(api, workloadPath(w.kind, w.namespace))).metadata?.annotations?.[RESTARTED_FOR] !== undefined, 120_000);
    await Promise.all(cells.map((cell) => compareNow(argocd, cell.app)));
    for (const [index, cell] of cells.entries()) {
      const podsAfter = await podsByApp(api, cell.namespace);
      for (const kind of KINDS) {
        assert.deepEqual(uids(podsAfter.get(NAMES[kind]) ?? []), uids(podsBefore[index]?.get(NAMES[kind]) ?? []), `${kind} (${cell.label}): no pod replaced by the sync`);
      }
      assert.deepEqual(await revisionsOf(api, cell.namespace), revisionsBefore[index], `${cell.label}: still no new ReplicaSet or ControllerRevision`);
      assert.equal(applicationStatus(await argocd.getApplication(cell.app)).sync?.status, 'Synced', `${cell.label}: still Synced`);
    }
    const restartsAfterSync = controller.lines.slice(logIndex).filter((line) => line.msg === 'evicted'
      || (line.msg === 'applied own fields' && typeof line['restartAt'] === 'string' && Date.parse(line['restartAt']) >= syncStarted));
    assert.deepEqual(restartsAfterSync, [], 'the controller started no restart after the sync');
    phaseDone('hard refresh and sync of every app, nothing restarted');
  } finally {
    // A failed assertion must not leave the poller running until its own deadline.
    await poller?.stop();
    await controller.stop();
    for (const cell of cells) {
      await argocd.deleteApplication(cell.app);
      await argocd.deleteApplication(cell.configApp);
      await api.send('DELETE', `/api/v1/namespaces/${cell.namespace}`);
    }
  }
}, { timeout: 900_000 });

/** The Deployment's ReplicaSets: name → desired replicas. */
async function replicaSetReplicas(client: ApiClient, namespace: string): Promise<Record<string, number>> {
  const list = await client.request<KubeList>('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets`);
  return Object.fromEntries(list.items.map((rs) => [String(rs.metadata?.name), Number(rs.spec?.['replicas'] ?? 0)]));
}

fixture.test('the opt-in template strategy under Argo CD: Synced through the restart, and a Replace=true sync undoes it with a second rollout', async ({ cluster, argocd, namespace }) => {
  const api = cluster.admin;
  const name = `${namespace}-template`;
  const manifest = workloadManifest('Deployment', {
    // Reloader's rollout-strategy annotation selects it only for Argo Rollouts, as in Reloader; any kind takes Driftless's own.
    annotations: { 'reloader.stakater.com/auto': 'true', 'driftless.dev/restart-strategy': 'rollout' },
  });
  const repo = await argocd.createRepo(name);
  await repo.commit(workloadFiles([manifest]), 'a Deployment restarted by its template');
  // The out-of-band configs, written directly (their provenance is the first test's subject).
  await createExternalSecret(api, namespace, EXTERNAL_SECRET, 'v1');
  await issueCertificate(api, namespace, '1');
  await api.request('POST', COLLECTIONS.ConfigMap(namespace), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: SHARED_CONFIGMAP }, data: { LOG_LEVEL: 'info' } });
  await createAndSync(argocd, name, { repoURL: repo.url, targetRevision: repo.branch, path: 'workloads', plugin: { name: pluginName } }, namespace,
    { compareOptions: 'ServerSideDiff=false', syncOptions: [] });
  const path = workloadPath('Deployment', namespace);
  const firstPods = await waitFor('two Ready pods', async () => settledPods((await podsByApp(api, namespace)).get(NAMES.Deployment)), { timeoutMs: 120_000 });
  const [original, ...others] = Object.keys(await replicaSetReplicas(api, namespace));
  assert.ok(original !== undefined && others.length === 0, 'one ReplicaSet after the first sync');

  const controller = await startController(cluster, argocd, [namespace], [{ kind: 'Deployment', namespace }]);
  let poller: SyncStatusPoller | undefined;
  try {
    poller = pollSyncStatus(argocd, [name]);
    await rotateSecret(api, namespace, EXTERNAL_SECRET, 'v2');
    // A true rolling update: the controller's template annotation gives the Deployment a second ReplicaSet.
    let lastSeen = '';
    const restarted = await waitFor('the rolling update through driftless.dev/restarted-at', async () => {
      const live = await read(api, path);
      const at = podTemplateOf(live)?.metadata?.annotations?.['driftless.dev/restarted-at'];
      const pods = settledPods((await podsByApp(api, namespace)).get(NAMES.Deployment));
      const replicaSets = await replicaSetReplicas(api, namespace);
      const fresh = Object.entries(replicaSets).filter(([rs]) => rs !== original);
      lastSeen = JSON.stringify({ at, restartAt: live.metadata?.annotations?.[RESTART_AT], pods: pods?.length, replicaSets, original });
      const done = at !== undefined && at === live.metadata?.annotations?.[RESTART_AT] && pods !== undefined
        && uids(pods).every((uid) => !uids(firstPods).includes(uid)) && fresh.length === 1 && fresh[0]?.[1] === PODS_PER_WORKLOAD && replicaSets[original] === 0;
      return done ? { pods, replicaSet: fresh[0]?.[0] ?? '' } : undefined;
    }, { timeoutMs: 180_000 }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; last seen ${lastSeen}`, { cause: error });
    });
    await compareNow(argocd, name);
    const polled = await poller.stop();
    assert.deepEqual(polled.notSynced, [], 'Synced at every poll through the template restart (legacy diff)');
    assert.equal(controller.lines.filter((line) => line.msg === 'evicted').length, 0, 'the Deployment controller replaced the pods, not evictions');

    // Replace=true PUTs the object as Git renders it: the template annotation and the bookkeeping go.
    const operation = await hardRefreshAndSync(argocd, name, ['Replace=true']);
    assert.equal(operation['phase'], 'Succeeded');
    const undone = await waitFor('the Deployment back on its original ReplicaSet', async () => {
      const live = await read(api, path);
      const pods = settledPods((await podsByApp(api, namespace)).get(NAMES.Deployment));
      const replicaSets = await replicaSetReplicas(api, namespace);
      lastSeen = JSON.stringify({ at: podTemplateOf(live)?.metadata?.annotations?.['driftless.dev/restarted-at'], restartAt: live.metadata?.annotations?.[RESTART_AT], pods: pods?.length, replicaSets, original, restarted: restarted.replicaSet });
      const back = pods !== undefined && replicaSets[original] === PODS_PER_WORKLOAD && replicaSets[restarted.replicaSet] === 0
        && uids(pods).every((uid) => !uids(restarted.pods).includes(uid));
      return back ? live : undefined;
    }, { timeoutMs: 180_000 }).catch((error: unknown) => {
      const said = controller.lines.filter((line) => typeof line.msg === 'string' && !String(line.msg).startsWith('watch')).map((line) => JSON.stringify(line)).slice(-60).join('\n');
      throw new Error(`${(error as Error).message}; last seen ${lastSeen}; the controller's last lines:\n${said}`, { cause: error });
    });
    assert.equal(podTemplateOf(undone)?.metadata?.annotations?.['driftless.dev/restarted-at'], undefined, 'the template annotation is gone');
    assert.deepEqual(Object.keys(await replicaSetReplicas(api, namespace)).sort(), [original, restarted.replicaSet].sort(), 'a second rollout, back to the original ReplicaSet (no third one)');
    // The controller sees a workload without its annotations: it writes them back from its restart record
    // (ADR 0007 §3a) and starts nothing — the rollback's pods post-date T, so the template annotation stays gone.
    const logIndex = controller.lines.length;
    const recorded = await waitFor('the record again', async () => (await read(api, path)).metadata?.annotations?.[RESTARTED_FOR], { timeoutMs: 120_000 });
    assert.ok(recorded);
    await compareNow(argocd, name);
    assert.equal(applicationStatus(await argocd.getApplication(name)).sync?.status, 'Synced');
    assert.ok((await read(api, path)).metadata?.annotations?.[RESTART_AT] !== undefined, 'the restart\'s T came back from the record');
    assert.equal(podTemplateOf(await read(api, path))?.metadata?.annotations?.['driftless.dev/restarted-at'], undefined, 'the template annotation is not written again');
    assert.deepEqual(controller.lines.slice(logIndex).filter((line) => line['event'] === 'RestartStarted'), [], 'the controller started no restart');
    assert.deepEqual(Object.keys(await replicaSetReplicas(api, namespace)).sort(), [original, restarted.replicaSet].sort(), 'no third ReplicaSet');
  } finally {
    await poller?.stop();
    await controller.stop();
  }
}, { timeout: 600_000 });

/** One documented caveat of the opt-in template strategy, and what the real Argo CD was seen to do with it. */
interface Caveat {
  readonly key: string;
  readonly manifest: KubeObject;
  readonly compareOptions: string;
  readonly syncOptions: readonly string[];
  /** The app's sync status once the controller has restarted the workload (and after a sync that resets nothing). */
  readonly verdict: 'Synced' | 'OutOfSync';
  /** Whether a sync writes Git's template back (the pods roll back to it; the restart is over, so the controller leaves it). */
  readonly syncResetsTemplate: boolean;
}

const TEMPLATE_RESTARTED_AT = 'driftless.dev/restarted-at';

/** The template's `driftless.dev/restarted-at` as Git renders it for a caveat: its own value, or none. */
function gitTemplateValue(key: string): string | undefined {
  return key.startsWith('git-key') ? 'rendered-by-git' : undefined;
}

/** The Deployment's template annotations, generation and whether its controller has caught up with it. */
function deploymentState(object: KubeObject): { restartedAt: string | undefined; generation: number; observed: boolean } {
  const generation = Number(object.metadata?.['generation']);
  return {
    restartedAt: podTemplateOf(object)?.metadata?.annotations?.[TEMPLATE_RESTARTED_AT],
    generation,
    observed: Number((object['status'] as { observedGeneration?: number } | undefined)?.observedGeneration) === generation,
  };
}

/** The Deployment revision of each ReplicaSet of a namespace: name → revision. */
async function revisionNumbers(client: ApiClient, namespace: string): Promise<Record<string, string>> {
  const list = await client.request<KubeList>('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets`);
  return Object.fromEntries(list.items.map((rs) => [String(rs.metadata?.name), String(rs.metadata?.annotations?.['deployment.kubernetes.io/revision'])]));
}

/** Starts a sync and waits for that operation (not the previous one still in the status) to finish. */
async function syncAndWait(argocd: ArgoCD, app: string, syncOptions: readonly string[]): Promise<Record<string, unknown>> {
  const startedAt = (object: Application): unknown => (object.status?.['operationState'] as { startedAt?: string } | undefined)?.startedAt;
  const previous = startedAt(await argocd.getApplication(app));
  await argocd.sync(app, { syncOptions });
  const done = await argocd.waitForApplication(app, 'the sync to finish', (status, object) => {
    const phase = status.operationState?.phase;
    return startedAt(object) !== previous && phase !== undefined && phase !== 'Running';
  }, { timeoutMs: 180_000 });
  return (done.status?.['operationState'] ?? {}) as Record<string, unknown>;
}

fixture.test('the template strategy\'s caveats under Argo CD: the key rendered by Git, annotations: null, annotations: {} with ServerSideApply=true', async ({ cluster, argocd, namespace, t }) => {
  const api = cluster.admin;
  const optIn = { 'driftless.dev/restart-strategy': 'rollout' };
  // The plugin stamps its hash into a template whose render uses a selected config, so the key rendered by Git
  // comes with an in-band ConfigMap; null and {} survive only where nothing in the render is selected, so those
  // workloads select the out-of-band Secret by name alone.
  const gitKey = (): KubeObject => workloadManifest('Deployment', { annotations: { 'reloader.stakater.com/auto': 'true', ...optIn }, templateAnnotations: { [TEMPLATE_RESTARTED_AT]: 'rendered-by-git' } });
  const unstamped = (templateAnnotations: Record<string, string> | null): KubeObject =>
    workloadManifest('Deployment', { annotations: { 'secret.reloader.stakater.com/reload': EXTERNAL_SECRET, ...optIn }, templateAnnotations, inBand: false });
  const legacy = 'ServerSideDiff=false';
  const serverSide = 'ServerSideDiff=true';
  const caveats: readonly Caveat[] = [
    // Both diffs see the controller's value against Git's.
    { key: 'git-key', manifest: gitKey(), compareOptions: legacy, syncOptions: [], verdict: 'OutOfSync', syncResetsTemplate: true },
    { key: 'git-key-ssd', manifest: gitKey(), compareOptions: serverSide, syncOptions: [], verdict: 'OutOfSync', syncResetsTemplate: true },
    // The three-way diff reads `null` as "delete the map"; a server-side dry run reads it as "no opinion".
    // A client-side sync still applies the null, whichever diff reported Synced.
    { key: 'null', manifest: unstamped(null), compareOptions: legacy, syncOptions: [], verdict: 'OutOfSync', syncResetsTemplate: true },
    { key: 'null-ssd', manifest: unstamped(null), compareOptions: serverSide, syncOptions: [], verdict: 'Synced', syncResetsTemplate: true },
    // The API server stores no empty map; Argo CD applies with --force-conflicts and the controller with force.
    { key: 'empty-ssa', manifest: unstamped({}), compareOptions: legacy, syncOptions: ['ServerSideApply=true'], verdict: 'Synced', syncResetsTemplate: false },
    { key: 'empty-ssa-ssd', manifest: unstamped({}), compareOptions: serverSide, syncOptions: ['ServerSideApply=true'], verdict: 'Synced', syncResetsTemplate: false },
  ];
  const live = await Promise.all(caveats.map(async (caveat) => {
    const ns = await cluster.newNamespace(`${namespace}-${caveat.key}`);
    const app = `${ns}-app`;
    const repo = await argocd.createRepo(app);
    await repo.commit(workloadFiles([caveat.manifest]), caveat.key);
    await createExternalSecret(api, ns, EXTERNAL_SECRET, 'v1');
    await issueCertificate(api, ns, '1');
    await api.request('POST', COLLECTIONS.ConfigMap(ns), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: SHARED_CONFIGMAP }, data: { LOG_LEVEL: 'info' } });
    await createAndSync(argocd, app, { repoURL: repo.url, targetRevision: repo.branch, path: 'workloads', plugin: { name: pluginName } }, ns, caveat);
    await waitFor(`${caveat.key}: two Ready pods`, async () => settledPods((await podsByApp(api, ns)).get(NAMES.Deployment)), { timeoutMs: 120_000 });
    const synced = await read(api, workloadPath('Deployment', ns));
    const template = podTemplateOf(synced)?.metadata?.annotations;
    if (caveat.key.startsWith('git-key')) {
      assert.equal(template?.[TEMPLATE_RESTARTED_AT], 'rendered-by-git', `${caveat.key}: Git's value applied`);
      assert.match(hashOf(synced) ?? '', /^v1:/, `${caveat.key}: the plugin stamped its hash beside it`);
    } else {
      // Neither null nor {} is stored: the live template has no annotations at all.
      assert.equal(template, undefined, `${caveat.key}: no template annotations live`);
    }
    return { ...caveat, namespace: ns, app, path: workloadPath('Deployment', ns) };
  }));
  const label = (c: { key: string }): string => c.key;
  const controller = await startController(cluster, argocd, live.map((c) => c.namespace), live.map((c) => ({ kind: 'Deployment' as const, namespace: c.namespace })));
  try {
    const logIndex = controller.lines.length;
    for (const c of live) await rotateSecret(api, c.namespace, EXTERNAL_SECRET, 'v2');
    await waitForEach('every workload rolled by the controller\'s template annotation', live, label, async (c) => {
      const object = await read(api, c.path);
      const state = deploymentState(object);
      const pods = settledPods((await podsByApp(api, c.namespace)).get(NAMES.Deployment));
      const active = Object.values(await replicaSetReplicas(api, c.namespace)).filter((replicas) => replicas > 0);
      return state.restartedAt !== undefined && state.restartedAt === object.metadata?.annotations?.[RESTART_AT] && state.observed && pods !== undefined && active.length === 1;
    }, 180_000);
    await Promise.all(live.map((c) => compareNow(argocd, c.app)));
    const restarted = new Map(await Promise.all(live.map(async (c) => {
      const object = await read(api, c.path);
      return [c.key, { ...deploymentState(object), replicaSets: Object.keys(await replicaSetReplicas(api, c.namespace)).sort(), revisions: await revisionNumbers(api, c.namespace) }] as const;
    })));
    for (const c of live) {
      const status = applicationStatus(await argocd.getApplication(c.app));
      assert.equal(status.sync?.status, c.verdict, `${c.key}: Argo CD's verdict after the restart`);
      assert.equal(status.resources?.find((resource) => resource.kind === 'Deployment')?.status, c.verdict, `${c.key}: the Deployment's`);
    }
    // The controller forces its apply: no conflict in any case, nothing above info, no Warning Event.
    assert.deepEqual(controller.lines.slice(logIndex).filter((line) => Number(line['level']) >= 40), [], 'no warning or error logged');
    for (const c of live) {
      const warnings = (await eventsFor(api, c.namespace, NAMES.Deployment)).filter((event) => event['type'] === 'Warning');
      assert.deepEqual(warnings, [], `${c.key}: no Warning Event`);
    }

    const syncIndex = controller.lines.length;
    await Promise.all(live.map(async (c) => {
      const operation = await syncAndWait(argocd, c.app, c.syncOptions);
      assert.equal(operation['phase'], 'Succeeded', `${c.key}: the sync succeeded (no conflict)`);
      const results = ((operation['syncResult'] as { resources?: { kind: string; message?: string }[] } | undefined)?.resources ?? []);
      const applied = results.find((resource) => resource.kind === 'Deployment')?.message;
      assert.equal(applied, `deployment.apps/web ${c.syncOptions.includes('ServerSideApply=true') ? 'serverside-applied' : 'configured'}`, `${c.key}: how Argo CD applied it`);
    }));
    // A sync that writes Git's template back rolls the pods back to Git's template, once; the restart is over
    // (the rollback's pods post-date T), so the controller leaves Git's template alone (controller/restart/
    // template.ts), as after a Replace=true sync (the test above). A sync that resets nothing rolls nothing.
    const lastSeen = new Map<string, unknown>();
    await waitForEach('every workload settled after the sync', live, label, async (c) => {
      const before = restarted.get(c.key);
      const state = deploymentState(await read(api, c.path));
      const pods = settledPods((await podsByApp(api, c.namespace)).get(NAMES.Deployment));
      const active = Object.values(await replicaSetReplicas(api, c.namespace)).filter((replicas) => replicas > 0);
      lastSeen.set(c.key, { before, state, pods: pods?.length, active: active.length });
      if (before === undefined || !state.observed || pods === undefined || active.length !== 1) return false;
      return c.syncResetsTemplate ? state.generation >= before.generation + 1 && state.restartedAt === gitTemplateValue(c.key) : state.restartedAt === before.restartedAt;
    }, 180_000).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; last seen ${JSON.stringify(Object.fromEntries(lastSeen))}`, { cause: error });
    });
    await Promise.all(live.map((c) => compareNow(argocd, c.app)));
    for (const c of live) {
      const before = restarted.get(c.key);
      const object = await read(api, c.path);
      const reapplied = controller.lines.slice(syncIndex).filter((line) => line.msg === 'applied own fields' && String(line['workload']).includes(c.namespace) && line['restartAt'] === before?.restartedAt);
      if (c.syncResetsTemplate) {
        assert.equal(deploymentState(object).restartedAt, gitTemplateValue(c.key), `${c.key}: Git's template stays live; the controller does not write its key again`);
        assert.equal(applicationStatus(await argocd.getApplication(c.app)).sync?.status, 'Synced', `${c.key}: Argo CD's verdict after the sync (live is Git's again)`);
      } else {
        // No rollout: each ReplicaSet keeps its revision (a template written back would re-number the one it selects).
        assert.deepEqual(await revisionNumbers(api, c.namespace), before?.revisions, `${c.key}: the sync rolled nothing`);
        assert.equal(deploymentState(object).restartedAt, before?.restartedAt, `${c.key}: the controller's value still live`);
        assert.equal(applicationStatus(await argocd.getApplication(c.app)).sync?.status, c.verdict, `${c.key}: Argo CD's verdict after the sync`);
      }
      assert.deepEqual(Object.keys(await replicaSetReplicas(api, c.namespace)).sort(), before?.replicaSets, `${c.key}: no third ReplicaSet`);
      // A re-apply of the same fields may come (its own bookkeeping settling); the template and revisions above say it rolled nothing.
      t.diagnostic(`${c.key}: the controller re-applied its fields ${reapplied.length} times after the sync`);
      t.diagnostic(`${c.key}: ReplicaSet revisions ${JSON.stringify(before?.revisions)} before the sync, ${JSON.stringify(await revisionNumbers(api, c.namespace))} after`);
    }
    assert.deepEqual(controller.lines.slice(logIndex).filter((line) => Number(line['level']) >= 40), [], 'still no warning or error logged');
  } catch (error) {
    t.diagnostic(await argocd.logs());
    throw error;
  } finally {
    await controller.stop();
  }
}, { timeout: 900_000 });
