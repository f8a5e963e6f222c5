/**
 * `npm run bench:hub`: hub mode (`--argocd-clusters`, ADR 0019) with 1, 5 and 20 registered clusters
 * (issue 22 §8): the controller's RSS (peak from spawn to ready, at ready, and steady once idle) and its
 * reaction (a Secret rotated in a spoke → the controller's first writes there) p50/p99.
 *
 * What N clusters are here: one hub (a real control plane: the controller's kubeconfig, Argo CD's CRDs,
 * the cluster Secrets, the restart records) and `--spokes` real spoke control planes (default 2:
 * kube-apiserver, etcd, controller manager, scheduler, kwok each; twenty would not fit a 2-core machine).
 * Registration i is a cluster Secret for spoke i mod S, reached through its own TCP proxy (a port of this
 * process that pipes bytes to the spoke's API server; TLS stays end to end), so each registration has its
 * own server URL, cluster id, connection, client and pipeline, scoped by the Secret's `namespaces` to its
 * own namespace, which holds its own copy of the workload set:
 *
 *   `--deployments` (default 20) Deployments of `--replicas` (default 2) pods, Deployment j reading its
 *   own Secret `s-j` (env), the namespace's shared Secret `common` (envFrom) and ConfigMap `cm-(j mod 5)`
 *   (volume); so per registration D + 1 Secrets, 5 ConfigMaps, D Deployments and ReplicaSets, D × R pods.
 *
 * The in-cluster destination is off (`argocd-cm` `cluster.inClusterEnabled: "false"`), so N registrations
 * are N pipelines. Each (N, run) gets fresh namespaces, proxies (so fresh cluster ids: no records left
 * from an earlier run) and a fresh controller process with the shipped NODE_OPTIONS; the workloads are
 * created and Ready before the controller starts. What this is not: N API servers. The spoke API servers
 * serve N ÷ S registrations each, so their load (and the reaction's share of it) grows with N where N real
 * clusters would not; the controller's own side (connections, watches, caches, queues) is per registration.
 *
 * Figures: peak RSS (VmHWM) at ready, ready being every registration's 'initial reconcile finished' and
 * every Deployment's first-sight record; RSS at ready; steady RSS and CPU after `--steady-seconds` idle;
 * then `--rotations` (default 20) Secrets rotated one at a time, round-robin over the registrations,
 * from the PATCH response to a watch (admin, on the spoke) seeing the Deployment's `restart-at` write and
 * the first pod with a `deletionTimestamp` (the eviction); each restart finishes (pods replaced and Ready)
 * before the next rotation. Nothing is asserted. Options: `--clusters 1,5,20`, `--runs N`, and below.
 */
import { randomBytes } from 'node:crypto';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { parseArgs } from 'node:util';
import type { ApiClient, KubeList, KubeObject } from '../test/cluster/api.ts';
import { installArgoCdCrds } from '../test/cluster/argocd.ts';
import { startClusters, type Cluster } from '../test/cluster/harness.ts';
import { installClusterManager, writeClusterSecret } from '../test/cluster/spokes.ts';
import { podIsReady, podTemplate } from '../test/cluster/testing.ts';
import { waitFor } from '../test/support/wait.ts';
import { COLLECTIONS } from '../test/controller/support/fixtures.ts';
import { startControllerProcess, type ControllerProcess } from '../test/controller/support/process.ts';
import { bounded, load, log, processFigures, seconds, shippedNodeOptions } from './support.ts';

