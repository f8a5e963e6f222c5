/**
 * `npm run bench:write-back`: an out-of-band Secret change through the controller's two ways of
 * rolling a Deployment, in one cluster and one run (issue 15, "Benchmark"):
 *
 * - **git** (`driftless.dev/restart-strategy: git`, ADR 0016): the controller commits the keyed digest
 *   to the Application's `.driftless/out-of-band`; Argo CD syncs the commit (automated sync, after the
 *   refresh a Git host's push webhook makes); the Deployment rolls a new ReplicaSet.
 * - **evict** (the default strategy for a Deployment): the controller evicts the pods, paced; the
 *   ReplicaSet recreates them; Argo CD has nothing to do.
 *
 * Both are `examples/directory` (a Deployment of 3 replicas using a ConfigMap in Git and a Secret that is
 * not), each in its own namespace, repository and Application rendered by the shipped sidecar, with a 1 s
 * termination grace (the fake kubelet honours the default 30 s, which would make every figure a multiple
 * of it). One real `driftless controller` process watches both, with the shipped defaults (`--debounce`
 * 2s, `--write-back-batch-window` 5s) but `--min-restart-interval=0` (rounds follow each other faster than
 * its default 1m).
 *
 *   t0   the Secret's PATCH returned;
 *   →    git: the commit is pushed — the bare repository's branch ref changed (read every 20 ms);
 *        evict: the first pod evicted (a pod from before t0 terminating or gone; pods listed every 100 ms);
 *   →    rolled and Healthy: exactly the Deployment's replicas run, every one created after t0, Ready, none
 *        terminating, and the Application Synced (git: at the controller's commit, the sync Succeeded) and
 *        Healthy.
 *
 * The two alternate (ABBA) so that the machine's load falls on both alike; one warm-up round each is not
 * counted. Between rounds the bench waits for the controller's RestartFinished Event of the round, so a
 * round never starts on a restart still in progress. Nothing is asserted: figures belong in a report.
 * Options: `--runs N` (default 5), `--batch-window D` and `--debounce D` (controller flags; default the
 * shipped ones), `--keep` keeps the cluster's state dir.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { KubeList, KubeObject } from '../test/cluster/api.ts';
import { applicationStatus, argoCdNamespace, startArgoCD, type ArgoCD } from '../test/cluster/argocd.ts';
import { filesOf, type GitRepo } from '../test/cluster/git-repo.ts';
import { startCluster, type Cluster } from '../test/cluster/harness.ts';
import { podIsReady } from '../test/cluster/testing.ts';
import { eventsFor } from '../test/controller/support/fixtures.ts';
import { startControllerProcess, type ControllerProcess } from '../test/controller/support/process.ts';
import { pluginApplicationSpec } from '../test/argocd/plugin-support.ts';
import { waitFor } from '../test/support/wait.ts';
import { load, log } from './support.ts';

const { values: options } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    'batch-window': { type: 'string', default: '5s' },
    debounce: { type: 'string', default: '2s' },
    keep: { type: 'boolean', default: false },
  },
});
const RUNS = Math.max(1, Number(options.runs));
/** Generous: two loaded cores shared with other clusters. */
const ROUND_TIMEOUT_MS = 300_000;
const REPLICAS = 3;
const SECRET = 'web-tls';
const repoRoot = join(import.meta.dirname, '..');

type Strategy = 'git' | 'evict';

/** One workload under test. */
interface Subject {
  readonly strategy: Strategy;
  readonly namespace: string;
  /** The Application's name (= its namespace). */
  readonly name: string;
  readonly repo: GitRepo;
}

/** One measured change: milliseconds after the Secret's PATCH returned. */
interface Round {
  /** git: the commit pushed; evict: the first pod evicted. */
  readonly first: number;
  /** Every pod new and Ready, the Application Synced and Healthy. */
  readonly healthy: number;
  readonly load: string;
}

/** Nearest-rank percentile of a non-empty list. */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

function fmt(ms: number): string {
  return Number.isNaN(ms) ? '-' : `${(ms / 1000).toFixed(2)} s`;
}

/**
 * The example as both subjects get it: the Secret left out of Git (it is the out-of-band config), the
 * Deployment opted in for that Secret (and, for git, the strategy), 3 replicas, a 1 s termination grace.
 */
