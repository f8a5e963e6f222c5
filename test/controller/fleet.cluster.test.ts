/**
 * Fleet safety against the real test cluster: restart starts spread by the
 * global token bucket, a flapping Secret giving at most one restart per
 * --min-restart-interval (with a Warning naming it), Reloader's pause period
 * surviving a controller restart, the health gate halting a workload whose
 * replacements never get Ready and the breaker then pausing every restart, and
 * --dry-run writing nothing.
 *
 * The flapping test uses 50 dependants, not the 200: the machine has
 * two cores shared with other clusters, and 50 already spreads over seconds at
 * the rate used. Pods become Ready 3 s after binding, so the breaker test can
 * mark a replacement unready (as its failing readiness probe would) before kwok
 * reports it Ready.
 */
import assert from 'node:assert/strict';
import type { ApiClient, KubeObject } from '../cluster/api.ts';
import { readinessAnnotation } from '../cluster/kwok-stages.ts';
import { useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { applyAsArgoCD, assertNoDrift } from '../support/drift-oracle.ts';
import { startControllerProcess, type LogLine } from './support/process.ts';
import { COLLECTIONS, eventsFor, podsOf, read, replicaSetNames, rotateSecret, secret, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';

const fixture = useCluster({ podReadyDelayMs: 3000 });

const HALTED = 'driftless.dev/restart-halted';

/** Epoch ms of a controller log line (pino writes ISO times). */
function timeOf(line: LogLine): number {
  const ms = Date.parse(String(line['time']));
  assert.ok(Number.isFinite(ms), `a log line without a time: ${JSON.stringify(line)}`);
  return ms;
}

/** The controller's log lines of a RestartStarted Event, per workload key, in order. */
function startsByWorkload(lines: readonly LogLine[]): Map<string, number[]> {
  const starts = new Map<string, number[]>();
  for (const line of lines) {
    if (line['event'] !== 'RestartStarted') continue;
    const key = String(line['workload']);
    starts.set(key, [...(starts.get(key) ?? []), timeOf(line)]);
  }
  return starts;
}

/** The most starts in any window of `windowMs` (times in ms). */
function mostStartsWithin(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let first = 0, last = 0; last < sorted.length; last++) {
    while ((sorted[last] as number) - (sorted[first] as number) > windowMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/** A List of Deployments, applied in one kubectl call as one Argo CD sync would. */
function deploymentList(names: readonly string[], uses: { secret: string }, annotations?: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: names.map((name) => workload('Deployment', name, { replicas: 1, uses, annotations: { 'reloader.stakater.com/auto': 'true', ...annotations } })),
  };
}

/** Waits until the controller has recorded first-sight digests on every named Deployment. */
async function waitForRecords(api: ApiClient, namespace: string, names: readonly string[]): Promise<void> {
  await waitFor(`first-sight records in ${namespace}`, async () => {
    const list = await api.request<{ items: KubeObject[] }>('GET', COLLECTIONS.Deployment(namespace));
    const recorded = list.items.filter((d) => d.metadata?.annotations?.['driftless.dev/restarted-for'] !== undefined);
    return recorded.length === names.length ? true : undefined;
  }, { timeoutMs: 120_000, intervalMs: 500 });
}

/** `driftless.dev/restart-at` of a Deployment, epoch ms. */
async function restartAtOf(api: ApiClient, namespace: string, name: string): Promise<number> {
  const live = await read(api, `${COLLECTIONS.Deployment(namespace)}/${name}`);
  return Date.parse(live.metadata?.annotations?.['driftless.dev/restart-at'] ?? '');
}

fixture.test('restart starts are spread by --restart-rate, and a flapping Secret gives at most one restart per --min-restart-interval', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const count = 50;
  const rate = 5;
  const burst = 5;
  const intervalMs = 20_000;
  const names = Array.from({ length: count }, (_, i) => `app-${String(i).padStart(2, '0')}`);
  await api.request('POST', COLLECTIONS.Secret(namespace), secret('shared', 'v1'));
  const manifest = deploymentList(names, { secret: 'shared' });
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitFor('every dependant Ready', async () => {
    const list = await api.request<{ items: KubeObject[] }>('GET', COLLECTIONS.Deployment(namespace));
    return list.items.length === count && list.items.every((d) => (d['status'] as { readyReplicas?: number } | undefined)?.readyReplicas === 1) ? true : undefined;
  }, { timeoutMs: 180_000, intervalMs: 1000 });
  const replicaSets = await replicaSetNames(api, namespace);
  const controller = await startControllerProcess(cluster, {
    args: [`--namespaces=${namespace}`, `--restart-rate=${rate}`, `--restart-burst=${burst}`, `--max-concurrent-restarts=${count}`, `--min-restart-interval=${intervalMs / 1000}s`, '--log-level=info'],
  });
  try {
    await controller.ready();
    await waitForRecords(api, namespace, names);

    await rotateSecret(api, namespace, 'shared', 'v2');
    await waitFor('every dependant started its restart', () => (startsByWorkload(controller.lines).size === count ? true : undefined), { timeoutMs: 180_000, intervalMs: 200 });
    const firstRound = [...startsByWorkload(controller.lines).values()].map((times) => times[0] as number);
    // The bucket allows `burst` at once and `rate` a second after that (two more for log timestamp jitter),
    // so the 50 starts take at least (50 - burst) / rate seconds (less a second of jitter).
    for (const windowMs of [1000, 3000]) {
      const most = mostStartsWithin(firstRound, windowMs);
      assert.ok(most <= burst + (rate * windowMs) / 1000 + 2, `${most} restarts started within ${windowMs} ms`);
    }
    const spanMs = Math.max(...firstRound) - Math.min(...firstRound);
    assert.ok(spanMs >= ((count - burst) / rate) * 1000 - 1000, `${count} restarts started within ${spanMs} ms`);
    const firstAt = new Map<string, number>();
    for (const name of names) firstAt.set(name, await restartAtOf(api, namespace, name));

    // Two issuers fighting over the Secret: it flips twice more straight away.
    const mark = controller.lines.length;
    await rotateSecret(api, namespace, 'shared', 'v3');
    await controller.waitForLog('a deferred restart', (line) => line['event'] === 'RestartDeferred', { fromIndex: mark, timeoutMs: 60_000 });
    await rotateSecret(api, namespace, 'shared', 'v4');
    await waitFor('every dependant restarted a second time', () => {
      const starts = startsByWorkload(controller.lines);
      return [...starts.values()].every((times) => times.length >= 2) && starts.size === count ? starts : undefined;
    }, { timeoutMs: 240_000, intervalMs: 500 });
    await waitFor('every second restart finished', () => {
      const second = new Map([...startsByWorkload(controller.lines)].map(([key, times]) => [key, times[1] as number]));
      const finished = new Set(controller.lines.filter((line) => line['event'] === 'RestartFinished' && timeOf(line) >= (second.get(String(line['workload'])) ?? Infinity)).map((line) => line['workload']));
      return finished.size === count ? true : undefined;
    }, { timeoutMs: 240_000, intervalMs: 500 });

    const starts = startsByWorkload(controller.lines);
    for (const name of names) {
      const times = starts.get(`Deployment/${namespace}/${name}`) ?? [];
      assert.equal(times.length, 2, `${name}: two restarts for three changes`);
      const first = firstAt.get(name) as number;
      assert.ok((times[1] as number) >= first + intervalMs, `${name}: the second restart started ${(times[1] as number) - first} ms after the first's T`);
    }
    const deferred = (await eventsFor(api, namespace, 'app-00')).find((event) => event['reason'] === 'RestartDeferred');
    assert.ok(deferred, 'a RestartDeferred Event');
    assert.equal(deferred['type'], 'Warning');
    assert.match(String(deferred['message']), /^Secret shared changed again within --min-restart-interval \(20s\)/);
    assert.deepEqual(await replicaSetNames(api, namespace), replicaSets, 'no new ReplicaSet');
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 600_000 });

fixture.test('Reloader\'s pause period defers the next restart, and a controller restart neither resets it nor skips the restart', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  // Long enough to outlast the controller's stop and start (the deferral is seen inside it), short because the test waits it out.
  const pauseMs = 15_000;
  await api.request('POST', COLLECTIONS.Secret(namespace), secret('db', 'v1'));
  const manifest = deploymentList(['app'], { secret: 'db' }, { 'deployment.reloader.stakater.com/pause-period': `${pauseMs / 1000}s` });
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitForDeploymentRollout(api, namespace, 'app');
  const args = [`--namespaces=${namespace}`, '--min-restart-interval=0'];
  const first = await startControllerProcess(cluster, { args });
  let restartAt: number;
  let podsAfterFirst: KubeObject[];
  try {
    await first.ready();
    await waitForRecords(api, namespace, ['app']);
    const before = await waitForReadyPods(api, namespace, 'app', 1);
    await rotateSecret(api, namespace, 'db', 'v2');
    await waitForEvent(api, namespace, 'app', 'RestartFinished', 120_000);
    restartAt = await restartAtOf(api, namespace, 'app');
    podsAfterFirst = await waitForReadyPods(api, namespace, 'app', 1);
    assert.notDeepEqual(uids(podsAfterFirst), uids(before));
  } finally {
    await first.stop();
  }

  await rotateSecret(api, namespace, 'db', 'v3');
  const second = await startControllerProcess(cluster, { args });
  try {
    await second.ready();
    const deferred = await second.waitForLog('the restart deferred by the pause period', (line) => line['event'] === 'RestartDeferred');
    assert.match(String(deferred.msg), new RegExp(`^Secret db changed within the pause period \\(${pauseMs / 1000}s\\) of the restart at `));
    assert.equal(deferred['type'], 'Normal');
    process.stderr.write(`the restart deferred ${((restartAt + pauseMs - timeOf(deferred)) / 1000).toFixed(1)} s before the end of the ${pauseMs / 1000}-s pause period\n`);
    const started = await second.waitForLog('the deferred restart', (line) => line['event'] === 'RestartStarted', { timeoutMs: 120_000 });
    assert.ok(timeOf(started) >= restartAt + pauseMs, `started ${timeOf(started) - restartAt} ms after the first restart's T`);
    await waitFor('the second restart finished', async () => {
      const finished = (await eventsFor(api, namespace, 'app')).filter((event) => event['reason'] === 'RestartFinished');
      return finished.length >= 2 ? true : undefined;
    }, { timeoutMs: 120_000 });
    assert.notDeepEqual(uids(await waitForReadyPods(api, namespace, 'app', 1)), uids(podsAfterFirst), 'the deferred restart replaced the pod');
    const live = await read(api, `${COLLECTIONS.Deployment(namespace)}/app`);
    assert.notEqual((live.spec as { paused?: boolean } | undefined)?.paused, true, 'never paused: spec is Git\'s');
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await second.stop();
  }
}, { timeout: 400_000 });

/** Marks the first pod of the workload that is not one of `old` unready, as a failing readiness probe would; returns its name. */
async function breakReplacement(api: ApiClient, namespace: string, name: string, old: readonly KubeObject[]): Promise<string> {
  const oldUids = uids(old);
  const replacement = await waitFor(`a replacement pod of ${name}`, async () => (await podsOf(api, namespace, name)).find((pod) => !oldUids.includes(String(pod.metadata?.['uid']))), { timeoutMs: 120_000, intervalMs: 100 });
  const podName = String(replacement.metadata?.['name']);
  await api.request('PATCH', `/api/v1/namespaces/${namespace}/pods/${podName}`, { metadata: { annotations: { [readinessAnnotation]: 'false' } } }, { contentType: 'application/merge-patch+json' });
  return podName;
}

fixture.test('replacements that never get Ready halt their workload, and enough halts open the breaker: no other restart starts until the halts are removed', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  await api.request('POST', COLLECTIONS.Secret(namespace), secret('bad', 'v1'));
  await api.request('POST', COLLECTIONS.Secret(namespace), secret('other', 'v1'));
  const broken = deploymentList(['a', 'b'], { secret: 'bad' });
  const healthy = deploymentList(['c'], { secret: 'other' });
  await applyAsArgoCD(cluster, broken, { namespace });
  await applyAsArgoCD(cluster, healthy, { namespace });
  for (const name of ['a', 'b', 'c']) await waitForDeploymentRollout(api, namespace, name);
  const before = new Map<string, KubeObject[]>();
  for (const name of ['a', 'b', 'c']) before.set(name, await waitForReadyPods(api, namespace, name, 1));
  const args = [`--namespaces=${namespace}`, '--health-gate-timeout=5s', '--breaker-threshold=2', '--breaker-window=10m'];
  let controller = await startControllerProcess(cluster, { args });
  try {
    await controller.ready();
    await waitForRecords(api, namespace, ['a', 'b', 'c']);

    // The rotated Secret breaks its consumers: their new pods never get Ready.
    await rotateSecret(api, namespace, 'bad', 'v2');
    const brokenPods = await Promise.all(['a', 'b'].map((name) => breakReplacement(api, namespace, name, before.get(name) ?? [])));
    for (const name of ['a', 'b']) {
      const halted = await waitForEvent(api, namespace, name, 'RestartHalted', 120_000);
      assert.equal(halted['type'], 'Warning');
      assert.match(String(halted['message']), /^replacement pod \S+ not Ready \d+s after its creation \(health gate 5s\)/);
      const live = await read(api, `${COLLECTIONS.Deployment(namespace)}/${name}`);
      const halt = JSON.parse(live.metadata?.annotations?.[HALTED] ?? '{}') as { at?: string; reason?: string };
      assert.match(halt.at ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.ok(brokenPods.some((pod) => halt.reason?.includes(pod)), `the halt names the unready pod: ${halt.reason}`);
    }
    // Every other restart is paused: c's change is reported, not acted on.
    const mark = controller.lines.length;
    await rotateSecret(api, namespace, 'other', 'v2');
    await controller.waitForLog('the breaker open', (line) => line.msg === 'restart breaker open: every restart is paused');
    const paused = await waitForEvent(api, namespace, 'c', 'RestartPaused', 60_000);
    assert.equal(paused['type'], 'Warning');
    assert.match(String(paused['message']), /^Secret other changed; every restart is paused: 2 restarts halted/);
    assert.equal(controller.lines.slice(mark).filter((line) => line.msg === 'evicted').length, 0, 'nothing evicted while the breaker is open');
    assert.deepEqual(uids(await waitForReadyPods(api, namespace, 'c', 1)), uids(before.get('c') ?? []));

    // The breaker is latched by the recorded halts: a controller restart does not close it.
    await controller.stop();
    controller = await startControllerProcess(cluster, { args });
    await controller.ready();
    await controller.waitForLog('c still paused after a restart', (line) => line['event'] === 'RestartPaused' && line['workload'] === `Deployment/${namespace}/c`);
    assert.equal(controller.lines.filter((line) => line.msg === 'evicted' || line['event'] === 'RestartStarted').length, 0, 'nothing restarted after the restart');

    // The operator fixes the consumers (their broken pods are deleted; kwok cannot make a pod Ready again:
    // its status patch duplicates podIPs) and removes the halts: the paused restart runs.
    for (const pod of brokenPods) await api.request('DELETE', `/api/v1/namespaces/${namespace}/pods/${pod}`);
    for (const name of ['a', 'b']) {
      await waitForReadyPods(api, namespace, name, 1);
      await api.request('PATCH', `${COLLECTIONS.Deployment(namespace)}/${name}`, { metadata: { annotations: { [HALTED]: null } } }, { contentType: 'application/merge-patch+json' });
    }
    await waitForEvent(api, namespace, 'c', 'RestartFinished', 120_000);
    assert.notDeepEqual(uids(await waitForReadyPods(api, namespace, 'c', 1)), uids(before.get('c') ?? []));
    await assertNoDrift(cluster, broken, { namespace });
    await assertNoDrift(cluster, healthy, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 400_000 });

fixture.test('--dry-run decides and reports the restart but writes nothing and evicts nothing', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  await api.request('POST', COLLECTIONS.Secret(namespace), secret('db', 'v1'));
  const manifest = workload('Deployment', 'app', { replicas: 2, uses: { secret: 'db' } });
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitForDeploymentRollout(api, namespace, 'app');
  const pods = await waitForReadyPods(api, namespace, 'app', 2);
  const before = await read(api, `${COLLECTIONS.Deployment(namespace)}/app`);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`, '--dry-run'] });
  try {
    await controller.ready();
    await controller.waitForLog('the first-sight record, not written', (line) => line['dryRun'] === true && String(line.msg).startsWith(`would record on Deployment ${namespace}/app`));
    await rotateSecret(api, namespace, 'db', 'v2');
    const started = await waitForEvent(api, namespace, 'app', 'RestartStarted', 60_000);
    assert.match(String(started['message']), /^Secret db changed: replacing the pods created before /);
    for (const pod of pods) {
      const name = `${namespace}/${String(pod.metadata?.['name'])}`;
      await controller.waitForLog(`would evict ${name}`, (line) => line['dryRun'] === true && line.msg === `would evict pod ${name}`);
    }
    await waitForEvent(api, namespace, 'app', 'RestartFinished', 60_000);
    const after = await read(api, `${COLLECTIONS.Deployment(namespace)}/app`);
    // Any annotation write bumps a Deployment's generation: unchanged, it was never written.
    assert.equal(after.metadata?.['generation'], before.metadata?.['generation'], 'the Deployment was never written');
    assert.deepEqual(after.metadata?.annotations, before.metadata?.annotations);
    const managers = ((after.metadata?.['managedFields'] ?? []) as { manager?: string }[]).map((entry) => entry.manager);
    assert.ok(!managers.includes('driftless'), `no field of driftless: ${managers.join(', ')}`);
    assert.deepEqual(uids(await waitForReadyPods(api, namespace, 'app', 2)), uids(pods), 'no pod evicted');
    assert.equal(controller.lines.filter((line) => line.msg === 'evicted' || line.msg === 'applied own fields').length, 0);
    await assertNoDrift(cluster, manifest, { namespace });
  } finally {
    await controller.stop();
  }
}, { timeout: 200_000 });
