/**
 * `npm run bench:controller`: the controller's benchmarks of issue 6, each
 * against its own test cluster (kube-apiserver, controller-manager, kwok) and
 * the real `driftless controller` process.
 *
 * - memory: VmRSS of the controller after 'initial reconcile finished', with no
 *   Secrets, N × 1 KiB and N × 64 KiB Secrets in its namespace;
 * - reaction: out-of-band Secret update → the first eviction of the pod of the
 *   Deployment that uses it (and → the `restart-at` write), p50/p99, debounce 0;
 * - fan-out: one Secret used by M Deployments → every pod replaced, total time
 *   and the peak request rate of the controller at the API server against
 *   `--kube-qps`.
 *
 * Nothing is asserted: figures belong in a report, not in a test.
 * Options: `--only memory,reaction,fanout`, `--secrets N` (default 10000),
 * `--changes N` (default 50), `--deployments N` (default 500), `--kube-qps Q` (default 50),
 * `--memory-compare '<flags>'` (each memory row measured again with those flags, on the same Secrets).
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { ApiClient, KubeList, KubeObject } from '../test/cluster/api.ts';
import { startCluster, type Cluster } from '../test/cluster/harness.ts';
import { podIsReady } from '../test/cluster/testing.ts';
import { waitFor } from '../test/support/wait.ts';
import { COLLECTIONS, rotateSecret, secret, workload } from '../test/controller/support/fixtures.ts';
import { startControllerProcess, type ControllerProcess } from '../test/controller/support/process.ts';
import { bounded, load, log, processFigures, shippedNodeOptions } from './support.ts';

const { values: options } = parseArgs({
  options: {
    only: { type: 'string', default: 'memory,reaction,fanout' },
    secrets: { type: 'string', default: '10000' },
    changes: { type: 'string', default: '50' },
    deployments: { type: 'string', default: '500' },
    'kube-qps': { type: 'string', default: '50' },
    /** Extra controller flags for every run, e.g. `--leader-elect` or `--list-page-size=20`. */
    'controller-args': { type: 'string', default: '' },
    /** NODE_OPTIONS for the controller of the memory runs, e.g. `--max-semi-space-size=2`. */
    'memory-node-options': { type: 'string', default: '' },
    /** The memory runs again on the same Secrets with these flags too, one after the other, e.g. `--streaming-list=false`. */
    'memory-compare': { type: 'string', default: '' },
  },
});
const ONLY = new Set(options.only.split(','));
const SECRETS = Math.max(0, Number(options.secrets));
const CHANGES = Math.max(1, Number(options.changes));
const DEPLOYMENTS = Math.max(1, Number(options.deployments));
const KUBE_QPS = Number(options['kube-qps']);
/** Requests in flight while filling the cluster: enough to keep etcd busy, few enough for a 2-core box. */
const PARALLEL = 16;
const KiB = 1024;

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  // Nearest rank: p99 of 50 values is the largest, as it should be with so few samples.
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

async function withCluster(name: string, body: (cluster: Cluster) => Promise<void>, nodes = 1): Promise<void> {
  const started = performance.now();
  const cluster = await startCluster({ nodes });
  log(`\n## ${name} (cluster up in ${((performance.now() - started) / 1000).toFixed(1)} s, load ${load()})`);
  try {
    await body(cluster);
  } finally {
    await cluster.stop();
  }
}

const extraArgs = options['controller-args'].split(' ').filter((arg) => arg !== '');

async function withController<T>(cluster: Cluster, args: readonly string[], body: (controller: ControllerProcess) => Promise<T>, kubeconfig?: string, env?: Record<string, string>): Promise<T> {
  const controller = await startControllerProcess(cluster, { args: ['--log-level=info', ...args, ...extraArgs], ...(kubeconfig === undefined ? {} : { kubeconfig }), ...(env === undefined ? {} : { env }) });
  try {
    return await body(controller);
  } finally {
    await controller.stop();
  }
}

/** Creates `count` Secrets of `bytes` random bytes each (random, so nothing downstream can compress them away). */
async function createSecrets(api: ApiClient, namespace: string, count: number, bytes: number): Promise<number> {
  const started = performance.now();
  await bounded(count, PARALLEL, (index) => api.request('POST', COLLECTIONS.Secret(namespace), {
    apiVersion: 'v1', kind: 'Secret', metadata: { name: `s-${index}` }, data: { blob: randomBytes(bytes).toString('base64') },
  }));
  return (performance.now() - started) / 1000;
}