async function exampleFiles(path: string, strategy: Strategy): Promise<Record<string, string>> {
  const files = await filesOf(join(repoRoot, 'examples', 'directory'), path);
  delete files[`${path}/secret.yaml`];
  const file = `${path}/deployment.yaml`;
  const original = files[file] ?? '';
  const annotations = `  annotations:\n    secret.reloader.stakater.com/reload: ${SECRET}\n${strategy === 'git' ? '    driftless.dev/restart-strategy: git\n' : ''}`;
  const changed = original
    .replace('  labels:\n    app.kubernetes.io/name: web\nspec:', `  labels:\n    app.kubernetes.io/name: web\n${annotations}spec:`)
    .replace('  replicas: 2\n', `  replicas: ${REPLICAS}\n`)
    .replace(/^( {4}spec:\n)( {6}containers:)/m, '$1      terminationGracePeriodSeconds: 1\n$2');
  if (!changed.includes(`reload: ${SECRET}`) || !changed.includes(`replicas: ${REPLICAS}`) || !changed.includes('terminationGracePeriodSeconds: 1')) {
    throw new Error('examples/directory/deployment.yaml changed shape: the bench cannot rewrite it');
  }
  files[file] = changed;
  return files;
}

function randomTls(): Record<string, string> {
  return { 'tls.crt': randomBytes(48).toString('base64'), 'tls.key': randomBytes(48).toString('base64') };
}

async function createSubject(cluster: Cluster, argocd: ArgoCD, strategy: Strategy): Promise<Subject> {
  const namespace = await cluster.newNamespace(`wb-${strategy}`);
  await cluster.admin.request('POST', `/api/v1/namespaces/${namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: SECRET }, stringData: randomTls() });
  const path = 'apps/directory';
  const repo = await argocd.createRepo(namespace);
  const revision = await repo.commit(await exampleFiles(path, strategy), `add the directory example (${strategy})`);
  const spec = pluginApplicationSpec({ repo, path, revision }, namespace);
  await argocd.createApplication(namespace, { ...spec, syncPolicy: { automated: { prune: true, selfHeal: false } } });
  await argocd.waitForSyncedAndHealthy(namespace, revision, { timeoutMs: ROUND_TIMEOUT_MS });
  log(`${strategy}: Application ${namespace} Synced/Healthy at ${revision.slice(0, 8)}`);
  return { strategy, namespace, name: namespace, repo };
}

async function podsOf(cluster: Cluster, namespace: string): Promise<KubeObject[]> {
  return (await cluster.admin.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent('app.kubernetes.io/name=web')}`)).items;
}

/** The bare repository's branch head, read from its ref file (git writes it with a rename: never half-written). */
async function headOf(repo: GitRepo): Promise<string> {
  return (await readFile(join(new URL(repo.url).pathname, 'refs', 'heads', repo.branch), 'utf8')).trim();
}

async function finishedCount(cluster: Cluster, namespace: string): Promise<number> {
  const events = await eventsFor(cluster.admin, namespace, 'web');
  return events.filter((event) => event['reason'] === 'RestartFinished').reduce((sum, event) => sum + Number(event['count'] ?? 1), 0);
}

/** Every pod created after the change (not among `before`), `REPLICAS` of them, Ready, none terminating. */
function rolled(pods: readonly KubeObject[], before: ReadonlySet<string>): boolean {
  return pods.length === REPLICAS && pods.every((pod) => !before.has(pod.metadata?.name ?? '') && pod.metadata?.deletionTimestamp === undefined && podIsReady(pod));
}

/** Rotates the subject's Secret and follows the change to rolled and Healthy. */
async function round(cluster: Cluster, argocd: ArgoCD, subject: Subject): Promise<Round> {
  const { namespace } = subject;
  const steady = await waitFor(`${subject.strategy}: steady before the round`, async () => {
    const pods = await podsOf(cluster, namespace);
    const status = applicationStatus(await argocd.getApplication(subject.name));
    const ok = pods.length === REPLICAS && pods.every((pod) => pod.metadata?.deletionTimestamp === undefined && podIsReady(pod)) && status.sync?.status === 'Synced' && status.health?.status === 'Healthy';
    return ok ? pods : undefined;
  }, { timeoutMs: ROUND_TIMEOUT_MS });
  const before = new Set(steady.map((pod) => pod.metadata?.name ?? ''));
  const finishedBefore = await finishedCount(cluster, namespace);
  const headBefore = await headOf(subject.repo);
  const deadline = performance.now() + ROUND_TIMEOUT_MS;

  await cluster.admin.request('PATCH', `/api/v1/namespaces/${namespace}/secrets/${SECRET}`, { stringData: randomTls() }, { contentType: 'application/merge-patch+json' });
  const t0 = performance.now();

  let first: number | undefined;
  let sha: string | undefined;
  if (subject.strategy === 'git') {
    while ((sha = await headOf(subject.repo)) === headBefore) {
      if (performance.now() > deadline) throw new Error(`git: no commit within ${ROUND_TIMEOUT_MS} ms`);
      await sleep(20);
    }
    first = performance.now() - t0;
    // What argocd-server's webhook handler does on a push event; the automated sync follows.
    await argocd.refresh(subject.name, 'normal');
  }
  let healthy: number | undefined;
  while (healthy === undefined) {
    if (performance.now() > deadline) throw new Error(`${subject.strategy}: not rolled and Healthy within ${ROUND_TIMEOUT_MS} ms\n${await argocd.logs()}`);
    const pods = await podsOf(cluster, namespace);
    const at = performance.now() - t0;
    if (first === undefined && [...before].some((name) => pods.find((pod) => pod.metadata?.name === name)?.metadata?.deletionTimestamp !== undefined)) first = at;
    if (rolled(pods, before)) {
      const app = await argocd.getApplication(subject.name);
      const status = applicationStatus(app);
      const syncedAt = sha === undefined || (status.sync?.revision === sha && status.operationState?.phase === 'Succeeded' && status.operationState.syncResult?.revision === sha);
      if (status.sync?.status === 'Synced' && status.health?.status === 'Healthy' && syncedAt) healthy = performance.now() - t0;
    }
    if (healthy === undefined) await sleep(100);
  }
  // The controller's own end of the round, so the next one starts on a finished restart (not measured).
  await waitFor(`${subject.strategy}: the controller's RestartFinished`, async () => (await finishedCount(cluster, namespace)) > finishedBefore, { timeoutMs: ROUND_TIMEOUT_MS });
  if (subject.strategy === 'git' && (await headOf(subject.repo)) !== sha) throw new Error('git: a second commit followed the write-back');
  return { first: first ?? Number.NaN, healthy, load: load() };
}

