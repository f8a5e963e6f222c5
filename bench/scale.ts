/**
 * `npm run bench:scale`: the controller on a cluster the size of its largest users (issue 23 §1).
 *
 * At `--scale 1`: 1,000 namespaces holding 100,000 Secrets (1–64 KiB, log-uniform sizes from a
 * seeded PRNG so runs are comparable; 10 of 1 MiB), 20,000 ConfigMaps (half used by workloads, half
 * unrelated), 10,000 workloads (50 % Deployments, 20 % StatefulSets, 20 % Argo Rollouts, 10 %
 * DaemonSets), each using 4 Secrets and a ConfigMap, and 150,000 pods on ⌈pods / 110⌉ kwok nodes.
 * `--scale 0.1` scales every count (namespaces included, so each namespace looks the same).
 *
 * The fill is the fast path: kube-controller-manager is stopped while the benchmark creates every
 * object itself, many requests in flight over keep-alive connections; each pod already bound
 * (`spec.nodeName`, so no scheduler) and already owned by its ReplicaSet (Deployments, Rollouts),
 * StatefulSet or DaemonSet, so nobody has to create or adopt it. Then the controller manager starts
 * again and finds every owner complete. The Rollouts controller does not run: a Rollout is only read.
 *
 * Then, under a steady churn (pod annotations and unrelated ConfigMaps patched at stated rates), the
 * real `driftless controller` starts cluster-wide and the benchmark reports: peak RSS from spawn to
 * ready, time to ready, the bytes the API server sent for the start, steady RSS, API requests per
 * second and CPU per 1,000 watch events over a steady window, and rotation → first write p50/p99.
 * Nothing is asserted. Options: see `parseArgs` below.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { ApiClient, KubeList, KubeObject } from '../test/cluster/api.ts';
import { startCluster, type Cluster } from '../test/cluster/harness.ts';
import { waitFor } from '../test/support/wait.ts';
import { COLLECTIONS } from '../test/controller/support/fixtures.ts';
import { startControllerProcess, type ControllerProcess } from '../test/controller/support/process.ts';
import { prng } from '../test/support/prng.ts';
import { metricSum } from '../test/support/prometheus.ts';
import { bounded, load, log, processFigures, seconds, shippedNodeOptions } from './support.ts';

const { values: options } = parseArgs({
  options: {
    /** Every count × this: 0.01 is a smoke run, 0.1 a few minutes. */
    scale: { type: 'string', default: '1' },
    /** Seed of the Secret sizes and the churn's choices. */
    seed: { type: 'string', default: '23' },
    /** Secrets rotated one at a time for the reaction figure. */
    rotations: { type: 'string', default: '50' },
    /** Background churn: pod annotation patches per second, unrelated ConfigMap patches per second. */
    'churn-pods': { type: 'string', default: '20' },
    'churn-configmaps': { type: 'string', default: '5' },
    /** Length of the steady window after ready (requests/s, CPU per event, steady RSS). */
    'steady-seconds': { type: 'string', default: '30' },
    /** Requests in flight while filling. */
    parallel: { type: 'string', default: '48' },
    /** Extra controller flags, e.g. `--kube-qps=100`. */
    'controller-args': { type: 'string', default: '' },
  },
});
const SCALE = Number(options.scale);
const SEED = Number(options.seed);
const ROTATIONS = Math.max(1, Number(options.rotations));
const CHURN_PODS = Number(options['churn-pods']);
const CHURN_CONFIGMAPS = Number(options['churn-configmaps']);
const STEADY_MS = Number(options['steady-seconds']) * 1000;
const PARALLEL = Math.max(1, Number(options.parallel));
const KiB = 1024;
/** Kubernetes' limit is 1 MiB of data; leave room for the key. */
const BIG_SECRET_BYTES = 1024 * KiB - 64;
/** Pods a kubelet takes by default: the number of fake nodes follows from it. */
const PODS_PER_NODE = 110;
/** Each namespace's workloads, in this order of kinds (50 % Deployments, 20 % StatefulSets, 20 % Rollouts, 10 % DaemonSets). */
const KINDS = ['Deployment', 'Deployment', 'StatefulSet', 'Rollout', 'Deployment', 'DaemonSet', 'Deployment', 'StatefulSet', 'Rollout', 'Deployment'] as const;
type Kind = (typeof KINDS)[number];
const SECRETS_PER_WORKLOAD = 4;
const RESTART_AT = 'driftless.dev/restart-at';

