/**
 * The exec credential plugin runner of Argo CD's `execProviderConfig`, with
 * real plugin processes (small node scripts): what the plugin is given (args,
 * env, KUBERNETES_EXEC_INFO, no stdin), how long a credential is kept, the
 * deadline, and that no failure shows the plugin's output or arguments.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ClusterConnection, ExecProvider } from '../../controller/hub/cluster-secret.ts';
import { ExecCredentialError, ExecCredentialSource, parseExecCredential } from '../../controller/hub/exec-credential.ts';
import { describeCredentialError } from '../../controller/kube/kubeconfig-errors.ts';

const CANARY = 'canary-exec-secret-51c2';
const V1 = 'client.authentication.k8s.io/v1';
let dir = '';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'driftless-exec-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes an executable node script whose body is `body`; returns its path. */
async function plugin(name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `#!${process.execPath}\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

function connection(exec: Partial<ExecProvider> & { command: string }, more: Partial<ClusterConnection> = {}): ClusterConnection & { exec: ExecProvider } {
  return { inCluster: false, tls: { insecure: false }, disableCompression: false, ...more, exec: { args: [], env: {}, apiVersion: V1, provideClusterInfo: false, ...exec } };
}

/** A plugin that records what it got in `<dir>/<name>.seen.json` (one line per run) and prints a token. */
function recorder(name: string, status = '{ token: "tok-" + runs }'): Promise<string> {
  return plugin(name, `
const fs = require('node:fs');
const seen = ${JSON.stringify(join(dir, `${name}.seen`))};
let stdin = 'open';
try { stdin = fs.readFileSync(0, 'utf8') === '' ? 'empty' : 'data'; } catch (error) { stdin = 'closed:' + error.code; }
fs.appendFileSync(seen, JSON.stringify({ args: process.argv.slice(2), env: { A: process.env.A, HOME: process.env.HOME !== undefined }, info: JSON.parse(process.env.KUBERNETES_EXEC_INFO), stdin }) + '\\n');
const runs = fs.readFileSync(seen, 'utf8').trim().split('\\n').length;
process.stdout.write(JSON.stringify({ apiVersion: ${JSON.stringify(V1)}, kind: 'ExecCredential', status: ${status} }));`);
}

async function runs(name: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(join(dir, `${name}.seen`), 'utf8').catch(() => '');
  return text.trim() === '' ? [] : text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('running the plugin', () => {
  it('runs the command with its args, the controller\'s env plus the configured one, KUBERNETES_EXEC_INFO, and no stdin', async () => {
    const command = await recorder('basic');
    const source = new ExecCredentialSource('https://prod.example', connection({ command, args: ['--cluster', 'prod'], env: { A: 'from-config' } }));
    assert.equal((await source.get()).token, 'tok-1');
    const [seen] = await runs('basic');
    assert.deepEqual(seen?.args, ['--cluster', 'prod']);
    assert.deepEqual(seen?.env, { A: 'from-config', HOME: process.env.HOME !== undefined });
    assert.deepEqual(seen?.info, { kind: 'ExecCredential', apiVersion: V1, spec: { interactive: false } });
    assert.notEqual(seen?.stdin, 'data');
  });

  it('gives the plugin the cluster when provideClusterInfo is set', async () => {
    const command = await recorder('info');
    const ca = '-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n';
    const source = new ExecCredentialSource('https://prod.example', connection(
      { command, provideClusterInfo: true, apiVersion: V1, config: '{"clusterName":"prod"}' },
      { tls: { insecure: false, caData: ca, serverName: 'api.internal' }, proxyUrl: 'http://proxy:3128' },
    ));
    await source.get();
    const [seen] = await runs('info');
    assert.deepEqual((seen?.info as { spec: unknown } | undefined)?.spec, {
      interactive: false,
      cluster: { server: 'https://prod.example', 'tls-server-name': 'api.internal', 'certificate-authority-data': Buffer.from(ca).toString('base64'), 'proxy-url': 'http://proxy:3128', config: { clusterName: 'prod' } },
    });
  });

  it('keeps a credential without expiry until the server refuses it, and runs once for concurrent requests', async () => {
    const command = await recorder('cache');
    const source = new ExecCredentialSource('https://x', connection({ command }));
    const tokens = await Promise.all([source.get(), source.get(), source.get()]);
    assert.deepEqual(tokens.map((credential) => credential.token), ['tok-1', 'tok-1', 'tok-1']);
    assert.equal((await source.get()).token, 'tok-1');
    source.invalidate();
    assert.equal((await source.get()).token, 'tok-2');
    assert.equal((await runs('cache')).length, 2);
  });

  it('runs the plugin again once the credential has expired', async () => {
    const command = await recorder('expiry', '{ token: "tok-" + runs, expirationTimestamp: "2030-01-01T00:00:00Z" }');
    let now = Date.parse('2029-12-31T23:59:00Z');
    const source = new ExecCredentialSource('https://x', connection({ command }), { now: () => now });
    assert.equal((await source.get()).token, 'tok-1');
    assert.equal((await source.get()).token, 'tok-1');
    now = Date.parse('2030-01-01T00:00:00Z');
    assert.equal((await source.get()).token, 'tok-2');
  });

  it('returns a client certificate and key', async () => {
    const command = await recorder('cert', '{ clientCertificateData: "CERT", clientKeyData: "KEY" }');
    const credential = await new ExecCredentialSource('https://x', connection({ command })).get();
    assert.deepEqual(credential, { clientCertificateData: 'CERT', clientKeyData: 'KEY', expiresAt: undefined });
  });
});

describe('failures, none showing the plugin\'s output or arguments', () => {
  async function failure(source: ExecCredentialSource): Promise<ExecCredentialError> {
    const error = await source.get().then(() => undefined, (caught: unknown) => caught);
    assert.ok(error instanceof ExecCredentialError, String(error));
    assert.doesNotMatch(`${error.message} ${describeCredentialError('u', error)}`, new RegExp(CANARY));
    // kube/client.ts shows it as it is: it was written to be safe.
    assert.match(describeCredentialError('u', error), new RegExp(error.message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    return error;
  }

  it('kills a plugin that does not answer within the deadline', async () => {
    const command = await plugin('hang', 'setInterval(() => {}, 1000);');
    const error = await failure(new ExecCredentialSource('https://x', connection({ command, args: [CANARY] }), { timeoutMs: 300 }));
    assert.match(error.message, /no answer within 0\.3 s, killed/);
  });

  it('says a plugin failed without its stderr', async () => {
    const command = await plugin('fails', `process.stderr.write('token ${CANARY} rejected'); process.exit(3);`);
    assert.match((await failure(new ExecCredentialSource('https://x', connection({ command, args: [CANARY] })))).message, /exited with status 3/);
  });

  it('says the output is not JSON without quoting it', async () => {
    const command = await plugin('garbage', `process.stdout.write('{"status":{"token":"${CANARY}"');`);
    assert.match((await failure(new ExecCredentialSource('https://x', connection({ command })))).message, /not JSON/);
  });

  it('refuses an ExecCredential of another apiVersion, or without a token or certificate', async () => {
    const other = await plugin('other', `process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1beta1', kind: 'ExecCredential', status: { token: '${CANARY}' } }));`);
    assert.match((await failure(new ExecCredentialSource('https://x', connection({ command: other })))).message, /configured for client\.authentication\.k8s\.io\/v1, it returned "client\.authentication\.k8s\.io\/v1beta1"/);
    assert.throws(() => parseExecCredential(JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status: { clientKeyData: CANARY } }), { command: 'c', args: [], env: {}, apiVersion: V1, provideClusterInfo: false }), /neither a token nor a client certificate/);
    assert.throws(() => parseExecCredential(JSON.stringify({ apiVersion: V1, kind: 'Other', status: { token: CANARY } }), { command: 'c', args: [], env: {}, apiVersion: V1, provideClusterInfo: false }), /not an ExecCredential/);
  });

  it('names a missing command and its install hint: the command must be in the image', async () => {
    const error = await failure(new ExecCredentialSource('https://x', connection({ command: join(dir, 'missing'), installHint: 'install get-token into the image' })));
    assert.match(error.message, /cannot run it \(ENOENT\); the command must be in the controller's image — install get-token into the image/);
  });
});
