import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManifestError, canonicalJson, configMapEntry, hashEntries, planWorkloads } from '../../core/index.ts';
import type { Manifest, PlanOptions, WorkloadPlan } from '../../core/index.ts';
import { deployment, envFromPod, manifest } from './helpers.ts';

const ALL: PlanOptions = { mode: 'all', includeRollouts: true };
const ANNOTATED: PlanOptions = { mode: 'annotated', includeRollouts: true };

const configMap = (name: string, data: Record<string, string> = { k: 'v' }, extra: { namespace?: string; annotations?: Record<string, string> } = {}): Manifest =>
  manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...extra }, data });
const secret = (name: string, data: Record<string, string> = { k: 'dg==' }, annotations?: Record<string, string>): Manifest =>
  manifest({ apiVersion: 'v1', kind: 'Secret', metadata: { name, ...(annotations === undefined ? {} : { annotations }) }, data });

/** `kind/name:rule(+|-)[in render][providers]` per config, for compact assertions. */
function configsOf(plan: WorkloadPlan | undefined): string[] {
  assert.ok(plan !== undefined);
  return plan.configs.map((c) =>
    `${c.kind}/${c.name}:${c.decision.rule}${c.decision.selected ? '+' : '-'}${c.inRender ? ' in-render' : ''}${c.providers.map((p) => ` <${p.kind}/${p.name}`).join('')}`);
}
function entriesOf(plan: WorkloadPlan | undefined): string[] {
  assert.ok(plan !== undefined);
  return plan.entries.map((e) => `${e.kind}/${e.name}`);
}

