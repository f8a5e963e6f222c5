/**
 * `npm run bench:plugin-fleet`: the plugin at fleet size (issue 23 §3). One real Argo CD (repo server, the
 * shipped Driftless sidecar with its render server, the application controller) serves N Applications
 * (default 1,000; a third each directory, Kustomize and Helm apps, all in one repository), three times over,
 * one variant after the other:
 *
 * - **driftless**: `plugin: {name: driftless-v1}`, the shipped sidecar;
 * - **native**: the same paths without a plugin, so Argo CD's own directory, Kustomize and Helm sources render
 *   them with the same pinned kustomize and helm;
 * - **floor**: a config-management plugin whose generate is `cat *.yaml` of the apps' output written out as
 *   plain files, in an argocd-cmp-server of its own: what any CMP costs (the repository streamed to a sidecar
 *   and the manifests back) with no render at all.
 *
 * For each variant: its Applications are created (16 requests at a time) and compared once, then every one
 * gets a hard refresh (`argocd.argoproj.io/refresh: hard`, which also skips the manifest cache) and the bench
 * waits until every one has taken it (the annotation gone, `status.reconciledAt` at or after the refresh).
 * Reported: the time until every one was compared, the sidecar's peak RSS (VmHWM of argocd-cmp-server and the
 * render server) and the CPU of the sidecar and the repo server over that refresh (utime + stime of the process
 * and its waited-for children: kustomize, helm, git), and the Applications whose comparison failed (a render
 * refused or timed out). Then the variant's Applications are deleted before the next. Nothing is asserted.
 *
 *   node bench/plugin-fleet.ts [--apps N] [--keep]
 */
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import type { KubeList, KubeObject } from '../test/cluster/api.ts';
import { applicationStatus, startArgoCD, type Application, type ArgoCD } from '../test/cluster/argocd.ts';
import { startCluster, type Cluster } from '../test/cluster/harness.ts';
import { waitFor } from '../test/support/wait.ts';
import { bounded, load, log, processFigures, seconds } from './support.ts';

const { values: options } = parseArgs({
  options: {
    apps: { type: 'string', default: '1000' },
    keep: { type: 'boolean', default: false },
  },
});
const APPS = Math.max(3, Number(options.apps));
const PARALLEL = 16;
const PHASE_TIMEOUT_MS = 60 * 60_000;
const APPLICATIONS = '/apis/argoproj.io/v1alpha1/namespaces/argocd/applications';
const VARIANT_LABEL = 'bench.driftless.dev/variant';
const FLOOR_PLUGIN = 'cat-floor';

type Kind = 'directory' | 'kustomize' | 'helm';
type Variant = 'driftless' | 'native' | 'floor';
const KINDS: readonly Kind[] = ['directory', 'kustomize', 'helm'];