const { values: options } = parseArgs({
  options: {
    clusters: { type: 'string', default: '1,5,20' },
    runs: { type: 'string', default: '1' },
    /** Real spoke control planes the registrations are spread over. */
    spokes: { type: 'string', default: '2' },
    deployments: { type: 'string', default: '20' },
    replicas: { type: 'string', default: '2' },
    rotations: { type: 'string', default: '20' },
    'steady-seconds': { type: 'string', default: '30' },
    /** Extra controller flags, e.g. `--kube-qps=50`. */
    'controller-args': { type: 'string', default: '' },
  },
});
const CLUSTER_COUNTS = options.clusters.split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
const RUNS = Math.max(1, Number(options.runs));
const SPOKES = Math.max(1, Number(options.spokes));
const DEPLOYMENTS = Math.max(1, Number(options.deployments));
const REPLICAS = Math.max(1, Number(options.replicas));
const ROTATIONS = Math.max(1, Number(options.rotations));
const STEADY_MS = Number(options['steady-seconds']) * 1000;
const CONFIG_MAPS = 5;
const ARGOCD = 'argocd';
const RESTART_AT = 'driftless.dev/restart-at';
const FIRST_SIGHT = 'driftless.dev/restarted-for';
const RECORD_LABEL = 'driftless.dev/record-cluster';
/** Requests in flight while filling. */
const PARALLEL = 16;
/** Pods a kwok node takes. */
const PODS_PER_NODE = 110;

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  // Nearest rank: p99 of 20 values is the largest, as it should be with so few samples.
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** A TCP proxy on a free loopback port to `target`: one more server URL for the same API server. */
async function startProxy(target: URL): Promise<{ readonly port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => sockets.delete(socket));
      // Either side failing ends both: the controller sees a dropped connection, as through any proxy.
      socket.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The hub and the spokes, started once for every (N, run). */
interface Scene {
  readonly hub: Cluster;
  readonly spokes: readonly { readonly cluster: Cluster; readonly token: string }[];
}

async function startScene(maxClusters: number): Promise<Scene> {
  // Room for the largest N's pods on each spoke, plus a quarter for replacements while evicted pods terminate.
  const podsPerSpoke = Math.ceil(maxClusters / SPOKES) * DEPLOYMENTS * REPLICAS;
  const nodes = Math.max(1, Math.ceil((podsPerSpoke * 1.25) / PODS_PER_NODE));
  const started = performance.now();
  const [hub, ...spokes] = await startClusters([{}, ...Array.from({ length: SPOKES }, () => ({ nodes }))]) as [Cluster, ...Cluster[]];
  const scene = { hub, spokes: [] as { cluster: Cluster; token: string }[] };
  try {
    await hub.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ARGOCD } });
    await hub.admin.request('POST', COLLECTIONS.ConfigMap(ARGOCD), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-cm' }, data: { 'cluster.inClusterEnabled': 'false' } });
    await installArgoCdCrds(hub);
    for (const cluster of spokes) scene.spokes.push({ cluster, token: await installClusterManager(cluster) });
  } catch (error) {
    await Promise.all([hub, ...spokes].map((c) => c?.stop()));
    throw error;
  }
  log(`hub + ${SPOKES} spokes (${nodes} kwok nodes each) up in ${seconds(started).toFixed(1)} s (load ${load()})`);
  return scene;
}

/** A registration: its spoke, its namespace (its whole scope), its proxy, its cluster Secret's name. */
interface Registration {
  readonly name: string;
  readonly spoke: Cluster;
  readonly namespace: string;
  readonly proxy: Awaited<ReturnType<typeof startProxy>>;
  readonly secretName: string;
}

/** Deployment `j` of a registration's namespace: its own Secret by env, the shared one by envFrom, a ConfigMap by volume. */
function deployment(j: number): KubeObject {
  const name = `app-${j}`;
  const template = podTemplate({ app: name });
  const spec = template.spec as Record<string, unknown>;
  const container = (spec['containers'] as Record<string, unknown>[])[0] as Record<string, unknown>;
  container['env'] = [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: `s-${j}`, key: 'password' } } }];
  container['envFrom'] = [{ secretRef: { name: 'common' } }];
  container['volumeMounts'] = [{ name: 'config', mountPath: '/etc/app' }];
  spec['volumes'] = [{ name: 'config', configMap: { name: `cm-${j % CONFIG_MAPS}` } }];
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, annotations: { 'reloader.stakater.com/auto': 'true' } },
    spec: { replicas: REPLICAS, selector: { matchLabels: { app: name } }, template },
  };
}

