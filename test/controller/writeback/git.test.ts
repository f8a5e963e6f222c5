/**
 * The write-back against real Git: bare repositories served by
 * `git http-backend` on 127.0.0.1 with basic auth, hooks that refuse, and a
 * push from someone else landed on the server while ours is in flight.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { formatOutOfBandFile } from '../../../core/index.ts';
import { systemClock } from '../../../controller/clock.ts';
import { selectCredentials, type SecretLike } from '../../../controller/writeback/credentials.ts';
import { createWriteBack, WRITE_BACK_DEFAULTS, type WriteBack } from '../../../controller/writeback/engine.ts';
import type { ConfigDigest, WriteBackResult } from '../../../controller/writeback/model.ts';
import type { SigningKey } from '../../../controller/writeback/signing.ts';
import type { ApplicationLike } from '../../../controller/writeback/source.ts';
import { createPlayground, startGitHttpServer, type GitHttpServer, type GitPlayground } from './git-server.ts';

const execFileAsync = promisify(execFile);
const USER = 'driftless-bot';
const PASSWORD = `canary-${randomUUID()}`;
const FILE = 'apps/web/.driftless/out-of-band';

const digest = (seed: string): string => `v1:${createHash('sha256').update(seed).digest('hex')}`;
const secret = (name: string, seed: string): ConfigDigest => ({ kind: 'Secret', namespace: 'prod', name, digest: digest(seed) });

function application(name: string, repoURL: string, options: { path?: string; targetRevision?: string; annotations?: Record<string, string> } = {}): ApplicationLike {
  return {
    metadata: { name, namespace: 'argocd', annotations: options.annotations ?? {} },
    spec: { source: { repoURL, path: options.path ?? 'apps/web', targetRevision: options.targetRevision ?? 'main', plugin: { name: 'driftless-v1' } } },
  };
}

/** An Argo CD repository Secret as the API returns it: labels, and data in base64. */
function repositorySecret(url: string, username: string, password: string, type = 'repository'): SecretLike {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  return {
    metadata: { name: `repo-${type}`, namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': type } },
    data: { type: b64('git'), url: b64(url), username: b64(username), password: b64(password) },
  };
}

describe('write-back to real Git over HTTP with basic auth', () => {
  let playground: GitPlayground;
  let server: GitHttpServer;
  let workDir: string;
  /** Everything the write-back said, for the canary scan. */
  const said: string[] = [];

  const engine = (secrets: SecretLike[], overrides: Partial<typeof WRITE_BACK_DEFAULTS> = {}, signingKey?: SigningKey): WriteBack =>
    createWriteBack(
      { ...WRITE_BACK_DEFAULTS, workDir, batchWindowMs: 50, retryBaseMs: 10, retryMaxMs: 50, ...overrides },
      {
        clock: systemClock(),
        credentialsFor: async (url) => selectCredentials(url, secrets),
        knownHosts: async () => undefined,
        signingKey: async () => signingKey,
      },
    );
  const submit = async (wb: WriteBack, ...args: Parameters<WriteBack['submit']>): Promise<WriteBackResult> => {
    const result = await wb.submit(...args);
    said.push(JSON.stringify(result), JSON.stringify(wb.status()));
    return result;
  };

  before(async () => {
    playground = await createPlayground();
    server = await startGitHttpServer(playground, USER, PASSWORD);
    workDir = path.join(playground.root, 'work');
  });
  after(async () => {
    // After every operation the private work directories are gone: no clone, no credential file left.
    const left = await readdir(workDir).catch(() => []);
    assert.deepEqual(left, []);
    // And the canary is nowhere in what the repositories hold.
    for (const repo of await readdir(path.join(playground.root, 'repos'))) {
      const dump = await playground.git(['--git-dir', path.join(playground.root, 'repos', repo), 'log', '--all', '-p', '--format=%H %an %ae %B']);
      assert.ok(!dump.includes(PASSWORD), `the password is in ${repo}`);
    }
    const config = await readFile(path.join(playground.home, '.git-credentials'), 'utf8').catch(() => '');
    assert.ok(!config.includes(PASSWORD));
    await server.close();
    await playground.dispose();
  });
  beforeEach(() => {
    server.beforeReceivePack = undefined;
  });

  it('first write creates the file: exactly one commit with the expected bytes and message; the same digest again commits nothing', async () => {
    await playground.createRepo('first', 'main', { 'apps/web/deploy.yaml': 'kind: Deployment\n' });
    const url = server.url('first');
    const wb = engine([repositorySecret(url, USER, PASSWORD)]);
    const configs = [secret('db-credentials', 'a')];
    const workloads = [{ kind: 'Rollout', namespace: 'prod', name: 'web' }];
    const result = await submit(wb, { application: application('web', url), configs, workloads });
    assert.equal(result.status, 'committed', JSON.stringify(result));
    assert.equal(await playground.commitCount('first', 'main'), 2);
    assert.equal(result.status === 'committed' && result.sha, await playground.headSha('first', 'main'));
    assert.equal(await playground.show('first', 'main', FILE), formatOutOfBandFile(configs));
    assert.equal(
      await playground.headMessage('first', 'main'),
      'driftless: roll Rollout prod/web\n\nOut-of-band change of Secret prod/db-credentials.\nApplications: argocd/web.\n\n',
    );
    const status = wb.statusOf('argocd', 'web');
    assert.equal(status?.state, 'committed');
    assert.equal(status?.branch, 'main');

    const again = await submit(wb, { application: application('web', url), configs, workloads });
    assert.equal(again.status, 'unchanged');
    assert.equal(await playground.commitCount('first', 'main'), 2);
    await wb.close();
  });

  it('two Applications of one repository inside the batch window give one commit holding both', async () => {
    await playground.createRepo('mono', 'main', { 'apps/web/deploy.yaml': 'x\n', 'apps/api/deploy.yaml': 'y\n' });
    const url = server.url('mono');
    const wb = engine([repositorySecret(url, USER, PASSWORD)], { batchWindowMs: 200 });
    const [web, api] = await Promise.all([
      submit(wb, { application: application('web', url), configs: [secret('web-tls', 'w1')], workloads: [{ kind: 'Deployment', namespace: 'prod', name: 'web' }] }),
      submit(wb, { application: application('api', url, { path: 'apps/api' }), configs: [secret('api-db', 'p1')], workloads: [{ kind: 'Deployment', namespace: 'prod', name: 'api' }] }),
    ]);
    assert.equal(web.status, 'committed');
    assert.equal(api.status, 'committed');
    assert.equal(web.status === 'committed' && api.status === 'committed' && web.sha === api.sha, true);
    assert.equal(await playground.commitCount('mono', 'main'), 2);
    assert.equal(await playground.show('mono', 'main', 'apps/api/.driftless/out-of-band'), formatOutOfBandFile([secret('api-db', 'p1')]));
    assert.equal(await playground.show('mono', 'main', 'apps/web/.driftless/out-of-band'), formatOutOfBandFile([secret('web-tls', 'w1')]));
    assert.match(await playground.headMessage('mono', 'main'), /^driftless: roll Deployment prod\/api, Deployment prod\/web\n/);
    await wb.close();
  });

  it('someone else pushes between our fetch and our push: the edit is re-applied on their head and both changes are kept', async () => {
    await playground.createRepo('race', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const url = server.url('race');
    const wb = engine([repositorySecret(url, USER, PASSWORD)]);
    let landed = false;
    // Held at the server: our pack arrives, and before git sees it another push moves main.
    server.beforeReceivePack = {
      at: 'pack',
      run: async () => {
        await playground.pushAsSomeoneElse('race', 'main', { 'apps/web/other.yaml': 'theirs\n' }, 'their change');
        landed = true;
      },
    };
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'r1')], workloads: [] });
    assert.equal(landed, true);
    assert.equal(result.status, 'committed', JSON.stringify(result));
    assert.equal(result.status === 'committed' && result.attempts, 2);
    assert.equal(await playground.commitCount('race', 'main'), 3);
    assert.equal(await playground.show('race', 'main', 'apps/web/other.yaml'), 'theirs\n');
    assert.equal(await playground.show('race', 'main', FILE), formatOutOfBandFile([secret('db', 'r1')]));
    await wb.close();
  });

  it('someone else pushes before our push asks for the refs (git refuses client-side, "fetch first"): re-applied, both kept', async () => {
    await playground.createRepo('race-early', 'main', { 'apps/web/deploy.yaml': 'x\n', [FILE]: formatOutOfBandFile([secret('tls', 't0')]) });
    const url = server.url('race-early');
    const wb = engine([repositorySecret(url, USER, PASSWORD)]);
    // Their change edits the same file: a digest of another config. Ours must be applied on top, theirs kept.
    server.beforeReceivePack = {
      at: 'advertise',
      run: () => playground.pushAsSomeoneElse('race-early', 'main', { [FILE]: formatOutOfBandFile([secret('tls', 't1')]) }, 'their rotation'),
    };
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'r2')], workloads: [] });
    assert.equal(result.status === 'committed' && result.attempts, 2, JSON.stringify(result));
    assert.equal(await playground.show('race-early', 'main', FILE), formatOutOfBandFile([secret('tls', 't1'), secret('db', 'r2')]));
    assert.equal(await playground.commitCount('race-early', 'main'), 3);
    await wb.close();
  });

  it('when others push first at every attempt, the retries are bounded and it fails as non-fast-forward', async () => {
    await playground.createRepo('busy', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const url = server.url('busy');
    const wb = engine([repositorySecret(url, USER, PASSWORD)], { pushAttempts: 3 });
    let theirs = 0;
    server.beforeReceivePack = {
      at: 'pack',
      every: true,
      run: async () => {
        theirs++;
        await playground.pushAsSomeoneElse('busy', 'main', { [`apps/web/theirs-${theirs}.yaml`]: 'x\n' }, `theirs ${theirs}`);
      },
    };
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'n1')], workloads: [] });
    server.beforeReceivePack = undefined;
    assert.equal(result.status === 'failed' && result.error.kind, 'non-fast-forward', JSON.stringify(result));
    assert.equal(theirs, 3);
    assert.equal(await playground.commitCount('busy', 'main'), 4);
    assert.equal(await playground.show('busy', 'main', FILE), undefined);
    await wb.close();
  });

  it('two rotations of one config inside the batch window give one commit with the later digest', async () => {
    await playground.createRepo('twice', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const url = server.url('twice');
    const wb = engine([repositorySecret(url, USER, PASSWORD)], { batchWindowMs: 200 });
    const [first, second] = await Promise.all([
      submit(wb, { application: application('web', url), configs: [secret('db', 'v1')], workloads: [] }),
      submit(wb, { application: application('web', url), configs: [secret('db', 'v2')], workloads: [] }),
    ]);
    // Both are answered by the one commit; it holds the later digest (the live config's), as the file shows.
    assert.equal(second.status, 'committed');
    assert.equal(first.status === 'committed' && second.status === 'committed' && first.sha === second.sha, true);
    assert.equal(await playground.commitCount('twice', 'main'), 2);
    assert.equal(await playground.show('twice', 'main', FILE), formatOutOfBandFile([secret('db', 'v2')]));
    await wb.close();
  });

  it('close while a push is in flight aborts git: the submission fails as stopped, nothing lands, the work directory is removed', async () => {
    await playground.createRepo('aborted', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const url = server.url('aborted');
    const wb = engine([repositorySecret(url, USER, PASSWORD)]);
    let release = (): void => {};
    let held = (): void => {};
    const isHeld = new Promise<void>((resolve) => {
      held = resolve;
    });
    server.beforeReceivePack = {
      at: 'pack',
      run: () =>
        new Promise<void>((resolve) => {
          release = resolve;
          held();
        }),
    };
    const pending = submit(wb, { application: application('web', url), configs: [secret('db', 'x1')], workloads: [] });
    await isHeld;
    await wb.close();
    const result = await pending;
    release();
    assert.equal(result.status === 'failed' && result.error.kind, 'stopped', JSON.stringify(result));
    assert.equal(await playground.commitCount('aborted', 'main'), 1);
    assert.deepEqual(await readdir(workDir), []);
  });

  it('a push refused by a pre-receive hook fails as rejected, and nothing lands', async () => {
    await playground.createRepo('guarded', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    await playground.hook('guarded', 'pre-receive', '#!/bin/sh\necho "protected branch: pushes to main need a review" >&2\nexit 1\n');
    const url = server.url('guarded');
    const wb = engine([repositorySecret(url, USER, PASSWORD)]);
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'g1')], workloads: [] });
    assert.equal(result.status, 'failed');
    assert.equal(result.status === 'failed' && result.error.kind, 'rejected', JSON.stringify(result));
    assert.equal(await playground.commitCount('guarded', 'main'), 1);
    await wb.close();
  });

  it('wrong credentials fail as auth, and no credential appears in any result, status, or the work directory', async () => {
    await playground.createRepo('locked', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const url = server.url('locked');
    const wrong = `${PASSWORD}-wrong`;
    const wb = engine([repositorySecret(url, USER, wrong)]);
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'l1')], workloads: [] });
    assert.equal(result.status, 'failed');
    assert.equal(result.status === 'failed' && result.error.kind, 'auth', JSON.stringify(result));
    assert.equal(await playground.commitCount('locked', 'main'), 1);
    // The server saw our attempt with the wrong password (so git did send credentials, and they were refused).
    assert.ok(server.requests.some((r) => r.path.startsWith('/locked.git') && r.sentCredentials && r.status === 401));
    for (const text of said) {
      assert.ok(!text.includes(PASSWORD), 'the password leaked into a result or status');
      assert.ok(!text.includes(Buffer.from(`${USER}:${PASSWORD}`).toString('base64')), 'the basic-auth header leaked');
    }
    await wb.close();
  });

  it('a write branch different from the target revision (base:target): the base is untouched, the write branch holds the commit', async () => {
    await playground.createRepo('branches', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const url = server.url('branches');
    const wb = engine([repositorySecret(url, USER, PASSWORD)]);
    const app = application('web', url, { annotations: { 'driftless.dev/write-back-branch': 'main:driftless/rotations' } });
    const first = await submit(wb, { application: app, configs: [secret('db', 'b1')], workloads: [] });
    assert.equal(first.status, 'committed', JSON.stringify(first));
    assert.equal(first.status === 'committed' && first.branch, 'driftless/rotations');
    assert.equal(await playground.commitCount('branches', 'main'), 1);
    assert.equal(await playground.commitCount('branches', 'driftless/rotations'), 2);
    // The write branch exists now: the next change builds on it, keeping the earlier entry.
    const second = await submit(wb, { application: app, configs: [secret('tls', 'b2')], workloads: [] });
    assert.equal(second.status, 'committed');
    assert.equal(await playground.commitCount('branches', 'driftless/rotations'), 3);
    assert.equal(await playground.show('branches', 'driftless/rotations', FILE), formatOutOfBandFile([secret('db', 'b1'), secret('tls', 'b2')]));
    await wb.close();
  });

  it('HEAD resolves to the remote default branch', async () => {
    await playground.createRepo('trunk', 'trunk', { 'apps/web/deploy.yaml': 'x\n' });
    await playground.createBranch('trunk', 'main', 'trunk');
    const url = server.url('trunk');
    const wb = engine([repositorySecret(url, USER, PASSWORD)]);
    const result = await submit(wb, { application: application('web', url, { targetRevision: 'HEAD' }), configs: [secret('db', 'h1')], workloads: [] });
    assert.equal(result.status === 'committed' && result.branch, 'trunk', JSON.stringify(result));
    assert.equal(await playground.commitCount('trunk', 'trunk'), 2);
    assert.equal(await playground.commitCount('trunk', 'main'), 1);
    await wb.close();
  });

  it('credentials from a repo-write-creds template win over the read-only repository Secret', async () => {
    await playground.createRepo('write-creds', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const url = server.url('write-creds');
    const prefix = url.slice(0, url.lastIndexOf('/') + 1);
    const wb = engine([repositorySecret(url, 'reader', 'read-only-wrong'), repositorySecret(prefix, USER, PASSWORD, 'repo-write-creds')]);
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'c1')], workloads: [] });
    assert.equal(result.status, 'committed', JSON.stringify(result));
    await wb.close();
  });

  it('signs the commit with an SSH key when one is given; git verify-commit accepts it', async () => {
    await playground.createRepo('signed', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const keyFile = path.join(playground.root, 'signing');
    await execFileAsync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'driftless', '-f', keyFile]);
    const key = await readFile(keyFile, 'utf8');
    const url = server.url('signed');
    const wb = engine([repositorySecret(url, USER, PASSWORD)], {}, { format: 'ssh', key });
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 's1')], workloads: [] });
    assert.equal(result.status, 'committed', JSON.stringify(result));
    const allowed = path.join(playground.root, 'allowed-signers');
    await writeFile(allowed, `${WRITE_BACK_DEFAULTS.authorEmail} ${await readFile(`${keyFile}.pub`, 'utf8')}`);
    const bare = path.join(playground.root, 'repos', 'signed.git');
    await playground.git(['--git-dir', bare, '-c', `gpg.ssh.allowedSignersFile=${allowed}`, 'verify-commit', 'main']);
    // The unsigned initial commit is refused by the same check: the check can fail.
    await assert.rejects(playground.git(['--git-dir', bare, '-c', `gpg.ssh.allowedSignersFile=${allowed}`, 'verify-commit', 'main~1']));
    for (const text of said) assert.ok(!text.includes(key.trim().split('\n')[1] ?? 'unreachable'));
    await wb.close();
  });

  it('signs the commit with an OpenPGP key when one is given; gpg verifies it, and no gpg-agent is left running', async () => {
    await playground.createRepo('gpg-signed', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    // A key made the way an operator would: no passphrase, signing only; exported armoured into the Secret.
    const maker = path.join(playground.root, 'gpg-maker');
    await execFileAsync('mkdir', ['-m', '0700', maker]);
    const gpg = async (home: string, args: string[]): Promise<string> => (await execFileAsync('gpg', ['--batch', '--no-tty', ...args], { env: { ...process.env, GNUPGHOME: home } })).stdout;
    await gpg(maker, ['--passphrase', '', '--quick-gen-key', `Driftless <${WRITE_BACK_DEFAULTS.authorEmail}>`, 'ed25519', 'sign', 'never']);
    const key = await gpg(maker, ['--armor', '--export-secret-keys']);
    const url = server.url('gpg-signed');
    const wb = engine([repositorySecret(url, USER, PASSWORD)], {}, { format: 'openpgp', key });
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'g1')], workloads: [] });
    assert.equal(result.status, 'committed', JSON.stringify(result));
    await wb.close();
    const bare = path.join(playground.root, 'repos', 'gpg-signed.git');
    const verify = async (rev: string): Promise<unknown> =>
      execFileAsync('git', ['--git-dir', bare, 'verify-commit', rev], { env: { ...process.env, GNUPGHOME: maker } });
    await verify('main');
    // The unsigned initial commit is refused by the same check: the check can fail.
    await assert.rejects(verify('main~1'));
    // The operation's own keyring (and its agent) went with its work directory.
    const agents = (await execFileAsync('ps', ['-eo', 'args'])).stdout.split('\n').filter((line) => line.includes('gpg-agent') && line.includes(workDir));
    assert.deepEqual(agents, [], 'no gpg-agent of the write-back left running');
    for (const text of said) assert.ok(!text.includes(key.split('\n').find((line) => line.length > 40) ?? 'unreachable'));
    await execFileAsync('gpgconf', ['--kill', 'gpg-agent'], { env: { ...process.env, GNUPGHOME: maker } });
  });

  it('an OpenPGP signing key gpg cannot import fails the write-back as auth, naming no key material', async () => {
    await playground.createRepo('gpg-bad', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const url = server.url('gpg-bad');
    const key = `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\ncanary-${randomUUID()}\n-----END PGP PRIVATE KEY BLOCK-----\n`;
    const wb = engine([repositorySecret(url, USER, PASSWORD)], {}, { format: 'openpgp', key });
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'g2')], workloads: [] });
    assert.equal(result.status, 'failed', JSON.stringify(result));
    assert.equal(result.status === 'failed' ? result.error.kind : undefined, 'auth');
    assert.match(JSON.stringify(result), /gpg could not import the gpgSigningKey/);
    assert.ok(!JSON.stringify(result).includes('canary-'));
    await wb.close();
  });

  it('a .driftless symlink leading out of the repository is refused, and nothing is written', async () => {
    await playground.createRepo('escape', 'main', { 'apps/web/deploy.yaml': 'x\n' });
    const dir = path.join(playground.root, 'escape-clone');
    await playground.git(['clone', '-q', path.join(playground.root, 'repos', 'escape.git'), dir]);
    await symlink('/tmp', path.join(dir, 'apps/web/.driftless'));
    await playground.git(['add', '-A'], dir);
    await playground.git(['commit', '-q', '-m', 'a symlink'], dir);
    await playground.git(['push', '-q', 'origin', 'HEAD:main'], dir);
    const url = server.url('escape');
    const wb = engine([repositorySecret(url, USER, PASSWORD)]);
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'e1')], workloads: [] });
    assert.equal(result.status === 'failed' && result.error.kind, 'file', JSON.stringify(result));
    assert.match(result.status === 'failed' ? result.error.message : '', /leads outside the repository/);
    assert.equal(await playground.commitCount('escape', 'main'), 2);
    await wb.close();
  });

  it('an invalid out-of-band file in Git is not written over', async () => {
    await playground.createRepo('broken', 'main', { 'apps/web/deploy.yaml': 'x\n', [FILE]: 'version: 2\nconfigs: []\n' });
    const url = server.url('broken');
    const wb = engine([repositorySecret(url, USER, PASSWORD)]);
    const result = await submit(wb, { application: application('web', url), configs: [secret('db', 'f1')], workloads: [] });
    assert.equal(result.status === 'failed' && result.error.kind, 'file', JSON.stringify(result));
    assert.match(result.status === 'failed' ? result.error.message : '', /\.driftless\/out-of-band:1: version must be 1/);
    assert.equal(await playground.show('broken', 'main', FILE), 'version: 2\nconfigs: []\n');
    await wb.close();
  });

});
