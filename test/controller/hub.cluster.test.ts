/**
 * Hub mode (`--argocd-clusters`, ADR 0019) against three real control planes:
 * a hub where the controller runs and Argo CD's cluster Secrets live, and two
 * spokes registered by cluster Secrets as `argocd cluster add` makes them (a
 * ServiceAccount with full rights in the spoke, its bearer token, the CA).
 * A rotation in each spoke restarts there; a cluster Secret added later is
 * picked up; a refused one is said (Event, metric); every metric of a spoke's
 * pipeline names its cluster; a spoke whose API server is stopped in the
 * middle of a restart degrades only itself and is said down, then back, by
 * Events in the hub, and its restart finishes once it is back, every pod
 * replaced once; a rotated token reconnects; a cluster Secret deleted in the
 * middle of a restart means no more writes there (the spoke's audit log) and
 * no more series of it in /metrics.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { ApiClient, KubeObject } from '../cluster/api.ts';
import { startClusters, type Cluster } from '../cluster/harness.ts';
import { installArgoCdCrds } from '../cluster/argocd.ts';
import { create, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { clusterId } from '../../controller/hub/destinations.ts';
import { COLLECTIONS, SECRET_VALUE, eventSummary, eventsFor, read, rotateSecret, secret, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';
import { findLeak } from './support/leak.ts';
import { trackPods } from '../faults/support/pod-tracker.ts';
import { assertReplacedExactlyOnce, createSecret, deployApps, waitForMidRestart, waitForRecords, waitForReplaced } from '../faults/support/scene.ts';
import { startControllerProcess, type ControllerProcess, type LogLine } from './support/process.ts';

const ARGOCD = 'argocd';
const MANAGER = 'argocd-manager';

/** A spoke with its workload: a Deployment using the Secret `db` in namespace `ns`. */
interface Spoke {
  readonly cluster: Cluster;
  readonly name: string;
  readonly ns: string;
}

/** A cluster Secret as `argocd cluster add` writes it: bearer token, CA data, the server URL. */
function clusterSecret(secretName: string, spoke: Spoke, token: string, config: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: secretName, namespace: ARGOCD, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
    type: 'Opaque',
    stringData: {
      name: spoke.name,
      server: spoke.cluster.server,
      config: JSON.stringify({ bearerToken: token, tlsClientConfig: { insecure: false, caData: Buffer.from(spoke.cluster.ca).toString('base64') }, ...config }),
    },
  };
}

async function deployApp(spoke: Cluster): Promise<string> {
  const ns = await spoke.newNamespace('apps');
  await create(spoke.admin, COLLECTIONS.Secret(ns), secret('db', 'v1'));
  await create(spoke.admin, COLLECTIONS.Deployment(ns), workload('Deployment', 'app', { replicas: 2, uses: { secret: 'db' } }));
  await waitForDeploymentRollout(spoke.admin, ns, 'app');
  return ns;
}

/** Waits until the Deployment's digest of `db` is recorded (first sight, or the end of a restart's bookkeeping). */
function recordedDigest(api: ApiClient, ns: string, not?: string, name = 'app'): Promise<string> {
  return waitFor(`the digest recorded on ${ns}/${name}`, async () => {
    const digest = (await read(api, `${COLLECTIONS.Deployment(ns)}/${name}`)).metadata?.annotations?.['driftless.dev/restarted-for'];
    return digest !== undefined && digest !== not ? digest : undefined;
  }, { timeoutMs: 90_000 });
}

/** Rotates `db` in the spoke and waits until every pod of `app` was replaced. */
async function rotateAndWaitForRestart(spoke: Spoke, value: string): Promise<void> {
  const before = await waitForReadyPods(spoke.cluster.admin, spoke.ns, 'app', 2);
  await rotateSecret(spoke.cluster.admin, spoke.ns, 'db', value);
  await waitFor(`every pod of ${spoke.name}'s app replaced`, async () => {
    const pods = await waitForReadyPods(spoke.cluster.admin, spoke.ns, 'app', 2, 5_000).catch(() => undefined);
    return pods !== undefined && uids(pods).every((uid) => !uids(before).includes(uid)) ? pods : undefined;
  }, { timeoutMs: 120_000 });
}