/** One memory figure: the controller's RSS at ready and settled, its peak, and how long it took to get ready. */
interface MemoryRow {
  readonly label: string;
  readonly rssMb: number;
  readonly peakMb: number;
  readonly syncS: number;
  readonly settledMb: number;
}

async function memory(): Promise<void> {
  await withCluster(`memory: N = ${SECRETS}`, async (cluster) => {
    const compare = options['memory-compare'].split(' ').filter((arg) => arg !== '');
    const variants = compare.length === 0 ? [[]] : [[], compare];
    const rows = new Map<string, MemoryRow[]>(variants.map((flags) => [flags.join(' '), []]));
    for (const [label, count, bytes] of [['idle, 0 Secrets', 0, 0], [`${SECRETS} × 1 KiB`, SECRETS, KiB], [`${SECRETS} × 64 KiB`, SECRETS, 64 * KiB]] as const) {
      const namespace = await cluster.newNamespace('mem');
      if (count > 0) {
        const seconds = await createSecrets(cluster.admin, namespace, count, bytes);
        log(`created ${label} in ${seconds.toFixed(1)} s (load ${load()})`);
      }
      for (const flags of variants) rows.get(flags.join(' '))?.push(await memoryRow(cluster, namespace, `${label}${flags.length === 0 ? '' : ` (${flags.join(' ')})`}`, flags));
    }
    for (const [flags, [, small, large]] of rows) {
      if (small === undefined || large === undefined) continue;
      log(`64 KiB / 1 KiB RSS ratio${flags === '' ? '' : ` (${flags})`}: ${(large.rssMb / small.rssMb).toFixed(3)} at ready, ${(large.settledMb / small.settledMb).toFixed(3)} settled (target ≤ 150 MB and ≤ 1.10); load ${load()}`);
    }
  });
}

/** The controller started on `namespace` with `flags`: its memory at ready and 15 s later. */
async function memoryRow(cluster: Cluster, namespace: string, label: string, flags: readonly string[]): Promise<MemoryRow> {
  // The controller as shipped: the NODE_OPTIONS of manifests/controller, unless the run says otherwise.
  const env = { NODE_OPTIONS: options['memory-node-options'] === '' ? await shippedNodeOptions() : options['memory-node-options'] };
  const row = await withController(cluster, [`--namespaces=${namespace}`, ...flags], async (controller) => {
    const started = performance.now();
    await controller.waitForLog('initial reconcile finished', (line) => line.msg === 'initial reconcile finished', { timeoutMs: 600_000 });
    const syncS = (performance.now() - started) / 1000;
    const atReady = await processFigures(controller.pid);
    // V8 gives freed pages back on its idle GC; a second reading, once the controller is idle, shows what stays.
    await new Promise<void>((resolve) => setTimeout(resolve, 15_000));
    const settled = await processFigures(controller.pid);
    return { label, syncS, ...atReady, settledMb: settled.rssMb };
  }, undefined, env);
  log(`${row.label}: VmRSS ${row.rssMb.toFixed(1)} MB at ready, ${row.settledMb.toFixed(1)} MB 15 s later (peak VmHWM ${row.peakMb.toFixed(1)} MB), ready ${row.syncS.toFixed(1)} s after spawn`);
  return row;
}

/** Names of the Deployments whose first-sight record is written, i.e. the controller has seen them. */
async function waitForFirstSight(api: ApiClient, namespace: string, count: number): Promise<void> {
  await waitFor(`${count} first-sight records`, async () => {
    const list = await api.request<KubeList>('GET', COLLECTIONS.Deployment(namespace));
    return list.items.filter((d) => d.metadata?.annotations?.['driftless.dev/restarted-for'] !== undefined).length === count;
  }, { timeoutMs: 300_000, intervalMs: 500 });
}

