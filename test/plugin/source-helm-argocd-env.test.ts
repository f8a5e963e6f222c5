/**
 * Argo CD's build-environment substitution and values-file globs in the Helm
 * source (reposerver helmTemplate / getResolvedValueFiles, v3.6.1): which
 * fields get `${ARGOCD_APP_*}`, and which values files helm gets, in which order.
 */
import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { UsageError } from '../../plugin/errors.ts';
import { renderSource } from '../../plugin/source/index.ts';
import { helmTemplateArgs } from '../../plugin/source/helm.ts';
import { expandGlob, isGlobPath } from '../../plugin/source/values-glob.ts';
import { configFor, fakeTool, tempDir } from './source-support.ts';
import type { Env } from './source-support.ts';

const never = new AbortController().signal;
const BUILD_ENV = {
  ARGOCD_APP_NAME: 'web',
  ARGOCD_APP_NAMESPACE: 'prod',
  ARGOCD_APP_REVISION: '0123456789abcdef',
  ARGOCD_APP_SOURCE_PATH: 'apps/web',
};
const parameters = (list: unknown[]): string => JSON.stringify(list);

/** Files (relative path → content) under a new repository root; returns the root. */
async function repoWith(files: readonly string[]): Promise<string> {
  const root = await tempDir();
  for (const file of files) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), 'a: 1\n');
  }
  return root;
}

/** The values files a fake helm is given, relative to the repository root, in order. */
async function valuesFilesPassed(root: string, appDir: string, list: unknown[], env: Env = {}): Promise<string[]> {
  const bin = await tempDir();
  const helm = await fakeTool(bin, 'helm', 'for a in "$@"; do case "$a" in --values=*) echo "# ${a#--values=}";; esac; done; echo "kind: Rendered"');
  const [stream] = await renderSource(
    configFor(appDir, [], { ...BUILD_ENV, ARGOCD_APP_SOURCE_PATH: path.relative(root, appDir), ARGOCD_APP_PARAMETERS: parameters(list), DRIFTLESS_HELM: helm, PATH: bin, ...env }),
    never,
  );
  return (stream?.text ?? '').split('\n').filter((line) => line.startsWith('# ')).map((line) => path.relative(root, line.slice(2)));
}

describe('helm: ${ARGOCD_APP_*} where Argo CD substitutes it', () => {
  it('expands set and set-string values (map and list forms) and values-file paths, but not keys, values, release name or namespace', async () => {
    const config = configFor('/repo/apps/web', [], {
      ...BUILD_ENV,
      ARGOCD_APP_PARAMETERS: parameters([
        { name: 'set', map: { 'image.tag': '${ARGOCD_APP_REVISION}', 'app.$ARGOCD_APP_NAME': 'x', 'list': 'a,$ARGOCD_APP_NAME' } },
        { name: 'set-string', array: ['ns=${ARGOCD_APP_NAMESPACE}', 'price=$$5'] },
        { name: 'values-files', array: ['values-${ARGOCD_APP_NAMESPACE}.yaml'] },
        { name: 'values', string: 'x: ${ARGOCD_APP_NAME}' },
        { name: 'release-name', string: 'r' },
      ]),
    });
    assert.deepEqual(config.helm.set, ['app.$ARGOCD_APP_NAME=x', 'image.tag=0123456789abcdef', 'list=a\\,web']);
    assert.deepEqual(config.helm.setString, ['ns=prod', 'price=$5']);
    assert.deepEqual(config.helm.valuesFiles, ['values-prod.yaml']);
    assert.equal(config.helm.values, 'x: ${ARGOCD_APP_NAME}');
    const args = helmTemplateArgs(config);
    assert.ok(args.includes('--values=/repo/apps/web/values-prod.yaml'), args.join(' '));
    assert.ok(args.includes('--set=image.tag=0123456789abcdef'));
  });

  it('expands only the build environment: other variables of the sidecar become empty, $$ is a literal $', () => {
    const config = configFor('/repo/apps/web', ['--set', 'a=${HOME}|${ARGOCD_APP_PROJECT_NAME}|$$HOME'], { ...BUILD_ENV, HOME: '/secret-home' });
    assert.deepEqual(config.helm.set, ['a=||$HOME']);
  });

  it('escapes a comma the substitution brings into a map value, as cleanSetParameters does after Envsubst', () => {
    const config = configFor('/repo/apps/web', [], { ARGOCD_APP_SOURCE_PATH: 'a,b', ARGOCD_APP_PARAMETERS: parameters([{ name: 'set', map: { path: '${ARGOCD_APP_SOURCE_PATH}', list: '{${ARGOCD_APP_SOURCE_PATH}}' } }]) });
    assert.deepEqual(config.helm.set, ['list={a,b}', 'path=a\\,b']);
  });
});

