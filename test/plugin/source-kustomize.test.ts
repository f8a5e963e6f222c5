import assert from 'node:assert/strict';
import { cp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { RenderError, exitCodeFor } from '../../plugin/errors.ts';
import { renderSource, resolveSourceType } from '../../plugin/source/index.ts';
import { kustomizeArgs } from '../../plugin/source/kustomize.ts';
import { configFor, fixtureCopy, tempDir, toolEnv } from './source-support.ts';

const never = new AbortController().signal;

describe('kustomize source (real kustomize)', () => {
  it('runs `kustomize build .` in the app dir and returns its output as <kustomize build>', async () => {
    const app = await fixtureCopy('kustomize');
    const config = configFor(app, [], await toolEnv());
    assert.equal(await resolveSourceType(config), 'kustomize');
    const streams = await renderSource(config, never);
    assert.equal(streams.length, 1);
    const [stream] = streams;
    assert.equal(stream?.label, '<kustomize build>');
    // The generator's hash-suffixed name and the namespace transformer prove kustomize really ran.
    assert.match(stream?.text ?? '', /name: web-config-[a-z0-9]{10}\n {2}namespace: shop\n/);
    assert.match(stream?.text ?? '', /kind: Deployment/);
    // Same input, same bytes.
    assert.deepEqual(await renderSource(config, never), streams);
  });

  it('wins over Chart.yaml in auto-detection, as in Argo CD, for every kustomization file name', async () => {
    for (const name of ['kustomization.yaml', 'kustomization.yml', 'Kustomization']) {
      const app = await fixtureCopy('helm-chart');
      await writeFile(path.join(app, name), 'resources: []\n');
      assert.equal(await resolveSourceType(configFor(app)), 'kustomize', name);
    }
    assert.equal(await resolveSourceType(configFor(await fixtureCopy('helm-chart'))), 'helm');
  });

  it('fails with RenderError (exit 3) carrying kustomize\'s own error', async () => {
    const app = await fixtureCopy('kustomize');
    await writeFile(path.join(app, 'kustomization.yaml'), 'resources:\n  - missing.yaml\n');
    await assert.rejects(renderSource(configFor(app, [], await toolEnv()), never), (error: unknown) => {
      assert.ok(error instanceof RenderError);
      assert.equal(exitCodeFor(error), 3);
      assert.match(error.message, /^kustomize build failed with exit code 1\n/);
      assert.match(error.stderrTail, /missing\.yaml/);
      return true;
    });
  });

  it('adds --enable-helm with our helm only when asked', () => {
    assert.deepEqual(kustomizeArgs(configFor('/app')), ['build', '.']);
    assert.deepEqual(kustomizeArgs(configFor('/app', ['--kustomize-enable-helm'], { DRIFTLESS_HELM: '/opt/helm' })), [
      'build',
      '.',
      '--enable-helm',
      '--helm-command=/opt/helm',
    ]);
  });

  it('inflates a kustomization\'s helmCharts with our helm only under kustomize-enable-helm', async () => {
    const app = await tempDir();
    await cp(await fixtureCopy('helm-chart'), path.join(app, 'charts', 'probe'), { recursive: true });
    await writeFile(path.join(app, 'kustomization.yaml'), 'helmCharts:\n  - name: probe\n    releaseName: inflated\n    namespace: demo\n');
    const env = await toolEnv();
    await assert.rejects(renderSource(configFor(app, [], env), never), (error: unknown) => error instanceof RenderError && /enable-helm/.test(error.stderrTail));
    const streams = await renderSource(configFor(app, [], { ...env, ARGOCD_ENV_KUSTOMIZE_ENABLE_HELM: 'true' }), never);
    assert.match(streams[0]?.text ?? '', /name: inflated-probe\n {2}namespace: demo\n/);
  });
});
