/**
 * The controller's compile cache: primed in the image as the controller's UID, with the NODE_OPTIONS
 * its Deployment runs with, and the Deployment (kustomize base and chart) points NODE_COMPILE_CACHE at it.
 * Without it a new pod strips the controller's TypeScript on its first start, and the stripper stays
 * resident (~27 MB of RSS, docs/adr/0021).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '..');

/** The value of `- name: <name>` / `value: <value>` in a container's env, as written. */
function envValue(text: string, name: string): string | undefined {
  return new RegExp(`- name: ${name}\\n\\s+value: (.+)\\n`).exec(text)?.[1]?.trim();
}

test('the controller image primes the compile cache its Deployment points at, as its UID and with its NODE_OPTIONS', async () => {
  const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
  const stage = dockerfile.slice(dockerfile.indexOf('FROM runtime AS controller'), dockerfile.indexOf('FROM runtime AS plugin'));
  assert.ok(stage.length > 0, 'the controller stage precedes the plugin stage');
  for (const file of ['manifests/controller/base/deployment.yaml', 'charts/driftless/templates/deployment.yaml']) {
    const text = await readFile(join(root, file), 'utf8');
    const cacheDir = envValue(text, 'NODE_COMPILE_CACHE');
    assert.ok(cacheDir !== undefined && !cacheDir.startsWith('/tmp/'), `${file}: NODE_COMPILE_CACHE in the image, not on the emptyDir (which starts empty)`);
    const priming = stage.indexOf(`export NODE_COMPILE_CACHE=${cacheDir} `);
    assert.ok(priming > 0, `the controller stage primes ${cacheDir}`);
    // Node keys the cache by UID, V8 its part by flags.
    const user = [...stage.slice(0, priming).matchAll(/^USER (\d+)/gm)].at(-1)?.[1];
    assert.equal(user, /runAsUser: (\d+)/.exec(text)?.[1], `${file}: primed as the UID the controller runs as`);
    assert.ok(stage.includes(`NODE_OPTIONS='${envValue(text, 'NODE_OPTIONS')}'`, priming), `${file}: primed with its NODE_OPTIONS`);
    assert.ok(stage.includes('driftless controller --help', priming), 'priming loads the controller');
  }
});