async function waitForReadyPodCount(api: ApiClient, namespace: string, count: number, extra: (pods: KubeObject[]) => boolean = () => true): Promise<KubeObject[]> {
  return waitFor(`${count} ready pods in ${namespace}`, async () => {
    const pods = (await api.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods`)).items;
    const live = pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined);
    return pods.length === count && live.length === count && live.every(podIsReady) && extra(live) ? live : undefined;
  }, { timeoutMs: 600_000, intervalMs: 500 });
}

async function createDeployments(api: ApiClient, namespace: string, count: number, secretOf: (index: number) => string): Promise<void> {
  await bounded(count, PARALLEL, (index) => api.request('POST', COLLECTIONS.Deployment(namespace), workload('Deployment', `app-${index}`, { replicas: 1, uses: { secret: secretOf(index) } })));
  await waitForReadyPodCount(api, namespace, count);
}

/**
 * Watches a collection from now on and resolves, per key, the time the first
 * event matching `predicate` arrived. Watching instead of polling: a poll
 * interval would be the figure.
 */
function firstSeen(api: ApiClient, path: string, keyOf: (object: KubeObject) => string | undefined, signal: AbortSignal): { at(key: string, timeoutMs: number): Promise<number>; started: Promise<void> } {
  const seen = new Map<string, number>();
  const waiters = new Map<string, (at: number) => void>();
  let markStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => { markStarted = resolve; });
  void (async () => {
    const list = await api.request<KubeList>('GET', path);
    const watchPath = `${path}?watch=1&allowWatchBookmarks=true&resourceVersion=${list.metadata.resourceVersion}`;
    markStarted();
    try {
      for await (const event of api.watch(watchPath, signal)) {
        const at = performance.now();
        const key = keyOf(event.object);
        if (key === undefined || seen.has(key)) continue;
        seen.set(key, at);
        waiters.get(key)?.(at);
      }
    } catch (error) {
      if (!signal.aborted) throw error;
    }
  })();
  return {
    started,
    at: (key, timeoutMs) => {
      const known = seen.get(key);
      if (known !== undefined) return Promise.resolve(known);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no event for ${key} within ${timeoutMs} ms`)), timeoutMs);
        waiters.set(key, (at) => { clearTimeout(timer); resolve(at); });
      });
    },
  };
}

async function reaction(): Promise<void> {
  // The restart time T is the change's time rounded up to a whole second, and a restart waiting for T
  // is rechecked every --restart-check-interval (default 5s; 500ms here, as in the cluster tests), so
  // the first eviction trails the restart-at write by up to 1 s plus that interval.
  const flags = ['--debounce=0s', '--restart-check-interval=500ms'];
  await withCluster(`reaction: ${CHANGES} changes, ${flags.join(' ')}`, async (cluster) => {
    const api = cluster.admin;
    const namespace = await cluster.newNamespace('react');
    await bounded(CHANGES, PARALLEL, (index) => api.request('POST', COLLECTIONS.Secret(namespace), secret(`s-${index}`, 'v1')));
    await createDeployments(api, namespace, CHANGES, (index) => `s-${index}`);
    await withController(cluster, [`--namespaces=${namespace}`, ...flags], async (controller) => {
      await controller.ready();
      await waitForFirstSight(api, namespace, CHANGES);
      const abort = new AbortController();
      // A pod's label app=app-<i> names its Deployment; an eviction sets deletionTimestamp.
      const evictions = firstSeen(api, `/api/v1/namespaces/${namespace}/pods`, (pod) =>
        pod.metadata?.deletionTimestamp === undefined ? undefined : pod.metadata.labels?.['app'], abort.signal);
      const restartAts = firstSeen(api, COLLECTIONS.Deployment(namespace), (d) =>
        d.metadata?.annotations?.['driftless.dev/restart-at'] === undefined ? undefined : d.metadata.name, abort.signal);
      await Promise.all([evictions.started, restartAts.started]);
      const toEviction: number[] = [];
      const toRestartAt: number[] = [];
      try {
        // One change at a time, so each latency is the controller's reaction, not a queue behind other changes.
        for (let index = 0; index < CHANGES; index++) {
          await rotateSecret(api, namespace, `s-${index}`, 'v2');
          const answered = performance.now();
          toRestartAt.push((await restartAts.at(`app-${index}`, 60_000)) - answered);
          toEviction.push((await evictions.at(`app-${index}`, 60_000)) - answered);
        }
      } finally {
        abort.abort();
      }
      const figure = (values: number[]): string => `p50 ${percentile(values, 50).toFixed(1)} ms, p99 ${percentile(values, 99).toFixed(1)} ms, max ${Math.max(...values).toFixed(1)} ms`;
      log(`update response → restart-at write seen: ${figure(toRestartAt)}`);
      log(`update response → first eviction seen (pod deletionTimestamp): ${figure(toEviction)}`);
      log('target p50 ≤ 50 ms, p99 ≤ 500 ms; Reloader (anchors.md, update → its Deployment patch, 50 changes): p50 8.5 ms, p99 22.5 ms (env-vars), p50 8.9, p99 13.6 ms (annotations)');
      log(`load ${load()}`);
    });
  });
}

