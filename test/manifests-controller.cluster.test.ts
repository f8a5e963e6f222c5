/**
 * manifests/controller and charts/driftless: the kustomize base and the namespaced
 * overlay build with the real kustomize, the chart lints and renders with the real
 * helm, every RBAC rule shipped equals the verb table documented in
 * manifests/controller/README.md, the rendered objects are accepted by the real API
 * server (server-side dry-run), and the controller run as the shipped ServiceAccount
 * with exactly the shipped ClusterRole restarts a Deployment for an out-of-band Secret
 * rotation — and does not once one verb is taken away.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep, posix } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { findControllerFlag } from '../controller/config/flags.ts';
import { parseControllerConfig } from '../controller/config/parse.ts';
import type { KubeObject } from './cluster/api.ts';
import type { Cluster } from './cluster/harness.ts';
import { create, useCluster, waitForDeploymentRollout } from './cluster/testing.ts';
import { waitFor } from './support/wait.ts';
import { COLLECTIONS, createExternalSecret, read, rotateSecret, uids, waitForEvent, waitForReadyPods, workload } from './controller/support/fixtures.ts';
import { startControllerProcess } from './controller/support/process.ts';
import { ensureTools } from './tools.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const manifests = join(root, 'manifests', 'controller');
const chart = join(root, 'charts', 'driftless');

type Json = Record<string, any>;

const fixture = useCluster();

async function kustomizeBuild(dir: string): Promise<Json[]> {
  const { kustomize } = await ensureTools();
  const { stdout } = await run(kustomize, ['build', dir], { maxBuffer: 16 << 20 });
  return parseAllDocuments(stdout).map((d) => d.toJS() as Json);
}

async function helmTemplate(args: readonly string[] = []): Promise<Json[]> {
  const { helm } = await ensureTools();
  const { stdout } = await run(helm, ['template', 'driftless', chart, '--namespace', 'driftless', ...args], { maxBuffer: 16 << 20 });
  return parseAllDocuments(stdout).map((d) => d.toJS() as Json).filter((d) => d !== null);
}

/** Runs helm and returns its failure output (it must fail). */
async function helmTemplateFails(args: readonly string[]): Promise<string> {
  const { helm } = await ensureTools();
  const result = await run(helm, ['template', 'driftless', chart, '--namespace', 'driftless', ...args]).then(
    () => undefined,
    (error: unknown) => String((error as { stderr?: string }).stderr),
  );
  assert.ok(result !== undefined, `helm template ${args.join(' ')} fails`);
  return result;
}

function only(documents: readonly Json[], kind: string, name?: string, namespace?: string): Json {
  const found = documents.filter((d) => d['kind'] === kind && (name === undefined || d['metadata'].name === name) && (namespace === undefined || d['metadata'].namespace === namespace));
  assert.equal(found.length, 1, `exactly one ${kind} ${namespace ?? ''}/${name ?? ''}`);
  return found[0] as Json;
}

/** One grant per (group, resource, verb), sorted: the unit the docs and the rules are compared in. */
function grants(rules: readonly Json[]): string[] {
  const out = new Set<string>();
  for (const rule of rules) {
    assert.equal(rule['resourceNames'], undefined, 'no resourceNames');
    for (const group of rule['apiGroups'] as string[]) {
      for (const resource of rule['resources'] as string[]) for (const verb of rule['verbs'] as string[]) out.add(`${group}|${resource}|${verb}`);
    }
  }
  return [...out].sort();
}

/** The grants of a markdown table `| group | resources | verbs |` (comma-separated resources and verbs). */
function documentedGrants(table: string): string[] {
  const out = new Set<string>();
  for (const line of table.split('\n')) {
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    if (cells.length !== 3 || !cells[0]?.startsWith('`')) continue;
    const group = (cells[0] ?? '').replaceAll('`', '').replaceAll('"', '');
    for (const resource of (cells[1] ?? '').split(',')) for (const verb of (cells[2] ?? '').split(',')) out.add(`${group}|${resource.trim()}|${verb.trim()}`);
  }
  return [...out].sort();
}

async function verbTable(): Promise<string[]> {
  const text = await readFile(join(manifests, 'README.md'), 'utf8');
  const match = /<!-- verbs: begin -->\n([\s\S]*?)<!-- verbs: end -->/.exec(text);
  assert.ok(match, 'manifests/controller/README.md has the verb table between its markers');
  const documented = documentedGrants(match[1] as string);
  assert.ok(documented.length >= 20, 'the table parses');
  return documented;
}

function container(deployment: Json): Json {
  const containers = deployment['spec'].template.spec.containers as Json[];
  assert.equal(containers.length, 1);
  return containers[0] as Json;
}