function logOf(cluster: string, msg: string) {
  return (line: LogLine): boolean => line.msg === msg && line['cluster'] === cluster;
}

async function metrics(controller: ControllerProcess): Promise<string> {
  const started = await controller.waitForLog('started', (line) => line.msg === 'started');
  const response = await fetch(`http://${String(started['http'])}/metrics`);
  return response.text();
}

async function readyz(controller: ControllerProcess): Promise<number> {
  const started = await controller.waitForLog('started', (line) => line.msg === 'started');
  return (await fetch(`http://${String(started['http'])}/readyz`)).status;
}

/** The three clusters, the controller, and every token handed to it (none may appear in its output). */
interface Scene {
  readonly hub: Cluster;
  readonly a: Spoke;
  readonly b: Spoke;
  readonly controller: ControllerProcess;
  readonly tokens: string[];
}

const MANAGER_USER = `system:serviceaccount:kube-system:${MANAGER}`;

async function startScene(): Promise<Scene> {
  const [hub, sa, sb] = await startClusters([{}, { auditLog: true }, { auditLog: true }]) as [Cluster, Cluster, Cluster];
  await hub.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ARGOCD } });
  await installArgoCdCrds(hub);
  const [nsA, nsB] = await Promise.all([deployApp(sa), deployApp(sb)]);
  const a = { cluster: sa, name: 'spoke-a', ns: nsA };
  const b = { cluster: sb, name: 'spoke-b', ns: nsB };
  for (const spoke of [sa, sb]) await spoke.createServiceAccount('kube-system', MANAGER);
  const tokenA = await sa.tokenFor('kube-system', MANAGER);
  await create(hub.admin, COLLECTIONS.Secret(ARGOCD), clusterSecret('cluster-spoke-a', a, tokenA));
  // --cluster-down-warning=2s: the Warning of the stopped spoke comes while spoke-b restarts, not 15 s later (it
  // would lengthen spoke-a's outage, and its kwok pods' recovery, by as much).
  // No --min-restart-interval: the scenes rotate spoke-b's app within a minute of each other, and each would wait out
  // the interval's deferral (fleet.cluster.test.ts proves the interval; here it only added a minute to two scenes).
  const controller = await startControllerProcess(hub, { args: ['--argocd-clusters', `--argocd-namespace=${ARGOCD}`, '--min-restart-interval=0', '--cluster-down-warning=2s'] });
  return { hub, a, b, controller, tokens: [tokenA] };
}

async function stopScene(scene: Scene | undefined): Promise<void> {
  if (scene === undefined) return;
  try {
    await scene.controller.stop();
    // Every cluster credential the controller was given stays unsaid.
    const said = `${scene.controller.lines.map((line) => JSON.stringify(line)).join('\n')}\n${scene.controller.stderr()}`;
    assert.equal(findLeak(said, ...scene.tokens, SECRET_VALUE), undefined, 'a cluster Secret\'s token (or a Secret value) in the controller\'s output');
  } finally {
    await Promise.all([scene.hub, scene.a.cluster, scene.b.cluster].map((c) => c.stop()));
  }
}

async function restartsInSpokeA({ hub, a, controller }: Scene): Promise<void> {
  await controller.waitForLog('spoke-a reconciled', logOf('spoke-a', 'initial reconcile finished'), { timeoutMs: 120_000 });
  await controller.waitForLog('in-cluster started', logOf('in-cluster', 'started cluster'));
  const first = await recordedDigest(a.cluster.admin, a.ns);
  await rotateAndWaitForRestart(a, 'v2');
  await recordedDigest(a.cluster.admin, a.ns, first);
  const records = await hub.admin.request<{ items: KubeObject[] }>('GET', `/api/v1/namespaces/default/configmaps?labelSelector=${encodeURIComponent(`driftless.dev/record-cluster=${clusterId(a.cluster.server)}`)}`);
  assert.equal(records.items.length, 1, 'one record of spoke-a\'s workload, in the hub');
  assert.equal((records.items[0]?.['data'] as Record<string, string> | undefined)?.['namespace'], a.ns);
  const inSpoke = await a.cluster.admin.request<{ items: KubeObject[] }>('GET', '/api/v1/configmaps?labelSelector=driftless.dev%2Frecord');
  assert.equal(inSpoke.items.length, 0, 'no record written in the spoke');
  assert.ok((await a.cluster.audit({ user: MANAGER_USER, resource: 'pods', subresource: 'eviction' })).length >= 2, 'evicted with the cluster Secret\'s identity');
}