function secretObject(name: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name }, data: { password: randomBytes(32).toString('base64') } };
}

/** Fills a fresh namespace of `spoke` with the workload set; resolves once every pod is Ready. */
async function fillNamespace(spoke: Cluster): Promise<string> {
  const api = spoke.admin;
  const namespace = await spoke.newNamespace('hub');
  const configs: KubeObject[] = [
    secretObject('common'),
    ...Array.from({ length: DEPLOYMENTS }, (_, j) => secretObject(`s-${j}`)),
    ...Array.from({ length: CONFIG_MAPS }, (_, k) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${k}` }, data: { 'app.properties': `index=${k}\n` } })),
  ];
  await bounded(configs.length, PARALLEL, (i) => {
    const object = configs[i] as KubeObject;
    return api.request('POST', object.kind === 'Secret' ? COLLECTIONS.Secret(namespace) : COLLECTIONS.ConfigMap(namespace), object);
  });
  await bounded(DEPLOYMENTS, PARALLEL, (j) => api.request('POST', COLLECTIONS.Deployment(namespace), deployment(j)));
  await waitForReadyPods(api, namespace, DEPLOYMENTS * REPLICAS);
  return namespace;
}

async function waitForReadyPods(api: ApiClient, namespace: string, count: number, labelSelector?: string, exclude: ReadonlySet<string> = new Set()): Promise<KubeObject[]> {
  const query = labelSelector === undefined ? '' : `?labelSelector=${encodeURIComponent(labelSelector)}`;
  return waitFor(`${count} Ready pods in ${namespace}${labelSelector === undefined ? '' : ` (${labelSelector})`}`, async () => {
    const pods = (await api.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods${query}`)).items;
    const fresh = pods.every((pod) => !exclude.has(String(pod.metadata?.uid)));
    return pods.length === count && fresh && pods.every((pod) => pod.metadata?.deletionTimestamp === undefined && podIsReady(pod)) ? pods : undefined;
  }, { timeoutMs: 600_000, intervalMs: 250 });
}

/** N namespaces filled (registration i in spoke i mod S), a proxy and a cluster Secret each. */
async function register(scene: Scene, count: number, run: number): Promise<Registration[]> {
  const registrations: Registration[] = [];
  const filled = performance.now();
  const namespaces: string[] = Array.from({ length: count }, () => '');
  await bounded(count, 4, async (i) => {
    namespaces[i] = await fillNamespace((scene.spokes[i % SPOKES] as Scene['spokes'][number]).cluster);
  });
  log(`  ${count} namespaces × ${DEPLOYMENTS} Deployments × ${REPLICAS} pods Ready in ${seconds(filled).toFixed(1)} s (load ${load()})`);
  for (let i = 0; i < count; i++) {
    const spoke = scene.spokes[i % SPOKES] as Scene['spokes'][number];
    const proxy = await startProxy(new URL(spoke.cluster.server));
    const name = `bench-n${count}-r${run}-${i}`;
    const server = `https://127.0.0.1:${proxy.port}`;
    const secretName = await writeClusterSecret(scene.hub, {
      name,
      server,
      config: { bearerToken: spoke.token, tlsClientConfig: { insecure: false, caData: Buffer.from(spoke.cluster.ca).toString('base64') } },
      namespaces: [namespaces[i] as string],
    });
    registrations.push({ name, spoke: spoke.cluster, namespace: namespaces[i] as string, proxy, secretName });
  }
  return registrations;
}