/** The hardening both the kustomize base and the chart must ship. */
function assertHardenedController(deployment: Json, serviceAccount: Json): void {
  const pod = deployment['spec'].template.spec as Json;
  const c = container(deployment);
  assert.deepEqual(c['command'], ['driftless', 'controller']);
  assert.ok((c['args'] as string[]).includes('--leader-elect'));
  assert.equal(deployment['spec'].replicas, 2);
  const port = (c['ports'] as Json[]).find((p) => p['name'] === 'http') as Json;
  assert.equal(port['containerPort'], 8080);
  assert.deepEqual(c['livenessProbe'].httpGet, { path: '/healthz', port: 'http' });
  assert.deepEqual(c['readinessProbe'].httpGet, { path: '/readyz', port: 'http' });
  assert.equal(c['resources'].requests.memory, '192Mi');
  assert.equal(c['resources'].limits.memory, '384Mi');
  assert.equal(pod['securityContext'].runAsNonRoot, true);
  assert.equal(pod['securityContext'].runAsUser, 999);
  assert.equal(pod['securityContext'].seccompProfile.type, 'RuntimeDefault');
  assert.equal(c['securityContext'].readOnlyRootFilesystem, true);
  assert.equal(c['securityContext'].allowPrivilegeEscalation, false);
  assert.deepEqual(c['securityContext'].capabilities, { drop: ['ALL'] });
  assert.equal(serviceAccount['automountServiceAccountToken'], false, 'the account does not mount its token everywhere');
  assert.equal(pod['automountServiceAccountToken'], true, 'only the controller pod mounts it');
  assert.equal(pod['serviceAccountName'], serviceAccount['metadata'].name);
  // Every DRIFTLESS_* variable set is one the controller reads.
  for (const e of c['env'] as Json[]) if (String(e['name']).startsWith('DRIFTLESS_')) assert.ok(findControllerFlag(String(e['name']).slice(10).toLowerCase().replaceAll('_', '-')), `${e['name']} is read`);
  for (const arg of c['args'] as string[]) {
    const name = (/^--([a-z-]+)/.exec(arg) ?? [])[1] as string;
    // Issue 9's flags, added by others: --leader-elect, --http-addr, --dry-run.
    assert.ok(findControllerFlag(name) !== undefined || ['leader-elect', 'http-addr', 'dry-run'].includes(name), `${arg} is a controller flag`);
  }
}

