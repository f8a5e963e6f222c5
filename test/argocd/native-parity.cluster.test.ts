/**
 * Parity with Argo CD's native Helm and Kustomize sources, judged by the real
 * Argo CD (issue 7, point 4): each Application is created twice, once with its
 * native `helm:`/`kustomize:` source and once as `driftless migrate-app`
 * rewrites it (what a user runs), and the repo server's renders of both, read
 * through the API server's manifests endpoint, must be the same objects apart
 * from the hash annotation. The options are grouped into a few apps; every
 * fixture is a minimal reproduction written here.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { HASH_ANNOTATION } from '../../core/index.ts';
import type { KubeObject } from '../cluster/api.ts';
import type { ArgoCD } from '../cluster/argocd.ts';
import { runCommand } from '../cluster/exec.ts';
import type { GitRepo } from '../cluster/git-repo.ts';
import { useArgoCD } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { podTemplateOf, workloadsOf } from './plugin-support.ts';

const fixture = useArgoCD({ apiServer: true });
const repoRoot = join(import.meta.dirname, '..', '..');

/** `driftless migrate-app` on an Application, as a user runs it. */
async function migrateApp(application: Record<string, unknown>): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-migrate-'));
  try {
    // Written for Argo CD's Go reader: YAML 1.1 quoting, so a value such as `yes` stays a string.
    await writeFile(join(dir, 'app.yaml'), stringify(application, { version: '1.1' }));
    const { stdout } = await runCommand(process.execPath, [join(repoRoot, 'bin', 'driftless.js'), 'migrate-app', 'app.yaml'], {
      cwd: dir,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    });
    return parse(stdout) as Record<string, unknown>;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** An object without the plugin's hash annotation (and without an annotations map that only held it). */
function withoutHash(object: KubeObject): KubeObject {
  const copy = structuredClone(object);
  for (const template of workloadsOf([copy]).map(podTemplateOf)) {
    const annotations = template?.metadata?.annotations;
    if (annotations === undefined || template?.metadata === undefined) continue;
    delete annotations[HASH_ANNOTATION];
    if (Object.keys(annotations).length === 0) delete template.metadata.annotations;
  }
  return copy;
}

const identity = (object: KubeObject): string => `${object.kind}/${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;

/** The manifests of an Application in the repo server's order, once the API server knows the Application. */
async function manifestsOf(argocd: ArgoCD, name: string, revision: string): Promise<KubeObject[]> {
  // Only "not found" (the API server's informer has not seen the new Application yet) is worth a retry.
  let failure: Error | undefined;
  const manifests = await waitFor(
    `the manifests of ${name}`,
    () => argocd.manifests(name, revision).catch((error: unknown) => {
      if (!/not found/i.test(String(error))) failure = error instanceof Error ? error : new Error(String(error));
      return undefined;
    }),
    {
      timeoutMs: 120_000,
      intervalMs: 500,
      abortIf: () => {
        if (failure !== undefined) throw failure;
      },
    },
  );
  return manifests;
}

/**
 * Creates the native Application `name` and its migrated twin `name-plugin`, and asserts both render the same.
 * The plugin twin's name is replaced by the native one in its render, so a default release name or an
 * `${ARGOCD_APP_NAME}` compares equal; everything else, order included, must be the same.
 * @returns the native render, for assertions that the options took effect.
 */
async function assertSameRender(argocd: ArgoCD, repo: GitRepo, revision: string, name: string, namespace: string, source: Record<string, unknown>): Promise<KubeObject[]> {
  const spec = {
    project: 'default',
    source: { repoURL: repo.url, targetRevision: repo.branch, ...source },
    destination: { server: 'https://kubernetes.default.svc', namespace },
  };
  const native = { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name, namespace: 'argocd' }, spec };
  const migrated = await migrateApp(native);
  const migratedSource = (migrated['spec'] as { source: Record<string, unknown> }).source;
  assert.equal((migratedSource['plugin'] as { name?: string } | undefined)?.name, 'driftless-v1', 'migrate-app made it a plugin source');
  const pluginName = `${name}-plugin`;
  await argocd.createApplication(name, spec);
  await argocd.createApplication(pluginName, migrated['spec'] as Record<string, unknown>);
  const nativeRender = await manifestsOf(argocd, name, revision);
  const pluginRender = (await manifestsOf(argocd, pluginName, revision))
    .map((object) => JSON.parse(JSON.stringify(object).replaceAll(pluginName, name)) as KubeObject);
  assert.ok(nativeRender.length > 0, `${name} renders objects`);
  assert.ok(workloadsOf(pluginRender).every((workload) => podTemplateOf(workload)?.metadata?.annotations?.[HASH_ANNOTATION] !== undefined), 'the plugin stamped every workload');
  assert.deepEqual(pluginRender.map(withoutHash), nativeRender.map(withoutHash), `${name}: the plugin renders what the native source renders`);
  return nativeRender;
}

/** A ConfigMap's data. */
const dataOf = (object: KubeObject): Record<string, string> => (object as { data?: Record<string, string> }).data ?? {};

const find = (objects: readonly KubeObject[], kind: string, name: string): KubeObject => {
  const found = objects.find((object) => object.kind === kind && object.metadata?.name === name);
  assert.ok(found, `${kind} ${name} in ${objects.map(identity).join(', ')}`);
  return found;
};

/** A chart that shows every Helm option: its ConfigMap holds all values as JSON. */
function chartFiles(namespace: string): Record<string, string> {
  const chart = 'helm/chart';
  return {
    [`${chart}/Chart.yaml`]: 'apiVersion: v2\nname: parity\nversion: 0.1.0\n',
    [`${chart}/values.yaml`]: 'replicas: 1\nimage: nginx:1.27\ngreeting: hello\nlayer: chart\n',
    [`${chart}/values.schema.json`]: JSON.stringify({ type: 'object', properties: { greeting: { type: 'string', maxLength: 8 } } }),
    [`${chart}/crds/widgets.yaml`]: [
      'apiVersion: apiextensions.k8s.io/v1',
      'kind: CustomResourceDefinition',
      'metadata: {name: widgets.parity.example.com}',
      'spec:',
      '  group: parity.example.com',
      '  names: {kind: Widget, plural: widgets}',
      '  scope: Namespaced',
      '  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]',
      '',
    ].join('\n'),
    [`${chart}/templates/deployment.yaml`]: [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata: {name: {{ .Release.Name }}-web, labels: {app: web}}',
      'spec:',
      '  replicas: {{ .Values.replicas }}',
      '  selector: {matchLabels: {app: web}}',
      '  template:',
      '    metadata: {labels: {app: web}}',
      '    spec:',
      '      containers:',
      '        - name: web',
      '          image: {{ .Values.image | quote }}',
      '          envFrom: [{configMapRef: {name: {{ .Release.Name }}-config}}]',
      '',
    ].join('\n'),
    [`${chart}/templates/configmap.yaml`]: [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata: {name: {{ .Release.Name }}-config}',
      'data:',
      '  namespace: {{ .Release.Namespace | quote }}',
      '  values: {{ toJson .Values | quote }}',
      '',
    ].join('\n'),
    [`${chart}/templates/tests/test.yaml`]: [
      'apiVersion: v1',
      'kind: Pod',
      'metadata: {name: {{ .Release.Name }}-test, annotations: {helm.sh/hook: test}}',
      'spec: {restartPolicy: Never, containers: [{name: t, image: busybox}]}',
      '',
    ].join('\n'),
    [`${chart}/values/10-base.yaml`]: 'layer: base\nbase: true\n',
    [`${chart}/values/20-prod.yaml`]: 'layer: prod\nprod: true\nreplicas: 2\n',
    [`${chart}/env/${namespace}.yaml`]: 'layer: env\nenv: true\n',
    [`${chart}/files/cert.pem`]: '-----BEGIN CERTIFICATE-----\nMIIB,parity\n-----END CERTIFICATE-----\n',
  };
}

fixture.test('Helm: every native option renders the same through migrate-app and the plugin', async ({ argocd, namespace }) => {
  const repo = await argocd.createRepo(`${namespace}-helm`);
  const revision = await repo.commit(chartFiles(namespace), 'a chart for every Helm option');

  const options = await assertSameRender(argocd, repo, revision, `${namespace}-h1`, namespace, {
    path: 'helm/chart',
    helm: {
      releaseName: 'parity',
      // A glob, a per-namespace file, a missing one (ignored) and an explicit entry the glob also matches,
      // which Argo CD moves to its explicit place (last, so base wins over prod).
      valueFiles: ['values/*.yaml', 'env/${ARGOCD_APP_NAMESPACE}.yaml', 'missing.yaml', 'values/10-base.yaml'],
      ignoreMissingValueFiles: true,
      // Longer than the schema allows: rendered only because of skipSchemaValidation.
      valuesObject: { greeting: 'hello from valuesObject', nested: { list: [1, 'two'], flag: true } },
      parameters: [
        { name: 'image', value: 'nginx:${ARGOCD_APP_REVISION_SHORT}' },
        { name: 'tag', value: '0123', forceString: true },
        { name: 'list', value: '{a,b}' },
        { name: 'commas', value: 'x,y' },
        { name: 'source', value: '${ARGOCD_APP_SOURCE_PATH}@$ARGOCD_APP_NAMESPACE costs $$5' },
      ],
      fileParameters: [{ name: 'certificate', path: 'files/cert.pem' }],
      skipCrds: true,
      skipTests: true,
      skipSchemaValidation: true,
    },
  });
  assert.ok(!options.some((object) => object.kind === 'CustomResourceDefinition' || object.kind === 'Pod'), 'skipCrds and skipTests took effect');
  const values = JSON.parse(String(dataOf(find(options, 'ConfigMap', 'parity-config'))['values'])) as Record<string, unknown>;
  assert.equal(values['layer'], 'base', 'the explicit values file comes after the glob');
  assert.deepEqual([values['env'], values['prod'], values['replicas']], [true, true, 2]);
  assert.equal(values['image'], `nginx:${revision.slice(0, 7)}`);
  assert.equal(values['source'], `helm/chart@${namespace} costs $5`);
  assert.equal(values['tag'], '0123');
  assert.match(String(values['certificate']), /MIIB,parity/);

  // The defaults: CRDs, test hooks and schema validation all on; inline values; the release name from the app.
  const defaults = await assertSameRender(argocd, repo, revision, `${namespace}-h2`, namespace, {
    path: 'helm/chart',
    helm: { values: 'greeting: hi\n', valueFiles: ['values/20-prod.yaml'] },
  });
  assert.deepEqual(
    defaults.map(identity).filter((id) => id.startsWith('CustomResourceDefinition') || id.startsWith('Pod')),
    ['CustomResourceDefinition//widgets.parity.example.com', `Pod//${namespace}-h2-test`],
  );
}, { timeout: 400_000 });