/** Removes what a (N, run) added: cluster Secrets, proxies, the hub's records, the spokes' namespaces (waited for). */
async function unregister(scene: Scene, registrations: readonly Registration[]): Promise<void> {
  for (const r of registrations) await scene.hub.admin.send('DELETE', `${COLLECTIONS.Secret(ARGOCD)}/${r.secretName}`);
  await Promise.all(registrations.map((r) => r.proxy.close()));
  await scene.hub.admin.send('DELETE', `${COLLECTIONS.ConfigMap('default')}?labelSelector=${encodeURIComponent(RECORD_LABEL)}`);
  for (const r of registrations) await r.spoke.admin.send('DELETE', `/api/v1/namespaces/${r.namespace}`);
  for (const r of registrations) {
    await waitFor(`namespace ${r.namespace} gone`, async () => (await r.spoke.admin.send('GET', `/api/v1/namespaces/${r.namespace}`)).status === 404, { timeoutMs: 600_000, intervalMs: 1000 });
  }
}

/** Figures of one controller process. */
interface RunFigures {
  readonly clusters: number;
  readonly readyS: number;
  readonly peakAtReadyMb: number;
  readonly rssAtReadyMb: number;
  readonly steadyRssMb: number;
  /** CPU over the steady window, % of one core. */
  readonly steadyCpuPercent: number;
  readonly toRestartAt: readonly number[];
  readonly toEviction: readonly number[];
  readonly rssAfterMb: number;
  readonly peakOverallMb: number;
  readonly load: string;
}

/** Spawn → every registration's 'initial reconcile finished' and every Deployment's first-sight record. */
async function waitUntilReady(controller: ControllerProcess, registrations: readonly Registration[]): Promise<void> {
  for (const r of registrations) {
    await controller.waitForLog(`${r.name} reconciled`, (line) => line.msg === 'initial reconcile finished' && line['cluster'] === r.name, { timeoutMs: 900_000 });
  }
  for (const r of registrations) {
    await waitFor(`first sight of every Deployment in ${r.name}`, async () => {
      const list = await r.spoke.admin.request<KubeList>('GET', COLLECTIONS.Deployment(r.namespace));
      return list.items.filter((d) => d.metadata?.annotations?.[FIRST_SIGHT] !== undefined).length === DEPLOYMENTS;
    }, { timeoutMs: 900_000, intervalMs: 250 });
  }
}

/**
 * Watches a collection on a spoke from now on and records, per `namespace/key`, when the first event
 * matching `keyOf` arrived. Watching, not polling: a poll interval would be the figure.
 */
async function firstSeen(api: ApiClient, path: string, keyOf: (object: KubeObject) => string | undefined, signal: AbortSignal, seen: Map<string, number>): Promise<void> {
  const list = await api.request<KubeList>('GET', `${path}?limit=1`);
  void (async () => {
    try {
      for await (const event of api.watch(`${path}?watch=1&resourceVersion=${list.metadata.resourceVersion}`, signal)) {
        const at = performance.now();
        const key = keyOf(event.object);
        if (key !== undefined && !seen.has(`${String(event.object.metadata?.namespace)}/${key}`)) seen.set(`${String(event.object.metadata?.namespace)}/${key}`, at);
      }
    } catch (error) {
      if (!signal.aborted) log(`watch of ${path} ended: ${String(error)}`);
    }
  })();
}

