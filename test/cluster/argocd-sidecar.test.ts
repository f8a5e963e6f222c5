import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SidecarPatchError, sidecarFromPatch } from './argocd-sidecar.ts';

const shippedPatch = join(import.meta.dirname, '..', '..', 'manifests', 'plugin', 'argocd-repo-server.patch.yaml');
const volumes = {
  'var-files': '/local/bin',
  plugins: '/local/plugins',
  'driftless-plugin': '/repo/manifests/plugin',
  'driftless-tmp': '/local/tmp',
  'driftless-hash-key': '/local/key',
};

describe('sidecarFromPatch', () => {
  it('maps the shipped sidecar onto local directories through its volumes', async () => {
    const sidecar = await sidecarFromPatch(shippedPatch, 'driftless', volumes, { '/opt/driftless': '/local/image' });
    assert.equal(sidecar.command, '/local/bin/argocd-cmp-server');
    assert.deepEqual(sidecar.args, ['--loglevel=info']);
    assert.equal(sidecar.env['DRIFTLESS_HASH_KEY_FILE'], '/local/key/key');
    assert.equal(sidecar.env['HOME'], '/local/tmp');
    assert.equal(sidecar.env['HELM_CACHE_HOME'], '/local/tmp/helm/cache');
    assert.equal(sidecar.env['TMPDIR'], '/local/tmp', "the container's /tmp is the driftless-tmp volume");
    assert.equal(sidecar.env['DRIFTLESS_TIMEOUT'], '50s', 'values that are not paths stay as they are');
    // The compile cache the image primes is the image's own directory, mapped like a volume.
    assert.equal(sidecar.env['NODE_COMPILE_CACHE'], '/local/image/node-compile-cache');
    // plugin.yaml is a subPath mount: its directory is the shipped manifests/plugin/.
    assert.equal(sidecar.localPath('/home/argocd/cmp-server/config'), '/repo/manifests/plugin');
    assert.equal(sidecar.localPath('/home/argocd/cmp-server/plugins'), '/local/plugins');
  });

  it('maps the shipped render server through the same volumes, to the socket and key paths the sidecar names', async () => {
    const sidecar = await sidecarFromPatch(shippedPatch, 'driftless', volumes, { '/opt/driftless': '/local/image' });
    const server = await sidecarFromPatch(shippedPatch, 'driftless-render-server', volumes, { '/opt/driftless': '/local/image' });
    assert.equal(server.command, 'driftless', 'looked up on PATH, as in the image');
    assert.deepEqual(server.args, ['serve']);
    assert.equal(server.env['DRIFTLESS_RENDER_SOCKET'], '/local/tmp/driftless/render.sock');
    assert.equal(server.env['DRIFTLESS_RENDER_SOCKET'], sidecar.env['DRIFTLESS_RENDER_SOCKET']);
    assert.equal(server.env['TMPDIR'], sidecar.env['TMPDIR']);
    assert.equal(server.env['NODE_COMPILE_CACHE'], sidecar.env['NODE_COMPILE_CACHE']);
    // The app directories and the key, which the server reads by the request's paths.
    for (const path of ['/tmp/_cmp_server/app', '/etc/driftless/hash-key/key']) assert.equal(server.localPath(path), sidecar.localPath(path));
  });

  const scratch = mkdtemp(join(tmpdir(), 'driftless-sidecar-test-'));
  after(async () => rm(await scratch, { recursive: true, force: true }));

  it('refuses a volume the harness has no directory for', async () => {
    const { 'driftless-hash-key': _omitted, ...withoutKey } = volumes;
    await assert.rejects(sidecarFromPatch(shippedPatch, 'driftless', withoutKey), (error: unknown) => {
      assert.ok(error instanceof SidecarPatchError);
      assert.match(error.message, /volume driftless-hash-key/);
      return true;
    });
  });

  it('refuses an env path that is on no mount', async () => {
    const patch = join(await scratch, 'patch.yaml');
    await writeFile(
      patch,
      [
        'spec:',
        '  template:',
        '    spec:',
        '      containers:',
        '        - name: driftless',
        '          command: [/var/run/argocd/argocd-cmp-server]',
        '          env:',
        '            - {name: DRIFTLESS_HASH_KEY_FILE, value: /etc/elsewhere/key}',
        '          volumeMounts:',
        '            - {name: var-files, mountPath: /var/run/argocd}',
        '            - {name: driftless-tmp, mountPath: /tmp}',
      ].join('\n'),
    );
    await assert.rejects(sidecarFromPatch(patch, 'driftless', volumes), /\/etc\/elsewhere\/key is on no volume/);
  });
});
