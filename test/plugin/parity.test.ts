/**
 * Parity with Argo CD's native Helm and Kustomize sources (issue 7, point 4):
 * for each option, the app rendered by the commands Argo CD's repo server runs
 * (replicated below from util/helm/cmd.go, reposerver helmTemplate and
 * util/kustomize Build) and by `driftless generate` with the plugin parameter
 * gives the same objects apart from the hash annotation.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { HASH_ANNOTATION } from '../../core/index.ts';
import { assertOk, runCli } from './cli.ts';
import { parseYaml11 } from './diff.ts';
import { ensureTools } from '../tools.ts';
import type { Tools } from '../tools.ts';

const run = promisify(execFile);
const FIXTURE = path.join(import.meta.dirname, '..', 'fixtures', 'parity', 'repo');

/** What Argo CD's newEnv gives both renders (the plugin gets it as its environment). */
const BUILD_ENV = {
  ARGOCD_APP_NAME: 'argocd_demo',
  ARGOCD_APP_NAMESPACE: 'demo',
  ARGOCD_APP_REVISION: '0123456789abcdef0123456789abcdef01234567',
  ARGOCD_APP_REVISION_SHORT: '0123456',
};

let tools: Tools;
const temps: string[] = [];
before(async () => {
  tools = await ensureTools();
});
after(() => Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true }))));

/** A fresh checkout of the fixture repository, as Argo CD's repo server has one per request. */
async function checkout(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'driftless-parity-'));
  temps.push(dir);
  await cp(FIXTURE, dir, { recursive: true });
  return dir;
}

/** Go's os.Expand with Argo CD's newEnv mapping, written out for the few forms the fixtures use. */
function argoEnvsubst(text: string): string {
  return text.replace(/\$\$|\$\{(\w+)\}/g, (match, name: string | undefined) => (name === undefined ? '$' : ((BUILD_ENV as Record<string, string>)[name] ?? '')));
}

