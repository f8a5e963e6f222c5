import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { RenderError, UsageError, exitCodeFor } from '../../plugin/errors.ts';
import { renderSource, resolveSourceType } from '../../plugin/source/index.ts';
import { helmTemplateArgs, isMissingDependencyError } from '../../plugin/source/helm.ts';
import { configFor, fakeTool, fixtureCopy, tempDir, toolEnv } from './source-support.ts';
import type { Env } from './source-support.ts';

const never = new AbortController().signal;

/** Renders the chart and returns the probe ConfigMap's data (see the fixture's templates/probe.yaml). */
async function probe(app: string, argv: readonly string[] = [], env: Env = {}): Promise<{ metadata: Record<string, string>; data: Record<string, string>; kinds: string[] }> {
  const streams = await renderSource(configFor(app, argv, await toolEnv(env)), never);
  assert.equal(streams.length, 1);
  assert.equal(streams[0]?.label, '<helm template>');
  const objects = parseAllDocuments(streams[0]?.text ?? '').map((document) => document.toJS() as Record<string, unknown>).filter((object) => object !== null);
  const configMap = objects.find((object) => object['kind'] === 'ConfigMap') as { metadata: Record<string, string>; data: Record<string, string> };
  return { ...configMap, kinds: objects.map((object) => String(object['kind'])) };
}

