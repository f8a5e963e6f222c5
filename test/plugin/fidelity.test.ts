/**
 * A local run renders and stamps as Argo CD does, on real helm output: the
 * `namespace` parameter stands in for the destination namespace, duplicate
 * keys are read as Go reads them, and a refusal names the object, helm's
 * template file and the line within that document.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { HASH_ANNOTATION, ManifestError } from '../../core/index.ts';
import type { ExplainReport } from '../../plugin/commands/explain.ts';
import { explain } from '../../plugin/commands/explain.ts';
import { generate } from '../../plugin/commands/generate.ts';
import { parseConfig } from '../../plugin/config.ts';
import type { PluginConfig } from '../../plugin/config.ts';
import { InvalidInputError, exitCodeFor } from '../../plugin/errors.ts';
import { renderSource } from '../../plugin/source/index.ts';
import type { RenderedStream } from '../../plugin/source/index.ts';
import { ensureTools } from '../tools.ts';
import { fixtureCopy, tempDir, toolEnv } from './source-support.ts';
import type { Env } from './source-support.ts';

const never = new AbortController().signal;

/** Runs a command in `app` as Argo CD runs the plugin there (real renderers, `env` as the sidecar's). */
async function run(command: 'generate' | 'explain', app: string, argv: readonly string[], env: Env): Promise<string> {
  const config = parseConfig(command === 'explain' ? ['explain', '--output', 'json', ...argv] : ['generate', ...argv], env, app);
  const render = (c: PluginConfig, signal: AbortSignal): Promise<RenderedStream[]> => renderSource(c, signal);
  return (await (command === 'generate' ? generate : explain)(config, never, render)).stdout;
}

/** The hashes `generate` stamped, by workload name, as Go (Argo CD) reads the output. */
async function stampedByGo(output: string): Promise<Record<string, unknown>> {
  const result = spawnSync((await ensureTools()).goyaml, [], { input: output, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  const hashes: Record<string, unknown> = {};
  for (const line of result.stdout.split('\n').filter(Boolean)) {
    const doc = (JSON.parse(line) as { json: { metadata: { name: string }; spec?: { template?: { metadata?: { annotations?: Record<string, unknown> } } } } }).json;
    const hash = doc.spec?.template?.metadata?.annotations?.[HASH_ANNOTATION];
    if (hash !== undefined) hashes[doc.metadata.name] = hash;
  }
  return hashes;
}

const DIRECTORY = {
  'config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: hello\n',
  'web.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: web:1\n          envFrom:\n            - configMapRef: {name: settings}\n',
};

describe('local runs with --namespace stamp as Argo CD does with that destination namespace', () => {
  it('a directory: the namespace-less ConfigMap belongs to prod, so the Deployment in prod is stamped, and explain agrees', async () => {
    const app = await tempDir();
    for (const [name, text] of Object.entries(DIRECTORY)) await writeFile(path.join(app, name), text);
    const local = await run('generate', app, ['--namespace', 'prod'], {});
    const argocd = await run('generate', app, [], { ARGOCD_APP_NAMESPACE: 'prod' });
    assert.equal(local, argocd);
    assert.match(local, new RegExp(`${HASH_ANNOTATION}: "v1:[0-9a-f]{64}"`));
    // Without any namespace the ConfigMap is not in prod: nothing to stamp (and the test can tell).
    assert.doesNotMatch(await run('generate', app, [], {}), new RegExp(HASH_ANNOTATION));
    const report = JSON.parse(await run('explain', app, ['--namespace', 'prod'], {})) as ExplainReport;
    const web = report.workloads.find((w) => w.name === 'web');
    assert.equal(web?.configs.find((c) => c.name === 'settings')?.inRender, true);
    assert.match(String(web?.hash), /^v1:/);
  });

  it('a helm chart: --namespace prod is helm\'s namespace and the destination of its namespace-less objects', async () => {
    const app = await fixtureCopy('helm-fidelity');
    const env = await toolEnv();
    const local = await run('generate', app, ['--namespace', 'prod'], env);
    assert.equal(local, await run('generate', app, [], { ...env, ARGOCD_APP_NAMESPACE: 'prod' }));
    assert.match(String((await stampedByGo(local))['db']), /^v1:[0-9a-f]{64}$/);
    const report = JSON.parse(await run('explain', app, ['--namespace', 'prod'], env)) as ExplainReport;
    assert.equal(report.workloads[0]?.namespace, 'prod');
    assert.equal(report.workloads[0]?.configs[0]?.inRender, true);
  });
});

describe('real helm output with duplicate keys (helm and Argo CD accept them)', () => {
  it('is stamped, in the template Go keeps, with the hash of what Go reads', async () => {
    const app = await fixtureCopy('helm-fidelity');
    const env = await toolEnv({ ARGOCD_APP_NAMESPACE: 'prod' });
    const output = await run('generate', app, [], env);
    // The render keeps its repeated keys (podAntiAffinity, a pod-template label); only the annotation is added.
    assert.equal(output.match(/^ {8}podAntiAffinity:$/gm)?.length, 2);
    assert.equal(output.match(/^ {8}app: db$/gm)?.length, 2);
    assert.ok((await stampedByGo(output))['db']);
  });
});

describe('refusals of rendered output name the object, helm\'s template file and the line within that document', () => {
  it('an integer beyond 2^53: the StatefulSet, shop/templates/db.yaml, the line counted from the document\'s ---', async () => {
    const app = await fixtureCopy('helm-fidelity');
    const env = await toolEnv({ ARGOCD_APP_NAMESPACE: 'prod' });
    // Where the value sits in its document of helm's output, counting the document's `---` as line 1.
    const shown = spawnSync((await ensureTools()).helm, ['template', 'shop', '.', '--namespace=prod', '--set=problem=bigint'], { cwd: app, env, encoding: 'utf8' });
    assert.equal(shown.status, 0, shown.stderr);
    const document = shown.stdout.split(/^(?=---$)/m).find((d) => d.includes('# Source: shop/templates/db.yaml')) ?? '';
    const lines = document.split('\n');
    const line = lines.findIndex((l) => l.includes('12345678901234567890')) + 1;
    const column = (lines[line - 1]?.indexOf('12345678901234567890') ?? 0) + 1;
    assert.ok(line > 30, 'the value is deep in the document');
    await assert.rejects(run('generate', app, ['--set', 'problem=bigint'], env), (error: unknown) => {
      assert.ok(error instanceof InvalidInputError);
      assert.equal(exitCodeFor(error), 4);
      assert.equal(
        error.message,
        `<helm template>#1 StatefulSet prod/db from shop/templates/db.yaml: line ${line} of the document, column ${column}: a number that JSON cannot carry exactly (an integer beyond 2^53, a float beyond 1.8e308, or .inf/.nan, which Argo CD rejects); quote it if it is a string`,
      );
      return true;
    });
  });

  it('an object Driftless cannot hash names its template file too', async () => {
    const app = await fixtureCopy('helm-fidelity');
    const env = await toolEnv({ ARGOCD_APP_NAMESPACE: 'prod' });
    await assert.rejects(run('generate', app, ['--set', 'problem=list'], env), (error: unknown) => {
      assert.ok(error instanceof ManifestError);
      assert.match(error.message, /^<helm template>#0 ConfigMap prod\/settings from shop\/templates\/config\.yaml: data\.ports: /);
      return true;
    });
  });
});