describe('manifests/controller (kustomize)', () => {
  it('the base: hardened Deployment with leader election and probes, a metrics Service, and exactly the documented ClusterRole', async () => {
    const documents = await kustomizeBuild(manifests);
    assert.deepEqual(documents.map((d) => String(d['kind'])).sort(), ['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'Namespace', 'PodDisruptionBudget', 'Role', 'Role', 'RoleBinding', 'RoleBinding', 'Service', 'ServiceAccount']);
    const deployment = only(documents, 'Deployment');
    const serviceAccount = only(documents, 'ServiceAccount');
    assertHardenedController(deployment, serviceAccount);
    assertWriteBackRole(documents, 'driftless-controller-write-back', 'driftless-controller', 'driftless');
    assert.ok(documents.filter((d) => d['kind'] !== 'Namespace' && !d['kind'].startsWith('Cluster') && d['metadata'].name !== 'driftless-controller-write-back').every((d) => d['metadata'].namespace === 'driftless'));
    const service = only(documents, 'Service');
    assert.deepEqual(service['spec'].ports, [{ name: 'metrics', port: 8080, targetPort: 'http', protocol: 'TCP' }]);
    assert.deepEqual(service['spec'].selector, deployment['spec'].selector.matchLabels);
    assert.deepEqual(grants(only(documents, 'ClusterRole')['rules']), await verbTable());
    const binding = only(documents, 'ClusterRoleBinding');
    assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: serviceAccount['metadata'].name, namespace: 'driftless' }]);
    assert.equal(binding['roleRef'].name, only(documents, 'ClusterRole')['metadata'].name);
    const lease = only(documents, 'Role', 'driftless-leader-election');
    assert.deepEqual(grants(lease['rules']), [
      '|configmaps|create', '|configmaps|delete', '|configmaps|list', '|configmaps|update', '|configmaps|watch',
      'coordination.k8s.io|leases|create', 'coordination.k8s.io|leases|get', 'coordination.k8s.io|leases|update',
    ].sort());
    assert.equal(only(documents, 'RoleBinding', 'driftless-leader-election')['roleRef'].name, lease['metadata'].name);
  });

  it('the install page\'s RBAC table (docs/install.md) agrees with the verb table', async () => {
    const text = await readFile(join(root, 'docs', 'install.md'), 'utf8');
    const start = text.indexOf('## Permissions (RBAC)');
    assert.ok(start > 0);
    assert.deepEqual(documentedGrants(text.slice(start, text.indexOf('\n\n(', start))), await verbTable());
  });

  it('the namespaced overlay: nothing cluster-wide, the same rules in a Role per watched namespace, --namespaces from the same list', async () => {
    const documents = await kustomizeBuild(join(manifests, 'namespaced'));
    assert.ok(!documents.some((d) => d['kind'].startsWith('Cluster')), 'no ClusterRole or ClusterRoleBinding');
    assertNamespacedInstall(documents, await verbTable(), ['default']);
    assertWriteBackRole(documents, 'driftless-controller-write-back', 'driftless-controller', 'driftless');
    assert.deepEqual(grants(only(documents, 'Role', 'driftless-controller-applications', 'argocd')['rules']), ['argoproj.io|applications|list', 'argoproj.io|applications|watch', 'argoproj.io|appprojects|list', 'argoproj.io|appprojects|watch']);
  });

  it('the README\'s recipe for other namespaces builds: web and payments, not default', async () => {
    const work = await mkdtemp(join(tmpdir(), 'driftless-namespaced-'));
    try {
      // Relative to the kustomization that names it (an extra `..` only works when it hits `/`).
      const path = (dir: string, from = work): string => relative(from, dir).split(sep).join(posix.sep);
      for (const ns of ['web', 'payments']) {
        await mkdir(join(work, ns));
        await writeFile(join(work, ns, 'kustomization.yaml'), `namespace: ${ns}\nresources: [${JSON.stringify(path(join(manifests, 'namespaced', 'role'), join(work, ns)))}]\n`);
      }
      const readme = await readFile(join(manifests, 'README.md'), 'utf8');
      const recipe = /```yaml\n# my-driftless\/kustomization.yaml\n([\s\S]*?)```/.exec(readme);
      assert.ok(recipe, 'the README has the recipe');
      const remote = 'https://github.com/<you>/driftless//manifests/controller/namespaced/common?ref=<release>';
      assert.ok((recipe[1] as string).includes(`  - ${remote}\n`), 'the recipe uses namespaced/common');
      const text = (recipe[1] as string).replace(remote, path(join(manifests, 'namespaced', 'common')));
      await writeFile(join(work, 'kustomization.yaml'), text);
      const documents = await kustomizeBuild(work);
      assertNamespacedInstall(documents, await verbTable(), ['payments', 'web']);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});

/** Argo CD's two rows of the verb table: what a controller reads of Argo CD where Argo CD runs. */
const ARGO_CD_GRANTS = ['argoproj.io|applications|list', 'argoproj.io|applications|watch', 'argoproj.io|appprojects|list', 'argoproj.io|appprojects|watch'];

/** The verb table without Argo CD's rows: what a controller needs in a cluster Argo CD deploys to but does not run in. */
async function spokeGrants(): Promise<string[]> {
  return (await verbTable()).filter((grant) => !ARGO_CD_GRANTS.includes(grant));
}

describe('hub mode and the spoke option (kustomize): docs/hub.md', () => {
  it('hub mode: the flag, and a Role in Argo CD\'s namespace for what the hub reads there (cluster Secrets, argocd-cm, Applications, AppProjects) and its refusal Events', async () => {
    const documents = await kustomizeBuild(join(manifests, 'hub'));
    assert.ok(container(only(documents, 'Deployment'))['args'].includes('--argocd-clusters'));
    assertHardenedController(only(documents, 'Deployment'), only(documents, 'ServiceAccount'));
    const role = only(documents, 'Role', 'driftless-controller-hub', 'argocd');
    const rules = role['rules'] as Json[];
    assert.deepEqual(rules.map((r) => r['resourceNames'] ?? null), [null, ['argocd-cm'], null, null], 'argocd-cm by name; the cluster Secrets by a label-selected list');
    assert.deepEqual(grants(rules.map((rule) => Object.fromEntries(Object.entries(rule).filter(([key]) => key !== 'resourceNames')))), [
      '|configmaps|list', '|configmaps|watch', '|events|create', '|secrets|list', '|secrets|watch', ...ARGO_CD_GRANTS,
    ].sort());
    assert.deepEqual(only(documents, 'RoleBinding', 'driftless-controller-hub', 'argocd')['subjects'], [{ kind: 'ServiceAccount', name: 'driftless-controller', namespace: 'driftless' }]);
  });

  it('hub mode\'s minimum spoke RBAC: the verb table without Argo CD\'s rows, bound to the cluster Secret\'s identity', async () => {
    const documents = await kustomizeBuild(join(manifests, 'hub', 'spoke'));
    assert.deepEqual(documents.map((d) => String(d['kind'])).sort(), ['ClusterRole', 'ClusterRoleBinding']);
    assert.deepEqual(grants(only(documents, 'ClusterRole', 'driftless-spoke')['rules']), await spokeGrants());
    assert.deepEqual(only(documents, 'ClusterRoleBinding', 'driftless-spoke')['subjects'], [{ kind: 'ServiceAccount', name: 'argocd-manager', namespace: 'kube-system' }]);
    const selector = parseAllDocuments(await readFile(join(manifests, 'hub', 'spoke', 'namespaces.yaml'), 'utf8')).map((d) => d.toJS() as Json);
    assert.deepEqual(grants(only(selector, 'ClusterRole')['rules']), ['|namespaces|list', '|namespaces|watch'], 'the optional namespaces rule for --namespace-selector');
  });

  it('the spoke option: the hub kubeconfig mounted and named by flag, the destination from a ConfigMap, nothing of Argo CD granted in the spoke; the result parses', async () => {
    const documents = await kustomizeBuild(join(manifests, 'spoke'));
    const deployment = only(documents, 'Deployment');
    assertHardenedController(deployment, only(documents, 'ServiceAccount'));
    const c = container(deployment);
    assert.ok((c['args'] as string[]).includes('--argocd-kubeconfig=/etc/driftless/argocd/kubeconfig'));
    assert.deepEqual((c['volumeMounts'] as Json[]).find((m) => m['name'] === 'argocd-kubeconfig'), { name: 'argocd-kubeconfig', mountPath: '/etc/driftless/argocd', readOnly: true });
    assert.deepEqual((deployment['spec'].template.spec.volumes as Json[]).find((v) => v['name'] === 'argocd-kubeconfig')?.['secret'], { secretName: 'driftless-argocd-kubeconfig', optional: false });
    const configMap = only(documents, 'ConfigMap', c['envFrom'][0].configMapRef.name, 'driftless');
    for (const key of Object.keys(configMap['data'])) assert.ok(findControllerFlag(key.slice(10).toLowerCase().replaceAll('_', '-')), `${key} is read`);
    assert.deepEqual(grants(only(documents, 'ClusterRole')['rules']), await spokeGrants(), 'the base\'s rules but Argo CD\'s');
    assert.ok(!documents.some((d) => d['metadata'].namespace === 'argocd'), 'nothing in Argo CD\'s namespace here: the write-back reads in the hub');
    // The Deployment's flags and the ConfigMap's variables, as the controller reads them: accepted, and the destination set.
    const config = parseControllerConfig((c['args'] as string[]).map((arg) => arg.replace(/^--hash-key-file=.*/, '--hash-key-file=k')), configMap['data'] as Record<string, string>);
    assert.ok(config.command === 'run');
    assert.equal(config.argocdKubeconfig, '/etc/driftless/argocd/kubeconfig');
    assert.equal(config.argocdDestinationServer, 'https://spoke.example.com:6443');
  });

  it('the spoke option\'s hub RBAC: a read-only ServiceAccount in Argo CD\'s namespace (Applications, AppProjects; repository Secrets for git), nothing cluster-wide', async () => {
    const documents = await kustomizeBuild(join(manifests, 'spoke', 'hub'));
    assert.ok(documents.every((d) => d['metadata'].namespace === 'argocd'), 'all in Argo CD\'s namespace');
    assert.deepEqual(grants(only(documents, 'Role', 'driftless-spoke', 'argocd')['rules']), ARGO_CD_GRANTS);
    assert.deepEqual(only(documents, 'RoleBinding', 'driftless-spoke', 'argocd')['subjects'], [{ kind: 'ServiceAccount', name: 'driftless-spoke', namespace: 'argocd' }]);
    assertWriteBackRole(documents, 'driftless-spoke-write-back', 'driftless-spoke', 'argocd');
    assert.equal(only(documents, 'Secret', 'driftless-spoke-token', 'argocd')['metadata'].annotations['kubernetes.io/service-account.name'], 'driftless-spoke');
  });
});

/**
 * The write-back's Role: in Argo CD's namespace only, Secrets listed (every request selected by label or
 * name), the known-hosts ConfigMap read by name, and nothing else; bound to the controller's account.
 */
function assertWriteBackRole(documents: readonly Json[], name: string, account: string, accountNamespace: string): void {
  const role = only(documents, 'Role', name, 'argocd');
  const rules = role['rules'] as Json[];
  assert.deepEqual(rules.map((r) => r['resourceNames'] ?? null), [null, ['argocd-ssh-known-hosts-cm']], 'Secrets listed (selected per request), the known-hosts ConfigMap by name');
  assert.deepEqual(grants(rules.map((rule) => Object.fromEntries(Object.entries(rule).filter(([key]) => key !== 'resourceNames')))), ['|configmaps|get', '|secrets|list']);
  const binding = only(documents, 'RoleBinding', name, 'argocd');
  assert.equal(binding['roleRef'].name, name);
  assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: account, namespace: accountNamespace }]);
}