/** VmRSS and VmHWM of a process: figures for the report, never asserted. */
async function memoryOf(pid: number): Promise<string> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const field = (name: string): string => new RegExp(`${name}:\\s*(\\d+ kB)`).exec(status)?.[1] ?? 'unknown';
  return `VmRSS ${field('VmRSS')}, VmHWM ${field('VmHWM')}`;
}

async function addedLaterAndRefused({ hub, a, b, controller, tokens }: Scene, t: TestContext): Promise<void> {
  const tokenB = await b.cluster.tokenFor('kube-system', MANAGER);
  tokens.push(tokenB);
  await create(hub.admin, COLLECTIONS.Secret(ARGOCD), clusterSecret('cluster-spoke-b', b, tokenB));
  await create(hub.admin, COLLECTIONS.Secret(ARGOCD), {
    apiVersion: 'v1', kind: 'Secret',
    metadata: { name: 'cluster-eks', namespace: ARGOCD, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
    stringData: { name: 'eks', server: 'https://eks.example.invalid', config: JSON.stringify({ awsAuthConfig: { clusterName: 'eks', roleARN: 'arn:aws:iam::1:role/x' } }) },
  });
  await controller.waitForLog('spoke-b reconciled', logOf('spoke-b', 'initial reconcile finished'), { timeoutMs: 120_000 });
  const first = await recordedDigest(b.cluster.admin, b.ns);
  await rotateAndWaitForRestart(b, 'v2');
  await recordedDigest(b.cluster.admin, b.ns, first);
  const refusal = await waitFor('a Warning Event on the refused cluster Secret', async () => (await eventsFor(hub.admin, ARGOCD, 'cluster-eks')).find((e) => e['reason'] === 'ClusterRefused'));
  assert.equal(refusal['type'], 'Warning');
  assert.match(String(refusal['message']), /aws-auth/);
  const text = await waitFor('the refusal and both spokes in /metrics', async () => {
    const scraped = await metrics(controller);
    return scraped.includes('driftless_cluster_refused{secret="argocd/cluster-eks",reason="aws-auth"} 1')
      && scraped.includes('driftless_cluster_up{cluster="spoke-a"} 1') && scraped.includes('driftless_cluster_up{cluster="spoke-b"} 1') ? scraped : undefined;
  });
  // Each spoke's pipeline reports under its own name (ADR 0027): its restart, its queue, its requests.
  for (const [spoke, restarts] of [[a, 1], [b, 1]] as const) {
    const series = new RegExp(`^driftless_restarts_started_total\\{kind="Deployment",namespace="${spoke.ns}",strategy="[a-z-]+",cluster="${spoke.name}"\\} ${restarts}$`, 'm');
    assert.match(text, series);
    assert.match(text, new RegExp(`^workqueue_adds_total\\{name="workloads",cluster="${spoke.name}"\\} \\d+$`, 'm'));
    assert.match(text, new RegExp(`^driftless_api_requests_total\\{verb="GET",code="200",cluster="${spoke.name}"\\} \\d+$`, 'm'));
  }
  t.diagnostic(`controller memory with three clusters (in-cluster, spoke-a, spoke-b): ${await memoryOf(controller.pid)}`);
}

/**
 * An Application in the hub maps to a spoke's workloads by its destination plus tracking: a deny window of its
 * project holds the restart of its workload in spoke-b, while a workload in spoke-a carrying the same tracking
 * id (the Application does not deploy there) restarts at once.
 */
async function syncWindowInSpoke({ hub, a, b }: Scene): Promise<void> {
  const argo = `/apis/argoproj.io/v1alpha1/namespaces/${ARGOCD}`;
  await create(hub.admin, `${argo}/appprojects`, {
    apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: 'frozen', namespace: ARGOCD },
    spec: { sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }], syncWindows: [{ kind: 'deny', schedule: '* * * * *', duration: '1h', applications: ['shop-b'] }] },
  });
  await create(hub.admin, `${argo}/applications`, {
    apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name: 'shop-b', namespace: ARGOCD },
    spec: { project: 'frozen', destination: { name: 'spoke-b', namespace: b.ns }, source: { repoURL: 'https://example.invalid/shop.git', path: 'shop' } },
  });
  for (const spoke of [a, b]) {
    await create(spoke.cluster.admin, COLLECTIONS.Secret(spoke.ns), secret('cfg', 'v1'));
    await create(spoke.cluster.admin, COLLECTIONS.Deployment(spoke.ns), workload('Deployment', 'held', {
      replicas: 1, uses: { secret: 'cfg' },
      annotations: { 'reloader.stakater.com/auto': 'true', 'argocd.argoproj.io/tracking-id': `shop-b:apps/Deployment:${spoke.ns}/held` },
    }));
    await waitForDeploymentRollout(spoke.cluster.admin, spoke.ns, 'held');
  }
  await Promise.all([a, b].map((spoke) => recordedDigest(spoke.cluster.admin, spoke.ns, undefined, 'held')));
  const podsB = await waitForReadyPods(b.cluster.admin, b.ns, 'held', 1);
  const podsA = await waitForReadyPods(a.cluster.admin, a.ns, 'held', 1);
  for (const spoke of [a, b]) await rotateSecret(spoke.cluster.admin, spoke.ns, 'cfg', 'v2');
  await waitFor('spoke-a\'s held workload restarted: the Application deploys elsewhere', async () => {
    const pods = await waitForReadyPods(a.cluster.admin, a.ns, 'held', 1, 5_000).catch(() => undefined);
    return pods !== undefined && !uids(pods).includes(uids(podsA)[0] as string);
  }, { timeoutMs: 120_000 });
  const held = await waitForEvent(b.cluster.admin, b.ns, 'held', 'RestartWaitingForSyncWindow');
  assert.equal(held['type'], 'Normal');
  assert.deepEqual(uids(await waitForReadyPods(b.cluster.admin, b.ns, 'held', 1)), uids(podsB), 'spoke-b\'s workload waits for its window');
}

