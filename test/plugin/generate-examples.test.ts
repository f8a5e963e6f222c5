/**
 * `generate` and `explain` over the bundled examples with the real, pinned
 * kustomize and helm (installed by test/setup.ts; never skipped), in an
 * Argo-CD-like environment. Golden files pin the bytes.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { HASH_ANNOTATION } from '../../core/index.ts';
import { ensureTools } from '../tools.ts';
import { REPO, assertGolden, assertOk, runCli } from './cli.ts';
import { parseYaml11 } from './diff.ts';

let binDir = '';
before(async () => {
  binDir = (await ensureTools()).binDir;
});

const stamped = (stdout: string): string[] =>
  (parseYaml11(stdout) as Record<string, any>[])
    .filter((o) => {
      const template = o['kind'] === 'CronJob' ? o['spec']?.jobTemplate?.spec?.template : o['spec']?.template;
      return typeof template?.metadata?.annotations?.[HASH_ANNOTATION] === 'string';
    })
    .map((o) => `${o['kind']}/${o['metadata']['name']}`);

for (const example of ['kustomize', 'helm']) {
  describe(`examples/${example}`, () => {
    const cwd = join(REPO, 'examples', example);

    it('generate renders it with hashes (golden)', async () => {
      const result = await runCli(['generate'], { cwd, binDir });
      assertOk(result);
      assertGolden(`generate/examples-${example}.yaml`, result.stdout);
      assert.ok(stamped(result.stdout).length > 0, 'at least one workload is stamped');
    });

    it('explain explains it (golden)', async () => {
      const result = await runCli(['explain'], { cwd, binDir });
      assertOk(result);
      assertGolden(`explain/examples-${example}.txt`, result.stdout);
    });

    it('auto-detects the source type like Argo CD', async () => {
      const auto = await runCli(['generate'], { cwd, binDir });
      const explicit = await runCli(['generate', '--source-type', example], { cwd, binDir });
      assertOk(explicit);
      assert.equal(explicit.stdout, auto.stdout);
    });
  });
}

describe('examples/helm with Argo CD parameters', () => {
  it('takes the release name from ARGOCD_APP_NAME without the namespace prefix', async () => {
    const result = await runCli(['generate'], { cwd: join(REPO, 'examples', 'helm'), binDir, env: { ARGOCD_APP_NAME: 'argocd_shop' } });
    assertOk(result);
    assert.match(result.stdout, /name: shop-/);
    assert.doesNotMatch(result.stdout, /argocd_shop/);
  });
});