function assertNamespacedInstall(documents: readonly Json[], documented: readonly string[], watched: readonly string[]): void {
  const roles = documents.filter((d) => d['kind'] === 'Role' && d['metadata'].name === 'driftless-controller');
  assert.deepEqual(roles.map((r) => String(r['metadata'].namespace)).sort(), [...watched].sort());
  for (const role of roles) {
    assert.deepEqual(grants(role['rules']), documented, `the Role in ${role['metadata'].namespace}`);
    const binding = only(documents, 'RoleBinding', 'driftless-controller', role['metadata'].namespace);
    assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: 'driftless-controller', namespace: 'driftless' }]);
  }
  const deployment = only(documents, 'Deployment');
  const env = (container(deployment)['env'] as Json[]).find((e) => e['name'] === 'DRIFTLESS_NAMESPACES') as Json;
  const ref = env['valueFrom'].configMapKeyRef as Json;
  const configMap = only(documents, 'ConfigMap', ref['name'], 'driftless');
  assert.deepEqual(String(configMap['data'][ref['key']]).split(',').sort(), [...watched].sort(), '--namespaces names exactly the namespaces with a Role');
}

describe('charts/driftless (helm)', () => {
  it('lints, by default and with options', async () => {
    const { helm } = await ensureTools();
    await run(helm, ['lint', '--strict', chart]);
    await run(helm, ['lint', '--strict', chart, '--set', 'watchGlobally=false', '--set', 'namespaces={a,b}', '--set', 'namespaceSelector=team=web', '--set', 'argocdPlugin.enabled=true', '--set', 'serviceMonitor.enabled=true']);
  });

  it('renders by default what the kustomize base ships: the same hardened Deployment and exactly the documented ClusterRole', async () => {
    const documents = await helmTemplate();
    assertHardenedController(only(documents, 'Deployment'), only(documents, 'ServiceAccount'));
    assert.deepEqual(grants(only(documents, 'ClusterRole')['rules']), await verbTable());
    assert.deepEqual(only(documents, 'Service')['spec'].ports[0].name, 'metrics');
    assert.ok(!documents.some((d) => d['kind'] === 'Secret'), 'no Secret unless asked for');
    const args = container(only(documents, 'Deployment'))['args'] as string[];
    assert.deepEqual(args, ['--leader-elect', '--mode=annotated', '--restart-strategy=evict', '--restart-progress-deadline=10m', '--max-clock-skew=2s', '--log-level=info', '--hash-key-file=/etc/driftless/hash-key/key']);
  });

  it('maps Reloader-named values: watchGlobally=false gives a Role per namespace and --namespaces; namespaceSelector adds only namespaces list/watch', async () => {
    const documents = await helmTemplate(['--set', 'watchGlobally=false', '--set', 'namespaces={b,a}', '--set', 'namespaceSelector=team in (web\\,api)', '--set', 'ignoreNamespaces=kube-system', '--set', 'autoReloadAll=true']);
    const documented = await verbTable();
    const roles = documents.filter((d) => d['kind'] === 'Role' && d['metadata'].name === 'driftless');
    assert.deepEqual(roles.map((r) => String(r['metadata'].namespace)).sort(), ['a', 'b']);
    for (const role of roles) assert.deepEqual(grants(role['rules']), documented);
    assert.deepEqual(grants(only(documents, 'ClusterRole')['rules']), ['|namespaces|list', '|namespaces|watch']);
    const args = container(only(documents, 'Deployment'))['args'] as string[];
    for (const arg of ['--namespaces=a,b', '--namespace-selector=team in (web,api)', '--ignore-namespaces=kube-system', '--mode=all']) assert.ok(args.includes(arg), arg);
    // Without a list, as Reloader: the release namespace.
    const own = await helmTemplate(['--set', 'watchGlobally=false']);
    assert.ok(container(only(own, 'Deployment'))['args'].includes('--namespaces=driftless'));
    assert.ok(!own.some((d) => d['kind'].startsWith('Cluster')));
  });

  it('refuses what cannot work: unknown (Reloader-style) values, several replicas without HA, a hash key Secret without a key', async () => {
    assert.match(await helmTemplateFails(['--set', 'reloader.watchGlobally=false']), /additional properties 'reloader' not allowed/);
    assert.match(await helmTemplateFails(['--set', 'enableHA=false']), /replicaCount > 1 needs enableHA/);
    assert.match(await helmTemplateFails(['--set', 'hashKey.create=true']), /hashKey.create needs hashKey.value/);
    assert.match(await helmTemplateFails(['--set', 'restartStrategy=env-vars']), /restartStrategy/);
    const single = await helmTemplate(['--set', 'enableHA=false', '--set', 'replicaCount=1']);
    assert.ok(!container(only(single, 'Deployment'))['args'].includes('--leader-elect'));
    assert.ok(!single.some((d) => d['kind'] === 'PodDisruptionBudget' || (d['kind'] === 'Role' && String(d['metadata'].name).endsWith('-leader-election'))));
    assert.deepEqual(grants(single.find((d) => d['kind'] === 'Role' && String(d['metadata'].name).endsWith('-records'))?.['rules']), ['|configmaps|create', '|configmaps|delete', '|configmaps|list', '|configmaps|update', '|configmaps|watch'], 'the restart records need their Role without HA too');
  });

  it('writeBack.enabled adds the write-back Role in Argo CD\'s namespace only, and its flags; off by default', async () => {
    assert.ok(!(await helmTemplate()).some((d) => d['metadata'].name === 'driftless-write-back'), 'no write-back Role by default');
    const documents = await helmTemplate(['--set', 'writeBack.enabled=true', '--set', 'writeBack.namespaces={shop,blog}', '--set', 'writeBack.applications={argocd/web}', '--set', 'writeBack.credentialsSecret=git-push', '--set', 'argocdSyncWindows=false']);
    assertWriteBackRole(documents, 'driftless-write-back', 'driftless', 'driftless');
    const args = container(only(documents, 'Deployment'))['args'] as string[];
    for (const arg of ['--write-back-namespaces=shop,blog', '--write-back-applications=argocd/web', '--write-back-credentials-secret=git-push', '--write-back-batch-window=5s', '--write-back-fallback-after=10m', '--write-back-fallback=restart', '--argocd-sync-windows=false']) assert.ok(args.includes(arg), arg);
    assert.match(await helmTemplateFails(['--set', 'writeBack.token=x']), /additional properties 'token' not allowed/);
    assert.match(await helmTemplateFails(['--set', 'writeBack.fallback=evict']), /fallback/);
  });

  it('renders the hash key Secrets and the plugin\'s ConfigMap, which holds exactly manifests/plugin/plugin.yaml', async () => {
    const documents = await helmTemplate(['--set', 'hashKey.create=true', '--set', 'hashKey.value=k1', '--set', 'argocdPlugin.enabled=true', '--set', 'argocdPlugin.hashKey.create=true', '--set', 'argocdPlugin.hashKey.value=k2']);
    assert.equal(only(documents, 'Secret', 'driftless-hash-key', 'driftless')['data'].key, Buffer.from('k1').toString('base64'));
    assert.equal(only(documents, 'Secret', 'driftless-hash-key', 'argocd')['data'].key, Buffer.from('k2').toString('base64'));
    const pluginYaml = await readFile(join(root, 'manifests', 'plugin', 'plugin.yaml'), 'utf8');
    assert.equal(await readFile(join(chart, 'files', 'plugin.yaml'), 'utf8'), pluginYaml, 'the chart\'s copy is current');
    assert.equal(only(documents, 'ConfigMap', 'driftless-plugin', 'argocd')['data']['plugin.yaml'], pluginYaml);
  });

  it('argo-cd-values.yaml adds the same sidecar and volumes as the Kustomize component', async () => {
    const values = parse(await readFile(join(chart, 'argo-cd-values.yaml'), 'utf8')) as Json;
    const patch = parse(await readFile(join(root, 'manifests', 'plugin', 'argocd-repo-server.patch.yaml'), 'utf8')) as Json;
    assert.deepEqual(values['repoServer'].extraContainers, patch['spec'].template.spec.containers);
    assert.deepEqual(values['repoServer'].volumes, patch['spec'].template.spec.volumes);
  });
});