/** The driftless Events with `reason` on the cluster Secret in the hub. */
async function clusterEvents(hub: Cluster, secretName: string, reason: string): Promise<KubeObject[]> {
  return (await eventsFor(hub.admin, ARGOCD, secretName)).filter((e) => e['reason'] === reason);
}

/**
 * spoke-a's API server stops in the middle of a restart there (3 pods, each replacement Ready 3 s after it is
 * created): spoke-a alone is down, said so in the hub; spoke-b still restarts; once spoke-a is back, its restart
 * finishes, every old pod evicted exactly once (its audit log), no replacement evicted, none missed.
 */
async function oneSpokeDown({ hub, a, b, controller, tokens }: Scene): Promise<void> {
  const secretUid = (await read(hub.admin, `${COLLECTIONS.Secret(ARGOCD)}/cluster-spoke-a`)).metadata?.uid;
  await createSecret(a.cluster, a.ns, 'slow-db');
  await deployApps(a.cluster, a.ns, ['slow'], { secret: 'slow-db', replicas: 3 });
  await waitForRecords(a.cluster, a.ns, ['slow']);
  const tracker = trackPods(a.cluster.admin, a.ns);
  try {
    await tracker.ready();
    const old = tracker.live('slow');
    const rotatedAt = Date.now();
    await rotateSecret(a.cluster.admin, a.ns, 'slow-db', 'v2');
    await waitForMidRestart(tracker, old);
    await spokeADown({ hub, a, b, controller, tokens }, secretUid);
    assert.ok(await waitForReplaced(a.cluster, tracker, a.ns, 'slow', old, 3, 120_000), 'spoke-a\'s restart finished once it was back');
    await assertReplacedExactlyOnce(a.cluster, tracker, a.ns, 'slow', old, rotatedAt);
    await waitForEvent(a.cluster.admin, a.ns, 'slow', 'RestartFinished', 60_000);
    assert.deepEqual((await eventsFor(a.cluster.admin, a.ns, 'slow')).map(eventSummary).sort(), ['Normal RestartFinished x1', 'Normal RestartStarted x1']);
  } finally {
    tracker.stop();
  }
  const before = await recordedDigest(a.cluster.admin, a.ns);
  await rotateAndWaitForRestart(a, 'v3');
  await recordedDigest(a.cluster.admin, a.ns, before);
}

