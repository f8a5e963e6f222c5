/** Credentials handed to git through private files only: modes, environment, removal (real files). */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { materialiseCredentials } from '../../../controller/writeback/materialise.ts';

describe('materialiseCredentials', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'driftless-auth-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('HTTPS: an askpass script and 0600 files in a 0700 directory; no value in the environment; gone after dispose', async () => {
    const dir = path.join(root, 'https');
    const auth = await materialiseCredentials({ kind: 'https', username: 'bot', password: 'pa55-canary', from: 't' }, undefined, dir);
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    assert.equal((await stat(path.join(dir, 'password'))).mode & 0o777, 0o600);
    assert.equal((await stat(path.join(dir, 'askpass'))).mode & 0o777, 0o700);
    assert.equal(await readFile(path.join(dir, 'password'), 'utf8'), 'pa55-canary');
    assert.equal(auth.env['GIT_ASKPASS'], path.join(dir, 'askpass'));
    assert.equal(auth.env['GIT_TERMINAL_PROMPT'], '0');
    assert.ok(!JSON.stringify(auth.env).includes('pa55-canary'));
    assert.deepEqual(auth.secrets, ['pa55-canary']);
    await auth.dispose();
    await assert.rejects(readdir(dir), { code: 'ENOENT' });
  });

  it('SSH: the key and known hosts as 0600 files, strict host key checking; refused without known hosts', async () => {
    const dir = path.join(root, 'ssh');
    const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n';
    const auth = await materialiseCredentials({ kind: 'ssh', privateKey: key, from: 't' }, 'git.example.com ssh-ed25519 AAAAC3Nza', dir);
    assert.equal((await stat(path.join(dir, 'key'))).mode & 0o777, 0o600);
    assert.equal(await readFile(path.join(dir, 'known_hosts'), 'utf8'), 'git.example.com ssh-ed25519 AAAAC3Nza\n');
    const command = auth.env['GIT_SSH_COMMAND'] ?? '';
    assert.match(command, /-o StrictHostKeyChecking=yes/);
    assert.ok(command.includes(`-o UserKnownHostsFile='${path.join(dir, 'known_hosts')}'`));
    assert.ok(command.includes(`-i '${path.join(dir, 'key')}'`));
    assert.ok(!command.includes('b3BlbnNzaC1rZXktdjEAAAAA'));
    await auth.dispose();
    const none = path.join(root, 'ssh-no-hosts');
    await assert.rejects(materialiseCredentials({ kind: 'ssh', privateKey: key, from: 't' }, undefined, none), /known hosts/);
    await assert.rejects(readdir(none), { code: 'ENOENT' });
  });
});