describe('charts/driftless (helm): hub mode and the spoke option', () => {
  it('argocdClusters (hub mode): the flag and the hub\'s Role in Argo CD\'s namespace, as manifests/controller/hub; off by default', async () => {
    assert.ok(!(await helmTemplate()).some((d) => String(d['metadata'].name).endsWith('-hub')), 'no hub Role by default');
    const documents = await helmTemplate(['--set', 'argocdClusters=true']);
    assert.ok(container(only(documents, 'Deployment'))['args'].includes('--argocd-clusters'));
    const kustomized = only(await kustomizeBuild(join(manifests, 'hub')), 'Role', 'driftless-controller-hub', 'argocd');
    assert.deepEqual(only(documents, 'Role', 'driftless-hub', 'argocd')['rules'], kustomized['rules'], 'the same rules as the Kustomize overlay');
    assert.deepEqual(only(documents, 'RoleBinding', 'driftless-hub', 'argocd')['subjects'], [{ kind: 'ServiceAccount', name: 'driftless', namespace: 'driftless' }]);
    const moved = container(only(await helmTemplate(['--set', 'argocdClusters=true', '--set', 'argocdPlugin.namespace=gitops']), 'Deployment'))['args'] as string[];
    assert.ok(moved.includes('--argocd-namespace=gitops'), 'the controller reads Argo CD where the Role is');
  });

  it('argocdHub (the spoke option): the hub kubeconfig mounted and named by flag, the destination, nothing of Argo CD granted here; refused without a destination or with hub mode', async () => {
    const documents = await helmTemplate(['--set', 'argocdHub.enabled=true', '--set', 'argocdHub.destinationServer=https://10.0.0.1:6443', '--set', 'argocdHub.destinationName=prod', '--set', 'writeBack.enabled=true']);
    const deployment = only(documents, 'Deployment');
    const c = container(deployment);
    for (const arg of ['--argocd-kubeconfig=/etc/driftless/argocd/kubeconfig', '--argocd-destination-server=https://10.0.0.1:6443', '--argocd-destination-name=prod']) assert.ok((c['args'] as string[]).includes(arg), arg);
    assert.deepEqual((c['volumeMounts'] as Json[]).find((m) => m['name'] === 'argocd-kubeconfig'), { name: 'argocd-kubeconfig', mountPath: '/etc/driftless/argocd', readOnly: true });
    assert.deepEqual((deployment['spec'].template.spec.volumes as Json[]).find((v) => v['name'] === 'argocd-kubeconfig')?.['secret'], { secretName: 'driftless-argocd-kubeconfig', optional: false });
    assert.deepEqual(grants(only(documents, 'ClusterRole')['rules']), await spokeGrants());
    assert.ok(!documents.some((d) => d['metadata'].namespace === 'argocd'), 'no Role in Argo CD\'s namespace here: it is the hub\'s (manifests/controller/spoke/hub)');
    const config = parseControllerConfig((c['args'] as string[]).map((arg) => arg.replace(/^--hash-key-file=.*/, '--hash-key-file=k')), {});
    assert.ok(config.command === 'run' && config.argocdDestinationName === 'prod', 'the flags parse');
    const namespaced = await helmTemplate(['--set', 'argocdHub.enabled=true', '--set', 'argocdHub.destinationName=prod', '--set', 'watchGlobally=false']);
    assert.ok(!namespaced.some((d) => String(d['metadata'].name).endsWith('-applications')), 'nor in a namespaced install');
    assert.match(await helmTemplateFails(['--set', 'argocdHub.enabled=true']), /argocdHub.enabled needs argocdHub.destinationServer or argocdHub.destinationName/);
    assert.match(await helmTemplateFails(['--set', 'argocdHub.enabled=true', '--set', 'argocdHub.destinationName=a', '--set', 'argocdClusters=true']), /exclude each other/);
    assert.match(await helmTemplateFails(['--set', 'argocdHub.enabled=true', '--set', 'argocdHub.destinationServer=spoke:6443']), /destinationServer/);
  });
});

