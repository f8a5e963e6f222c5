/**
 * What `driftless controller` loads before it does anything: every module loaded stays resident, and
 * the idle controller's memory is mostly its modules (ADR 0021). `controller --help` parses the flags
 * after the whole static graph of the controller is loaded, so it shows what a start loads.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.join(import.meta.dirname, '..', '..');

function modulesLoadedBy(...args: string[]): string[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'driftless-modules-'));
  try {
    const file = path.join(dir, 'modules.txt');
    const result = spawnSync(process.execPath, ['--import', path.join(import.meta.dirname, 'support', 'record-modules.ts'), path.join(ROOT, 'bin', 'driftless.js'), ...args], {
      env: { ...process.env, DRIFTLESS_RECORD_MODULES: file },
      encoding: 'utf8',
    });
    assert.equal(result.status, 0, result.stderr);
    return readFileSync(file, 'utf8').split('\n').filter((line) => line !== '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the controller starts without client-node\'s generated API, express, yaml or simple-git', () => {
  const modules = modulesLoadedBy('controller', '--help');
  const from = (fragment: string): string[] => modules.filter((url) => url.includes(fragment));
  const none = (fragment: string): void => {
    const found = from(fragment);
    assert.equal(found.length, 0, `${found.length} modules under ${fragment} loaded, e.g. ${found[0]}`);
  };
  // KubeConfig itself is loaded (kube/client.ts needs it)...
  assert.equal(from('/@kubernetes/client-node/dist/config.js').length, 1);
  // ...but not the ~850 generated models and API classes behind its barrel (kube/slim-client-node.ts).
  none('/@kubernetes/client-node/dist/gen/models/');
  none('/@kubernetes/client-node/dist/gen/apis/');
  none('/@kubernetes/client-node/dist/gen/index.js');
  // The HTTP server is node:http; yaml and simple-git load with the first out-of-band file and Git job.
  none('/node_modules/express/');
  none('/node_modules/yaml/');
  none('/node_modules/simple-git/');
  // A bound, with room: ~430 at the time of writing, ~1,530 before.
  assert.ok(modules.length < 600, `${modules.length} modules loaded`);
});
