/**
 * `npm run bench:argocd`: commit → Synced latency of the Kustomize example
 * (examples/kustomize) under the real Argo CD, rendered by the Driftless plugin
 * (`plugin: {name: driftless-v1}`) and by Argo CD's built-in Kustomize source,
 * in one cluster and one run (issue 8, §4).
 *
 * Each app lives in its own namespace and syncs automatically (`automated:
 * {prune: true}`), so the loop is the one a team with a Git webhook has:
 *
 *   t0  `git commit` + push of a change to `queue-config` (a `configMapGenerator`
 *       literal: a new hash-suffixed ConfigMap, a new reference in the StatefulSet's
 *       pod template, the old ConfigMap pruned; the same change for both apps, and
 *       the Rollout is untouched in both);
 *   →   refresh requested: the `argocd.argoproj.io/refresh: normal` annotation,
 *       exactly the patch argocd-server's webhook handler makes on a push event
 *       (the controller then resolves `main` without its revision cache);
 *   →   compared: Argo CD knows the new revision (status.sync.revision, or the
 *       auto-sync operation for it, whichever shows first);
 *   →   sync started: status.operationState Running for that revision;
 *   →   sync finished: the operation Succeeded. Argo CD applies on the first pass
 *       and marks the operation Succeeded on a later one, which comes when the
 *       Application changes or at the latest 5 s after a managed resource changed
 *       (appOperationRequeueDelay, controller/appcontroller.go): Argo CD's own wait,
 *       in both apps' figures;
 *   →   Synced: status.sync Synced at that revision, the operation Succeeded;
 *   →   Healthy: as Argo CD judges it, i.e. the StatefulSet rolled out.
 *
 * Every time is taken from a watch on the Application (a poll interval would
 * be the figure), relative to the push returning. The two apps alternate
 * (ABBA order) so that machine load falls on both alike; one warm-up round is
 * not counted. The component part is the controller's own `GetRepoObjs stats`
 * log line: `manifests_ms`, the repo-server round trip that renders the commit
 * (Driftless: argocd-cmp-server → `driftless generate`; built-in: `kustomize build`).
 *
 * The example is changed in both apps alike: the namespace, and a
 * 1 s termination grace period (the fake kubelet honours the default 30 s, which
 * would make the Healthy figure three grace periods long).
 *
 * Nothing is asserted: figures belong in a report, not in a test.
 * Options: `--runs N` (default 7, at least 5 for the spec's median), `--keep` keeps the cluster's state dir.
 */
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeList } from '../test/cluster/api.ts';
import { applicationStatus, argoCdNamespace, startArgoCD, type Application, type ArgoCD } from '../test/cluster/argocd.ts';
import { startCluster, type Cluster } from '../test/cluster/harness.ts';
import { commitExample, pluginApplicationSpec, type CommittedApp } from '../test/argocd/plugin-support.ts';
import { load, log } from './support.ts';

const { values: options } = parseArgs({
  options: { runs: { type: 'string', default: '7' }, keep: { type: 'boolean', default: false } },
});
const RUNS = Math.max(1, Number(options.runs));
const applicationsPath = `/apis/argoproj.io/v1alpha1/namespaces/${argoCdNamespace}/applications`;
/** Generous: two loaded cores shared with other clusters. */
const ROUND_TIMEOUT_MS = 300_000;

/** The milestones of one commit, in the order Argo CD passes them. */
const MILESTONES = ['compared', 'syncStarted', 'syncFinished', 'synced', 'healthy'] as const;
type Milestone = (typeof MILESTONES)[number];

const MILESTONE_LABELS: Readonly<Record<Milestone, string>> = {
  compared: 'push → compared (new revision known)',
  syncStarted: 'push → sync started (operation Running)',
  syncFinished: 'push → sync operation Succeeded',
  synced: 'push → Synced at the new revision',
  healthy: 'push → Synced and Healthy (rolled out)',
};

/** One app under test. */
interface Subject {
  readonly label: string;
  readonly name: string;
  readonly app: CommittedApp;
  /** The revision the app was last synced to. */
  revision: string;
}

/** One measured commit: milliseconds after the push returned. */
interface Round {
  readonly at: Readonly<Record<Milestone, number>>;
  /** `git commit` + push, ms. */
  readonly commitMs: number;
  /** The component part, ms, each the slowest of the round (the render that missed the manifest cache); NaN if not logged. */
  readonly parts: Readonly<Record<Part, number>>;
  readonly load: string;
}