/** `kubectl apply --dry-run=server` of the documents; resolves with kubectl's output, fails on a rejection. */
async function serverDryRun(cluster: Cluster, documents: readonly Json[]): Promise<string> {
  const stdin = documents.map((d) => JSON.stringify(d)).join('\n---\n');
  const result = await cluster.kubectl(['apply', '--dry-run=server', '-f', '-'], { stdin });
  assert.equal(result.code, 0, `the API server accepts every object:\n${result.stderr}`);
  return result.stdout;
}

fixture.test('the API server accepts every rendered object (server-side dry-run): the base, the overlays, the chart by default and with options', async ({ cluster }) => {
  for (const ns of ['driftless', 'argocd', 'a', 'b']) {
    await cluster.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  }
  const base = await kustomizeBuild(manifests);
  assert.match(await serverDryRun(cluster, base), /deployment.apps\/driftless-controller created \(server dry run\)/);
  await serverDryRun(cluster, await kustomizeBuild(join(manifests, 'namespaced')));
  const hub = await kustomizeBuild(join(manifests, 'hub'));
  assert.ok((only(hub, 'Deployment')['spec'].template.spec.containers[0].args as string[]).includes('--argocd-clusters'), 'the hub overlay turns hub mode on');
  assert.equal(only(hub, 'Role', 'driftless-controller-hub')['metadata'].namespace, 'argocd');
  const leaseRule = (only(hub, 'Role', 'driftless-leader-election')['rules'] as Json[]).find((rule) => (rule['resources'] as string[]).includes('leases'));
  assert.deepEqual(leaseRule?.['verbs'], ['get', 'create', 'update', 'list'], 'the replicas sharing clusters list the Leases (ADR 0023)');
  await serverDryRun(cluster, hub);
  for (const overlay of [['hub', 'spoke'], ['spoke'], ['spoke', 'hub']]) await serverDryRun(cluster, await kustomizeBuild(join(manifests, ...overlay)));
  await serverDryRun(cluster, await helmTemplate());
  await serverDryRun(cluster, await helmTemplate(['--set', 'argocdClusters=true']));
  await serverDryRun(cluster, await helmTemplate(['--set', 'argocdHub.enabled=true', '--set', 'argocdHub.destinationName=prod', '--set', 'writeBack.enabled=true']));
  await serverDryRun(cluster, await helmTemplate(['--set', 'writeBack.enabled=true', '--set', 'watchGlobally=false', '--set', 'namespaces={a,b}', '--set', 'namespaceSelector=team=web', '--set', 'argocdPlugin.enabled=true', '--set', 'argocdPlugin.hashKey.create=true', '--set', 'argocdPlugin.hashKey.value=k', '--set', 'hashKey.create=true', '--set', 'hashKey.value=k']));
}, { timeout: 180_000 });