const clusterStarted = performance.now();
const cluster = await startCluster(options.keep ? { keepStateDir: true } : {});
let argocd: ArgoCD | undefined;
let controller: ControllerProcess | undefined;
try {
  argocd = await startArgoCD(cluster);
  log(`# write-back vs eviction benchmark, examples/directory with ${REPLICAS} replicas — ${RUNS} runs + 1 warm-up each; cluster and Argo CD up in ${((performance.now() - clusterStarted) / 1000).toFixed(1)} s, load ${load()}`);
  const subjects = [await createSubject(cluster, argocd, 'git'), await createSubject(cluster, argocd, 'evict')] as const;
  controller = await startControllerProcess(cluster, {
    args: [
      `--namespaces=${subjects.map((subject) => subject.namespace).join(',')}`,
      `--hash-key-file=${argocd.hashKeyFile}`,
      '--min-restart-interval=0',
      `--debounce=${options.debounce}`,
      `--write-back-batch-window=${options['batch-window']}`,
      `--write-back-work-dir=${join(cluster.stateDir, 'write-back')}`,
    ],
  });
  await controller.ready();
  for (const subject of subjects) {
    await waitFor(`${subject.strategy}: the controller's first-sight record`, async () => {
      const deployment = await cluster.admin.request('GET', `/apis/apps/v1/namespaces/${subject.namespace}/deployments/web`);
      return deployment.metadata?.annotations?.['driftless.dev/restarted-for']?.includes(`"Secret/${SECRET}"`);
    }, { timeoutMs: 60_000 });
  }
  log(`controller ready: --debounce=${options.debounce} --write-back-batch-window=${options['batch-window']} --min-restart-interval=0`);

  const rounds = new Map<Strategy, Round[]>([['git', []], ['evict', []]]);
  for (let run = 0; run <= RUNS; run++) {
    const order = run % 2 === 0 ? subjects : ([subjects[1], subjects[0]] as const);
    for (const subject of order) {
      const result = await round(cluster, argocd, subject);
      const firstLabel = subject.strategy === 'git' ? 'commit pushed' : 'first eviction';
      log(`${run === 0 ? 'warm-up' : `run ${run}`} ${subject.strategy.padEnd(5)}: ${firstLabel} ${fmt(result.first)}, rolled and Healthy ${fmt(result.healthy)}; load ${result.load}`);
      if (run > 0) rounds.get(subject.strategy)?.push(result);
    }
  }

  log('');
  log(`  ${'change →'.padEnd(44)} ${'p50'.padStart(9)} ${'max'.padStart(9)}`);
  const row = (label: string, values: readonly number[]): void => log(`  ${label.padEnd(44)} ${fmt(percentile(values, 50)).padStart(9)} ${fmt(Math.max(...values)).padStart(9)}`);
  const git = rounds.get('git') ?? [];
  const evict = rounds.get('evict') ?? [];
  row('git: commit pushed', git.map((r) => r.first));
  row('git: rolled and Healthy', git.map((r) => r.healthy));
  row('git: (commit pushed → rolled and Healthy)', git.map((r) => r.healthy - r.first));
  row('evict: first eviction', evict.map((r) => r.first));
  row('evict: rolled and Healthy', evict.map((r) => r.healthy));
  log('');
  log(`p50: nearest rank of ${RUNS}. ${argoCdNamespace} Applications sync automatically; the git rounds request the refresh a push webhook would.`);
  log(`load ${load()}`);
} finally {
  await controller?.stop();
  await argocd?.stop();
  await cluster.stop();
  if (options.keep) log(`kept ${cluster.stateDir}`);
}
