/**
 * A `Replace=true` sync by the real Argo CD racing an out-of-band Secret
 * rotation (issues 18 and 21): the sync replaces each workload with the
 * manifest from Git, so whatever the controller keeps on the object is gone,
 * while the pod template is unchanged (no new commit: the sync rolls nothing).
 *
 * Right after the rotation, inside the debounce, at the controller's defaults:
 * every kind (Deployment, StatefulSet, DaemonSet, canary Rollout), under the
 * legacy and the server-side diff. What the controller knew of the idle
 * workloads (their last digests) comes back from their records, so the
 * rotation it saw before the replace is restarted for, not taken for the
 * baseline ("first sight"): every pod created before the rotation replaced —
 * also with a second install keeping its records in the same namespace and
 * watching another one, which once deleted the first install's records.
 *
 * In the middle of the restart: the restart completes, every pod that predates
 * the rotation replaced exactly once, none missed. The controller runs as its
 * own ServiceAccount and Argo CD as admin, so the API server's audit log
 * orders the sync's replace and the evictions.
 */
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { KubeList, KubeObject } from '../cluster/api.ts';
import { auditTime, describeAudit } from '../cluster/audit.ts';
import type { Cluster } from '../cluster/harness.ts';
import type { ArgoCD } from '../cluster/argocd.ts';
import { podIsReady, useArgoCD } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { startControllerProcess, type ControllerProcess, type LogLine } from '../controller/support/process.ts';
import { COLLECTIONS, podsOf, read, rotateSecret, uids, workload } from '../controller/support/fixtures.ts';
import { trackPods } from '../faults/support/pod-tracker.ts';
import { startReplicas, stopAll } from '../faults/support/replicas.ts';
import { appManifest, assertReplacedExactlyOnce, createSecret, elapsed, waitForMidRestart, waitForRecords, waitForReplaced, waitForSettled } from '../faults/support/scene.ts';

// Two fake nodes: the DaemonSet has two pods, like the others.
const fixture = useArgoCD({ auditLog: true, nodes: 2, rolloutsController: true });

const REPLICAS = 3;
const REPLACE = ['Replace=true'];
const RESTARTED_FOR = 'driftless.dev/restarted-for';
const COMPARE_OPTIONS = 'argocd.argoproj.io/compare-options';
const DESTINATION = 'https://kubernetes.default.svc';

type Kind = 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Rollout';
const KINDS: readonly Kind[] = ['Deployment', 'StatefulSet', 'DaemonSet', 'Rollout'];
const PODS_PER_WORKLOAD = 2;

/** The workload of `kind` in every app: named after its kind, reading the out-of-band Secret `db`. */
function nameOf(kind: Kind): string {
  return kind.toLowerCase();
}

/**
 * Drops empty `labels` and `annotations` maps: the API server stores none, so
 * Argo CD would compare `{}` in Git with an absent live map.
 */
function asInGit(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(asInGit);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value).filter(([key, item]) =>
    !((key === 'labels' || key === 'annotations') && typeof item === 'object' && item !== null && Object.keys(item).length === 0));
  return Object.fromEntries(entries.map(([key, item]) => [key, asInGit(item)]));
}

/** The workload's pods when exactly `count` run, all Ready, none terminating; else undefined. */
async function settledPods(cluster: Cluster, namespace: string, name: string, count: number): Promise<KubeObject[] | undefined> {
  const pods = await podsOf(cluster.admin, namespace, name);
  return pods.length === count && pods.every((pod) => pod.metadata?.['deletionTimestamp'] === undefined && podIsReady(pod)) ? pods : undefined;
}

/** A log line's `workload` field. */
function workloadOf(line: LogLine): string {
  return typeof line['workload'] === 'string' ? line['workload'] : '';
}