/** The counts at a scale. */
interface Plan {
  readonly namespaces: number;
  readonly secrets: number;
  readonly bigSecrets: number;
  readonly configMaps: number;
  readonly workloads: number;
  readonly pods: number;
  readonly nodes: number;
}

function planAt(scale: number): Plan {
  const of = (count: number): number => Math.max(1, Math.round(count * scale));
  const pods = of(150_000);
  return { namespaces: of(1000), secrets: of(100_000), bigSecrets: of(10), configMaps: of(20_000), workloads: of(10_000), pods, nodes: Math.ceil(pods / PODS_PER_NODE) };
}

/** Namespace `index`'s share of `total` objects spread evenly over `parts` namespaces. */
function share(total: number, parts: number, index: number): number {
  return Math.floor(total / parts) + (index < total % parts ? 1 : 0);
}


/** One namespace's objects, by name. */
interface NamespaceLayout {
  readonly name: string;
  readonly secrets: number;
  readonly configMaps: number;
  /** Per workload: kind and replicas (a DaemonSet runs on one node, so 1). */
  readonly workloads: readonly { readonly kind: Kind; readonly name: string; readonly replicas: number }[];
}

function layoutOf(plan: Plan, index: number): NamespaceLayout {
  const count = share(plan.workloads, plan.namespaces, index);
  const kinds = Array.from({ length: count }, (_, j) => KINDS[j % KINDS.length] as Kind);
  const daemonSets = kinds.filter((kind) => kind === 'DaemonSet').length;
  const others = count - daemonSets;
  const pods = Math.max(0, share(plan.pods, plan.namespaces, index) - daemonSets);
  let other = 0;
  const workloads = kinds.map((kind, j) => ({ kind, name: `${kind.toLowerCase()}-${j}`, replicas: kind === 'DaemonSet' ? 1 : share(pods, Math.max(1, others), other++) }));
  return { name: `scale-${String(index).padStart(4, '0')}`, secrets: share(plan.secrets, plan.namespaces, index), configMaps: share(plan.configMaps, plan.namespaces, index), workloads };
}

/** The Secrets workload `j` uses (4 of its namespace's, distinct while there are enough) and its ConfigMap (from the used half). */
function usesOf(layout: NamespaceLayout, j: number): { secrets: string[]; configMap: string | undefined } {
  const secrets = layout.secrets === 0 ? [] : [...new Set(Array.from({ length: SECRETS_PER_WORKLOAD }, (_, k) => `s-${(j * SECRETS_PER_WORKLOAD + k) % layout.secrets}`))];
  const used = Math.ceil(layout.configMaps / 2);
  return { secrets, configMap: used === 0 ? undefined : `cm-${j % used}` };
}

/** The pod template of a workload: its Secrets as env, its ConfigMap as a volume. */
function templateOf(name: string, uses: { secrets: string[]; configMap: string | undefined }): KubeObject {
  const container: Record<string, unknown> = {
    name: 'app',
    image: 'registry.invalid/app:1',
    envFrom: uses.secrets.map((secret) => ({ secretRef: { name: secret } })),
  };
  const spec: Record<string, unknown> = { terminationGracePeriodSeconds: 1, containers: [container] };
  if (uses.configMap !== undefined) {
    spec['volumes'] = [{ name: 'config', configMap: { name: uses.configMap } }];
    container['volumeMounts'] = [{ name: 'config', mountPath: '/etc/app' }];
  }
  return { metadata: { labels: { app: name } }, spec };
}

/** The size of Secret `j` of namespace `ns`: log-uniform in [1, 64] KiB, 1 MiB for the first Secret of the first `bigSecrets` namespaces. */
function secretBytes(plan: Plan, ns: number, j: number): number {
  if (j === 0 && ns < plan.bigSecrets) return BIG_SECRET_BYTES;
  const draw = prng(SEED * 1_000_003 + ns * 100_003 + j)();
  return Math.round(KiB * 64 ** draw);
}