/** The objects app `i` renders to: a Deployment reading a ConfigMap, as every kind of app writes them. */
function appObjects(name: string): KubeObject[] {
  const labels = { app: name };
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-config`, labels }, data: { GREETING: `hello from ${name}`, LEVEL: 'info' } },
    {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0', envFrom: [{ configMapRef: { name: `${name}-config` } }] }] },
        },
      },
    },
  ];
}

const yamlOf = (objects: readonly KubeObject[]): string => objects.map((object) => stringify(object)).join('---\n');

/** The files of app `i` by its kind, and its plain output for the floor. */
function appFiles(index: number): Record<string, string> {
  const name = `app-${index}`;
  const dir = `apps/${name}`;
  const [configMap, deployment] = appObjects(name) as [KubeObject, KubeObject];
  const files: Record<string, string> = { [`floor/${name}/all.yaml`]: yamlOf([configMap, deployment]) };
  switch (KINDS[index % KINDS.length] ?? 'directory') {
    case 'directory':
      files[`${dir}/configmap.yaml`] = stringify(configMap);
      files[`${dir}/deployment.yaml`] = stringify(deployment);
      break;
    case 'kustomize':
      files[`${dir}/kustomization.yaml`] = stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: ['configmap.yaml', 'deployment.yaml'] });
      files[`${dir}/configmap.yaml`] = stringify(configMap);
      files[`${dir}/deployment.yaml`] = stringify(deployment);
      break;
    case 'helm':
      files[`${dir}/Chart.yaml`] = stringify({ apiVersion: 'v2', name, version: '1.0.0' });
      files[`${dir}/values.yaml`] = stringify({ greeting: `hello from ${name}` });
      files[`${dir}/templates/configmap.yaml`] = stringify(configMap).replace(`hello from ${name}`, '{{ .Values.greeting }}');
      files[`${dir}/templates/deployment.yaml`] = stringify(deployment);
      break;
  }
  return files;
}

/** The Application of app `index` in `variant`. */
function application(variant: Variant, index: number, repoURL: string): KubeObject {
  const name = `app-${index}`;
  const path = variant === 'floor' ? `floor/${name}` : `apps/${name}`;
  const plugin = variant === 'driftless' ? { plugin: { name: 'driftless-v1' } } : variant === 'floor' ? { plugin: { name: `${FLOOR_PLUGIN}-v1` } } : {};
  return {
    apiVersion: 'argoproj.io/v1alpha1', kind: 'Application',
    metadata: { name: `${variant[0] ?? 'x'}-${index}`, namespace: 'argocd', labels: { [VARIANT_LABEL]: variant } },
    spec: { project: 'default', source: { repoURL, targetRevision: 'main', path, ...plugin }, destination: { server: 'https://kubernetes.default.svc', namespace: `fleet-${variant}` } },
  };
}

/** The variant's Applications as the API server has them now. */
async function variantApps(cluster: Cluster, variant: Variant): Promise<Application[]> {
  return (await cluster.admin.request<KubeList>('GET', `${APPLICATIONS}?labelSelector=${encodeURIComponent(`${VARIANT_LABEL}=${variant}`)}`)).items;
}

/** Compared at or after `since` (epoch ms, whole seconds as Argo CD writes them), with no refresh pending. */
function comparedSince(app: Application, since: number): boolean {
  const status = applicationStatus(app);
  const stamp = (status as { reconciledAt?: unknown }).reconciledAt;
  const reconciledAt = typeof stamp === 'string' ? Date.parse(stamp) : Number.NaN;
  return app.metadata?.annotations?.['argocd.argoproj.io/refresh'] === undefined && status.sync?.status !== undefined && reconciledAt >= since;
}

/** Applications whose last comparison failed (a render refused, timed out or errored). */
function failedComparisons(apps: readonly Application[]): string[] {
  return apps.filter((app) => (applicationStatus(app).conditions ?? []).some((c) => c.type === 'ComparisonError')).map((app) => String(app.metadata?.name));
}

/** CPU (utime + stime of the process and the children it waited for) in ms, and VmHWM in MB, of a pid. */
async function processReading(pid: number | undefined): Promise<{ cpuMs: number; peakMb: number }> {
  if (pid === undefined) return { cpuMs: Number.NaN, peakMb: Number.NaN };
  const { cpuMs, peakMb } = await processFigures(pid, { children: true });
  return { cpuMs, peakMb };
}

/** The processes whose readings a variant reports: its sidecar (none for native) and the repo server. */
function processesOf(argocd: ArgoCD, variant: Variant): { sidecar: (number | undefined)[]; repoServer: number | undefined } {
  const sidecar = variant === 'driftless'
    ? [argocd.pidOf('argocd-cmp-server'), argocd.pidOf('driftless-render-server')]
    : variant === 'floor' ? [argocd.pidOf(`argocd-cmp-server-${FLOOR_PLUGIN}`)] : [];
  return { sidecar, repoServer: argocd.pidOf('argocd-repo-server') };
}

/** Figures of one variant. */
interface VariantFigures {
  readonly variant: Variant;
  readonly createdS: number;
  readonly firstCompareS: number;
  readonly refreshS: number;
  readonly sidecarPeakMb: number;
  readonly sidecarCpuS: number;
  readonly repoServerCpuS: number;
  readonly failed: readonly string[];
}

async function runVariant(cluster: Cluster, argocd: ArgoCD, variant: Variant, repoURL: string): Promise<VariantFigures> {
  const begun = performance.now();
  await bounded(APPS, PARALLEL, (index) => cluster.admin.request('POST', APPLICATIONS, application(variant, index, repoURL)));
  const createdS = seconds(begun);
  await waitFor(`${variant}: every Application compared once`, async () => (await variantApps(cluster, variant)).every((app) => comparedSince(app, 0)), { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 2_000 });
  const firstCompareS = seconds(begun);
  log(`${variant}: ${APPS} Applications created in ${createdS.toFixed(1)} s, every one compared after ${firstCompareS.toFixed(1)} s (load ${load()})`);

  const pids = processesOf(argocd, variant);
  const sidecarBefore = await Promise.all(pids.sidecar.map((pid) => processReading(pid)));
  const repoBefore = await processReading(pids.repoServer);
  // reconciledAt has whole seconds: a refresh counts from the second it was asked in.
  const since = Math.floor(Date.now() / 1000) * 1000;
  const refreshing = performance.now();
  await bounded(APPS, PARALLEL, (index) => cluster.admin.request('PATCH', `${APPLICATIONS}/${variant[0] ?? 'x'}-${index}`, { metadata: { annotations: { 'argocd.argoproj.io/refresh': 'hard' } } }, { contentType: 'application/merge-patch+json' }));
  const apps = await waitFor(`${variant}: every Application compared after its hard refresh`, async () => {
    const now = await variantApps(cluster, variant);
    return now.every((app) => comparedSince(app, since)) ? now : undefined;
  }, { timeoutMs: PHASE_TIMEOUT_MS, intervalMs: 1_000 });
  const refreshS = seconds(refreshing);
  const sidecarAfter = await Promise.all(pids.sidecar.map((pid) => processReading(pid)));
  const repoAfter = await processReading(pids.repoServer);
  const failed = failedComparisons(apps);
  const figures: VariantFigures = {
    variant, createdS, firstCompareS, refreshS, failed,
    sidecarPeakMb: sidecarAfter.reduce((sum, reading) => sum + reading.peakMb, 0),
    sidecarCpuS: sidecarAfter.reduce((sum, reading, index) => sum + reading.cpuMs - (sidecarBefore[index]?.cpuMs ?? 0), 0) / 1000,
    repoServerCpuS: (repoAfter.cpuMs - repoBefore.cpuMs) / 1000,
  };
  log(`${variant}: hard refresh of ${APPS} → every one compared in ${refreshS.toFixed(1)} s; sidecar peak ${figures.sidecarPeakMb.toFixed(1)} MB, CPU ${figures.sidecarCpuS.toFixed(1)} s; repo server CPU ${figures.repoServerCpuS.toFixed(1)} s; comparison errors ${failed.length} (load ${load()})`);
  await bounded(APPS, PARALLEL, (index) => cluster.admin.send('DELETE', `${APPLICATIONS}/${variant[0] ?? 'x'}-${index}`));
  await waitFor(`${variant}: its Applications gone`, async () => (await variantApps(cluster, variant)).length === 0, { timeoutMs: 300_000, intervalMs: 1_000 });
  return figures;
}

function report(rows: readonly VariantFigures[]): void {
  const of = (variant: Variant): VariantFigures | undefined => rows.find((row) => row.variant === variant);
  log(`\n## ${APPS} Applications (${Math.ceil(APPS / 3)} directory, ${Math.ceil((APPS - 1) / 3)} Kustomize, ${Math.ceil((APPS - 2) / 3)} Helm), one repo server; load ${load()}\n`);
  log('| variant | created, all compared once | hard refresh → all compared | sidecar peak RSS | sidecar CPU | repo server CPU | comparison errors |');
  log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const row of rows) {
    const sidecar = row.variant === 'native' ? '-' : `${row.sidecarPeakMb.toFixed(1)} MB`;
    const sidecarCpu = row.variant === 'native' ? '-' : `${row.sidecarCpuS.toFixed(1)} s`;
    log(`| ${row.variant} | ${row.firstCompareS.toFixed(1)} s | ${row.refreshS.toFixed(1)} s | ${sidecar} | ${sidecarCpu} | ${row.repoServerCpuS.toFixed(1)} s | ${row.failed.length}${row.failed.length === 0 ? '' : ` (${row.failed.slice(0, 5).join(', ')}…)`} |`);
  }
  const driftless = of('driftless');
  const floor = of('floor');
  const native = of('native');
  if (driftless !== undefined && floor !== undefined && native !== undefined) {
    log(`\nDriftless ÷ floor (hard refresh): ${(driftless.refreshS / floor.refreshS).toFixed(2)} (goal ≤ 1.2); Driftless ÷ native: ${(driftless.refreshS / native.refreshS).toFixed(2)}`);
  }
}

async function main(): Promise<void> {
  log(`# driftless bench:plugin-fleet, ${APPS} Applications a variant — load ${load()}`);
  const begun = performance.now();
  const cluster = await startCluster(options.keep ? { keepStateDir: true } : {});
  let argocd: ArgoCD | undefined;
  try {
    argocd = await startArgoCD(cluster, { extraPlugins: [{ name: FLOOR_PLUGIN, generate: ['sh', '-c', 'cat *.yaml'] }] });
    for (const variant of ['driftless', 'native', 'floor'] as const) await cluster.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `fleet-${variant}` } });
    const repo = await argocd.createRepo('fleet');
    const files: Record<string, string> = {};
    for (let index = 0; index < APPS; index++) Object.assign(files, appFiles(index));
    await repo.commit(files, `${APPS} apps`);
    log(`cluster, Argo CD and a repository of ${Object.keys(files).length} files up in ${seconds(begun).toFixed(1)} s (load ${load()})`);
    const rows: VariantFigures[] = [];
    for (const variant of ['driftless', 'native', 'floor'] as const) rows.push(await runVariant(cluster, argocd, variant, repo.url));
    report(rows);
  } finally {
    await argocd?.stop();
    await cluster.stop();
  }
}

await main();