describe('helm: values-file globs (getResolvedValueFiles)', () => {
  it('only *, ? and [ make a glob', () => {
    assert.ok(isGlobPath('values/*.yaml') && isGlobPath('v?.yaml') && isGlobPath('v[12].yaml'));
    assert.ok(!isGlobPath('{a,b}.yaml'));
  });

  it("expands in doublestar's order: byte order within a directory, dot files included, directory by directory", async () => {
    const root = await repoWith(['v/b.yaml', 'v/a.yaml', 'v/.hidden.yaml', 'v/B.yaml', 'v/sub/c.yaml', 'v/sub/deeper/d.yaml', 'v/a.json', 'w/a.yaml']);
    const rel = async (pattern: string): Promise<string[]> => (await expandGlob(path.join(root, pattern))).map((match) => path.relative(root, match));
    assert.deepEqual(await rel('v/*.yaml'), ['v/.hidden.yaml', 'v/B.yaml', 'v/a.yaml', 'v/b.yaml']);
    assert.deepEqual(await rel('v/[ab].yaml'), ['v/a.yaml', 'v/b.yaml']);
    assert.deepEqual(await rel('v/[!ab].yaml'), ['v/B.yaml']);
    assert.deepEqual(await rel('v/?.{json,yaml}'), ['v/B.yaml', 'v/a.json', 'v/a.yaml', 'v/b.yaml']);
    assert.deepEqual(await rel('*/a.yaml'), ['v/a.yaml', 'w/a.yaml']);
    // `**`: the directory itself first, then depth first; each directory's own files before the next directory's.
    assert.deepEqual(await rel('v/**/*.yaml'), ['v/.hidden.yaml', 'v/B.yaml', 'v/a.yaml', 'v/b.yaml', 'v/sub/c.yaml', 'v/sub/deeper/d.yaml']);
    assert.deepEqual(await rel('nowhere/*.yaml'), []);
    await assert.rejects(expandGlob(path.join(root, 'v/[ab.yaml')), { name: 'GlobPatternError' });
  });

  it('puts explicit entries at their own place, passes each file once, and fails on a glob without matches', async () => {
    const root = await repoWith(['app/Chart.yaml', 'app/values/a.yaml', 'app/values/b.yaml', 'app/values/c.yaml', 'app/env/prod-eu.yaml', 'app/env/test.yaml']);
    const app = path.join(root, 'app');
    assert.deepEqual(
      await valuesFilesPassed(root, app, [{ name: 'values-files', array: ['values/*.yaml', 'values/a.yaml'] }]),
      ['app/values/b.yaml', 'app/values/c.yaml', 'app/values/a.yaml'],
    );
    assert.deepEqual(
      await valuesFilesPassed(root, app, [{ name: 'values-files', array: ['values/b.yaml', 'values/a.yaml', 'values/b.yaml'] }]),
      ['app/values/b.yaml', 'app/values/a.yaml'],
    );
    assert.deepEqual(
      await valuesFilesPassed(root, app, [{ name: 'values-files', array: ['/app/env/${ARGOCD_APP_NAMESPACE}*.yaml', 'values/[ab].yaml'] }]),
      ['app/env/prod-eu.yaml', 'app/values/a.yaml', 'app/values/b.yaml'],
    );
    await assert.rejects(valuesFilesPassed(root, app, [{ name: 'values-files', array: ['values/*.json'] }]), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, /values file "values\/\*\.json" .* is a glob that matched no files/);
      return true;
    });
    assert.deepEqual(
      await valuesFilesPassed(root, app, [{ name: 'values-files', array: ['values/*.json', 'missing.yaml', 'values/c.yaml'] }, { name: 'ignore-missing-value-files', string: 'true' }]),
      ['app/values/c.yaml'],
    );
  });

  it('refuses a glob outside the repository and a match that is a symlink leaving it', async () => {
    const root = await repoWith(['app/Chart.yaml', 'app/values/a.yaml']);
    const outside = await repoWith(['secret.yaml']);
    const app = path.join(root, 'app');
    await assert.rejects(valuesFilesPassed(root, app, [{ name: 'values-files', array: ['../../*/secret.yaml'] }]), /is outside the repository/);
    await symlink(path.join(outside, 'secret.yaml'), path.join(app, 'values', 'z.yaml'));
    await assert.rejects(valuesFilesPassed(root, app, [{ name: 'values-files', array: ['values/*.yaml'] }]), /matched "app\/values\/z.yaml", which is a symlink to outside the repository/);
  });
});