/** A base, an overlay that sets its own labels and annotations, and a component. */
const kustomizeFiles: Record<string, string> = {
  'kustomize/base/kustomization.yaml': 'resources: [deployment.yaml, service.yaml, configmap.yaml]\n',
  'kustomize/base/deployment.yaml': [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata: {name: web, labels: {app: web}}',
    'spec:',
    '  replicas: 1',
    '  selector: {matchLabels: {app: web}}',
    '  template:',
    '    metadata: {labels: {app: web}}',
    '    spec:',
    '      containers: [{name: web, image: nginx:1.27, envFrom: [{configMapRef: {name: web-config}}]}]',
    '',
  ].join('\n'),
  'kustomize/base/service.yaml': 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n',
  'kustomize/base/configmap.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n',
  'kustomize/overlay/kustomization.yaml': 'resources: [../base]\ncommonLabels: {team: overlay}\ncommonAnnotations: {owner: overlay}\n',
  'kustomize/components/extra/kustomization.yaml': [
    'apiVersion: kustomize.config.k8s.io/v1alpha1',
    'kind: Component',
    'resources: [extra.yaml]',
    '',
  ].join('\n'),
  'kustomize/components/extra/extra.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {from: component}\n',
};

fixture.test('Kustomize: every native option renders the same through migrate-app and the plugin', async ({ argocd, namespace }) => {
  const repo = await argocd.createRepo(`${namespace}-kustomize`);
  const revision = await repo.commit(kustomizeFiles, 'a kustomization for every Kustomize option');
  const elsewhere = `${namespace}-other`;

  const edited = await assertSameRender(argocd, repo, revision, `${namespace}-k1`, namespace, {
    path: 'kustomize/overlay',
    kustomize: {
      namePrefix: 'pre-',
      nameSuffix: '-suf',
      images: ['nginx=registry.example.com/nginx:${ARGOCD_APP_REVISION_SHORT}'],
      replicas: [{ name: 'web', count: 3 }],
      commonLabels: { team: '${ARGOCD_APP_NAMESPACE}', tier: 'front' },
      forceCommonLabels: true,
      commonAnnotations: { owner: 'rev-${ARGOCD_APP_REVISION}', price: '$$5' },
      commonAnnotationsEnvsubst: true,
      forceCommonAnnotations: true,
      namespace: elsewhere,
      components: ['../components/extra'],
      patches: [
        {
          target: { kind: 'Deployment', name: 'web' },
          patch: '[{"op": "add", "path": "/spec/template/spec/containers/0/env", "value": [{"name": "A", "value": "b"}]}]',
        },
        { patch: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: patched}\n' },
      ],
    },
  });
  const deployment = find(edited, 'Deployment', 'pre-web-suf');
  assert.equal(deployment.metadata?.namespace, elsewhere);
  assert.equal(deployment.spec?.['replicas'], 3);
  assert.deepEqual(deployment.metadata?.labels, { app: 'web', team: namespace, tier: 'front' });
  assert.equal(deployment.metadata?.annotations?.['owner'], `rev-${revision}`);
  assert.equal(deployment.metadata?.annotations?.['price'], '$5');
  assert.match(JSON.stringify(deployment.spec), new RegExp(`registry.example.com/nginx:${revision.slice(0, 7)}`));
  assert.equal(dataOf(find(edited, 'ConfigMap', 'pre-web-config-suf'))['greeting'], 'patched');
  find(edited, 'ConfigMap', 'pre-extra-suf');

  // Labels without selectors but on pod templates; annotations taken literally (no envsubst).
  const labelled = await assertSameRender(argocd, repo, revision, `${namespace}-k2`, namespace, {
    path: 'kustomize/overlay',
    kustomize: {
      commonLabels: { extra: 'yes' },
      labelWithoutSelector: true,
      labelIncludeTemplates: true,
      commonAnnotations: { note: '$ARGOCD_APP_PROJECT_NAME stays' },
    },
  });
  const service = find(labelled, 'Service', 'web');
  assert.equal(service.metadata?.labels?.['extra'], 'yes');
  assert.equal((service.spec?.['selector'] as Record<string, string> | undefined)?.['extra'], undefined);
  const template = podTemplateOf(find(labelled, 'Deployment', 'web'));
  assert.equal(template?.metadata?.labels?.['extra'], 'yes');
  assert.equal(find(labelled, 'Deployment', 'web').metadata?.annotations?.['note'], '$ARGOCD_APP_PROJECT_NAME stays');
}, { timeout: 400_000 });
