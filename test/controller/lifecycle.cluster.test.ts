/**
 * The controller's lifecycle against the real test cluster, on Deployments:
 * a PodDisruptionBudget that refuses evictions (429, retried, a Warning Event,
 * finished once the budget allows); a change made while the controller was
 * stopped is acted on at start; a controller restarted with nothing changed
 * evicts and writes nothing; a controller killed mid-restart continues it
 * without evicting any pod twice; and pods a rolling update creates after T
 * are left alone; a kubectl replace (what an Argo CD Replace=true sync does)
 * in the middle of a restart, or right after a rotation while the controller
 * is down, loses no restart (the record, ADR 0007 §3a).
 *
 * Pods become Ready 3 s after binding, so a restart of a few pods takes long
 * enough to be interrupted (killed, or raced by a sync) half-way.
 */
import assert from 'node:assert/strict';
import type { KubeObject } from '../cluster/api.ts';
import type { Cluster } from '../cluster/harness.ts';
import { useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { applyAsArgoCD, assertNoDrift } from '../support/drift-oracle.ts';
import { startControllerProcess, type LogLine } from './support/process.ts';
import { COLLECTIONS, createExternalSecret, eventsFor, podsOf, read, rotateSecret, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';

const fixture = useCluster({ podReadyDelayMs: 3000 });

const RESTART_TIMEOUT_MS = 150_000;

/** Names of pods. */
function names(pods: readonly KubeObject[]): string[] {
  return pods.map((pod) => String(pod.metadata?.['name'])).sort();
}

/** The pod names of the controller's 'evicted' lines for one workload, in order. */
function evictedPods(lines: readonly LogLine[], workloadKey: string): string[] {
  return lines.filter((line) => line.msg === 'evicted' && line['workload'] === workloadKey).map((line) => String(line['pod']));
}

/** Lines of the controller's own writes to one workload. */
function writesTo(lines: readonly LogLine[], workloadKey: string): LogLine[] {
  return lines.filter((line) => line.msg === 'applied own fields' && line['workload'] === workloadKey);
}

/** Waits until `count` Ready pods run and none of them is one of `old`. */
function waitForAllReplaced(api: Parameters<typeof podsOf>[0], namespace: string, name: string, count: number, old: readonly KubeObject[]): Promise<KubeObject[]> {
  const oldUids = uids(old);
  return waitFor(`every old pod of ${namespace}/${name} replaced`, async () => {
    const pods = await waitForReadyPods(api, namespace, name, count, 5_000);
    return uids(pods).some((uid) => oldUids.includes(uid)) ? undefined : pods;
  }, { timeoutMs: RESTART_TIMEOUT_MS, intervalMs: 500 });
}

/** Waits for the first-sight record of the workload's digests and returns it. */
function waitForRecord(api: Parameters<typeof read>[0], namespace: string, name: string): Promise<string> {
  return waitFor(`the first-sight record of ${namespace}/${name}`, async () => {
    const live = await read(api, `${COLLECTIONS.Deployment(namespace)}/${name}`);
    return live.metadata?.annotations?.['driftless.dev/restarted-for'];
  });
}

/** What `deployApp` set up: the Deployment `app` as Argo CD applied it, and its first pods. */
interface DeployedApp {
  readonly manifest: KubeObject;
  readonly podsBefore: KubeObject[];
}

/**
 * The scene of every test here: an ExternalSecret-owned Secret `db` (out of
 * band), and a Deployment `app` using it, applied as Argo CD applies it and
 * rolled out with `replicas` Ready pods.
 */
async function deployApp(cluster: Cluster, namespace: string, replicas: number): Promise<DeployedApp> {
  const api = cluster.admin;
  await createExternalSecret(api, namespace, 'db', 'v1');
  const manifest = workload('Deployment', 'app', { replicas, uses: { secret: 'db' } });
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitForDeploymentRollout(api, namespace, 'app');
  return { manifest, podsBefore: await waitForReadyPods(api, namespace, 'app', replicas) };
}

/** A PodDisruptionBudget over the workload's pods (label `app=<name>`). */
async function createBlockingBudget(api: Parameters<typeof read>[0], namespace: string, name: string, minAvailable: number): Promise<void> {
  await api.request('POST', `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`, {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name },
    spec: { minAvailable, selector: { matchLabels: { app: name } } },
  });
}

fixture.test('a PodDisruptionBudget that forbids eviction blocks the restart with a Warning Event; it completes once the budget allows', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const workloadKey = `Deployment/${namespace}/app`;
  const { manifest, podsBefore } = await deployApp(cluster, namespace, 2);
  await createBlockingBudget(api, namespace, 'app', 2);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`, '--eviction-blocked-warning=1s'] });
  try {
    await controller.ready();
    await waitForRecord(api, namespace, 'app');
    await rotateSecret(api, namespace, 'db', 'v2');

    const blocked = await waitForEvent(api, namespace, 'app', 'RestartBlocked', 90_000);
    assert.equal(blocked['type'], 'Warning');
    const named = names(podsBefore).find((pod) => String(blocked['message']).includes(`pod ${pod} `));
    assert.ok(named !== undefined, `the Warning names an old pod: ${String(blocked['message'])}`);
    const refusals = controller.lines.filter((line) => line.msg === 'eviction refused; retrying later' && line['workload'] === workloadKey);
    assert.ok(refusals.length >= 2, 'the eviction was retried');
    assert.ok(refusals.every((line) => line['outcome'] === 'blocked'), 'refused with 429');
    assert.deepEqual(evictedPods(controller.lines, workloadKey), [], 'nothing evicted while the budget forbids it');
    assert.deepEqual(uids(await waitForReadyPods(api, namespace, 'app', 2)), uids(podsBefore));

    // One disruption allowed: the restart proceeds one pod at a time.
    await api.request('PATCH', `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets/app`, { spec: { minAvailable: 1 } }, { contentType: 'application/merge-patch+json' });
    await waitForAllReplaced(api, namespace, 'app', 2, podsBefore);
    await waitForEvent(api, namespace, 'app', 'RestartFinished', RESTART_TIMEOUT_MS);
    assert.deepEqual(evictedPods(controller.lines, workloadKey).sort(), names(podsBefore), 'each old pod evicted exactly once');
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 300_000 });

fixture.test('a change made while the controller is stopped is acted on at start', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const workloadKey = `Deployment/${namespace}/app`;
  const { manifest, podsBefore } = await deployApp(cluster, namespace, 2);
  const first = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  let recorded: string;
  try {
    await first.ready();
    recorded = await waitForRecord(api, namespace, 'app');
  } finally {
    await first.stop();
  }
  assert.deepEqual(evictedPods(first.lines, workloadKey), []);

  await rotateSecret(api, namespace, 'db', 'v2');
  const startedAt = Date.now();
  const second = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await second.ready();
    await waitForAllReplaced(api, namespace, 'app', 2, podsBefore);
    await waitForEvent(api, namespace, 'app', 'RestartFinished', RESTART_TIMEOUT_MS);
    assert.deepEqual(evictedPods(second.lines, workloadKey).sort(), names(podsBefore));
    const annotations = (await read(api, `${COLLECTIONS.Deployment(namespace)}/app`)).metadata?.annotations ?? {};
    assert.notEqual(annotations['driftless.dev/restarted-for'], recorded, 'the new digest is recorded');
    // T is when this process first saw the new content: after it started, not when the Secret changed.
    const restartAt = Date.parse(annotations['driftless.dev/restart-at'] ?? '');
    assert.ok(restartAt >= startedAt, `restart-at ${annotations['driftless.dev/restart-at']} is not before the start`);
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await second.stop();
  }
}, { timeout: 300_000 });

fixture.test('a controller restarted with nothing changed evicts nothing and writes nothing', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const workloadKey = `Deployment/${namespace}/app`;
  const path = `${COLLECTIONS.Deployment(namespace)}/app`;
  const { manifest, podsBefore } = await deployApp(cluster, namespace, 2);
  const first = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await first.ready();
    await waitForRecord(api, namespace, 'app');
    await rotateSecret(api, namespace, 'db', 'v2');
    await waitForAllReplaced(api, namespace, 'app', 2, podsBefore);
    await waitForEvent(api, namespace, 'app', 'RestartFinished', RESTART_TIMEOUT_MS);
  } finally {
    await first.stop();
  }
  await waitForDeploymentRollout(api, namespace, 'app');
  const before = await read(api, path);
  const pods = await waitForReadyPods(api, namespace, 'app', 2);

  const second = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    // Every workload has been reconciled once by then, and an eviction or a write happens within that reconcile.
    await second.ready();
    assert.deepEqual(evictedPods(second.lines, workloadKey), [], 'no eviction');
    assert.deepEqual(writesTo(second.lines, workloadKey), [], 'no write');
    const after = await read(api, path);
    assert.deepEqual(after.metadata?.['annotations'], before.metadata?.['annotations'], 'the bookkeeping is unchanged');
    // On a Deployment any annotation write bumps the generation: an unchanged one proves no write at all.
    assert.equal(after.metadata?.['generation'], before.metadata?.['generation']);
    assert.deepEqual(uids(await waitForReadyPods(api, namespace, 'app', 2)), uids(pods), 'the same pods');
    assert.equal((await eventsFor(api, namespace, 'app')).filter((event) => event['reason'] === 'RestartStarted').length, 1, 'only the first process restarted');
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await second.stop();
  }
}, { timeout: 300_000 });

fixture.test('a controller killed mid-restart continues it at start, evicting no pod twice', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const workloadKey = `Deployment/${namespace}/app`;
  // maxUnavailable 25% of 4: one pod at a time, each waiting for its replacement to become Ready.
  const { manifest, podsBefore } = await deployApp(cluster, namespace, 4);
  const first = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await first.ready();
    await waitForRecord(api, namespace, 'app');
    await rotateSecret(api, namespace, 'db', 'v2');
    await first.waitForLog('the first eviction', (line) => line.msg === 'evicted' && line['workload'] === workloadKey, { timeoutMs: 90_000 });
  } finally {
    await first.kill();
  }
  const evictedByFirst = evictedPods(first.lines, workloadKey);
  assert.ok(evictedByFirst.length < 4, 'killed before the restart was done');

  const second = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await second.ready();
    await waitForAllReplaced(api, namespace, 'app', 4, podsBefore);
    await waitForEvent(api, namespace, 'app', 'RestartFinished', RESTART_TIMEOUT_MS);
    const evictedBySecond = evictedPods(second.lines, workloadKey);
    assert.ok(evictedBySecond.length > 0, 'the second process continued the restart');
    // Deployment pod names are unique, so one name per old pod means each old pod (UID) was evicted once.
    assert.deepEqual([...evictedByFirst, ...evictedBySecond].sort(), names(podsBefore), 'each old pod evicted exactly once, across both processes');
    const started = (await eventsFor(api, namespace, 'app')).filter((event) => event['reason'] === 'RestartStarted');
    assert.equal(started.length, 1, 'the restart was continued, not started again');
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await second.stop();
  }
}, { timeout: 300_000 });

fixture.test('pods a rolling update creates after T are not evicted', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const workloadKey = `Deployment/${namespace}/app`;
  const { manifest, podsBefore } = await deployApp(cluster, namespace, 3);
  // The budget holds the restart back until the sync's pods exist, so the controller surely meets pods created after T.
  await createBlockingBudget(api, namespace, 'app', 3);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await controller.ready();
    await waitForRecord(api, namespace, 'app');
    await rotateSecret(api, namespace, 'db', 'v2');
    await controller.waitForLog('the restart blocked', (line) => line.msg === 'eviction refused; retrying later' && line['workload'] === workloadKey, { timeoutMs: 90_000 });
    const restartAtText = (await read(api, `${COLLECTIONS.Deployment(namespace)}/app`)).metadata?.annotations?.['driftless.dev/restart-at'];
    assert.ok(restartAtText !== undefined, 'restart-at is recorded once the restart started');
    const restartAt = Date.parse(restartAtText);

    // A sync racing the change: Git changed the pod template, so a rolling update creates pods after T.
    const synced = structuredClone(manifest);
    const template = (synced.spec as { template: { metadata: { labels: Record<string, string> } } }).template;
    // A fresh object: the fixture shares one labels object between the selector and the template.
    template.metadata.labels = { ...template.metadata.labels, release: 'two' };
    await applyAsArgoCD(cluster, synced, { namespace });
    await waitFor('a pod of the new template', async () => (await podsOf(api, namespace, 'app')).some((pod) => pod.metadata?.labels?.['release'] === 'two'));
    await api.send('DELETE', `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets/app`);

    await waitForDeploymentRollout(api, namespace, 'app', { timeoutMs: RESTART_TIMEOUT_MS });
    const podsAfter = await waitFor('3 ready pods of the new template', async () => {
      const pods = await waitForReadyPods(api, namespace, 'app', 3, 5_000);
      return pods.every((pod) => pod.metadata?.labels?.['release'] === 'two') ? pods : undefined;
    }, { timeoutMs: RESTART_TIMEOUT_MS });
    await waitForEvent(api, namespace, 'app', 'RestartFinished', RESTART_TIMEOUT_MS);

    for (const pod of podsAfter) {
      assert.ok(Date.parse(String(pod.metadata?.['creationTimestamp'])) >= restartAt, `${String(pod.metadata?.['name'])} was created after T`);
    }
    const evicted = evictedPods(controller.lines, workloadKey);
    const oldNames = names(podsBefore);
    assert.deepEqual(evicted.filter((pod) => !oldNames.includes(pod)), [], 'only pods created before T were evicted');
    assert.equal(new Set(evicted).size, evicted.length, 'no pod evicted twice');
    assert.deepEqual(names(podsAfter).filter((pod) => evicted.includes(pod)), [], 'no pod of the rolling update was evicted');
    await assertNoDrift(cluster, synced, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 300_000 });

/** `kubectl replace` of the Deployment as Git renders it (what an Argo CD `Replace=true` sync does): the controller's annotations go. */
async function replaceAsGitRenders(cluster: Cluster, namespace: string, manifest: KubeObject): Promise<void> {
  const object = structuredClone(manifest);
  object.metadata = { ...object.metadata, namespace };
  const result = await cluster.kubectl(['replace', '-f', '-', '-o', 'json'], { stdin: JSON.stringify(object) });
  assert.equal(result.code, 0, `kubectl replace: ${result.stderr}`);
  // The object as the replace stored it (the controller may write the annotations back a moment later).
  const replaced = JSON.parse(result.stdout) as KubeObject;
  assert.equal(replaced.metadata?.annotations?.['driftless.dev/restarted-for'], undefined, 'the replace removed the bookkeeping');
}

fixture.test('a kubectl replace in the middle of a restart loses nothing: the bookkeeping comes back from its record and every old pod is replaced once', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const workloadKey = `Deployment/${namespace}/app`;
  const { manifest, podsBefore } = await deployApp(cluster, namespace, 4);
  // The records live in the controller's namespace; here the test's, so they go with it.
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`, `--leader-election-namespace=${namespace}`] });
  try {
    await controller.ready();
    await waitForRecord(api, namespace, 'app');
    const uid = String((await read(api, `${COLLECTIONS.Deployment(namespace)}/app`)).metadata?.['uid']);
    await waitFor('the restart record', () => read(api, `/api/v1/namespaces/${namespace}/configmaps/driftless-record-${uid}`).catch(() => undefined));
    await rotateSecret(api, namespace, 'db', 'v2');
    await controller.waitForLog('the first eviction', (line) => line.msg === 'evicted' && line['workload'] === workloadKey, { timeoutMs: 90_000 });
    await replaceAsGitRenders(cluster, namespace, manifest);
    assert.ok(evictedPods(controller.lines, workloadKey).length < 4, 'the replace hit a restart in progress');
    await waitForAllReplaced(api, namespace, 'app', 4, podsBefore);
    await waitForEvent(api, namespace, 'app', 'RestartFinished', RESTART_TIMEOUT_MS);
    assert.ok(controller.lines.some((line) => String(line.msg).startsWith('the workload lost its bookkeeping annotations') && line['workload'] === workloadKey), 'restored from the record');
    assert.deepEqual([...evictedPods(controller.lines, workloadKey)].sort(), names(podsBefore), 'each old pod evicted exactly once');
    const started = (await eventsFor(api, namespace, 'app')).filter((event) => event['reason'] === 'RestartStarted');
    assert.equal(started.length, 1, 'the restart was continued, not started again');
  } finally {
    await controller.stop();
  }
}, { timeout: 300_000 });