/** Namespaces, their default ServiceAccounts (the controller manager is stopped), Secrets and ConfigMaps. */
async function fillConfigs(api: ApiClient, plan: Plan, layouts: readonly NamespaceLayout[]): Promise<number> {
  await bounded(layouts.length, PARALLEL, async (ns) => {
    const name = (layouts[ns] as NamespaceLayout).name;
    await api.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    await api.request('POST', `/api/v1/namespaces/${name}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } });
  });
  const jobs = layouts.flatMap((layout, ns) => [
    ...Array.from({ length: layout.secrets }, (_, j) => ({ ns, kind: 'Secret' as const, j })),
    ...Array.from({ length: layout.configMaps }, (_, j) => ({ ns, kind: 'ConfigMap' as const, j })),
  ]);
  let bytes = 0;
  await bounded(jobs.length, PARALLEL, (index) => {
    const { ns, kind, j } = jobs[index] as (typeof jobs)[number];
    const namespace = (layouts[ns] as NamespaceLayout).name;
    if (kind === 'ConfigMap') {
      return api.request('POST', COLLECTIONS.ConfigMap(namespace), { apiVersion: 'v1', kind, metadata: { name: `cm-${j}` }, data: { 'app.properties': `index=${j}\n`.repeat(20) } });
    }
    const size = secretBytes(plan, ns, j);
    bytes += size;
    // Random bytes: nothing downstream can compress them away.
    return api.request('POST', COLLECTIONS.Secret(namespace), { apiVersion: 'v1', kind, metadata: { name: `s-${j}` }, data: { blob: randomBytes(size).toString('base64') } });
  });
  return bytes;
}

/** An owner reference as a controller sets it. */
function ownerRef(owner: KubeObject): { apiVersion: string; kind: string; name: string; uid: string; controller: true; blockOwnerDeletion: true } {
  return { apiVersion: owner.apiVersion ?? '', kind: owner.kind ?? '', name: owner.metadata?.name ?? '', uid: owner.metadata?.uid ?? '', controller: true, blockOwnerDeletion: true };
}

/** A pod of `template`, bound to `node` and owned by `owner`. */
function podOf(name: string, template: KubeObject, owner: KubeObject, node: string, labels: Record<string, string>, spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { ...template.metadata?.labels, ...labels }, ownerReferences: [ownerRef(owner)] },
    spec: { ...template.spec, nodeName: node, ...spec },
  };
}

/** Deterministic stand-in for pod-template-hash (the controller manager only compares templates, ignoring it). */
function hashOf(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 10);
}

/** The names of a workload's pods, but a DaemonSet's (named after the node it landed on). */
function podNames(namespace: string, workload: NamespaceLayout['workloads'][number]): string[] {
  const { kind, name, replicas } = workload;
  if (kind === 'DaemonSet') return [];
  const prefix = kind === 'StatefulSet' ? name : `${name}-${hashOf(`${namespace}/${name}`)}`;
  return Array.from({ length: replicas }, (_, k) => `${prefix}-${k}`);
}

/** A workload object of the kind; StatefulSets and DaemonSets update `OnDelete`, so pods the benchmark made are never replaced. */
function workloadObject(kind: Kind, name: string, replicas: number, template: KubeObject, node: string): KubeObject {
  const spec: Record<string, unknown> = { selector: { matchLabels: { app: name } }, template };
  if (kind !== 'DaemonSet') spec['replicas'] = replicas;
  if (kind === 'StatefulSet') Object.assign(spec, { serviceName: name, updateStrategy: { type: 'OnDelete' } });
  if (kind === 'DaemonSet') {
    Object.assign(spec, { updateStrategy: { type: 'OnDelete' }, template: { ...template, spec: { ...template.spec, nodeSelector: { 'kubernetes.io/hostname': node } } } });
  }
  if (kind === 'Rollout') spec['strategy'] = { canary: { steps: [{ setWeight: 50 }, { pause: { duration: '1s' } }] } };
  return {
    apiVersion: kind === 'Rollout' ? 'argoproj.io/v1alpha1' : 'apps/v1',
    kind,
    metadata: { name, annotations: { 'reloader.stakater.com/auto': 'true' } },
    spec,
  };
}

/** Creates one workload, its ReplicaSet where it has one, and its pods, bound round-robin to the nodes. */
async function createWorkload(api: ApiClient, namespace: string, workload: NamespaceLayout['workloads'][number], template: KubeObject, nextNode: () => string): Promise<void> {
  const { kind, name, replicas } = workload;
  const dsNode = nextNode();
  const object = workloadObject(kind, name, replicas, template, dsNode);
  const owner = await api.request<KubeObject>('POST', COLLECTIONS[kind](namespace), object);
  owner.apiVersion = object.apiVersion;
  owner.kind = kind;
  if (kind === 'DaemonSet') {
    const spec = (object['spec'] as { template: KubeObject }).template;
    await api.request('POST', `/api/v1/namespaces/${namespace}/pods`, podOf(`${name}-${dsNode}`, spec, owner, dsNode, {}));
    return;
  }
  if (kind === 'StatefulSet') {
    for (let k = 0; k < replicas; k++) {
      const pod = `${name}-${k}`;
      await api.request('POST', `/api/v1/namespaces/${namespace}/pods`, podOf(pod, template, owner, nextNode(), { 'statefulset.kubernetes.io/pod-name': pod, 'apps.kubernetes.io/pod-index': String(k) }, { hostname: pod, subdomain: name }));
    }
    return;
  }
  const hash = hashOf(`${namespace}/${name}`);
  const names = podNames(namespace, workload);
  const hashLabel = kind === 'Rollout' ? 'rollouts-pod-template-hash' : 'pod-template-hash';
  const rsTemplate = { ...template, metadata: { labels: { ...template.metadata?.labels, [hashLabel]: hash } } };
  const replicaSet = await api.request<KubeObject>('POST', `/apis/apps/v1/namespaces/${namespace}/replicasets`, {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name: `${name}-${hash}`, labels: rsTemplate.metadata.labels, ownerReferences: [ownerRef(owner)], annotations: { 'deployment.kubernetes.io/revision': '1' } },
    spec: { replicas, selector: { matchLabels: { app: name, [hashLabel]: hash } }, template: rsTemplate },
  });
  Object.assign(replicaSet, { apiVersion: 'apps/v1', kind: 'ReplicaSet' });
  for (const pod of names) await api.request('POST', `/api/v1/namespaces/${namespace}/pods`, podOf(pod, rsTemplate, replicaSet, nextNode(), {}));
}

/** Every workload with its ReplicaSet and pods, `PARALLEL` workloads at a time. */
async function fillWorkloads(api: ApiClient, plan: Plan, layouts: readonly NamespaceLayout[]): Promise<void> {
  const jobs = layouts.flatMap((layout) => layout.workloads.map((workload, j) => ({ layout, workload, j })));
  let node = 0;
  const nextNode = (): string => `fake-node-${node++ % plan.nodes}`;
  await bounded(jobs.length, PARALLEL, async (index) => {
    const { layout, workload, j } = jobs[index] as (typeof jobs)[number];
    await createWorkload(api, layout.name, workload, templateOf(workload.name, usesOf(layout, j)), nextNode);
  });
}

/** Every object of a collection, page by page (500 at a time). */
async function* listAll(api: ApiClient, path: string): AsyncGenerator<KubeObject> {
  let next = '';
  do {
    const separator = path.includes('?') ? '&' : '?';
    const page = await api.request<KubeList & { metadata: { continue?: string } }>('GET', `${path}${separator}limit=500${next === '' ? '' : `&continue=${encodeURIComponent(next)}`}`);
    yield* page.items;
    next = page.metadata.continue ?? '';
  } while (next !== '');
}

/** The controller manager has caught up: every pod Running (kwok), every owner's status says all ready. */
async function waitForSettled(api: ApiClient): Promise<void> {
  await waitFor('every pod Running', async () => (await api.request<KubeList>('GET', `/api/v1/pods?limit=1&fieldSelector=${encodeURIComponent('status.phase!=Running')}`)).items.length === 0, { timeoutMs: 3_600_000, intervalMs: 2000 });
  const ready = async (path: string, isReady: (object: KubeObject) => boolean): Promise<boolean> => {
    for await (const object of listAll(api, path)) if (!isReady(object)) return false;
    return true;
  };
  const status = (object: KubeObject, field: string): unknown => object.status?.[field] ?? 0;
  await waitFor('every owner reports its pods ready', async () =>
    (await ready('/apis/apps/v1/replicasets', (rs) => status(rs, 'readyReplicas') === (rs['spec'] as { replicas: number }).replicas))
    && (await ready('/apis/apps/v1/statefulsets', (sts) => status(sts, 'readyReplicas') === (sts['spec'] as { replicas: number }).replicas))
    && (await ready('/apis/apps/v1/daemonsets', (ds) => status(ds, 'numberReady') === 1)), { timeoutMs: 3_600_000, intervalMs: 2000 });
}

/** The background churn: pod annotations and unrelated ConfigMaps patched at fixed rates, at most 16 of each in flight. */
function startChurn(api: ApiClient, layouts: readonly NamespaceLayout[]): { stop(): { pods: number; configMaps: number; skipped: number; seconds: number } } {
  const random = prng(SEED);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const podTargets = layouts.flatMap((layout) => layout.workloads.flatMap((w) => podNames(layout.name, w).map((name) => ({ ns: layout.name, name }))));
  const cmTargets = layouts.flatMap((layout) => Array.from({ length: Math.floor(layout.configMaps / 2) }, (_, k) => ({ ns: layout.name, name: `cm-${Math.ceil(layout.configMaps / 2) + k}` })));
  const counts = { pods: 0, configMaps: 0, skipped: 0 };
  let inFlight = 0;
  const started = performance.now();
  const patch = (path: string, body: unknown, done: () => void): void => {
    if (inFlight >= 32) { counts.skipped++; return; }
    inFlight++;
    void (async () => {
      try {
        await api.request('PATCH', path, body, { contentType: 'application/merge-patch+json' });
        done();
      } catch {
        counts.skipped++;
      } finally {
        inFlight--;
      }
    })();
  };
  const timers = [
    podTargets.length === 0 || CHURN_PODS <= 0 ? undefined : setInterval(() => {
      const pod = pick(podTargets);
      patch(`/api/v1/namespaces/${pod.ns}/pods/${pod.name}`, { metadata: { annotations: { 'bench.driftless.dev/churn': String(counts.pods) } } }, () => { counts.pods++; });
    }, 1000 / CHURN_PODS),
    cmTargets.length === 0 || CHURN_CONFIGMAPS <= 0 ? undefined : setInterval(() => {
      const cm = pick(cmTargets);
      patch(`${COLLECTIONS.ConfigMap(cm.ns)}/${cm.name}`, { data: { churn: String(counts.configMaps) } }, () => { counts.configMaps++; });
    }, 1000 / CHURN_CONFIGMAPS),
  ];
  return {
    stop() {
      for (const timer of timers) clearInterval(timer);
      return { ...counts, seconds: seconds(started) };
    },
  };
}

/** What the API server served for lists so far: LIST response bytes (`apiserver_response_sizes`, as written), LISTs, and streamed lists completed. */
async function apiServerLists(api: ApiClient): Promise<{ listBytes: number; lists: number; streamedLists: number }> {
  const text = String((await api.send<string>('GET', '/metrics')).body);
  return {
    listBytes: metricSum(text, 'apiserver_response_sizes_sum', 'verb="LIST"'),
    lists: metricSum(text, 'apiserver_request_total', 'verb="LIST"'),
    streamedLists: metricSum(text, 'apiserver_watch_list_duration_seconds_count'),
  };
}

/** Bytes a process read so far through read(2) and the like (`rchar` of /proc/<pid>/io): its sockets, and its module files. */
async function bytesRead(pid: number): Promise<number> {
  return Number(/^rchar:\s+(\d+)$/m.exec(await readFile(`/proc/${pid}/io`, 'utf8'))?.[1] ?? Number.NaN);
}

/** The collections the controller watches cluster-wide, for counting the events it receives. */
const WATCHED = ['/api/v1/pods', '/api/v1/configmaps', '/api/v1/secrets', '/apis/apps/v1/replicasets', '/apis/apps/v1/deployments', '/apis/apps/v1/statefulsets', '/apis/apps/v1/daemonsets', '/apis/batch/v1/cronjobs', '/apis/argoproj.io/v1alpha1/rollouts'];

/** Watches from the current resourceVersion; calls `onEvent` for each event (no bookmarks asked for). */
async function watchFromNow(api: ApiClient, path: string, signal: AbortSignal, onEvent: (object: KubeObject) => void): Promise<void> {
  const list = await api.request<KubeList>('GET', `${path}?limit=1`);
  void (async () => {
    try {
      for await (const event of api.watch(`${path}?resourceVersion=${list.metadata.resourceVersion}`, signal)) onEvent(event.object);
    } catch (error) {
      if (!signal.aborted) log(`watch of ${path} ended: ${String(error)}`);
    }
  })();
}

/** Spawn → 'caches synced' → 'initial reconcile finished', RSS peaks at each, and what was listed in between. */
async function startFigures(cluster: Cluster, controller: ControllerProcess, spawnedAt: number, before: Awaited<ReturnType<typeof apiServerLists>>): Promise<Record<string, number>> {
  let peakMb = 0;
  const sampler = setInterval(() => { void processFigures(controller.pid).then((f) => { peakMb = Math.max(peakMb, f.peakMb); }, () => {}); }, 500);
  try {
    await controller.waitForLog('caches synced', (line) => line.msg === 'caches synced', { timeoutMs: 3_600_000 });
    const syncedS = seconds(spawnedAt);
    const atSync = await processFigures(controller.pid);
    const readBytes = await bytesRead(controller.pid);
    const lists = await apiServerLists(cluster.admin);
    await controller.waitForLog('initial reconcile finished', (line) => line.msg === 'initial reconcile finished', { timeoutMs: 3_600_000 });
    const readyS = seconds(spawnedAt);
    const atReady = await processFigures(controller.pid);
    return {
      syncedS, peakAtSyncMb: atSync.peakMb, rssAtSyncMb: atSync.rssMb, readyS, peakAtReadyMb: Math.max(peakMb, atReady.peakMb), rssAtReadyMb: atReady.rssMb,
      readBytes, listBytes: lists.listBytes - before.listBytes, lists: lists.lists - before.lists, streamedLists: lists.streamedLists - before.streamedLists,
    };
  } finally {
    clearInterval(sampler);
  }
}

/** The controller's workqueue so far: keys run, mean wait before a run and mean run, its depth now, and its requests. */
async function queueFigures(http: string): Promise<string> {
  const text = await (await fetch(`http://${http}/metrics`)).text();
  const mean = (name: string): string => (1000 * metricSum(text, `${name}_sum`) / Math.max(1, metricSum(text, `${name}_count`))).toFixed(1);
  return `${metricSum(text, 'workqueue_work_duration_seconds_count')} runs, mean wait ${mean('workqueue_queue_duration_seconds')} ms, mean run ${mean('workqueue_work_duration_seconds')} ms, depth ${metricSum(text, 'workqueue_depth')}; ${metricSum(text, 'driftless_api_requests_total')} API requests, ${metricSum(text, 'driftless_evictions_total')} evictions`;
}

/** The controller's own counters from its /metrics. */
async function controllerCounters(http: string): Promise<{ requests: number; relists: number; relistLines: string }> {
  const text = await (await fetch(`http://${http}/metrics`)).text();
  // Per resource, so a relist in the steady window says which reflector made it.
  const relistLines = text.split('\n').filter((line) => line.startsWith('driftless_relists_total{')).join(', ');
  return { requests: metricSum(text, 'driftless_api_requests_total'), relists: metricSum(text, 'driftless_relists_total'), relistLines };
}

/** Over `STEADY_MS` under the churn: the controller's requests/s, relists, CPU per 1,000 watch events and RSS at the end. */
async function steadyFigures(cluster: Cluster, controller: ControllerProcess, http: string): Promise<Record<string, number>> {
  const abort = new AbortController();
  let events = 0;
  await Promise.all(WATCHED.map((path) => watchFromNow(cluster.admin, path, abort.signal, () => { events++; })));
  const before = { ...(await controllerCounters(http)), ...(await processFigures(controller.pid)), at: performance.now() };
  events = 0;
  await new Promise((resolve) => setTimeout(resolve, STEADY_MS));
  const after = { ...(await controllerCounters(http)), ...(await processFigures(controller.pid)) };
  const windowS = seconds(before.at);
  abort.abort();
  const cpuMs = after.cpuMs - before.cpuMs;
  log(`relists before the steady window: ${before.relistLines}\nafter it: ${after.relistLines}`);
  return { windowS, requestsPerS: (after.requests - before.requests) / windowS, relists: after.relists - before.relists, events, cpuMs, cpuMsPer1000Events: events === 0 ? Number.NaN : (cpuMs / events) * 1000, steadyRssMb: after.rssMb };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

/**
 * Rotates the first Secret of `ROTATIONS` Deployments spread over the namespaces, one at a time, and
 * measures from the PATCH response to a watch seeing the Deployment's `restart-at` (the controller's
 * first write of the restart). Watching, not polling: a poll interval would be the figure.
 */
async function rotationFigures(api: ApiClient, layouts: readonly NamespaceLayout[]): Promise<number[]> {
  const targets = layouts.flatMap((layout) => layout.workloads.flatMap((w, j) => (w.kind === 'Deployment' ? [{ ns: layout.name, name: w.name, secret: usesOf(layout, j).secrets[0] }] : [])))
    .filter((t): t is { ns: string; name: string; secret: string } => t.secret !== undefined);
  const step = Math.max(1, Math.floor(targets.length / ROTATIONS));
  const chosen = targets.filter((_, index) => index % step === 0).slice(0, ROTATIONS);
  const seen = new Map<string, number>();
  const abort = new AbortController();
  await watchFromNow(api, '/apis/apps/v1/deployments', abort.signal, (d) => {
    const key = `${String(d.metadata?.namespace)}/${String(d.metadata?.name)}`;
    if (d.metadata?.annotations?.[RESTART_AT] !== undefined && !seen.has(key)) seen.set(key, performance.now());
  });
  const latencies: number[] = [];
  try {
    for (const target of chosen) {
      await api.request('PATCH', `${COLLECTIONS.Secret(target.ns)}/${target.secret}`, { data: { blob: randomBytes(KiB).toString('base64') } }, { contentType: 'application/merge-patch+json' });
      const answered = performance.now();
      const at = await waitFor(`restart-at on ${target.ns}/${target.name}`, () => seen.get(`${target.ns}/${target.name}`), { timeoutMs: 120_000, intervalMs: 5 });
      latencies.push(at - answered);
      log(`rotation ${latencies.length}: ${target.ns}/${target.secret} → restart-at on Deployment ${target.name} after ${(at - answered).toFixed(1)} ms`);
    }
  } finally {
    abort.abort();
  }
  return latencies;
}

/**
 * Flags of the measured controller: cluster-wide, shipped defaults except what makes the reaction the
 * controller's own (no debounce, as bench:controller's reaction) and admission that never defers a start
 * (50 restarts in progress at once would otherwise wait for --max-concurrent-restarts and --restart-rate).
 */
const CONTROLLER_FLAGS = ['--log-level=info', '--debounce=0s', '--restart-check-interval=500ms', '--max-concurrent-restarts=1000', '--restart-rate=1000', '--restart-burst=1000'];

async function measure(cluster: Cluster, layouts: readonly NamespaceLayout[]): Promise<Record<string, number>> {
  const extra = options['controller-args'].split(' ').filter((arg) => arg !== '');
  const listsBefore = await apiServerLists(cluster.admin);
  const spawnedAt = performance.now();
  const controller = await startControllerProcess(cluster, { args: [...CONTROLLER_FLAGS, ...extra], env: { NODE_OPTIONS: await shippedNodeOptions() } });
  try {
    const start = await startFigures(cluster, controller, spawnedAt, listsBefore);
    log(`controller: caches synced after ${start['syncedS']?.toFixed(1)} s, initial reconcile finished after ${start['readyS']?.toFixed(1)} s (load ${load()})`);
    const started = await controller.waitForLog('started', (line) => line.msg === 'started');
    const steady = await steadyFigures(cluster, controller, String(started['http']));
    log(`steady window: ${steady['events']} watch events in ${steady['windowS']?.toFixed(1)} s (load ${load()})`);
    const latencies = await rotationFigures(cluster.admin, layouts);
    const after = await processFigures(controller.pid);
    log(`the workqueue over the run: ${await queueFigures(String(started['http']))}`);
    return { ...start, ...steady, rotations: latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), maxMs: Math.max(...latencies), rssAfterRotationsMb: after.rssMb, peakOverallMb: after.peakMb };
  } finally {
    await controller.stop();
  }
}

function report(plan: Plan, fill: Record<string, number>, figures: Record<string, number>, churn: { pods: number; configMaps: number; skipped: number; seconds: number }): void {
  const mb = (value: number | undefined): string => `${(value ?? Number.NaN).toFixed(1)} MB`;
  const s = (value: number | undefined): string => `${(value ?? Number.NaN).toFixed(1)} s`;
  const ms = (value: number | undefined): string => `${(value ?? Number.NaN).toFixed(1)} ms`;
  const rows: [string, string, string][] = [
    ['peak RSS, spawn → caches synced / → initial reconcile finished (VmHWM)', `${mb(figures['peakAtSyncMb'])} / ${mb(figures['peakAtReadyMb'])}`, '≤ 400 MB'],
    ['RSS at caches synced / at initial reconcile finished', `${mb(figures['rssAtSyncMb'])} / ${mb(figures['rssAtReadyMb'])}`, ''],
    ['steady RSS (end of the steady window, under churn)', mb(figures['steadyRssMb']), '≤ 300 MB'],
    ['time to ready: caches synced (/readyz) / initial reconcile finished', `${s(figures['syncedS'])} / ${s(figures['readyS'])}`, '≤ 60 s'],
    [`rotation → first write (restart-at), ${figures['rotations']} one at a time: p50 / p99 / max`, `${ms(figures['p50Ms'])} / ${ms(figures['p99Ms'])} / ${ms(figures['maxMs'])}`, 'p99 ≤ 2 s'],
    [`API requests/s in the steady window (${s(figures['windowS'])}; relists in it: ${figures['relists']})`, (figures['requestsPerS'] ?? Number.NaN).toFixed(2), ''],
    [`CPU per 1,000 watch events (${figures['events']} events, ${ms(figures['cpuMs'])} CPU)`, ms(figures['cpuMsPer1000Events']), ''],
    ['bytes the controller read, spawn → caches synced (rchar: the API server\'s answers and its own module files)', `${((figures['readBytes'] ?? Number.NaN) / 1e6).toFixed(1)} MB`, ''],
    [`lists asked of the API server, spawn → caches synced: streamed / LIST requests (LIST bytes)`, `${figures['streamedLists']} / ${figures['lists']} (${((figures['listBytes'] ?? Number.NaN) / 1e6).toFixed(1)} MB)`, ''],
    ['RSS after the rotations / peak over the whole run', `${mb(figures['rssAfterRotationsMb'])} / ${mb(figures['peakOverallMb'])}`, ''],
  ];
  log(`\n## driftless controller at scale ${SCALE}: ${plan.namespaces} namespaces, ${plan.secrets} Secrets (${plan.bigSecrets} of 1 MiB, ${((fill['secretBytes'] ?? 0) / 1e6).toFixed(0)} MB of data), ${plan.configMaps} ConfigMaps, ${plan.workloads} workloads, ${plan.pods} pods on ${plan.nodes} nodes\n`);
  log(`fill: configs ${s(fill['configsS'])}, workloads and pods ${s(fill['workloadsS'])}, controller manager settled ${s(fill['settleS'])}; total ${s(fill['totalS'])}`);
  log(`churn: ${(churn.pods / churn.seconds).toFixed(1)} pod patches/s, ${(churn.configMaps / churn.seconds).toFixed(1)} ConfigMap patches/s over ${churn.seconds.toFixed(0)} s (${churn.skipped} skipped or failed); load ${load()}\n`);
  log('| measure | figure | goal (issue 23) |\n| --- | --- | --- |');
  for (const [measureName, figure, goal] of rows) log(`| ${measureName} | ${figure} | ${goal} |`);
}

async function main(): Promise<void> {
  const plan = planAt(SCALE);
  const layouts = Array.from({ length: plan.namespaces }, (_, index) => layoutOf(plan, index));
  log(`# driftless bench:scale, scale ${SCALE} — load ${load()}`);
  const begun = performance.now();
  const cluster = await startCluster({ nodes: plan.nodes, controllerManagerQps: 1000 });
  log(`cluster with ${plan.nodes} nodes up in ${seconds(begun).toFixed(1)} s (load ${load()})`);
  try {
    const fill: Record<string, number> = {};
    const filling = performance.now();
    await cluster.stopControllerManager();
    let phase = performance.now();
    fill['secretBytes'] = await fillConfigs(cluster.admin, plan, layouts);
    fill['configsS'] = seconds(phase);
    log(`configs created in ${fill['configsS'].toFixed(1)} s (load ${load()})`);
    phase = performance.now();
    await fillWorkloads(cluster.admin, plan, layouts);
    fill['workloadsS'] = seconds(phase);
    log(`workloads and pods created in ${fill['workloadsS'].toFixed(1)} s (load ${load()})`);
    phase = performance.now();
    await cluster.startControllerManager();
    await waitForSettled(cluster.admin);
    fill['settleS'] = seconds(phase);
    fill['totalS'] = seconds(filling);
    log(`settled in ${fill['settleS'].toFixed(1)} s; fill ${fill['totalS'].toFixed(1)} s (load ${load()})`);
    const churn = startChurn(cluster.admin, layouts);
    const figures = await measure(cluster, layouts).finally(() => churn.stop());
    report(plan, fill, figures, churn.stop());
  } finally {
    await cluster.stop();
  }
}

await main();