function median(values: readonly number[]): number {
  const sorted = [...values].filter((value) => !Number.isNaN(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The parts of an Application this benchmark reads beyond `ApplicationStatus`. */
interface OperationView {
  readonly operationRevision: string | undefined;
  readonly stateRevision: string | undefined;
  readonly phase: string | undefined;
  readonly resultRevision: string | undefined;
}

function operationView(app: Application): OperationView {
  const operation = app.operation as { sync?: { revision?: string } } | undefined;
  const state = app.status?.['operationState'] as
    | { phase?: string; operation?: { sync?: { revision?: string } }; syncResult?: { revision?: string } }
    | undefined;
  return {
    operationRevision: operation?.sync?.revision,
    stateRevision: state?.operation?.sync?.revision,
    phase: state?.phase,
    resultRevision: state?.syncResult?.revision,
  };
}

/** Which milestones an Application object shows for `revision`. */
function milestonesOf(app: Application, revision: string): Set<Milestone> {
  const status = applicationStatus(app);
  const operation = operationView(app);
  const reached = new Set<Milestone>();
  if (status.sync?.revision === revision || operation.operationRevision === revision || operation.stateRevision === revision) {
    reached.add('compared');
  }
  if (operation.stateRevision === revision && operation.phase !== undefined) reached.add('syncStarted');
  if (operation.phase === 'Succeeded' && operation.resultRevision === revision) reached.add('syncStarted').add('syncFinished');
  const synced =
    status.sync?.status === 'Synced' &&
    status.sync.revision === revision &&
    app.operation === undefined &&
    operation.phase === 'Succeeded' &&
    operation.resultRevision === revision;
  if (synced) {
    // A sync that finished between two events still started.
    reached.add('syncStarted').add('syncFinished').add('synced');
    if (status.health?.status === 'Healthy') reached.add('healthy');
  }
  return reached;
}

/**
 * Watches one Application from `resourceVersion` on and records, per
 * milestone, when the first event showing it arrived.
 */
async function watchMilestones(cluster: Cluster, name: string, resourceVersion: string, revision: () => string | undefined, signal: AbortSignal): Promise<Map<Milestone, number>> {
  const seen = new Map<Milestone, number>();
  const path = `${applicationsPath}?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}&resourceVersion=${resourceVersion}`;
  for await (const event of cluster.admin.watch<Application>(path, signal)) {
    const at = performance.now();
    const wanted = revision();
    if (wanted === undefined) continue;
    for (const milestone of milestonesOf(event.object, wanted)) if (!seen.has(milestone)) seen.set(milestone, at);
    if (seen.has('healthy')) break;
  }
  return seen;
}

/**
 * The component parts, read from the Argo CD components' own log lines:
 * - manifests: the controller's `GetRepoObjs stats` `manifests_ms` for the app
 *   (resolving the revision and the GenerateManifest call to the repo server);
 * - repoServer: the repo server's gRPC `finished call` of GenerateManifest
 *   (checkout, then the built-in `kustomize build` or the call to the sidecar);
 * - sidecar: argocd-cmp-server's `finished call` of GenerateManifest (receiving
 *   and unpacking the repository tarball, then `driftless generate`); Driftless only.
 * The repo server's and the sidecar's lines do not name the app, so each round
 * takes the slowest call while it runs (the other app only hits the manifest cache then).
 */
const PARTS = ['manifests', 'repoServer', 'sidecar'] as const;
type Part = (typeof PARTS)[number];

const PART_LABELS: Readonly<Record<Part, string>> = {
  manifests: '  controller → repo server (manifests_ms)',
  repoServer: '  repo server GenerateManifest',
  sidecar: '  sidecar GenerateManifest (driftless)',
};

/** Where each component's log is, and how to read a duration off one of its lines. */
function partReaders(cluster: Cluster, name: string): Record<Part, { file: string; read: (line: string) => number | undefined }> {
  const logFile = (component: string): string => join(cluster.stateDir, 'logs', `${component}.log`);
  return {
    manifests: {
      file: logFile('argocd-application-controller'),
      read: (line) => (line.includes('msg="GetRepoObjs stats"') && line.includes(` application=${name} `) ? Number(/ manifests_ms=(\d+)/.exec(line)?.[1]) : undefined),
    },
    repoServer: {
      file: logFile('argocd-repo-server'),
      read: (line) => (line.includes('msg="finished call"') && line.includes('grpc.method=GenerateManifest ') ? Number(/ grpc\.time_ms=([\d.]+)/.exec(line)?.[1]) : undefined),
    },
    sidecar: {
      // JSON lines: argocd-cmp-server logs in JSON whatever --logformat the repo server has.
      file: logFile('argocd-cmp-server'),
      read: (line) => (line.includes('"msg":"finished call"') && line.includes('"grpc.method":"GenerateManifest"') ? Number(/"grpc\.time_ms":"([\d.]+)"/.exec(line)?.[1]) : undefined),
    },
  };
}

/** The size of a log now: where this round's lines start. */
async function logSize(file: string): Promise<number> {
  return (await stat(file)).size;
}

/** The largest duration `read` finds in the lines written to `file` after `offset`; NaN if none. */
async function slowestSince(file: string, offset: number, read: (line: string) => number | undefined): Promise<number> {
  const handle = await open(file);
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(Math.max(0, size - offset));
    await handle.read(buffer, 0, buffer.length, offset);
    let slowest = Number.NaN;
    for (const line of buffer.toString('utf8').split('\n')) {
      const ms = read(line);
      if (ms !== undefined && !Number.isNaN(ms) && !(ms <= slowest)) slowest = ms;
    }
    return slowest;
  } finally {
    await handle.close();
  }
}

/** The overlay with `RETENTION_HOURS` set to `hours`: a new `queue-config` content, so a new name and a new StatefulSet template. */
async function changedOverlay(subject: Subject, hours: number): Promise<Record<string, string>> {
  const path = `${subject.app.path}/kustomization.yaml`;
  const overlay = (await subject.app.repo.read(path)).replace(/RETENTION_HOURS=\d+/, `RETENTION_HOURS=${hours}`);
  return { [path]: overlay };
}

/** Commits one change to `subject` and follows it to Synced and Healthy. */
async function round(cluster: Cluster, argocd: ArgoCD, subject: Subject, hours: number): Promise<Round> {
  await argocd.waitForSyncedAndHealthy(subject.name, subject.revision, { timeoutMs: ROUND_TIMEOUT_MS });
  const files = await changedOverlay(subject, hours);
  const list = await cluster.admin.request<KubeList>('GET', `${applicationsPath}?fieldSelector=${encodeURIComponent(`metadata.name=${subject.name}`)}`);
  const readers = partReaders(cluster, subject.name);
  const offsets = Object.fromEntries(await Promise.all(PARTS.map(async (part) => [part, await logSize(readers[part].file)] as const))) as Record<Part, number>;
  const abort = new AbortController();
  let revision: string | undefined;
  const watching = watchMilestones(cluster, subject.name, list.metadata.resourceVersion ?? '0', () => revision, abort.signal);
  const timer = setTimeout(() => abort.abort(), ROUND_TIMEOUT_MS);
  try {
    const started = performance.now();
    const committed = await subject.app.repo.commit(files, `RETENTION_HOURS=${hours}`);
    const pushed = performance.now();
    revision = committed;
    // What argocd-server's webhook handler does on a push event (util/argo.RefreshApp).
    await argocd.refresh(subject.name, 'normal');
    const seen = await watching;
    const missing = MILESTONES.filter((milestone) => !seen.has(milestone));
    if (missing.length > 0) throw new Error(`${subject.label}: no ${missing.join(', ')} for ${committed} within ${ROUND_TIMEOUT_MS} ms\n${await argocd.logs()}`);
    subject.revision = committed;
    const at = Object.fromEntries(MILESTONES.map((milestone) => [milestone, (seen.get(milestone) as number) - pushed])) as Record<Milestone, number>;
    const parts = Object.fromEntries(await Promise.all(PARTS.map(async (part) => [part, await slowestSince(readers[part].file, offsets[part], readers[part].read)] as const))) as Record<Part, number>;
    return { at, commitMs: pushed - started, parts, load: load() };
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** The example as both apps get it: their own namespace and a short grace period (see the module comment). */
function rewriteExample(namespace: string): (path: string, content: string) => string {
  return (path, content) => {
    if (path === 'kustomization.yaml') return content.replace(/^namespace: shop$/m, `namespace: ${namespace}`);
    if (path === 'base/statefulset.yaml' || path === 'rollout.yaml') {
      return content.replace(/^( {4}spec:\n)( {6}containers:)/m, '$1      terminationGracePeriodSeconds: 1\n$2');
    }
    return content;
  };
}

const automated = { syncPolicy: { automated: { prune: true, selfHeal: false } } };

async function createSubject(cluster: Cluster, argocd: ArgoCD, label: string, viaPlugin: boolean): Promise<Subject> {
  const namespace = await cluster.newNamespace(viaPlugin ? 'bench-driftless' : 'bench-kustomize');
  const name = namespace;
  const app = await commitExample(argocd, name, 'kustomize', rewriteExample(namespace));
  const pluginSpec = pluginApplicationSpec(app, namespace);
  // The built-in source: no `plugin`, so Argo CD detects Kustomize from kustomization.yaml.
  const source = viaPlugin ? pluginSpec['source'] : { repoURL: app.repo.url, targetRevision: app.repo.branch, path: app.path };
  await argocd.createApplication(name, { ...pluginSpec, source, ...automated });
  const ready = await argocd.waitForSyncedAndHealthy(name, app.revision, { timeoutMs: ROUND_TIMEOUT_MS });
  log(`${label}: Application ${name} in namespace ${namespace}, source type ${String(ready.status?.['sourceType'])}, Synced/Healthy at ${app.revision.slice(0, 8)}`);
  return { label, name, app, revision: app.revision };
}

function fmt(ms: number): string {
  return Number.isNaN(ms) ? '-' : `${(ms / 1000).toFixed(2)} s`;
}

function fmtMs(ms: number): string {
  return Number.isNaN(ms) ? '-' : `${ms.toFixed(0)} ms`;
}

const clusterStarted = performance.now();
const cluster = await startCluster({ rolloutsController: true, ...(options.keep ? { keepStateDir: true } : {}) });
let argocd: ArgoCD | undefined;
try {
  argocd = await startArgoCD(cluster);
  log(`# Argo CD commit → Synced benchmark, Kustomize example — ${RUNS} runs + 1 warm-up, medians; cluster and Argo CD up in ${((performance.now() - clusterStarted) / 1000).toFixed(1)} s, load ${load()}`);
  const subjects = [
    await createSubject(cluster, argocd, 'driftless', true),
    await createSubject(cluster, argocd, 'kustomize', false),
  ] as const;
  const rounds = new Map<string, Round[]>(subjects.map((subject) => [subject.label, []]));
  let hours = 100;
  for (let run = 0; run <= RUNS; run++) {
    // ABBA: who goes first alternates, so a trend in the machine's load hits both alike.
    const order = run % 2 === 0 ? subjects : ([subjects[1], subjects[0]] as const);
    for (const subject of order) {
      const result = await round(cluster, argocd, subject, hours++);
      const figures = MILESTONES.map((milestone) => `${milestone} ${fmt(result.at[milestone])}`).join(', ');
      const parts = PARTS.map((part) => `${part} ${fmtMs(result.parts[part])}`).join(', ');
      log(`${run === 0 ? 'warm-up' : `run ${run}`} ${subject.label.padEnd(9)}: ${figures}; ${parts}; commit+push ${result.commitMs.toFixed(0)} ms; load ${result.load}`);
      if (run > 0) rounds.get(subject.label)?.push(result);
    }
  }

  const [plugin, builtin] = subjects.map((subject) => rounds.get(subject.label) ?? []) as [Round[], Round[]];
  const medianOf = (results: Round[], pick: (round: Round) => number): number => median(results.map(pick));
  log('');
  log(`  ${'median of the runs'.padEnd(44)} ${'driftless'.padStart(10)} ${'kustomize'.padStart(10)} ${'ratio'.padStart(7)}`);
  const row = (label: string, pick: (round: Round) => number, format = fmt): void => {
    const a = medianOf(plugin, pick);
    const b = medianOf(builtin, pick);
    const ratio = a / b;
    log(`  ${label.padEnd(44)} ${format(a).padStart(10)} ${format(b).padStart(10)} ${(Number.isNaN(ratio) ? '-' : ratio.toFixed(2)).padStart(7)}`);
  };
  for (const milestone of MILESTONES) row(MILESTONE_LABELS[milestone], (result) => result.at[milestone]);
  for (const part of PARTS) row(PART_LABELS[part], (result) => result.parts[part], fmtMs);
  row('  (git commit + push, before t0)', (result) => result.commitMs, fmtMs);
  log('');
  log('spec (issue 8 §4): the ratio driftless / built-in Kustomize of commit → Synced, median of ≥ 5; no target figure.');
  log('Component parts: the slowest matching line of each component\'s log in the round (the render that missed the manifest cache).');
  log(`load ${load()}`);
} finally {
  await argocd?.stop();
  await cluster.stop();
  if (options.keep) log(`kept ${cluster.stateDir}`);
}