/** Two Applications (legacy and server-side diff) of the four kinds, synced with Replace=true, every pod Ready. */
async function deployCells(cluster: Cluster, argocd: ArgoCD, namespace: string) {
  const cells = await Promise.all(['ServerSideDiff=false', 'ServerSideDiff=true'].map(async (compareOptions, index) => {
    const cellNamespace = await cluster.newNamespace(`${namespace}-c${index}`);
    return { compareOptions, namespace: cellNamespace, app: `${cellNamespace}-app`, label: compareOptions === 'ServerSideDiff=true' ? 'server-side diff' : 'legacy diff' };
  }));
  const repo = await argocd.createRepo(`replace-${namespace}`);
  const files = Object.fromEntries(KINDS.map((kind) => [`app/${nameOf(kind)}.yaml`, stringify(asInGit(workload(kind, nameOf(kind), { replicas: PODS_PER_WORKLOAD, uses: { secret: 'db' } })))]));
  const sha = await repo.commit(files, 'four workloads reading the Secret db');
  await Promise.all(cells.map(async (cell) => {
    await createSecret(cluster, cell.namespace, 'db');
    await argocd.createApplication(cell.app, {
      source: { repoURL: repo.url, targetRevision: 'main', path: 'app' },
      destination: { server: DESTINATION, namespace: cell.namespace },
      syncPolicy: { syncOptions: REPLACE },
    }, { annotations: { [COMPARE_OPTIONS]: cell.compareOptions } });
    await argocd.sync(cell.app, { syncOptions: REPLACE });
    await argocd.waitForSyncedAndHealthy(cell.app, sha, { timeoutMs: 240_000 });
  }));
  const workloads = cells.flatMap((cell) => KINDS.map((kind) => ({ kind, cell, name: nameOf(kind), key: `${kind}/${cell.namespace}/${nameOf(kind)}` })));
  await waitFor('every workload\'s pods Ready', async () => {
    for (const w of workloads) if (await settledPods(cluster, w.cell.namespace, w.name, PODS_PER_WORKLOAD) === undefined) return false;
    return true;
  }, { timeoutMs: 180_000, intervalMs: 500 });

  return { cells, workloads };
}

