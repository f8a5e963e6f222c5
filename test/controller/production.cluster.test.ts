/**
 * The controller as operators run it: health, readiness and metrics over
 * HTTP, and leader election with two replicas — the leader killed, a Secret
 * changed during the gap, exactly one restart by the new leader.
 */
import assert from 'node:assert/strict';
import { create, useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { metricSum } from '../support/prometheus.ts';
import { waitFor } from '../support/wait.ts';
import { startControllerProcess, type ControllerProcess } from './support/process.ts';
import { COLLECTIONS, createExternalSecret, eventsFor, rotateSecret, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';

const fixture = useCluster();

/** The bound HTTP address, from the controller's `started` log line. */
async function httpBase(controller: ControllerProcess): Promise<string> {
  const line = await controller.waitForLog('started', (l) => l.msg === 'started');
  return `http://${String(line['http'])}`;
}

async function get(url: string): Promise<{ status: number; text: string; type: string }> {
  const response = await fetch(url);
  return { status: response.status, text: await response.text(), type: response.headers.get('content-type') ?? '' };
}

fixture.test('health, readiness and metrics are served over HTTP, and nothing else', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  await createExternalSecret(api, namespace, 'db', 'one');
  await create(api, COLLECTIONS.Deployment(namespace), workload('Deployment', 'app', { replicas: 2, uses: { secret: 'db' } }));
  await waitForDeploymentRollout(api, namespace, 'app');
  // The API server's own count of the streamed lists (KEP-3157) of namespaced Secrets it completed. (Its LIST
  // count cannot tell namespaces apart: the write-back's one-shot read of Argo CD's repository Secrets is one.)
  const streamed = async (): Promise<number> => metricSum(String((await api.send<string>('GET', '/metrics')).body), 'apiserver_watch_list_duration_seconds_count', 'resource="secrets"', 'scope="namespace"');
  const before = await streamed();
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    const base = await httpBase(controller);
    await controller.ready();
    // Ready from a streamed list of Secrets, not from LIST pages (--streaming-list, on by default).
    const after = await streamed();
    assert.ok(after > before, `a streamed list of Secrets (${before} → ${after})`);
    assert.deepEqual(controller.lines.filter((line) => /listing in pages|streamed list ended/.test(line.msg ?? '')), [], 'no fallback to paged lists');
    assert.equal((await get(`${base}/healthz`)).status, 200);
    assert.equal((await get(`${base}/readyz`)).status, 200);
    assert.equal((await get(`${base}/debug/pprof`)).status, 404);
    assert.equal((await get(`${base}/`)).status, 404);
    const podsBefore = await waitForReadyPods(api, namespace, 'app', 2);
    await rotateSecret(api, namespace, 'db', 'two');
    await waitForEvent(api, namespace, 'app', 'RestartFinished', 90_000);
    const metrics = await get(`${base}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.type, /^text\/plain/);
    const labels = `kind="Deployment",namespace="${namespace}",strategy="evict"`;
    assert.match(metrics.text, new RegExp(`driftless_restarts_started_total\\{${labels}\\} 1\\n`));
    assert.match(metrics.text, new RegExp(`driftless_restarts_finished_total\\{${labels}\\} 1\\n`));
    assert.match(metrics.text, new RegExp(`driftless_evictions_total\\{namespace="${namespace}",outcome="evicted"\\} 2\\n`));
    assert.match(metrics.text, new RegExp(`reloader_reload_executed_total\\{success="true",namespace="${namespace}"\\} 1\\n`));
    assert.match(metrics.text, /driftless_leader 1\n/);
    assert.match(metrics.text, /driftless_reconcile_duration_seconds_count\{result="ok"\} \d+/);
    assert.match(metrics.text, /driftless_relists_total\{resource="secrets"\} [1-9]/);
    assert.match(metrics.text, /driftless_cache_objects\{kind="workloads"\} 1\n/);
    // client-go's workqueue metrics, under client-go's names.
    assert.match(metrics.text, /workqueue_adds_total\{name="workloads"\} [1-9]/);
    assert.match(metrics.text, /workqueue_work_duration_seconds_count\{name="workloads"\} [1-9]/);
    assert.match(metrics.text, /workqueue_queue_duration_seconds_count\{name="workloads"\} [1-9]/);
    assert.match(metrics.text, /workqueue_depth\{name="workloads"\} \d/);
    assert.match(metrics.text, /workqueue_longest_running_processor_seconds\{name="workloads"\} /);
    assert.match(metrics.text, /workqueue_retries_total\{name="workloads"\} \d/);
    // The Git write-back's, from the start (nothing selected the git strategy here).
    assert.match(metrics.text, /^driftless_writeback_commits_total 0$/m);
    assert.match(metrics.text, /^# TYPE driftless_writeback_push_failures_total counter$/m);
    assert.match(metrics.text, /^driftless_writeback_change_to_commit_seconds_count 0$/m);
    // No periodic relist by default: the first list of each collection is the only one.
    assert.match(metrics.text, /driftless_relists_total\{resource="secrets"\} 1\n/);
    assert.ok(uids(await waitForReadyPods(api, namespace, 'app', 2)).every((uid) => !uids(podsBefore).includes(uid)));
  } finally {
    await controller.stop();
  }
}, { timeout: 180_000 });

fixture.test('leader election: the leader is killed, a Secret changes during the gap, the new leader restarts once', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  await createExternalSecret(api, namespace, 'db', 'one');
  await create(api, COLLECTIONS.Deployment(namespace), workload('Deployment', 'app', { replicas: 2, uses: { secret: 'db' } }));
  await waitForDeploymentRollout(api, namespace, 'app');
  const args = [`--namespaces=${namespace}`, '--leader-elect', `--leader-election-namespace=${namespace}`, '--lease-duration=4s', '--renew-deadline=3s', '--retry-period=500ms'];
  const first = await startControllerProcess(cluster, { args, env: { POD_NAME: 'replica-a' } });
  const second = await startControllerProcess(cluster, { args, env: { POD_NAME: 'replica-b' } });
  try {
    const leader = await waitFor('a leader', () => [first, second].find((c) => c.lines.some((l) => l.msg === 'became the leader')), { timeoutMs: 60_000 });
    const standby = leader === first ? second : first;
    await leader.ready();
    // The standby keeps its caches warm but neither reconciles nor writes.
    await standby.waitForLog('caches synced', (l) => l.msg === 'caches synced');
    await waitFor('the first-sight record', async () => (await api.request('GET', `${COLLECTIONS.Deployment(namespace)}/app`)).metadata?.annotations?.['driftless.dev/restarted-for']);
    assert.equal(standby.lines.some((l) => l.msg === 'became the leader' || l.msg === 'applied own fields'), false);
    const podsBefore = await waitForReadyPods(api, namespace, 'app', 2);

    await leader.kill();
    await rotateSecret(api, namespace, 'db', 'two');
    await standby.waitForLog('the standby takes over', (l) => l.msg === 'became the leader', { timeoutMs: 30_000 });
    await waitForEvent(api, namespace, 'app', 'RestartFinished', 90_000);
    const started = (await eventsFor(api, namespace, 'app')).filter((event) => event['reason'] === 'RestartStarted');
    assert.equal(started.length, 1, 'exactly one restart');
    const evicted = standby.lines.filter((l) => l.msg === 'evicted').map((l) => String(l['pod'])).sort();
    assert.deepEqual(evicted, podsBefore.map((pod) => String(pod.metadata?.name)).sort(), 'each old pod evicted once, by the new leader');
    const lease = await api.request('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/driftless-controller`);
    assert.equal((lease.spec as { holderIdentity?: string } | undefined)?.holderIdentity, standby === first ? 'replica-a' : 'replica-b');
  } finally {
    await first.stop();
    await second.stop();
  }
  // A clean stop releases the Lease, so the next replica need not wait out its duration.
  // (The fence's behaviour when the Lease is lost is the next test.)
  const released = await api.request('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/driftless-controller`);
  assert.equal((released.spec as { holderIdentity?: string } | undefined)?.holderIdentity ?? '', '');
}, { timeout: 240_000 });

fixture.test('leader election: another holder takes the Lease; the leader stops at its next look and exits 1 without draining', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const args = [`--namespaces=${namespace}`, '--leader-elect', `--leader-election-namespace=${namespace}`, '--lease-duration=4s', '--renew-deadline=3s', '--retry-period=500ms'];
  const leader = await startControllerProcess(cluster, { args, env: { POD_NAME: 'replica-a' } });
  let code: number | null;
  try {
    await leader.waitForLog('leading', (l) => l.msg === 'became the leader', { timeoutMs: 60_000 });
    await leader.ready();
    const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/driftless-controller`;
    const lease = await api.request('GET', path);
    await api.request('PUT', path, { ...lease, spec: { ...(lease.spec as object), holderIdentity: 'intruder', renewTime: new Date().toISOString().replace('Z', '000Z') } });
    await leader.waitForLog('the loss', (l) => l.msg === 'lost leadership: exiting without draining', { timeoutMs: 30_000 });
  } finally {
    code = await leader.stop();
  }
  assert.equal(code, 1, 'a lost Lease is not a clean stop');
  assert.equal(leader.lines.some((l) => l.msg === 'stopping: finishing in-flight work'), false, 'no drain');
  const after = await api.request('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/driftless-controller`);
  assert.equal((after.spec as { holderIdentity?: string } | undefined)?.holderIdentity, 'intruder', 'the loser does not release a Lease it no longer holds');
}, { timeout: 120_000 });
