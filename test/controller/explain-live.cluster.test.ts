/**
 * `driftless explain --live` against the real test cluster: for a Deployment
 * whose restart a PodDisruptionBudget blocks, it names the budget, in the
 * table and in the JSON report; a config lookup lists its dependants; digests
 * compare with the controller's record; and no output carries a Secret value.
 * The in-band assumption check (issue 6 §3) warns when the controller runs in
 * mode `all` for a stamped workload nothing opts in. A restart the controller
 * holds for an Argo CD sync (ADR 0011) names the Application that holds it.
 */
import assert from 'node:assert/strict';
import { installArgoCdCrds } from '../cluster/argocd.ts';
import { useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { applyAsArgoCD, assertNoDrift } from '../support/drift-oracle.ts';
import { startControllerProcess } from './support/process.ts';
import { COLLECTIONS, SECRET_VALUE, configMap, createExternalSecret, read, rotateSecret, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';
import { explainJson, explainLive } from './support/explain.ts';

const fixture = useCluster();

function assertNoValue(text: string): void {
  assert.ok(!text.includes(SECRET_VALUE) && !text.includes(Buffer.from(SECRET_VALUE).toString('base64')), 'no Secret value in the output');
}

fixture.test('a restart blocked by a PodDisruptionBudget: explain --live names the budget; a config lookup lists its dependants; no value is shown', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const kubeconfig = cluster.kubeconfigPath;
  await createExternalSecret(api, namespace, 'db', 'v1');
  const manifest = workload('Deployment', 'app', { replicas: 2, uses: { secret: 'db' } });
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitForDeploymentRollout(api, namespace, 'app');
  await waitForReadyPods(api, namespace, 'app', 2);
  await api.request('POST', `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`, {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: 'app-budget' },
    spec: { minAvailable: 2, selector: { matchLabels: { app: 'app' } } },
  });
  // The disruption controller must have computed the budget's status for the eviction (and the explanation) to see it.
  await waitFor('the budget\'s status', async () => {
    const budget = await read(api, `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets/app-budget`);
    return (budget['status'] as { currentHealthy?: number } | undefined)?.currentHealthy === 2 ? budget : undefined;
  });

  const outputs: string[] = [];
  // Before the controller has seen it: nothing recorded yet.
  const before = await explainJson(kubeconfig, [`--namespace=${namespace}`, 'deployment/app']);
  assert.equal(before.workloads[0]?.restart.state, 'first-sight');
  assert.equal(before.workloads[0]?.configs[0]?.digests, 'not-recorded');

  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`, '--eviction-blocked-warning=1s'] });
  try {
    await controller.ready();
    await waitFor('the first-sight record', async () => (await read(api, `${COLLECTIONS.Deployment(namespace)}/app`)).metadata?.annotations?.['driftless.dev/restarted-for']);
    await rotateSecret(api, namespace, 'db', SECRET_VALUE);
    await waitForEvent(api, namespace, 'app', 'RestartBlocked', 90_000);

    const table = await explainLive(kubeconfig, [`--namespace=${namespace}`, 'deployment/app']);
    outputs.push(table.stdout, table.stderr);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^live namespace=\S+ mode=annotated restart-strategy=evict hash=SHA-256 \(no key\)$/m);
    assert.match(table.stdout, /^Deployment \S+\/app {2}\(stamped: no, application: /m);
    assert.match(table.stdout, /^ {2}Secret +db +yes +yes +auto +out-of-band +v1:[0-9a-f]{12} +v1:[0-9a-f]{12} +equal +.*written by ExternalSecret db/m);
    assert.match(table.stdout, /^ {2}restart: in progress \(restart-at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\), strategy evict: 2 pods created before it left/m);
    assert.match(table.stdout, /^ {2}blocked: PodDisruptionBudget app-budget allows 0 disruptions/m, 'the blocking budget is named');
    assert.match(table.stdout, /^ {2}app-budget +2 +- +0 +2 +2 +2$/m);

    const report = await explainJson(kubeconfig, [`--namespace=${namespace}`, 'deploy/app']);
    outputs.push(JSON.stringify(report));
    assert.equal(report.version, 1);
    assert.equal(report.live, true);
    assert.equal(report.namespace, namespace);
    assert.equal(report.target, 'deployment/app');
    assert.equal(report.keyed, false);
    assert.deepEqual(report.configs, []);
    assert.equal(report.workloads.length, 1);
    const explained = report.workloads[0];
    assert.ok(explained !== undefined);
    assert.deepEqual({ kind: explained.kind, name: explained.name, stamped: explained.stamped }, { kind: 'Deployment', name: 'app', stamped: false });
    assert.equal(explained.configs.length, 1);
    const [db] = explained.configs;
    assert.deepEqual({ ...db, recorded: undefined, live: undefined }, {
      kind: 'Secret',
      name: 'db',
      exists: true,
      selected: true,
      rule: 'auto',
      reason: 'reloader.stakater.com/auto: "true" on the workload',
      band: 'out-of-band',
      why: 'written by ExternalSecret db, not by a sync',
      recorded: undefined,
      live: undefined,
      digests: 'equal',
    });
    assert.match(db?.live ?? '', /^v1:[0-9a-f]{12}$/);
    assert.equal(db?.recorded, db?.live);
    const restart = explained.restart;
    assert.equal(restart.state, 'in-progress');
    assert.equal(restart.strategy, 'evict');
    assert.match(restart.restartAt ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(restart.stalePods.length, 2);
    assert.deepEqual(restart.nextEvictions, []);
    assert.deepEqual(restart.blockedBy.map((b) => [b.kind, b.name]), [['PodDisruptionBudget', 'app-budget']]);
    assert.deepEqual(explained.budgets, [{ name: 'app-budget', minAvailable: '2', maxUnavailable: null, disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2 }]);

    // A config: every workload that depends on it.
    const lookup = await explainLive(kubeconfig, [`-n`, namespace, 'secret/db']);
    outputs.push(lookup.stdout, lookup.stderr);
    assert.equal(lookup.code, 0, lookup.stderr);
    assert.match(lookup.stdout, /^Secret \S+\/db {2}\(exists: yes, digest: v1:[0-9a-f]{12}, application: -, written by ExternalSecret db\)$/m);
    assert.match(lookup.stdout, /^ {2}Deployment +app +yes +auto +out-of-band +/m);
    const config = await explainJson(kubeconfig, [`--namespace=${namespace}`, 'secret/db']);
    outputs.push(JSON.stringify(config));
    assert.deepEqual(config.workloads, []);
    assert.deepEqual(config.configs.map((c) => ({ kind: c.kind, name: c.name, producer: c.producer, dependants: c.dependants.map((d) => [d.kind, d.name, d.band, d.digests]) })), [
      { kind: 'Secret', name: 'db', producer: 'ExternalSecret db', dependants: [['Deployment', 'app', 'out-of-band', 'equal']] },
    ]);
  } finally {
    await controller.stop();
  }
  // Changed again while no controller runs: the live digest now differs from the record.
  await rotateSecret(api, namespace, 'db', `${SECRET_VALUE}-again`);
  const changed = await explainJson(kubeconfig, [`--namespace=${namespace}`, 'deployment/app']);
  outputs.push(JSON.stringify(changed));
  assert.equal(changed.workloads[0]?.configs[0]?.digests, 'different');
  assert.deepEqual(changed.workloads[0]?.restart.changed, ['Secret/db']);
  // The whole namespace, as the table.
  const all = await explainLive(kubeconfig, [`--namespace=${namespace}`]);
  outputs.push(all.stdout, all.stderr);
  assert.equal(all.code, 0, all.stderr);
  assert.match(all.stdout, /^Deployment \S+\/app /m);

  assertNoValue(outputs.join('\n'));
  // explain only reads.
  await assertNoDrift(cluster, manifest, { namespace });
}, { timeout: 300_000 });

fixture.test('explain --live warns when the controller in mode all treats a config as in-band that a plugin in mode annotated never hashed', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const app = 'guestbook';
  const tracked = (kind: string, name: string, group = ''): Record<string, string> => ({ 'argocd.argoproj.io/tracking-id': `${app}:${group}/${kind}:${namespace}/${name}` });
  await api.request('POST', COLLECTIONS.ConfigMap(namespace), configMap('rendered', { a: '1' }, tracked('ConfigMap', 'rendered')));
  // Stamped by the plugin and tracked by the same Application, but with no Reloader annotation.
  const manifest = workload('Deployment', 'web', {
    uses: { configMap: 'rendered' },
    annotations: tracked('Deployment', 'web', 'apps'),
    templateAnnotations: { 'driftless.dev/config-hash': 'v1:0000000000000000000000000000000000000000000000000000000000000000' },
  });
  await applyAsArgoCD(cluster, manifest, { namespace });

  const all = await explainJson(cluster.kubeconfigPath, [`--namespace=${namespace}`, '--mode=all', 'deployment/web']);
  const web = all.workloads[0];
  assert.ok(web !== undefined);
  assert.equal(web.stamped, true);
  assert.equal(web.application, app);
  assert.deepEqual(web.configs.map((c) => [c.kind, c.name, c.rule, c.band, c.digests]), [['ConfigMap', 'rendered', 'auto-all', 'in-band', null]]);
  assert.equal(web.warnings.length, 1);
  assert.match(web.warnings[0] ?? '', /^ConfigMap rendered is in-band only if the plugin runs in mode all/);
  const table = await explainLive(cluster.kubeconfigPath, [`--namespace=${namespace}`, '--mode=all', 'deployment/web']);
  assert.match(table.stdout, /^ {2}warning: ConfigMap rendered is in-band only if the plugin runs in mode all/m);

  // In mode annotated the controller does not select it, so nothing rests on the plugin's mode.
  const annotated = await explainJson(cluster.kubeconfigPath, [`--namespace=${namespace}`, 'deployment/web']);
  assert.deepEqual(annotated.workloads[0]?.configs.map((c) => [c.name, c.selected, c.rule]), [['rendered', false, 'not-annotated']]);
  assert.deepEqual(annotated.workloads[0]?.warnings, []);

  const missing = await explainLive(cluster.kubeconfigPath, [`--namespace=${namespace}`, 'statefulset/nope']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /StatefulSet \S+\/nope not found/);
}, { timeout: 120_000 });

fixture.test('a restart waiting for an Argo CD sync: explain --live names the Application, until it no longer lists the workload OutOfSync', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  // The real Application CRD, without Argo CD: the Application's status is written here as Argo CD writes it.
  await installArgoCdCrds(cluster);
  const argocd = `${namespace}-argocd`;
  await api.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: argocd } });
  const applications = `/apis/argoproj.io/v1alpha1/namespaces/${argocd}/applications`;
  const status = (sync: 'OutOfSync' | 'Synced'): Record<string, unknown> => ({
    sync: { status: sync },
    resources: [{ group: 'apps', version: 'v1', kind: 'Deployment', namespace, name: 'app', status: sync }],
  });
  await api.request('POST', applications, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'shop', namespace: argocd },
    spec: { project: 'default', destination: { server: 'https://kubernetes.default.svc', namespace }, source: { repoURL: 'https://example.invalid/shop.git', path: 'app' }, syncPolicy: { automated: {} } },
    status: status('OutOfSync'),
  });
  await createExternalSecret(api, namespace, 'db', 'v1');
  const manifest = workload('Deployment', 'app', {
    uses: { secret: 'db' },
    annotations: { 'reloader.stakater.com/auto': 'true', 'argocd.argoproj.io/tracking-id': `shop:apps/Deployment:${namespace}/app` },
  });
  await applyAsArgoCD(cluster, manifest, { namespace });
  await waitForDeploymentRollout(api, namespace, 'app');

  const argv = [`--namespace=${namespace}`, `--argocd-namespace=${argocd}`, 'deployment/app'];
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`, `--argocd-namespace=${argocd}`] });
  try {
    await controller.ready();
    await waitFor('the first-sight record', async () => (await read(api, `${COLLECTIONS.Deployment(namespace)}/app`)).metadata?.annotations?.['driftless.dev/restarted-for']);
    await rotateSecret(api, namespace, 'db', SECRET_VALUE);
    await waitForEvent(api, namespace, 'app', 'RestartWaitingForSync', 90_000);

    const waiting = await explainJson(cluster.kubeconfigPath, argv);
    const restart = waiting.workloads[0]?.restart;
    assert.equal(waiting.workloads[0]?.application, 'shop');
    assert.equal(restart?.state, 'in-progress');
    assert.deepEqual(restart?.blockedBy.map((b) => [b.kind, b.name]), [['argocd-sync', 'shop']]);
    assert.deepEqual(restart?.nextEvictions, []);
    const table = await explainLive(cluster.kubeconfigPath, argv);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ {2}blocked: Application shop has automated sync and lists this Deployment OutOfSync: the controller waits for its sync to replace the pods, at most \d+ s more \(--argocd-sync-wait\)$/m);
    // Without the Application's namespace, explain cannot see what holds the restart, and says nothing of it.
    const elsewhere = await explainJson(cluster.kubeconfigPath, [`--namespace=${namespace}`, 'deployment/app']);
    assert.ok(!(elsewhere.workloads[0]?.restart.blockedBy ?? []).some((b) => b.kind === 'argocd-sync'));

    // Argo CD no longer lists it OutOfSync (a sync that changed nothing): the controller restarts it, and explain no longer names the Application.
    const current = await read(api, `${applications}/shop`);
    await api.request('PUT', `${applications}/shop`, { ...current, status: status('Synced') });
    await waitFor('the restart to go on once the Application is Synced', async () => {
      const report = await explainJson(cluster.kubeconfigPath, argv);
      return (report.workloads[0]?.restart.blockedBy ?? []).every((b) => b.kind !== 'argocd-sync') ? report : undefined;
    }, { timeoutMs: 60_000 });
    assertNoValue(table.stdout + JSON.stringify(waiting));
  } finally {
    await controller.stop();
  }
}, { timeout: 180_000 });