describe('helm source (real helm)', () => {
  it('is auto-detected from Chart.yaml and renders with Argo CD\'s release name and namespace', async () => {
    const app = await fixtureCopy('helm-chart');
    assert.equal(await resolveSourceType(configFor(app)), 'helm');
    const result = await probe(app, [], { ARGOCD_APP_NAME: 'team-a_shop', ARGOCD_APP_NAMESPACE: 'prod' });
    assert.equal(result.metadata['name'], 'shop-probe');
    assert.equal(result.metadata['namespace'], 'prod');
    assert.equal(result.data['greeting'], 'from-values.yaml');
    // --include-crds, as native Argo CD renders charts.
    assert.deepEqual(result.kinds, ['CustomResourceDefinition', 'ConfigMap']);
  });

  it('passes KUBE_VERSION and KUBE_API_VERSIONS as --kube-version and --api-versions', async () => {
    const app = await fixtureCopy('helm-chart');
    const without = await probe(app, [], { KUBE_VERSION: '1.29.4' });
    assert.equal(without.data['kubeVersion'], 'v1.29.4');
    assert.equal(without.data['hasWidgets'], 'false');
    const withApis = await probe(app, [], { KUBE_VERSION: '1.29.4', KUBE_API_VERSIONS: 'v1,example.com/v1,example.com/v1/Widget' });
    assert.equal(withApis.data['hasWidgets'], 'true');
  });

  it('applies values files in order, then inline values, then --set and --set-string', async () => {
    const app = await fixtureCopy('helm-chart');
    const filesOnly = await probe(app, [], { ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'values-files', array: ['values-prod.yaml'] }]) });
    assert.equal(filesOnly.data['greeting'], 'from-values-prod.yaml');
    const inline = await probe(app, [], {
      ARGOCD_APP_PARAMETERS: JSON.stringify([
        { name: 'values-files', array: ['values-prod.yaml'] },
        { name: 'values', string: 'greeting: from-inline\nextra:\n  inline-key: yes\n' },
      ]),
    });
    assert.equal(inline.data['greeting'], 'from-inline');
    assert.equal(inline.data['inline-key'], 'true');
    const set = await probe(app, [], {
      ARGOCD_APP_PARAMETERS: JSON.stringify([
        { name: 'values', string: 'greeting: from-inline\n' },
        { name: 'set', map: { greeting: 'from-set', 'extra.csv': 'a,b' } },
        { name: 'set-string', array: ['typed.port=8080'] },
      ]),
      ARGOCD_ENV_SET_STRING: 'ignored=because-parameters-win',
    });
    assert.equal(set.data['greeting'], 'from-set');
    // A map value is literal: its comma did not split it into two --set items.
    assert.equal(set.data['csv'], 'a,b');
    assert.equal(set.data['typed-port'], 'string');
    assert.equal(set.data['ignored'], undefined);
  });

  it('passes user strings literally: nothing reaches a shell', async () => {
    const app = await fixtureCopy('helm-chart');
    const marker = path.join(await tempDir(), 'pwned');
    const hostile = `$(touch ${marker}); touch ${marker} \`touch ${marker}\``;
    const result = await probe(app, [], {
      ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'set', map: { note: hostile } }]),
    });
    assert.equal(result.data['note'], hostile);
    assert.ok(!existsSync(marker));
  });

  it('runs `helm dependency build` when helm template says a dependency is missing, and not once it is vendored', async () => {
    const app = await fixtureCopy('helm-dependency');
    const env = await toolEnv();
    const streams = await renderSource(configFor(app, [], env), never);
    assert.match(streams[0]?.text ?? '', /name: from-subchart/);
    assert.deepEqual(await readdir(path.join(app, 'charts')), ['subchart-0.2.0.tgz']);
    // Vendored now: the second render must not need the dependency's source any more.
    const chart = await readFile(path.join(app, 'Chart.yaml'), 'utf8');
    await writeFile(path.join(app, 'Chart.yaml'), chart.replace('file://./subchart', 'file://./nowhere'));
    const again = await renderSource(configFor(app, [], env), never);
    assert.match(again[0]?.text ?? '', /name: from-subchart/);
  });

  it('fails with helm\'s own message when a template fails', async () => {
    const app = await fixtureCopy('helm-chart');
    await assert.rejects(renderSource(configFor(app, ['--set', 'fail=the probe was told to fail'], await toolEnv()), never), (error: unknown) => {
      assert.ok(error instanceof RenderError);
      assert.equal(exitCodeFor(error), 3);
      assert.match(error.message, /^helm template failed with exit code 1\n/);
      // helm's own words stay; the message came from a --set value, which may be a Secret's, so it is redacted.
      assert.match(error.stderrTail, /execution error at \(probe\/templates\/probe\.yaml:1:\d+\): \[redacted\]/);
      assert.ok(!error.stderrTail.includes('the probe was told to fail'));
      return true;
    });
  });

  it('refuses a values file that does not exist or escapes the repository through a symlink', async () => {
    const app = await fixtureCopy('helm-chart');
    await assert.rejects(renderSource(configFor(app, ['--values-files', 'values-missing.yaml'], await toolEnv()), never), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, /values file "values-missing.yaml" in parameter values-files \(from flag --values-files\) does not exist/);
      return true;
    });
    const outside = await tempDir();
    await writeFile(path.join(outside, 'stolen.yaml'), 'greeting: stolen\n');
    await symlink(path.join(outside, 'stolen.yaml'), path.join(app, 'values-link.yaml'));
    await assert.rejects(renderSource(configFor(app, ['--values-files', 'values-link.yaml'], await toolEnv()), never), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, /values file "values-link.yaml" .* is a symlink to outside the repository/);
      return true;
    });
  });

  it('builds the argv Argo CD would, every value in --flag=value form', () => {
    const config = configFor('/repo/app', [], {
      ARGOCD_APP_NAME: 'argocd_web',
      ARGOCD_APP_NAMESPACE: 'prod',
      KUBE_VERSION: '1.31.0',
      KUBE_API_VERSIONS: 'v1,apps/v1',
      ARGOCD_APP_PARAMETERS: JSON.stringify([
        { name: 'values-files', array: ['values.yaml'] },
        { name: 'values', string: 'a: 1' },
        { name: 'set', array: ['b=2'] },
        { name: 'set-string', map: { c: '3' } },
      ]),
    });
    assert.deepEqual(helmTemplateArgs(config), [
      'template',
      'web',
      '.',
      '--include-crds',
      '--namespace=prod',
      '--kube-version=1.31.0',
      '--api-versions=v1',
      '--api-versions=apps/v1',
      '--values=/repo/app/values.yaml',
      '--values=-',
      '--set=b=2',
      '--set-string=c=3',
    ]);
    assert.deepEqual(helmTemplateArgs(configFor('/repo/app')), ['template', 'release-name', '.', '--include-crds']);
  });

  it('renders offline a dependency vendored under another directory name (helm finds it by its Chart.yaml name)', async () => {
    const app = await fixtureCopy('helm-vendored');
    // Its repository is file://./nowhere: a `helm dependency build` would fail, so success means it never ran.
    const streams = await renderSource(configFor(app, [], await toolEnv()), never);
    assert.match(streams[0]?.text ?? '', /name: from-common/);
    assert.deepEqual(await readdir(path.join(app, 'charts')), ['bitnami-common']);
  });

  it('builds dependencies only after helm template reports them missing, as Argo CD does, then renders again', async () => {
    const app = await fixtureCopy('helm-chart');
    const dir = await tempDir();
    const log = path.join(dir, 'calls');
    // A stand-in helm: `template` fails with helm's missing-dependency message until `dependency build` ran.
    const helm = await fakeTool(dir, 'helm', [
      `echo "$1" >> '${log}'`,
      `if [ "$1" = dependency ]; then : > '${dir}/built'; exit 0; fi`,
      `if [ -e '${dir}/built' ]; then echo "kind: Rendered"; exit 0; fi`,
      `echo "Error: an error occurred while checking for chart dependencies. You may need to run 'helm dependency build' to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: common" >&2`,
      'exit 1',
    ].join('\n'));
    const streams = await renderSource(configFor(app, [], { PATH: dir, DRIFTLESS_HELM: helm }), never);
    assert.equal(streams[0]?.text, 'kind: Rendered\n');
    assert.deepEqual((await readFile(log, 'utf8')).split('\n'), ['template', 'dependency', 'template', '']);
    // Any other failure of helm template is reported as it is, without a dependency build.
    const failing = await fakeTool(await tempDir(), 'helm', `echo "$1" >> '${log}.2'\necho 'Error: parse error in templates/x.yaml' >&2\nexit 1`);
    await assert.rejects(renderSource(configFor(app, [], { PATH: dir, DRIFTLESS_HELM: failing }), never), /helm template failed with exit code 1\nError: parse error/);
    assert.equal(await readFile(`${log}.2`, 'utf8'), 'template\n');
  });

  it('recognises both missing-dependency messages Argo CD looks for (Chart.yaml, and a v1 chart\'s requirements.yaml)', () => {
    assert.ok(isMissingDependencyError(new RenderError('helm template failed', 'Error: found in Chart.yaml, but missing in charts/ directory: redis')));
    assert.ok(isMissingDependencyError(new RenderError('helm template failed', 'Error: found in requirements.yaml, but missing in charts/ directory: redis')));
    assert.ok(!isMissingDependencyError(new RenderError('helm template failed', 'Error: template: x.yaml:3: function "nope" not defined')));
    assert.ok(!isMissingDependencyError(new UsageError('found in Chart.yaml, but missing in charts/ directory')));
  });

  it('rejects release names, namespaces, kube versions and API versions helm could misread, before helm runs', async () => {
    const app = await fixtureCopy('helm-chart');
    const cases: [readonly string[], Env, RegExp][] = [
      [['--release-name=--post-renderer=/bin/sh'], {}, /invalid value "--post-renderer=\/bin\/sh" for parameter release-name \(from flag --release-name\)/],
      [[], { ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'release-name', string: '-x' }]) }, /"-x" for parameter release-name \(from ARGOCD_APP_PARAMETERS \(release-name\)\)/],
      [[], { ARGOCD_APP_NAME: 'argocd_My_App' }, /"My_App" for parameter release-name \(from ARGOCD_APP_NAME\)/],
      [[`--release-name=${'a'.repeat(54)}`], {}, /at most 53 characters/],
      [[], { ARGOCD_APP_NAMESPACE: 'Prod Env' }, /"Prod Env" for parameter namespace \(from ARGOCD_APP_NAMESPACE\)/],
      [[], { KUBE_VERSION: '--debug' }, /"--debug" for parameter kube-version \(from KUBE_VERSION\)/],
      [[], { KUBE_API_VERSIONS: 'v1,--set=x=y' }, /"--set=x=y" for parameter api-versions \(from KUBE_API_VERSIONS\)/],
    ];
    for (const [argv, env, message] of cases) {
      // A helm that would record being run proves the check comes first.
      const marker = path.join(await tempDir(), 'ran');
      const helm = await fakeTool(await tempDir(), 'helm', `touch ${marker}`);
      await assert.rejects(renderSource(configFor(app, argv, { ...env, DRIFTLESS_HELM: helm }), never), (error: unknown) => {
        assert.ok(error instanceof UsageError, String(error));
        assert.match(error.message, message);
        return true;
      });
      assert.ok(!existsSync(marker), message.source);
    }
  });

  it('resolves values files like Argo CD (relative to the app, "/" = repository root) and keeps them inside the repository', async () => {
    const env = { ARGOCD_APP_SOURCE_PATH: 'apps/web' };
    const config = configFor('/repo/apps/web', ['--values-files', '../shared/values.yaml', '--values-files', '/envs/prod.yaml'], env);
    assert.deepEqual(helmTemplateArgs(config).filter((arg) => arg.startsWith('--values')), ['--values=/repo/apps/shared/values.yaml', '--values=/repo/envs/prod.yaml']);
    const refused: [readonly string[], Env, RegExp][] = [
      [['--values-files', '../../../etc/passwd'], env, /values file "..\/..\/..\/etc\/passwd" in parameter values-files \(from flag --values-files\) is outside the repository/],
      [['--values-files', '../shared/values.yaml'], {}, /outside the repository/],
      [['--values-files', '/../outside.yaml'], env, /outside the repository/],
      [[], { ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'values-files', array: ['https://example.com/v.yaml'] }]) }, /"https:\/\/example.com\/v.yaml" in parameter values-files \(from ARGOCD_APP_PARAMETERS \(values-files\)\) is a URL/],
    ];
    for (const [argv, extra, message] of refused) {
      assert.throws(() => helmTemplateArgs(configFor('/repo/apps/web', argv, extra)), (error: unknown) => error instanceof UsageError && message.test(error.message));
    }
  });

  it('passes the sidecar environment to helm, minus KUBE_API_VERSIONS (already in its argv)', async () => {
    const app = await fixtureCopy('helm-chart');
    const helm = await fakeTool(await tempDir(), 'helm', 'echo "home: $HOME"; echo "cache: $HELM_CACHE_HOME"; echo "apis: ${KUBE_API_VERSIONS:-unset}"; echo "args: $*"');
    const streams = await renderSource(
      configFor(app, [], { DRIFTLESS_HELM: helm, HOME: '/home/argocd', HELM_CACHE_HOME: '/helm/cache', KUBE_API_VERSIONS: 'v1,apps/v1' }),
      never,
    );
    assert.equal(
      streams[0]?.text,
      'home: /home/argocd\ncache: /helm/cache\napis: unset\nargs: template release-name . --include-crds --api-versions=v1 --api-versions=apps/v1\n',
    );
  });
});