async function tool(name: 'helm' | 'kustomize', args: readonly string[], cwd: string, extraEnv: Record<string, string> = {}): Promise<string> {
  const home = await mkdtemp(path.join(tmpdir(), 'driftless-parity-home-'));
  temps.push(home);
  const { stdout } = await run(tools[name], args, {
    cwd,
    env: { PATH: process.env['PATH'] ?? '', HOME: home, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home, ...extraEnv },
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

/** The Helm options of Argo CD's ApplicationSourceHelm the tests use. */
interface NativeHelm {
  valueFiles?: string[];
  values?: string;
  valuesObject?: Record<string, unknown>;
  parameters?: { name: string; value: string; forceString?: boolean }[];
  fileParameters?: { name: string; path: string }[];
  ignoreMissingValueFiles?: boolean;
  skipCrds?: boolean;
  skipTests?: boolean;
  skipSchemaValidation?: boolean;
}

/** helm's cleanSetParameters: escape unescaped commas unless the value is a {a,b} list. */
function cleanSetParameters(value: string): string {
  return value.startsWith('{') && value.endsWith('}') ? value : value.replace(/(?<!\\),/g, '\\,');
}

/** Argo CD's helmTemplate + Cmd.template for a chart at `appPath` of `repo`. */
async function nativeHelm(repo: string, appPath: string, options: NativeHelm): Promise<string> {
  const appDir = path.join(repo, appPath);
  const resolve = (file: string): string => (file.startsWith('/') ? path.join(repo, file) : path.resolve(appDir, file));
  const args = ['template', '.', '--name-template', 'demo', '--namespace', BUILD_ENV.ARGOCD_APP_NAMESPACE];
  for (const p of options.parameters ?? []) if (!p.forceString) args.push('--set', `${p.name}=${cleanSetParameters(argoEnvsubst(p.value))}`);
  for (const p of options.parameters ?? []) if (p.forceString) args.push('--set-string', `${p.name}=${cleanSetParameters(argoEnvsubst(p.value))}`);
  for (const p of options.fileParameters ?? []) args.push('--set-file', `${p.name}=${cleanSetParameters(resolve(argoEnvsubst(p.path)))}`);
  for (const file of options.valueFiles ?? []) {
    const resolved = resolve(argoEnvsubst(file));
    const missing = await stat(resolved).then(() => false, () => true);
    if (missing && options.ignoreMissingValueFiles) continue;
    args.push('--values', resolved);
  }
  // ValuesYAML: valuesObject (JSON → YAML) when set, else values; written to a temp file.
  const inline = options.valuesObject !== undefined ? stringify(options.valuesObject) : (options.values ?? '');
  if (inline !== '') {
    const file = path.join(repo, '..', `values-${path.basename(repo)}.yaml`);
    await writeFile(file, inline);
    temps.push(file);
    args.push('--values', file);
  }
  if (!options.skipCrds) args.push('--include-crds');
  if (options.skipSchemaValidation) args.push('--skip-schema-validation');
  if (options.skipTests) args.push('--skip-tests');
  return tool('helm', args, appDir);
}

/** The Kustomize options of Argo CD's ApplicationSourceKustomize the tests use. */
interface NativeKustomize {
  namePrefix?: string;
  nameSuffix?: string;
  images?: string[];
  replicas?: { name: string; count: number }[];
  commonLabels?: Record<string, string>;
  forceCommonLabels?: boolean;
  labelWithoutSelector?: boolean;
  labelIncludeTemplates?: boolean;
  commonAnnotations?: Record<string, string>;
  commonAnnotationsEnvsubst?: boolean;
  forceCommonAnnotations?: boolean;
  namespace?: string;
  patches?: Record<string, unknown>[];
  components?: string[];
  ignoreMissingComponents?: boolean;
}

/** Argo CD's kustomize Build: edits in the checkout's app dir, then `kustomize build <app> <buildOptions>` from the repo root. */
async function nativeKustomize(repo: string, appPath: string, o: NativeKustomize, buildOptions = ''): Promise<string> {
  const appDir = path.join(repo, appPath);
  const edit = (args: string[]): Promise<string> => tool('kustomize', ['edit', ...args], appDir);
  const pairs = (map: Record<string, string>): string[] => Object.entries(map).map(([k, v]) => `${k}:${v}`);
  if (o.namePrefix) await edit(['set', 'nameprefix', '--', o.namePrefix]);
  if (o.nameSuffix) await edit(['set', 'namesuffix', '--', o.nameSuffix]);
  if (o.images) await edit(['set', 'image', ...o.images.map(argoEnvsubst)]);
  if (o.replicas) await edit(['set', 'replicas', ...o.replicas.map((r) => `${r.name}=${r.count}`)]);
  if (o.commonLabels) {
    const flags = [...(o.forceCommonLabels ? ['--force'] : []), ...(o.labelWithoutSelector ? ['--without-selector'] : []), ...(o.labelIncludeTemplates ? ['--include-templates'] : [])];
    await edit(['add', 'label', ...flags, ...pairs(Object.fromEntries(Object.entries(o.commonLabels).map(([k, v]) => [k, argoEnvsubst(v)])))]);
  }
  if (o.commonAnnotations) {
    const values = o.commonAnnotationsEnvsubst ? Object.fromEntries(Object.entries(o.commonAnnotations).map(([k, v]) => [k, argoEnvsubst(v)])) : o.commonAnnotations;
    await edit(['add', 'annotation', ...(o.forceCommonAnnotations ? ['--force'] : []), ...pairs(values)]);
  }
  if (o.namespace) await edit(['set', 'namespace', '--', o.namespace]);
  if (o.patches) {
    // yaml.Unmarshal, append to patches, yaml.Marshal (sigs.k8s.io/yaml sorts keys).
    const file = path.join(appDir, 'kustomization.yaml');
    const kustomization = parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    kustomization['patches'] = [...((kustomization['patches'] as unknown[] | undefined) ?? []), ...o.patches];
    await writeFile(file, stringify(kustomization, { sortMapEntries: true }));
  }
  if (o.components) {
    const found = o.ignoreMissingComponents
      ? (await Promise.all(o.components.map(async (c) => ((await stat(path.join(appDir, c)).then(() => true, () => false)) ? c : undefined)))).filter((c) => c !== undefined)
      : o.components;
    if (found.length > 0) await edit(['add', 'component', ...found]);
  }
  return tool('kustomize', ['build', appDir, ...buildOptions.split(' ').filter((f) => f !== '')], repo);
}

/** `driftless generate` in a fresh checkout's app dir with these parameters, as the cmp-server runs it. */
async function plugin(appPath: string, parameters: unknown[], env: Record<string, string> = {}): Promise<{ stdout: string; appDir: string }> {
  const repo = await checkout();
  const appDir = path.join(repo, appPath);
  const result = await runCli(['generate'], {
    cwd: appDir,
    binDir: tools.binDir,
    env: { ...BUILD_ENV, ARGOCD_APP_SOURCE_PATH: appPath, ARGOCD_APP_PARAMETERS: JSON.stringify(parameters), ...env },
  });
  assertOk(result);
  return { stdout: result.stdout, appDir };
}

/** Objects with the hash annotation (and an annotations map left empty by removing it) taken out. */
function withoutHash(text: string): { objects: unknown[]; stamped: number } {
  let stamped = 0;
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      if (key === 'annotations' && typeof inner === 'object' && inner !== null && HASH_ANNOTATION in inner) {
        stamped++;
        const { [HASH_ANNOTATION]: _hash, ...rest } = inner as Record<string, unknown>;
        if (Object.keys(rest).length > 0) out[key] = rest;
        continue;
      }
      if (key === 'annotations' && typeof inner === 'object' && inner !== null && Object.keys(inner).length === 0) continue;
      out[key] = strip(inner);
    }
    return out;
  };
  return { objects: parseYaml11(text).map(strip), stamped };
}

function assertSameApartFromHash(native: string, pluginOutput: string, expectStamped: number): unknown[] {
  const left = withoutHash(native);
  const right = withoutHash(pluginOutput);
  assert.equal(left.stamped, 0);
  assert.equal(right.stamped, expectStamped, 'workloads the plugin stamped');
  assert.deepEqual(right.objects, left.objects);
  return left.objects;
}

const kinds = (objects: unknown[]): string[] => objects.map((o) => (o as { kind: string }).kind);
const CHART = 'charts/web';

describe('parity with Argo CD native Helm', () => {
  it('default: --include-crds and the chart test hook, as Argo CD renders', async () => {
    const native = await nativeHelm(await checkout(), CHART, {});
    const objects = assertSameApartFromHash(native, (await plugin(CHART, [])).stdout, 1);
    assert.deepEqual(kinds(objects).sort(), ['ConfigMap', 'CustomResourceDefinition', 'Deployment', 'Pod']);
  });

  it('skip-crds = skipCrds, skip-tests = skipTests', async () => {
    const native = await nativeHelm(await checkout(), CHART, { skipCrds: true, skipTests: true });
    const mine = await plugin(CHART, [{ name: 'skip-crds', string: 'true' }, { name: 'skip-tests', string: 'true' }]);
    assert.deepEqual(kinds(assertSameApartFromHash(native, mine.stdout, 1)).sort(), ['ConfigMap', 'Deployment']);
  });

  it('skip-schema-validation = skipSchemaValidation (values that break values.schema.json render)', async () => {
    const parameters = [{ name: 'replicas', value: '9' }];
    await assert.rejects(nativeHelm(await checkout(), CHART, { parameters }), /schema/);
    const refused = await runCli(['generate'], {
      cwd: path.join(await checkout(), CHART),
      binDir: tools.binDir,
      env: { ...BUILD_ENV, ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'set', map: { replicas: '9' } }]) },
    });
    assert.equal(refused.code, 3);
    const native = await nativeHelm(await checkout(), CHART, { parameters, skipSchemaValidation: true });
    const mine = await plugin(CHART, [{ name: 'set', map: { replicas: '9' } }, { name: 'skip-schema-validation', string: 'true' }]);
    assertSameApartFromHash(native, mine.stdout, 1);
  });

  it('file-parameters = fileParameters (--set-file, ${ARGOCD_APP_*} in the path, a comma in the content)', async () => {
    const fileParameters = [{ name: 'certificate', path: 'files/cert.pem' }, { name: 'settings.file', path: 'files/${ARGOCD_APP_NAMESPACE}.txt' }];
    const native = await nativeHelm(await checkout(), CHART, { fileParameters });
    const mine = await plugin(CHART, [{ name: 'file-parameters', map: { certificate: 'files/cert.pem', 'settings.file': 'files/${ARGOCD_APP_NAMESPACE}.txt' } }]);
    const objects = assertSameApartFromHash(native, mine.stdout, 1);
    const config = objects.find((o) => (o as { kind: string }).kind === 'ConfigMap') as { data: Record<string, string> };
    assert.match(config.data['certificate'] ?? '', /MIIBfake,with,commas/);
    assert.equal(config.data['file'], 'demo-file\n');
  });

  it('file-parameters stay inside the repository', async () => {
    const result = await runCli(['generate'], {
      cwd: path.join(await checkout(), CHART),
      binDir: tools.binDir,
      env: { ...BUILD_ENV, ARGOCD_APP_SOURCE_PATH: CHART, ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'file-parameters', array: ['x=../../../../etc/hostname'] }]) },
    });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /file "..\/..\/..\/..\/etc\/hostname" in parameter file-parameters .* is outside the repository/);
  });

  it('ignore-missing-value-files = ignoreMissingValueFiles ("/" = repository root)', async () => {
    const valueFiles = ['values-prod.yaml', 'values-missing.yaml', '/charts/web-values/shared.yaml'];
    const native = await nativeHelm(await checkout(), CHART, { valueFiles, ignoreMissingValueFiles: true });
    const mine = await plugin(CHART, [{ name: 'values-files', array: valueFiles }, { name: 'ignore-missing-value-files', string: 'true' }]);
    const objects = assertSameApartFromHash(native, mine.stdout, 1);
    const config = objects.find((o) => (o as { kind: string }).kind === 'ConfigMap') as { data: Record<string, string> };
    assert.deepEqual([config.data['greeting'], config.data['tier'], config.data['shared']], ['from-prod', 'prod', 'yes']);
  });

  it('values-object = valuesObject, which takes the place of values', async () => {
    const valuesObject = { greeting: 'from-object', settings: { count: 3, enabled: true } };
    const native = await nativeHelm(await checkout(), CHART, { values: 'greeting: from-values\n', valuesObject });
    const mine = await plugin(CHART, [{ name: 'values', string: 'greeting: from-values\n' }, { name: 'values-object', string: JSON.stringify(valuesObject) }]);
    const objects = assertSameApartFromHash(native, mine.stdout, 1);
    const config = objects.find((o) => (o as { kind: string }).kind === 'ConfigMap') as { data: Record<string, string> };
    assert.deepEqual([config.data['greeting'], config.data['count'], config.data['enabled']], ['from-object', '3', 'true']);
  });
});