fixture.test('a Replace=true sync inside the debounce of a rotation, at the defaults: every kind restarted under both diffs, nothing taken for first sight', async ({ cluster, argocd, namespace, t }) => {
  const api = cluster.admin;
  // The controller's own namespace, where its records live, as installed (not the apps').
  const own = await cluster.newNamespace(`${namespace}-driftless`);
  const { cells, workloads } = await deployCells(cluster, argocd, namespace);

  // The product's defaults (the helper's test defaults are faster): debounce 2s, a look every 5s.
  const controller = await startControllerProcess(cluster, {
    args: [`--namespaces=${cells.map((cell) => cell.namespace).join(',')}`, '--debounce=2s', '--restart-check-interval=5s'],
    env: { POD_NAMESPACE: own },
  });
  let other: ControllerProcess | undefined;
  const elsewhere = await cluster.newNamespace(`${namespace}-other`);
  const recordsIn = async (): Promise<KubeObject[]> => (await api.request<KubeList>('GET', `${COLLECTIONS.ConfigMap(own)}?labelSelector=driftless.dev%2Frecord`)).items;
  try {
    await controller.ready();
    await waitFor('every workload recorded, on the object and in its record', async () => {
      const records = await recordsIn();
      for (const w of workloads) {
        const live = await read(api, `${COLLECTIONS[w.kind](w.cell.namespace)}/${w.name}`);
        if (live.metadata?.annotations?.[RESTARTED_FOR] === undefined) return false;
        if (!records.some((record) => record['data'] !== undefined && (record['data'] as Record<string, string>)['uid'] === live.metadata?.['uid'])) return false;
      }
      return true;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    // A second install in the same namespace, sharded to another one (issue 21): its record watch shows it
    // these records, whose workloads it cannot see. It once deleted them all as records of deleted workloads,
    // and the idle workloads' next Replace=true sync was first sight. Ready: its first pass is done.
    other = await startControllerProcess(cluster, { args: [`--namespaces=${elsewhere}`, '--debounce=2s', '--restart-check-interval=5s'], env: { POD_NAMESPACE: own } });
    await other.ready();
    assert.equal((await recordsIn()).length, workloads.length, 'the other install left this one\'s records alone');
    const before = new Map(await Promise.all(workloads.map(async (w) => [w.key, uids(await podsOf(api, w.cell.namespace, w.name))] as const)));
    const logFrom = controller.lines.length;

    // The rotation, and at once the sync with the apps' own options, as a Git webhook or a user would cause.
    const syncedAt = Date.now();
    await Promise.all(cells.map((cell) => rotateSecret(api, cell.namespace, 'db', 'v2')));
    await Promise.all(cells.map((cell) => argocd.sync(cell.app, { syncOptions: REPLACE })));
    await Promise.all(cells.map((cell) => argocd.waitForApplication(cell.app, 'the Replace=true sync to finish', (_status, app) => {
      const operation = app.status?.['operationState'] as { phase?: string; startedAt?: string } | undefined;
      return operation?.phase === 'Succeeded' && Date.parse(String(operation.startedAt)) >= syncedAt - 1000;
    }, { timeoutMs: 120_000 })));

    const state = workloads.map((w) => ({ ...w, done: false }));
    const pending = (): string[] => state.filter((w) => !w.done).map((w) => `${w.kind} (${w.cell.label})`);
    await waitFor('every pod created before the rotation replaced', async () => {
      for (const w of state) {
        if (w.done) continue;
        const pods = await settledPods(cluster, w.cell.namespace, w.name, PODS_PER_WORKLOAD);
        w.done = pods !== undefined && uids(pods).every((uid) => !(before.get(w.key) ?? []).includes(uid));
      }
      return pending().length === 0;
    }, { timeoutMs: 240_000, intervalMs: 500 }).catch((error: unknown) => {
      const said = controller.lines.slice(logFrom).filter((line) => workloads.some((w) => w.key === workloadOf(line))).map((line) => `${JSON.stringify(line['time'])} ${workloadOf(line)} ${String(line.msg)} ${JSON.stringify(line['why'] ?? '')}`);
      throw new Error(`${(error as Error).message}; still on the old Secret: ${pending().join(', ')}\ncontroller:\n${said.join('\n')}`, { cause: error });
    });

    const after = controller.lines.slice(logFrom);
    for (const w of workloads) {
      const lines = after.filter((line) => workloadOf(line) === w.key);
      assert.deepEqual(lines.filter((line) => line['why'] === 'first-sight').map((line) => line.msg), [], `${w.kind} (${w.cell.label}): the replace made nothing first sight`);
      // The sync landed inside the debounce: the record restored the annotations before the restart began.
      const restored = lines.findIndex((line) => line.msg === 'the workload lost its bookkeeping annotations (replaced): restored from its record');
      const started = lines.findIndex((line) => line.msg === 'applied own fields' && typeof line['restartAt'] === 'string' && Date.parse(String(line['restartAt'])) >= syncedAt - 1000);
      assert.ok(restored >= 0 && started > restored, `${w.kind} (${w.cell.label}): restored from its record (line ${restored}) before the restart began (line ${started})`);
    }
    t.diagnostic(`every pod of ${workloads.length} workloads replaced ${elapsed(syncedAt)} after the rotation`);
  } finally {
    await other?.stop();
    await controller.stop();
    for (const cell of cells) {
      await argocd.deleteApplication(cell.app);
      await api.send('DELETE', `/api/v1/namespaces/${cell.namespace}`);
    }
    await api.send('DELETE', `/api/v1/namespaces/${own}`);
    await api.send('DELETE', `/api/v1/namespaces/${elsewhere}`);
  }
}, { timeout: 600_000 });

fixture.test('a Replace=true sync by Argo CD in the middle of the restart: the restart completes, every old pod replaced once', async ({ cluster, argocd, namespace }) => {
  const startedAt = Date.now();
  const tracker = trackPods(cluster.admin, namespace);
  await createSecret(cluster, namespace, 'db');
  const repo = await argocd.createRepo(`replace-${namespace}`);
  const sha = await repo.commit({ 'app/deployment.yaml': stringify(appManifest('app', { secret: 'db', replicas: REPLICAS })) }, 'app');
  const appName = `replace-${namespace}`;
  await argocd.createApplication(appName, {
    source: { repoURL: repo.url, targetRevision: 'main', path: 'app' },
    destination: { server: 'https://kubernetes.default.svc', namespace },
    syncPolicy: { syncOptions: REPLACE },
  });
  await argocd.sync(appName, { syncOptions: REPLACE });
  await argocd.waitForSyncedAndHealthy(appName, sha, { timeoutMs: 180_000 });
  assert.ok(await waitForSettled(cluster, namespace, 'app', REPLICAS, 90_000), 'the Deployment rolled out');
  await tracker.ready();
  const replicas = await startReplicas(cluster, namespace, { count: 1, args: ['--min-restart-interval=0'] });
  try {
    await (replicas[0] as (typeof replicas)[number]).process.ready();
    await waitForRecords(cluster, namespace, ['app']);
    const old = tracker.live('app');
    tracker.measure('app', REPLICAS, 1);
    const rotatedAt = Date.now();
    await rotateSecret(cluster.admin, namespace, 'db', 'v2');
    const replacedAtSync = await waitForMidRestart(tracker, old);
    const syncedAt = Date.now();
    await argocd.sync(appName, { syncOptions: REPLACE });
    await argocd.waitForApplication(appName, 'the Replace=true sync to finish', (_status, app) => {
      const operation = app.status?.['operationState'] as { phase?: string; startedAt?: string } | undefined;
      return operation?.phase === 'Succeeded' && Date.parse(String(operation.startedAt)) >= syncedAt - 1000;
    }, { timeoutMs: 120_000 });

    // The Deployment itself, not its status (the controller manager also writes as admin here).
    const replaces = await cluster.audit({ user: 'admin', namespace, resource: 'deployments', subresource: '', name: 'app', verbs: ['update'], succeeded: true, since: syncedAt - 1000 });
    assert.ok(replaces.length > 0, 'Argo CD replaced the Deployment (an update by its user)');
    const replacedAt = auditTime((replaces[0] as (typeof replaces)[number]).requestReceivedTimestamp);
    const evictions = await cluster.audit({ namespace, resource: 'pods', subresource: 'eviction', succeeded: true, since: rotatedAt });
    const evictedBefore = evictions.filter((entry) => auditTime(entry.requestReceivedTimestamp) < replacedAt).length;
    assert.ok(evictedBefore > 0 && evictedBefore < old.length, `the sync landed mid-restart (${evictedBefore} of ${old.length} evicted before it):\n${describeAudit(evictions)}`);

    const done = await waitForReplaced(cluster, tracker, namespace, 'app', old, REPLICAS, 150_000);
    process.stderr.write(`Replace=true sync in the middle of the restart (${replacedAtSync} of ${old.length} replaced when it started); test took ${elapsed(startedAt)}\n`);
    assert.ok(done, `every old pod replaced; still running: ${old.filter((uid) => tracker.live('app').includes(uid)).map((uid) => tracker.pods.get(uid)?.name).join(', ')}`);
    await assertReplacedExactlyOnce(cluster, tracker, namespace, 'app', old, rotatedAt);
    assert.equal(tracker.disruption('app').breaches, 0, 'never more than one pod down');
  } finally {
    await stopAll(replicas);
    tracker.stop();
  }
}, { timeout: 480_000 });