describe('planWorkloads', () => {
  it('hashes the referenced objects that are in the render, reports the rest', () => {
    const web = deployment('web', envFromPod({ configMaps: ['app'], secrets: ['db'] }));
    const app = configMap('app');
    const [plan] = planWorkloads([app, web], ALL);
    assert.deepEqual(configsOf(plan), ['ConfigMap/app:auto-all+ in-render', 'Secret/db:auto-all+']);
    assert.deepEqual(entriesOf(plan), ['ConfigMap/app']);
    assert.equal(plan?.hash, hashEntries([configMapEntry(app)]));
    assert.deepEqual(plan?.templatePath, ['spec', 'template']);
    assert.equal(plan?.skipped, undefined);
  });

  it('in mode all a named-reload annotation does not narrow what is hashed; auto "false" beside it does (README)', () => {
    const named = { 'configmap.reloader.stakater.com/reload': 'a' };
    const pod = envFromPod({ configMaps: ['a', 'b'] });
    const [all] = planWorkloads([configMap('a'), configMap('b'), deployment('web', pod, { annotations: named })], ALL);
    assert.deepEqual(configsOf(all), ['ConfigMap/a:named+ in-render', 'ConfigMap/b:auto-all+ in-render']);
    const optedOut = { ...named, 'reloader.stakater.com/auto': 'false' };
    const [narrowed] = planWorkloads([configMap('a'), configMap('b'), deployment('web', pod, { annotations: optedOut })], ALL);
    assert.deepEqual(configsOf(narrowed), ['ConfigMap/a:named+ in-render', 'ConfigMap/b:auto-disabled- in-render']);
  });

  it('never selects an object named only by generateName', () => {
    const generated = manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'app' }, data: { k: 'v' } });
    const web = deployment('web', envFromPod({ configMaps: ['app'] }), { annotations: { 'configmap.reloader.stakater.com/reload': '.*' } });
    const [plan] = planWorkloads([web, generated], ALL);
    assert.deepEqual(configsOf(plan), ['ConfigMap/app:named+']);
    assert.equal(plan?.hash, undefined);
  });

  it('gives no hash to a workload whose selected configs are all outside the render', () => {
    const [plan] = planWorkloads([deployment('web', envFromPod({ secrets: ['db'] }))], ALL);
    assert.equal(plan?.hash, undefined);
    assert.deepEqual(plan?.entries, []);
  });

  it('plans only workloads, in input order, never Jobs or Pods', () => {
    const plans = planWorkloads([
      deployment('b', {}),
      manifest({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { template: { spec: envFromPod({ configMaps: ['app'] }) } } }),
      manifest({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: envFromPod({ configMaps: ['app'] }) }),
      configMap('app'),
      manifest({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'a' }, spec: { template: { spec: {} } } }),
      manifest({ apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'c' }, spec: { jobTemplate: { spec: { template: { spec: envFromPod({ configMaps: ['app'] }) } } } } }),
    ], ALL);
    assert.deepEqual(plans.map((p) => `${p.workload.kind}/${p.workload.name}`), ['Deployment/b', 'StatefulSet/a', 'CronJob/c']);
    assert.deepEqual(entriesOf(plans[2]), ['ConfigMap/app']);
    assert.deepEqual(plans[2]?.templatePath, ['spec', 'jobTemplate', 'spec', 'template']);
  });

  it('resolves references in the workload namespace only (object namespace, else the destination)', () => {
    const plans = planWorkloads([
      deployment('web', envFromPod({ configMaps: ['app'] }), { namespace: 'shop' }),
      deployment('api', envFromPod({ configMaps: ['app'] })),
      configMap('app', { who: 'other namespace' }, { namespace: 'other' }),
      configMap('app', { who: 'destination namespace' }),
    ], ALL);
    assert.deepEqual(configsOf(plans[0]), ['ConfigMap/app:auto-all+']);
    assert.equal(plans[0]?.hash, undefined);
    assert.deepEqual(configsOf(plans[1]), ['ConfigMap/app:auto-all+ in-render']);
    assert.deepEqual(plans[1]?.entries.map((e) => canonicalJson(e)), ['{"binaryData":{},"data":{"who":"destination namespace"},"kind":"ConfigMap","name":"app"}']);
  });

  it('hashes the source of a Secret created outside Git', () => {
    const es = manifest({ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db-es' }, spec: { target: { name: 'db' } } });
    const [plan] = planWorkloads([deployment('web', envFromPod({ secrets: ['db'] })), es], ALL);
    assert.deepEqual(configsOf(plan), ['Secret/db:auto-all+ <ExternalSecret/db-es']);
    assert.deepEqual(entriesOf(plan), ['ExternalSecret/db-es']);
  });

  it('hashes both the Secret and its sources when both are in the render', () => {
    const sealed = manifest({ apiVersion: 'bitnami.com/v1alpha1', kind: 'SealedSecret', metadata: { name: 'db' }, spec: { encryptedData: { k: 'AgB' } } });
    const cert = manifest({ apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'cert' }, spec: { secretName: 'db' } });
    const [plan] = planWorkloads([deployment('web', envFromPod({ secrets: ['db'] })), sealed, secret('db'), cert], ALL);
    assert.deepEqual(configsOf(plan), ['Secret/db:auto-all+ in-render <Certificate/cert <SealedSecret/db']);
    assert.deepEqual(entriesOf(plan), ['Certificate/cert', 'SealedSecret/db', 'Secret/db']);
  });

  it("reads ignore from a source's template when the Secret is not in the render", () => {
    const sealed = manifest({
      apiVersion: 'bitnami.com/v1alpha1', kind: 'SealedSecret', metadata: { name: 'db' },
      spec: { template: { metadata: { annotations: { 'reloader.stakater.com/ignore': 'true' } } } },
    });
    const [plan] = planWorkloads([deployment('web', envFromPod({ secrets: ['db'] })), sealed], ALL);
    assert.deepEqual(configsOf(plan), ['Secret/db:ignore- <SealedSecret/db']);
    assert.equal(plan?.hash, undefined);
    assert.match(plan?.configs[0]?.decision.reason ?? '', /on the Secret template of SealedSecret db$/);
  });

  it("reads match from a Certificate's secretTemplate for search", () => {
    const cert = manifest({
      apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'cert' },
      spec: { secretName: 'tls', secretTemplate: { annotations: { 'reloader.stakater.com/match': 'true' } } },
    });
    const web = deployment('web', envFromPod({ secrets: ['tls', 'other'] }), { annotations: { 'reloader.stakater.com/search': 'true' } });
    const [plan] = planWorkloads([web, cert, secret('other')], ANNOTATED);
    assert.deepEqual(configsOf(plan), ['Secret/other:not-matched- in-render', 'Secret/tls:search+ <Certificate/cert']);
    assert.deepEqual(entriesOf(plan), ['Certificate/cert']);
  });

  it("prefers the Secret's own annotations over its source's template when both are in the render", () => {
    const sealed = manifest({
      apiVersion: 'bitnami.com/v1alpha1', kind: 'SealedSecret', metadata: { name: 'db' },
      spec: { template: { metadata: { annotations: { 'reloader.stakater.com/ignore': 'true' } } } },
    });
    const [plan] = planWorkloads([deployment('web', envFromPod({ secrets: ['db'] })), sealed, secret('db')], ALL);
    assert.deepEqual(configsOf(plan), ['Secret/db:auto-all+ in-render <SealedSecret/db']);
  });

  it('selects unreferenced objects by name, including a Secret only a source provides', () => {
    const es = manifest({ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'es' }, spec: { target: { name: 'app-creds' } } });
    const web = deployment('web', envFromPod({}), { annotations: { 'secret.reloader.stakater.com/reload': 'app-.*', 'configmap.reloader.stakater.com/reload': 'flags' } });
    const [plan] = planWorkloads([web, es, secret('app-tls'), secret('unrelated'), configMap('flags'), configMap('app-x')], ANNOTATED);
    assert.deepEqual(configsOf(plan), ['ConfigMap/flags:named+ in-render', 'Secret/app-creds:named+ <ExternalSecret/es', 'Secret/app-tls:named+ in-render']);
    assert.deepEqual(entriesOf(plan), ['ConfigMap/flags', 'ExternalSecret/es', 'Secret/app-tls']);
    assert.ok(plan?.configs.every((c) => c.references.length === 0));
  });

  it('reports a named match that ignore or exclude then refuses', () => {
    const web = deployment('web', envFromPod({}), { annotations: { 'secret.reloader.stakater.com/reload': 'a,b', 'secrets.exclude.reloader.stakater.com/reload': 'b' } });
    const [plan] = planWorkloads([web, secret('a', undefined, { 'reloader.stakater.com/ignore': 'true' }), secret('b')], ANNOTATED);
    assert.deepEqual(configsOf(plan), ['Secret/a:ignore- in-render', 'Secret/b:exclude- in-render']);
    assert.equal(plan?.hash, undefined);
  });

  it('hashes a SecretProviderClass referenced by a CSI volume', () => {
    const spc = manifest({ apiVersion: 'secrets-store.csi.x-k8s.io/v1', kind: 'SecretProviderClass', metadata: { name: 'vault' }, spec: { provider: 'vault' } });
    const web = deployment('web', { containers: [{ name: 'app' }], volumes: [{ name: 's', csi: { driver: 'secrets-store.csi.k8s.io', volumeAttributes: { secretProviderClass: 'vault' } } }] });
    const [plan] = planWorkloads([web, spc], ALL);
    assert.deepEqual(configsOf(plan), ['SecretProviderClass/vault:auto-all+ in-render']);
    assert.deepEqual(entriesOf(plan), ['SecretProviderClass/vault']);
  });

  it('groups repeated references to one object into one report', () => {
    const pod = { containers: [{ name: 'a', envFrom: [{ configMapRef: { name: 'c' } }], volumeMounts: [{ name: 'v', mountPath: '/c' }] }], volumes: [{ name: 'v', configMap: { name: 'c' } }] };
    const [plan] = planWorkloads([deployment('web', pod), configMap('c')], ALL);
    assert.equal(plan?.configs.length, 1);
    assert.deepEqual(plan?.configs[0]?.references.map((r) => r.field), ['envFrom.configMapRef', 'volume.configMap']);
    assert.deepEqual(entriesOf(plan), ['ConfigMap/c']);
  });

  it('mode annotated leaves unannotated workloads without a hash', () => {
    const [plan] = planWorkloads([deployment('web', envFromPod({ configMaps: ['c'] })), configMap('c')], ANNOTATED);
    assert.deepEqual(configsOf(plan), ['ConfigMap/c:not-annotated- in-render']);
    assert.equal(plan?.hash, undefined);
  });

  it('uses the key when one is configured', () => {
    const key = { bytes: new TextEncoder().encode('k') };
    const c = configMap('c');
    const [plan] = planWorkloads([deployment('web', envFromPod({ configMaps: ['c'] })), c], { ...ALL, key });
    assert.equal(plan?.hash, hashEntries([configMapEntry(c)], key));
    assert.notEqual(plan?.hash, hashEntries([configMapEntry(c)]));
  });

  it('changes the hash when a used value changes, not when an unused object does', () => {
    const web = deployment('web', envFromPod({ configMaps: ['c'] }));
    const base = planWorkloads([web, configMap('c', { k: 'v1' }), configMap('unused', { k: 'a' })], ALL)[0]?.hash;
    const changed = planWorkloads([web, configMap('c', { k: 'v2' }), configMap('unused', { k: 'a' })], ALL)[0]?.hash;
    const unrelated = planWorkloads([web, configMap('c', { k: 'v1' }), configMap('unused', { k: 'b' })], ALL)[0]?.hash;
    assert.ok(base !== undefined);
    assert.notEqual(changed, base);
    assert.equal(unrelated, base);
  });

  it('is deterministic and independent of the order of the config objects', () => {
    const web = deployment('web', envFromPod({ configMaps: ['b', 'a'], secrets: ['s'] }));
    const one = planWorkloads([web, configMap('a'), configMap('b'), secret('s')], ALL)[0];
    const two = planWorkloads([secret('s'), configMap('b'), web, configMap('a')], ALL)[0];
    assert.equal(one?.hash, two?.hash);
    assert.deepEqual(configsOf(one), configsOf(two));
    assert.deepEqual(entriesOf(one), ['ConfigMap/a', 'ConfigMap/b', 'Secret/s']);
  });

  it('reproduces the worked example of docs/hash-v1.md end to end', () => {
    const objects = [
      deployment('web', envFromPod({ configMaps: ['app-config'], secrets: ['db', 'db-creds'] })),
      manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config' }, data: { b: '2', a: 'x=1\n' }, binaryData: { bin: 'AAEC\n/x==' } }),
      manifest({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, data: { password: 'b2xk', user: 'YWRtaW4=' }, stringData: { password: 'new', note: 'é' } }),
      manifest({
        apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db' },
        spec: { target: { name: 'db-creds' }, secretStoreRef: { name: 'vault', kind: 'ClusterSecretStore' }, refreshInterval: '1h' },
      }),
    ];
    const [plain] = planWorkloads(objects, ALL);
    const [keyed] = planWorkloads(objects, { ...ALL, key: { bytes: new TextEncoder().encode('driftless-test-key\n') } });
    assert.deepEqual(entriesOf(plain), ['ConfigMap/app-config', 'ExternalSecret/db', 'Secret/db']);
    assert.equal(plain?.hash, 'v1:c9cdbc6ef0d0d65fefb36254708219e20929e6fcb1814316e87c3de146baef62');
    assert.equal(keyed?.hash, 'v1:85a5ab105d4546dc0d8f2c5b4b2e064c0b83105db080cec9fdc9aa5fb853e744');
  });

  describe('Argo Rollouts', () => {
    const rollout = manifest({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', metadata: { name: 'r' }, spec: { template: { spec: envFromPod({ configMaps: ['c'] }) } } });
    const borrowing = manifest({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', metadata: { name: 'canary' }, spec: { workloadRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' } } });
    const web = deployment('web', envFromPod({ configMaps: ['c'] }));
    const other = deployment('other', envFromPod({ configMaps: ['c'] }));

    it('stamps a Rollout by default', () => {
      const [plan] = planWorkloads([rollout, configMap('c')], ALL);
      assert.equal(plan?.skipped, undefined);
      assert.ok(plan?.hash !== undefined);
    });
    it('skips a Rollout with include-rollouts=false, still reporting its configs', () => {
      const [plan] = planWorkloads([rollout, configMap('c')], { ...ALL, includeRollouts: false });
      assert.match(plan?.skipped ?? '', /include-rollouts=false/);
      assert.deepEqual(configsOf(plan), ['ConfigMap/c:auto-all+ in-render']);
      assert.deepEqual(plan?.entries, []);
      assert.equal(plan?.hash, undefined);
    });
    it('stamps the Deployment a workloadRef borrows, and reports the Rollout as skipped', () => {
      const plans = planWorkloads([borrowing, web, configMap('c')], ALL);
      assert.equal(plans[0]?.templatePath, undefined);
      assert.match(plans[0]?.skipped ?? '', /spec\.workloadRef: the pod template is Deployment web's, which gets the hash instead/);
      assert.equal(plans[0]?.hash, undefined);
      assert.equal(plans[1]?.skipped, undefined);
      assert.ok(plans[1]?.hash !== undefined);
    });
    it('skips the borrowed Deployment with include-rollouts=false, but not other Deployments', () => {
      const plans = planWorkloads([borrowing, web, other, configMap('c')], { ...ALL, includeRollouts: false });
      assert.match(plans[1]?.skipped ?? '', /include-rollouts=false: the template belongs to Rollout canary/);
      assert.equal(plans[1]?.hash, undefined);
      assert.equal(plans[2]?.skipped, undefined);
      assert.ok(plans[2]?.hash !== undefined);
    });
    it('does not borrow a Deployment of another namespace', () => {
      const elsewhere = deployment('web', envFromPod({ configMaps: ['c'] }), { namespace: 'shop' });
      const plans = planWorkloads([borrowing, elsewhere], { ...ALL, includeRollouts: false });
      assert.equal(plans[1]?.skipped, undefined);
    });
  });

  describe('errors', () => {
    const cases: [string, Manifest[], string][] = [
      ['base64 that does not decode, even in a Secret no workload uses', [deployment('web', {}), secret('unused', { k: 'not base64' })], 'data.k'],
      ['a ConfigMap value that is not a string', [configMap('c', { port: 80 as unknown as string })], 'data.port'],
      ['a bad regex in a reload annotation', [deployment('web', {}, { annotations: { 'configmap.reloader.stakater.com/reload': 'app-(' } })], 'metadata.annotations[configmap.reloader.stakater.com/reload]'],
      ['a non-string annotation on a used config', [deployment('web', envFromPod({ configMaps: ['c'] })), configMap('c', {}, { annotations: { 'reloader.stakater.com/ignore': true as unknown as string } })], 'metadata.annotations[reloader.stakater.com/ignore]'],
    ];
    for (const [name, manifests, field] of cases) {
      it(`throws ManifestError for ${name}, naming ${field}`, () => {
        assert.throws(() => planWorkloads(manifests, ALL), (error: unknown) => error instanceof ManifestError && error.field === field);
      });
    }
  });
});