/**
 * The controller's requests as the API server counts them. The metric has no
 * user label, but API Priority and Fairness classifies every request: the
 * controller runs as a ServiceAccount (flow schema `service-accounts`), while
 * the harness's own components and this benchmark are `system:masters`
 * (flow schema `exempt`), so that flow schema's counter is the controller's alone.
 */
async function controllerRequestCount(api: ApiClient): Promise<number> {
  const response = await api.send<string>('GET', '/metrics');
  const text = String(response.body);
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('apiserver_flowcontrol_dispatched_requests_total{') && line.includes('flow_schema="service-accounts"')) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

async function fanout(): Promise<void> {
  const flags = ['--debounce=0s', '--restart-check-interval=500ms', `--kube-qps=${KUBE_QPS}`];
  // A fake node takes 110 pods; leave room for evicted pods still terminating while their replacements start.
  const nodes = Math.ceil(DEPLOYMENTS / 100);
  await withCluster(`fan-out: 1 Secret × ${DEPLOYMENTS} Deployments, ${flags.join(' ')} (other flags default)`, async (cluster) => {
    const api = cluster.admin;
    const namespace = await cluster.newNamespace('fan');
    await api.request('POST', COLLECTIONS.Secret(namespace), secret('shared', 'v1'));
    const created = performance.now();
    await createDeployments(api, namespace, DEPLOYMENTS, () => 'shared');
    log(`${DEPLOYMENTS} Deployments ready in ${((performance.now() - created) / 1000).toFixed(1)} s (load ${load()})`);
    // A ServiceAccount bound to cluster-admin: its requests are told apart from every other client's (see controllerRequestCount).
    await api.request('POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'driftless' } });
    await api.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `bench-${namespace}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'driftless', namespace }],
    });
    const kubeconfig = await cluster.kubeconfigFor(namespace, 'driftless');
    await withController(cluster, [`--namespaces=${namespace}`, ...flags], async (controller) => {
      await controller.ready();
      await waitForFirstSight(api, namespace, DEPLOYMENTS);
      const before = new Set((await api.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods`)).items.map((pod) => pod.metadata?.uid));
      const samples: { at: number; count: number }[] = [{ at: performance.now(), count: await controllerRequestCount(api) }];
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          await new Promise((resolve) => setTimeout(resolve, 1000));
          samples.push({ at: performance.now(), count: await controllerRequestCount(api) });
        }
      })();
      await rotateSecret(api, namespace, 'shared', 'v2');
      const answered = performance.now();
      let allRestartAt = Number.NaN;
      try {
        await waitFor('every Deployment has restart-at', async () => {
          const list = await api.request<KubeList>('GET', COLLECTIONS.Deployment(namespace));
          return list.items.every((d) => d.metadata?.annotations?.['driftless.dev/restart-at'] !== undefined);
        }, { timeoutMs: 900_000, intervalMs: 500 }).then(() => { allRestartAt = performance.now(); });
        await waitForReadyPodCount(api, namespace, DEPLOYMENTS, (pods) => pods.every((pod) => !before.has(pod.metadata?.uid)));
      } finally {
        sampling = false;
        await sampler;
      }
      const done = performance.now();
      samples.push({ at: done, count: await controllerRequestCount(api) });
      const rates = samples.slice(1).map((sample, index) => {
        const previous = samples[index] as { at: number; count: number };
        return (sample.count - previous.count) / ((sample.at - previous.at) / 1000);
      });
      const first = samples[0] as { at: number; count: number };
      const last = samples[samples.length - 1] as { count: number };
      const evicted = controller.lines.filter((line) => line.msg === 'evicted').length;
      log(`every Deployment has restart-at after ${((allRestartAt - answered) / 1000).toFixed(1)} s; every pod replaced and Ready after ${((done - answered) / 1000).toFixed(1)} s (${evicted} 'evicted' log lines)`);
      log(`controller requests at the API server (APF flow schema service-accounts): ${last.count - first.count} in ${((done - first.at) / 1000).toFixed(1)} s, mean ${((last.count - first.count) / ((done - first.at) / 1000)).toFixed(1)}/s, peak 1-s rate ${Math.max(...rates).toFixed(1)}/s vs --kube-qps=${KUBE_QPS} (--kube-burst default 40)`);
      log(`load ${load()}`);
    }, kubeconfig);
  }, nodes);
}

log(`# driftless controller benchmarks — load ${load()}`);
if (ONLY.has('memory')) await memory();
if (ONLY.has('reaction')) await reaction();
if (ONLY.has('fanout')) await fanout();