fixture.test('a kubectl replace right after a rotation, while the controller is down: at start it restarts, it does not record the rotation as first sight', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const workloadKey = `Deployment/${namespace}/app`;
  const { manifest, podsBefore } = await deployApp(cluster, namespace, 2);
  const args = [`--namespaces=${namespace}`, `--leader-election-namespace=${namespace}`];
  const first = await startControllerProcess(cluster, { args });
  try {
    await first.ready();
    await waitForRecord(api, namespace, 'app');
    const uid = String((await read(api, `${COLLECTIONS.Deployment(namespace)}/app`)).metadata?.['uid']);
    await waitFor('the restart record', () => read(api, `/api/v1/namespaces/${namespace}/configmaps/driftless-record-${uid}`).catch(() => undefined));
  } finally {
    await first.stop();
  }
  await rotateSecret(api, namespace, 'db', 'v2');
  await replaceAsGitRenders(cluster, namespace, manifest);
  const second = await startControllerProcess(cluster, { args });
  try {
    await second.ready();
    await waitForAllReplaced(api, namespace, 'app', 2, podsBefore);
    await waitForEvent(api, namespace, 'app', 'RestartFinished', RESTART_TIMEOUT_MS);
    assert.deepEqual([...evictedPods(second.lines, workloadKey)].sort(), names(podsBefore), 'each old pod evicted exactly once');
    assert.ok(second.lines.some((line) => String(line.msg).startsWith('the workload lost its bookkeeping annotations') && line['workload'] === workloadKey), 'restored from the record, not taken for first sight');
  } finally {
    await second.stop();
  }
}, { timeout: 300_000 });