/** spoke-a's API server stopped, the checks while it is down, then started again and seen up (Events, metrics). */
async function spokeADown({ hub, a, b, controller, tokens }: Scene, secretUid: string | undefined): Promise<void> {
  await a.cluster.stopApiServer();
  try {
    await waitFor('spoke-a down in /metrics', async () => (await metrics(controller)).includes('driftless_cluster_up{cluster="spoke-a"} 0'), { timeoutMs: 60_000 });
    const before = await recordedDigest(b.cluster.admin, b.ns);
    await rotateAndWaitForRestart(b, 'v3');
    await recordedDigest(b.cluster.admin, b.ns, before);
    assert.equal(await readyz(controller), 200, '/readyz stays ready while a spoke is down');
    assert.ok((await metrics(controller)).includes('driftless_cluster_up{cluster="spoke-b"} 1'));
    // The hub says it (ADR 0027): a Warning on spoke-a's cluster Secret once its grace has passed, saying what the
    // last list or watch met (its watches broken by the stop: reset; the lists since: refused).
    const down = await waitForEvent(hub.admin, ARGOCD, 'cluster-spoke-a', 'ClusterUnreachable', 60_000);
    assert.equal(down['type'], 'Warning');
    assert.equal((down['involvedObject'] as { uid?: string } | undefined)?.uid, secretUid, 'on the Secret itself: `kubectl describe` lists it');
    const said = String(down['message']);
    assert.match(said, /^Cluster spoke-a \(https:\/\/127\.0\.0\.1:\d+\) has been down for Driftless for \d+s: listing or watching .+ failed: connection (refused|reset)\. /);
    assert.ok(said.includes(a.cluster.server), said);
    assert.equal(findLeak(said, ...tokens), undefined, 'no credential in the Event');
    assert.deepEqual(await clusterEvents(hub, 'cluster-spoke-b', 'ClusterUnreachable'), [], 'the other spoke is not said down');
  } finally {
    await a.cluster.startApiServer();
  }
  await waitFor('spoke-a up again', async () => (await metrics(controller)).includes('driftless_cluster_up{cluster="spoke-a"} 1'), { timeoutMs: 90_000 });
  const back = await waitForEvent(hub.admin, ARGOCD, 'cluster-spoke-a', 'ClusterReachable', 30_000);
  assert.equal(back['type'], 'Normal');
  assert.match(String(back['message']), /^Cluster spoke-a \(https:\/\/127\.0\.0\.1:\d+\) is back after \d+(m\d+)?s: /);
  assert.equal((await clusterEvents(hub, 'cluster-spoke-a', 'ClusterUnreachable')).length, 1, 'one Warning per outage');
}

async function tokenRotated({ hub, b, controller, tokens }: Scene): Promise<void> {
  const rotated = 'argocd-manager-2';
  await b.cluster.createServiceAccount('kube-system', rotated);
  const tokenB2 = await b.cluster.tokenFor('kube-system', rotated);
  tokens.push(tokenB2);
  const from = controller.lines.length;
  const config = JSON.stringify({ bearerToken: tokenB2, tlsClientConfig: { insecure: false, caData: Buffer.from(b.cluster.ca).toString('base64') } });
  await hub.admin.request('PATCH', `${COLLECTIONS.Secret(ARGOCD)}/cluster-spoke-b`, { stringData: { config } }, { contentType: 'application/merge-patch+json' });
  await controller.waitForLog('spoke-b reconnected', logOf('spoke-b', 'started cluster'), { fromIndex: from });
  // The old token now authenticates nobody: only the new connection can restart anything.
  await b.cluster.admin.request('DELETE', `/api/v1/namespaces/kube-system/serviceaccounts/${MANAGER}`);
  await controller.waitForLog('spoke-b reconciled again', logOf('spoke-b', 'initial reconcile finished'), { fromIndex: from, timeoutMs: 120_000 });
  const since = Date.now();
  const before = await recordedDigest(b.cluster.admin, b.ns);
  await rotateAndWaitForRestart(b, 'v4');
  await recordedDigest(b.cluster.admin, b.ns, before);
  const evictions = await b.cluster.audit({ resource: 'pods', subresource: 'eviction', since });
  assert.ok(evictions.length >= 2, 'evicted again');
  assert.deepEqual([...new Set(evictions.map((e) => e.user.username))], [`system:serviceaccount:kube-system:${rotated}`], 'with the rotated identity only');
}