/** The rotations, one at a time, round-robin over the registrations; each restart finishes before the next rotation. */
async function rotations(registrations: readonly Registration[]): Promise<{ toRestartAt: number[]; toEviction: number[] }> {
  const abort = new AbortController();
  const restartAts = new Map<string, number>();
  const evictions = new Map<string, number>();
  for (const spoke of new Set(registrations.map((r) => r.spoke))) {
    await firstSeen(spoke.admin, '/apis/apps/v1/deployments', (d) => (d.metadata?.annotations?.[RESTART_AT] === undefined ? undefined : d.metadata.name), abort.signal, restartAts);
    // A pod's label app=app-<j> names its Deployment; an eviction sets deletionTimestamp.
    await firstSeen(spoke.admin, '/api/v1/pods', (pod) => (pod.metadata?.deletionTimestamp === undefined ? undefined : pod.metadata.labels?.['app']), abort.signal, evictions);
  }
  const count = Math.min(ROTATIONS, registrations.length * DEPLOYMENTS);
  const toRestartAt: number[] = [];
  const toEviction: number[] = [];
  try {
    for (let k = 0; k < count; k++) {
      const r = registrations[k % registrations.length] as Registration;
      const app = `app-${Math.floor(k / registrations.length)}`;
      const key = `${r.namespace}/${app}`;
      const before = new Set((await waitForReadyPods(r.spoke.admin, r.namespace, REPLICAS, `app=${app}`)).map((pod) => String(pod.metadata?.uid)));
      await r.spoke.admin.request('PATCH', `${COLLECTIONS.Secret(r.namespace)}/s-${Math.floor(k / registrations.length)}`, { data: { password: randomBytes(32).toString('base64') } }, { contentType: 'application/merge-patch+json' });
      const answered = performance.now();
      toRestartAt.push((await waitFor(`restart-at on ${key}`, () => restartAts.get(key), { timeoutMs: 120_000, intervalMs: 5 })) - answered);
      toEviction.push((await waitFor(`an eviction in ${key}`, () => evictions.get(key), { timeoutMs: 120_000, intervalMs: 5 })) - answered);
      await waitForReadyPods(r.spoke.admin, r.namespace, REPLICAS, `app=${app}`, before);
    }
  } finally {
    abort.abort();
  }
  return { toRestartAt, toEviction };
}

const CONTROLLER_FLAGS = ['--argocd-clusters', `--argocd-namespace=${ARGOCD}`, '--log-level=info', '--debounce=0s', '--restart-check-interval=500ms'];

async function measure(scene: Scene, count: number, run: number): Promise<RunFigures> {
  log(`\n## ${count} registered cluster${count === 1 ? '' : 's'}, run ${run + 1} (load ${load()})`);
  const registrations = await register(scene, count, run);
  try {
    const extra = options['controller-args'].split(' ').filter((arg) => arg !== '');
    const spawned = performance.now();
    const controller = await startControllerProcess(scene.hub, { args: [...CONTROLLER_FLAGS, ...extra], env: { NODE_OPTIONS: await shippedNodeOptions() } });
    try {
      await waitUntilReady(controller, registrations);
      const readyS = seconds(spawned);
      const atReady = await processFigures(controller.pid);
      log(`  ready after ${readyS.toFixed(1)} s: peak RSS ${atReady.peakMb.toFixed(1)} MB, RSS ${atReady.rssMb.toFixed(1)} MB (load ${load()})`);
      await new Promise((resolve) => setTimeout(resolve, STEADY_MS));
      const steady = await processFigures(controller.pid);
      const steadyCpuPercent = ((steady.cpuMs - atReady.cpuMs) / STEADY_MS) * 100;
      log(`  steady after ${STEADY_MS / 1000} s idle: RSS ${steady.rssMb.toFixed(1)} MB, CPU ${steadyCpuPercent.toFixed(1)} % of a core (load ${load()})`);
      const { toRestartAt, toEviction } = await rotations(registrations);
      const after = await processFigures(controller.pid);
      const figures: RunFigures = { clusters: count, readyS, peakAtReadyMb: atReady.peakMb, rssAtReadyMb: atReady.rssMb, steadyRssMb: steady.rssMb, steadyCpuPercent, toRestartAt, toEviction, rssAfterMb: after.rssMb, peakOverallMb: after.peakMb, load: load() };
      log(`  rotation → restart-at ${latency(toRestartAt)}; → first eviction ${latency(toEviction)}; RSS after ${after.rssMb.toFixed(1)} MB, peak ${after.peakMb.toFixed(1)} MB (load ${figures.load})`);
      return figures;
    } finally {
      await controller.stop();
    }
  } finally {
    await unregister(scene, registrations);
  }
}