const OVERLAY = 'kustomize/overlay';

/** Renders the overlay both ways and checks that the plugin left its checkout untouched. */
async function kustomizeBoth(native: NativeKustomize, parameters: unknown[], stamped: number, buildOptions = ''): Promise<unknown[]> {
  const nativeOut = await nativeKustomize(await checkout(), OVERLAY, native, buildOptions);
  const mine = await plugin(OVERLAY, parameters, buildOptions === '' ? {} : { DRIFTLESS_KUSTOMIZE_BUILD_OPTIONS: buildOptions });
  assert.equal(await readFile(path.join(mine.appDir, 'kustomization.yaml'), 'utf8'), await readFile(path.join(FIXTURE, OVERLAY, 'kustomization.yaml'), 'utf8'));
  return assertSameApartFromHash(nativeOut, mine.stdout, stamped);
}

function find(objects: unknown[], kind: string): Record<string, any> {
  return objects.find((o) => (o as { kind: string }).kind === kind) as Record<string, any>;
}

describe('parity with Argo CD native Kustomize', () => {
  it('name-prefix, name-suffix, images (with ${ARGOCD_APP_*}), replicas', async () => {
    const objects = await kustomizeBoth(
      { namePrefix: 'pre-', nameSuffix: '-suf', images: ['nginx:${ARGOCD_APP_REVISION_SHORT}', 'postgres=registry.example/pg:17'], replicas: [{ name: 'web', count: 3 }, { name: 'db', count: 2 }] },
      [
        { name: 'name-prefix', string: 'pre-' },
        { name: 'name-suffix', string: '-suf' },
        { name: 'images', array: ['nginx:${ARGOCD_APP_REVISION_SHORT}', 'postgres=registry.example/pg:17'] },
        { name: 'replicas', array: ['web=3', 'db=2'] },
      ],
      2,
    );
    const deployment = find(objects, 'Deployment');
    assert.equal(deployment['metadata'].name, 'pre-web-suf');
    assert.equal(deployment['spec'].replicas, 3);
    assert.equal(deployment['spec'].template.spec.containers[0].image, 'nginx:0123456');
  });

  it('common-labels with force-common-labels, label-without-selector and label-include-templates', async () => {
    for (const [flags, parameters] of [
      [{ forceCommonLabels: true }, [{ name: 'force-common-labels', string: 'true' }]],
      [{ labelWithoutSelector: true, labelIncludeTemplates: true }, [{ name: 'label-without-selector', string: 'true' }, { name: 'label-include-templates', string: 'true' }]],
    ] as const) {
      const objects = await kustomizeBoth(
        { commonLabels: { env: 'prod', app_ns: '${ARGOCD_APP_NAMESPACE}' }, ...flags },
        [{ name: 'common-labels', map: { env: 'prod', app_ns: '${ARGOCD_APP_NAMESPACE}' } }, ...parameters],
        2,
      );
      assert.equal(find(objects, 'Deployment')['metadata'].labels.app_ns, 'demo');
    }
  });

  it('common-annotations, with and without common-annotations-envsubst, and force-common-annotations', async () => {
    const annotations = { team: 'x', revision: '${ARGOCD_APP_REVISION}', cost: '$$5' };
    for (const envsubst of [false, true]) {
      const objects = await kustomizeBoth(
        { commonAnnotations: annotations, commonAnnotationsEnvsubst: envsubst, forceCommonAnnotations: true },
        [
          { name: 'common-annotations', map: annotations },
          { name: 'common-annotations-envsubst', string: String(envsubst) },
          { name: 'force-common-annotations', string: 'true' },
        ],
        2,
      );
      const metadata = find(objects, 'Deployment')['metadata'];
      assert.equal(metadata.annotations.revision, envsubst ? BUILD_ENV.ARGOCD_APP_REVISION : '${ARGOCD_APP_REVISION}');
      assert.equal(metadata.annotations.cost, envsubst ? '$5' : '$$5');
    }
  });

  it('kustomize-namespace = kustomize.namespace', async () => {
    const objects = await kustomizeBoth({ namespace: 'staging' }, [{ name: 'kustomize-namespace', string: 'staging' }], 2);
    assert.equal(find(objects, 'Deployment')['metadata'].namespace, 'staging');
  });

  it('components, with ignore-missing-components', async () => {
    const objects = await kustomizeBoth(
      { components: ['../components/debug', '../components/absent'], ignoreMissingComponents: true },
      [{ name: 'components', array: ['../components/debug', '../components/absent'] }, { name: 'ignore-missing-components', string: 'true' }],
      2,
    );
    assert.equal(find(objects, 'ConfigMap')['data'].debug, 'true');
  });

  it('patches appended to the kustomization\'s own, and kustomize.buildOptions from the operator', async () => {
    const patches = [
      { target: { kind: 'Deployment', name: 'web' }, patch: '- op: replace\n  path: /spec/replicas\n  value: 4\n' },
      { path: '../patches/resources.yaml' },
    ];
    // The second patch is outside the overlay: only --load-restrictor LoadRestrictionsNone lets kustomize read it.
    const objects = await kustomizeBoth({ patches }, [{ name: 'patches', string: stringify(patches) }], 2, '--load-restrictor LoadRestrictionsNone');
    const deployment = find(objects, 'Deployment');
    assert.equal(deployment['spec'].replicas, 4);
    assert.equal(deployment['spec'].template.spec.containers[0].resources.limits.memory, '128Mi');
    assert.equal(find(objects, 'StatefulSet')['metadata'].labels.patched, 'by-kustomization');
  });
});