/**
 * Creates the base's ServiceAccount, ClusterRole and ClusterRoleBinding (and the leader-election
 * Role) for a controller whose own namespace is `namespace`: the rules exactly as shipped, or as
 * `editRules` leaves them. Cluster-scoped names get a suffix so that tests do not share them.
 * @returns a function that deletes the cluster-scoped objects.
 */
async function installShippedRbac(cluster: Cluster, namespace: string, editRules: (rules: Json[]) => Json[] = (rules) => rules): Promise<() => Promise<void>> {
  const documents = await kustomizeBuild(manifests);
  const suffix = `-${namespace}`;
  const serviceAccount = structuredClone(only(documents, 'ServiceAccount'));
  serviceAccount['metadata'].namespace = namespace;
  await create(cluster.admin, `/api/v1/namespaces/${namespace}/serviceaccounts`, serviceAccount as KubeObject);
  const role = structuredClone(only(documents, 'ClusterRole'));
  role['metadata'].name += suffix;
  role['rules'] = editRules(role['rules'] as Json[]);
  await create(cluster.admin, '/apis/rbac.authorization.k8s.io/v1/clusterroles', role as KubeObject);
  const binding = structuredClone(only(documents, 'ClusterRoleBinding'));
  binding['metadata'].name += suffix;
  binding['roleRef'].name = role['metadata'].name;
  for (const subject of binding['subjects'] as Json[]) subject['namespace'] = namespace;
  await create(cluster.admin, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', binding as KubeObject);
  for (const kind of ['Role', 'RoleBinding'] as const) {
    const object = structuredClone(only(documents, kind, 'driftless-leader-election'));
    object['metadata'].namespace = namespace;
    for (const subject of (object['subjects'] ?? []) as Json[]) subject['namespace'] = namespace;
    await create(cluster.admin, `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/${kind === 'Role' ? 'roles' : 'rolebindings'}`, object as KubeObject);
  }
  return async () => {
    await cluster.admin.send('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${binding['metadata'].name}`);
    await cluster.admin.send('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterroles/${role['metadata'].name}`);
  };
}

/**
 * The shipped Deployment's arguments that `driftless controller` accepts today, with the hash key
 * file moved to `keyFile`. Issue 9's --leader-elect (and --http-addr, --dry-run) are dropped until
 * the controller has them; from then on they are passed as shipped.
 */
async function shippedArgs(keyFile: string): Promise<string[]> {
  const args = container(only(await kustomizeBuild(manifests), 'Deployment'))['args'] as string[];
  return args
    .filter((arg) => findControllerFlag((/^--([a-z-]+)/.exec(arg) ?? [])[1] ?? '') !== undefined)
    .map((arg) => (arg.startsWith('--hash-key-file=') ? `--hash-key-file=${keyFile}` : arg));
}

/** An ExternalSecret-owned Secret and a Deployment of 2 using it, rolled out; returns the app namespace and the pods. */
async function outOfBandApp(cluster: Cluster): Promise<{ apps: string; pods: KubeObject[] }> {
  const apps = await cluster.newNamespace('apps');
  await createExternalSecret(cluster.admin, apps, 'db', 'v1');
  await create(cluster.admin, COLLECTIONS.Deployment(apps), workload('Deployment', 'app', { replicas: 2, uses: { secret: 'db' } }));
  await waitForDeploymentRollout(cluster.admin, apps, 'app');
  return { apps, pods: await waitForReadyPods(cluster.admin, apps, 'app', 2) };
}

async function startAsShippedAccount(cluster: Cluster, namespace: string) {
  const keyFile = join(cluster.stateDir, `hash-key-${namespace}`);
  await writeFile(keyFile, 'a test hash key', { mode: 0o600 });
  return startControllerProcess(cluster, {
    kubeconfig: await cluster.kubeconfigFor(namespace, 'driftless-controller'),
    args: await shippedArgs(keyFile),
    env: { POD_NAMESPACE: namespace, POD_NAME: `driftless-controller-${namespace}` },
  });
}

/**
 * A log line about a refused API call: the adapter's message is `METHOD /path: 403 Forbidden: …` (or 401
 * Unauthorized). Matched as that, not as any "403": pod UIDs, resource versions and epoch-ms times hold the digits too.
 */
function refusedCall(line: unknown): boolean {
  return /: 40[13] (?:Forbidden|Unauthorized)\b/.test(JSON.stringify(line));
}

fixture.test('the controller as the shipped ServiceAccount with exactly the shipped RBAC restarts a Deployment for an out-of-band Secret rotation', async ({ cluster, namespace }) => {
  const uninstall = await installShippedRbac(cluster, namespace);
  const { apps, pods } = await outOfBandApp(cluster);
  const controller = await startAsShippedAccount(cluster, namespace);
  try {
    await controller.ready();
    await waitFor('the first-sight record', async () => (await read(cluster.admin, `${COLLECTIONS.Deployment(apps)}/app`)).metadata?.annotations?.['driftless.dev/restarted-for']);
    await rotateSecret(cluster.admin, apps, 'db', 'v2');
    await waitFor('every pod replaced', async () => {
      const now = await waitForReadyPods(cluster.admin, apps, 'app', 2);
      return uids(now).every((uid) => !uids(pods).includes(uid)) ? now : undefined;
    }, { timeoutMs: 90_000 });
    await waitForEvent(cluster.admin, apps, 'app', 'RestartFinished');
    const refused = controller.lines.filter(refusedCall);
    assert.deepEqual(refused, [], 'nothing was forbidden');
  } finally {
    await controller.stop();
    await uninstall();
    await cluster.admin.send('DELETE', `/api/v1/namespaces/${apps}`);
  }
}, { timeout: 240_000 });

fixture.test('without create on pods/eviction the same scenario fails: a 403 in the log and no pod replaced', async ({ cluster, namespace }) => {
  const uninstall = await installShippedRbac(cluster, namespace, (rules) => rules.filter((rule) => !(rule['resources'] as string[]).includes('pods/eviction')));
  const { apps, pods } = await outOfBandApp(cluster);
  const controller = await startAsShippedAccount(cluster, namespace);
  try {
    await controller.ready();
    await waitFor('the first-sight record', async () => (await read(cluster.admin, `${COLLECTIONS.Deployment(apps)}/app`)).metadata?.annotations?.['driftless.dev/restarted-for']);
    const mark = controller.lines.length;
    await rotateSecret(cluster.admin, apps, 'db', 'v2');
    await controller.waitForLog('a 403 on an eviction', (line) => refusedCall(line) && JSON.stringify(line).includes('/eviction'), { fromIndex: mark, timeoutMs: 90_000 });
    assert.deepEqual(uids(await waitForReadyPods(cluster.admin, apps, 'app', 2)), uids(pods), 'no pod was replaced');
    assert.equal(controller.lines.filter((line) => line.msg === 'evicted').length, 0);
  } finally {
    await controller.stop();
    await uninstall();
    await cluster.admin.send('DELETE', `/api/v1/namespaces/${apps}`);
  }
}, { timeout: 240_000 });