function latency(values: readonly number[]): string {
  return `p50 ${percentile(values, 50).toFixed(1)} ms, p99 ${percentile(values, 99).toFixed(1)} ms (${values.length})`;
}

/** One row per N: medians of the runs' memory figures, the runs' latencies pooled. */
function report(results: readonly RunFigures[]): void {
  const base = median(results.filter((r) => r.clusters === 1).map((r) => r.steadyRssMb));
  log(`\n## hub mode, ${DEPLOYMENTS} Deployments × ${REPLICAS} pods per registration, registrations over ${SPOKES} spoke API server(s), ${RUNS} run(s) each\n`);
  log('| clusters | ready after | peak RSS to ready | RSS at ready | steady RSS (idle CPU) | per cluster vs 1 | rotation → restart-at p50 / p99 | → first eviction p50 / p99 | load |');
  log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const count of [...new Set(results.map((r) => r.clusters))].sort((a, b) => a - b)) {
    const rows = results.filter((r) => r.clusters === count);
    const m = (pick: (r: RunFigures) => number): number => median(rows.map(pick));
    const restartAt = rows.flatMap((r) => r.toRestartAt);
    const eviction = rows.flatMap((r) => r.toEviction);
    const perCluster = count === 1 || Number.isNaN(base) ? '' : `${((m((r) => r.steadyRssMb) - base) / (count - 1)).toFixed(1)} MB`;
    log(`| ${count} | ${m((r) => r.readyS).toFixed(1)} s | ${m((r) => r.peakAtReadyMb).toFixed(1)} MB | ${m((r) => r.rssAtReadyMb).toFixed(1)} MB | ${m((r) => r.steadyRssMb).toFixed(1)} MB (${m((r) => r.steadyCpuPercent).toFixed(1)} %) | ${perCluster} | ${percentile(restartAt, 50).toFixed(0)} / ${percentile(restartAt, 99).toFixed(0)} ms (${restartAt.length}) | ${percentile(eviction, 50).toFixed(0)} / ${percentile(eviction, 99).toFixed(0)} ms | ${rows.map((r) => r.load.split(' ')[0]).join(', ')} |`);
  }
}

/**
 * One controller start with no cluster registered, not measured: bin/driftless.js enables Node's compile
 * cache, and a first start with it cold keeps Node's TypeScript stripper resident (ADR 0021), which would
 * land on the first N measured. The image ships a primed cache; so does this.
 */
async function primeCompileCache(scene: Scene): Promise<void> {
  const controller = await startControllerProcess(scene.hub, { args: CONTROLLER_FLAGS, env: { NODE_OPTIONS: await shippedNodeOptions() } });
  try {
    await controller.waitForLog('cluster Secrets listed', (line) => line.msg === 'cluster Secrets listed', { timeoutMs: 120_000 });
  } finally {
    await controller.stop();
  }
}

async function main(): Promise<void> {
  log(`# driftless bench:hub — clusters ${CLUSTER_COUNTS.join(', ')}, ${RUNS} run(s), load ${load()}`);
  const scene = await startScene(Math.max(...CLUSTER_COUNTS));
  const results: RunFigures[] = [];
  try {
    await primeCompileCache(scene);
    for (let run = 0; run < RUNS; run++) {
      // Ascending, then descending: each N goes early as often as late, so a drift in the machine's load falls on all.
      const order = run % 2 === 0 ? CLUSTER_COUNTS : [...CLUSTER_COUNTS].reverse();
      for (const count of order) results.push(await measure(scene, count, run));
    }
  } finally {
    await Promise.all([scene.hub, ...scene.spokes.map((s) => s.cluster)].map((c) => c.stop()));
  }
  report(results);
}

await main();