/**
 * spoke-a's cluster Secret deleted in the middle of a restart there: the restart stops with the cluster (no write
 * in spoke-a from then on, per its audit log; its old pods not yet replaced stay), a later rotation there does
 * nothing, and spoke-b goes on.
 */
async function deletedNoMoreWrites({ hub, a, b, controller }: Scene): Promise<void> {
  const tracker = trackPods(a.cluster.admin, a.ns);
  try {
    await tracker.ready();
    const old = tracker.live('slow');
    await rotateSecret(a.cluster.admin, a.ns, 'slow-db', 'v3');
    await waitForMidRestart(tracker, old);
    const from = controller.lines.length;
    await hub.admin.request('DELETE', `${COLLECTIONS.Secret(ARGOCD)}/cluster-spoke-a`);
    await controller.waitForLog('spoke-a stopped', logOf('spoke-a', 'stopped cluster'), { fromIndex: from });
    const since = Date.now();
    const podsA = await waitForReadyPods(a.cluster.admin, a.ns, 'app', 2);
    await rotateSecret(a.cluster.admin, a.ns, 'db', 'v5');
    // The controller is alive and acting: a rotation in spoke-b after the one in spoke-a restarts there.
    const before = await recordedDigest(b.cluster.admin, b.ns);
    await rotateAndWaitForRestart(b, 'v5');
    await recordedDigest(b.cluster.admin, b.ns, before);
    assert.deepEqual(await a.cluster.audit({ user: MANAGER_USER, since }), [], 'no write in spoke-a after its cluster Secret was deleted');
    assert.deepEqual(uids(await waitForReadyPods(a.cluster.admin, a.ns, 'app', 2)), uids(podsA), 'spoke-a\'s pods untouched');
    // By now the tracker has seen every eviction made before the stop (the audit log says none came after).
    assert.ok(tracker.replacedOf(old) < old.length, `the restart under way stopped with its cluster: ${tracker.replacedOf(old)} of ${old.length} old pods replaced`);
  } finally {
    tracker.stop();
  }
  const text = await metrics(controller);
  assert.ok(!text.includes('driftless_cluster_up{cluster="spoke-a"}'), 'a removed cluster has no gauge');
  assert.deepEqual(text.split('\n').filter((line) => line.includes('cluster="spoke-a"')), [], 'nor any other series (ADR 0027)');
  assert.ok(text.includes('cluster="spoke-b"'), 'the other spoke\'s series stay');
}

describe('hub mode: one controller beside Argo CD manages every cluster Argo CD deploys to', { timeout: 900_000 }, () => {
  let scene: Scene | undefined;
  const run = (body: (scene: Scene, t: TestContext) => Promise<void>) => (t: TestContext) => body(scene as Scene, t);
  before(async () => {
    scene = await startScene();
  });
  after(() => stopScene(scene));
  test('a rotation in a registered spoke restarts there; its record stays in the hub, named by its cluster', run(restartsInSpokeA));
  test('a cluster Secret added later is picked up; a refused one is said by an Event and a metric', run(addedLaterAndRefused));
  test('an Application in the hub holds its spoke workload in a deny window, and only in the cluster it deploys to', run(syncWindowInSpoke));
  test('a spoke whose API server is stopped mid-restart is down alone: the other spoke still restarts, the hub stays ready, and the restart finishes once it is back, every pod replaced once', run(oneSpokeDown));
  test('a rotated token reconnects: the old identity removed, the spoke restarts with the new one', run(tokenRotated));
  test('a cluster Secret deleted mid-restart: the restart stops with it, and nothing more is written in that cluster', run(deletedNoMoreWrites));
});
