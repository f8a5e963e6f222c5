/**
 * Files that hold credentials — the kubeconfig, the hash key file, the
 * notification URL file — never reach the output of the real process, also
 * when they are malformed: a YAML error names the file, line and column and
 * what is wrong, and quotes no line of it. No cluster needed: every run here
 * fails before the first request.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../support/wait.ts';
import { LEAK_CANARY, credentialsOfFiles, findLeak, kubeconfigCredentials } from './support/leak.ts';

const bin = join(import.meta.dirname, '..', '..', 'bin', 'driftless.js');

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function driftless(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/**
 * Runs `driftless controller` until it exits or logs that it started; one that
 * started is stopped with SIGTERM (its pipes left open, so it can log its
 * stop), and its run ends with the code of that stop.
 */
async function controllerRun(args: readonly string[]): Promise<Run> {
  const child = spawn(process.execPath, [bin, 'controller', ...args], { env: { ...process.env, KUBECONFIG: '' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = once(child, 'close');
  let code: number | null = null;
  void exited.then(([exitCode]) => (code = exitCode as number | null));
  const started = () => stdout.includes('"msg":"started"');
  try {
    await waitFor('the controller to exit or start', () => code !== null || started(), { timeoutMs: 30_000, intervalMs: 20 });
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  }
  return { code, stdout, stderr };
}

/** Asserts the run said nothing of the canary (plain or base64 at any offset). */
function assertNoLeak(run: Run): void {
  const leaked = findLeak(`${run.stdout}\n${run.stderr}`, LEAK_CANARY);
  assert.equal(leaked, undefined, `a credential reached the output:\n${run.stdout}\n${run.stderr}`);
}

const TOKEN = `token-${LEAK_CANARY}`;
const KEY_DATA = Buffer.from(`-----BEGIN KEY-----${LEAK_CANARY}`).toString('base64');

/** A kubeconfig whose user has a token and, mis-indented by one space on line 11, a client key. */
const MISINDENTED = [
  'apiVersion: v1',
  'kind: Config',
  'clusters:',
  '- name: c',
  '  cluster:',
  '    server: https://127.0.0.1:6443',
  'users:',
  '- name: u',
  '  user:',
  `    token: ${TOKEN}`,
  `     client-key-data: ${KEY_DATA}`,
  'contexts:',
  '- name: x',
  '  context: {cluster: c, user: u}',
  'current-context: x',
  '',
].join('\n');

describe('credential files never reach the output', () => {
  let dir: string;
  let kubeconfig: string;
  let hashKey: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-credentials-'));
    kubeconfig = join(dir, 'kubeconfig');
    hashKey = join(dir, 'hash-key');
    await writeFile(kubeconfig, MISINDENTED, { mode: 0o600 });
    await writeFile(hashKey, `key-${LEAK_CANARY}`, { mode: 0o600 });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const command of [['controller'], ['explain', '--live']]) {
    it(`${command.join(' ')}: a malformed kubeconfig is named with its line and column, its lines are not quoted`, async () => {
      const run = await driftless([...command, `--kubeconfig=${kubeconfig}`, `--hash-key-file=${hashKey}`]);
      assert.equal(run.code, 2, run.stderr);
      assertNoLeak(run);
      assert.match(run.stderr, new RegExp(`kubeconfig ${kubeconfig.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not valid YAML at line 11, column \\d+: bad indentation of a mapping entry`));
      assert.doesNotMatch(run.stderr, /client-key-data|token/);
    });
  }

  for (const command of [['controller'], ['explain', '--live']]) {
    for (const [what, content] of [['empty', ''], ['only a newline', '\n'], ['only whitespace', ` \t\r\n`]] as const) {
      it(`${command.join(' ')}: a hash key file that is ${what} is refused, naming the file (exit 2)`, async () => {
        // A kubeconfig that loads: without the check the controller would run (and retry a closed port) with an unkeyed digest.
        const loadable = join(dir, 'kubeconfig-closed-port');
        await writeFile(loadable, MISINDENTED.replace(`     client-key-data: ${KEY_DATA}\n`, '').replace('https://127.0.0.1:6443', 'https://127.0.0.1:1'), { mode: 0o600 });
        const file = join(dir, `hash-key-${what.replace(/\W+/g, '-')}`);
        await writeFile(file, content, { mode: 0o600 });
        const run = command[0] === 'controller'
          ? await controllerRun([`--kubeconfig=${loadable}`, `--hash-key-file=${file}`, '--http-addr=127.0.0.1:0'])
          : await driftless([...command, `--kubeconfig=${loadable}`, `--hash-key-file=${file}`]);
        assert.equal(run.code, 2, run.stderr);
        assertNoLeak(run);
        const expected = content === '' ? 'the key file is empty' : `the key file holds only whitespace \\(${Buffer.byteLength(content)} bytes?;`;
        assert.match(run.stderr, new RegExp(`^driftless ${command.join(' ')}: hash-key-file ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: ${expected}`, 'm'));
      });
    }
  }

  for (const [what, line] of [['an unknown tag', `token: !<!${LEAK_CANARY}> x`], ['an unknown alias', `token: *${LEAK_CANARY}`]] as const) {
    it(`a kubeconfig error about ${what} does not quote its name either`, async () => {
      const file = join(dir, 'named');
      const text = MISINDENTED.replace(`token: ${TOKEN}`, line).replace(`     client-key-data:`, '    client-key-data:');
      await writeFile(file, text, { mode: 0o600 });
      const run = await driftless(['controller', `--kubeconfig=${file}`]);
      assert.equal(run.code, 2, run.stderr);
      assertNoLeak(run);
      assert.match(run.stderr, /not valid YAML at line 10, column \d+/);
    });
  }

  it('a kubeconfig whose key material is bad fails its requests without printing it (explain --live, exit 1)', async () => {
    const file = join(dir, 'bad-key');
    const canaryData = (suffix: string): string => Buffer.from(`${LEAK_CANARY}-${suffix}`).toString('base64');
    const text = MISINDENTED
      .replace('server: https://127.0.0.1:6443', `server: https://127.0.0.1:1\n    certificate-authority-data: ${canaryData('ca')}`)
      .replace(`     client-key-data: ${KEY_DATA}`, `    client-certificate-data: ${canaryData('cert')}\n    client-key-data: ${KEY_DATA}`);
    await writeFile(file, text, { mode: 0o600 });
    const run = await driftless(['explain', '--live', `--kubeconfig=${file}`]);
    assert.equal(run.code, 1, run.stderr);
    assertNoLeak(run);
    assert.equal(findLeak(`${run.stdout}${run.stderr}`, ...(await credentialsOfFiles({ kubeconfig: file }))), undefined);
    assert.match(run.stderr, /no answer from the API server/);
  });

  for (const [what, script] of [
    ['prints a token that is not JSON', `echo 'token-${LEAK_CANARY}'`],
    ['fails and says why on stderr', `echo 'cannot refresh token-${LEAK_CANARY}' >&2; exit 1`],
  ] as const) {
    it(`a kubeconfig credential plugin that ${what} is named, its output is not shown (explain --live, exit 2)`, async () => {
      const file = join(dir, 'exec');
      const text = MISINDENTED
        .replace(`    token: ${TOKEN}\n     client-key-data: ${KEY_DATA}\n`, '')
        .replace('  user:\n', `  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n      args: ["-c", ${JSON.stringify(script)}]\n      interactiveMode: Never\n`);
      await writeFile(file, text, { mode: 0o600 });
      const run = await driftless(['explain', '--live', `--kubeconfig=${file}`]);
      assert.equal(run.code, 2, run.stderr);
      assertNoLeak(run);
      assert.match(run.stderr, /cannot get the credentials of kubeconfig user "u"/);

      // The controller keeps retrying (the plugin may recover) and logs each failure: without the output either.
      const controller = spawn(process.execPath, [bin, 'controller', `--kubeconfig=${file}`, '--http-addr=127.0.0.1:0'], { env: { ...process.env, KUBECONFIG: '' } });
      let stdout = '';
      let stderr = '';
      controller.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      controller.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const exited = once(controller, 'exit');
      try {
        await waitFor('the controller logs the credential failure', () => stdout.includes('cannot get the credentials of kubeconfig user \\"u\\"'), { timeoutMs: 30_000, intervalMs: 50 });
      } finally {
        controller.kill('SIGTERM');
        await exited;
      }
      assertNoLeak({ code: null, stdout, stderr });
    });
  }

  it('the leak check knows the credentials of every file the controller reads, and finds them plain or in base64', async () => {
    const urlFile = join(dir, 'hook');
    await writeFile(urlFile, 'https://hooks.example.com/services/T0/B0/s3cr3t-path?token=abc\n');
    const wellFormed = MISINDENTED.replace('     client-key-data', '    client-key-data').replace('  user:\n', '  user:\n    password: pass-Zq7-leak\n');
    assert.deepEqual(kubeconfigCredentials(wellFormed), ['pass-Zq7-leak', TOKEN, KEY_DATA]);
    const file = join(dir, 'well-formed');
    await writeFile(file, wellFormed);
    const needles = await credentialsOfFiles({ kubeconfig: file, hashKeyFile: hashKey, notifyUrlFile: urlFile });
    assert.deepEqual(needles, ['pass-Zq7-leak', TOKEN, KEY_DATA, `key-${LEAK_CANARY}`, '/services/T0/B0/s3cr3t-path?token=abc']);
    assert.equal(findLeak('nothing to see', ...needles), undefined);
    assert.equal(findLeak(`at ${Buffer.from(`Bearer ${TOKEN}`).toString('base64')} here`, ...needles) !== undefined, true);
    assert.equal(findLeak(`GET /services/T0/B0/s3cr3t-path?token=abc`, ...needles) !== undefined, true);
  });

  for (const [what, content] of [
    ['not a URL', `hooks.example.com/${LEAK_CANARY}`],
    ['a scheme other than http(s)', `ftp://hooks.example.com/${LEAK_CANARY}`],
    ['credentials before the host', `https://user:${LEAK_CANARY}@hooks.example.com/x`],
  ] as const) {
    it(`a notification URL file with ${what} is refused without its content`, async () => {
      const file = join(dir, 'url');
      await writeFile(file, content, { mode: 0o600 });
      const run = await driftless(['controller', `--kubeconfig=${kubeconfig}`, `--hash-key-file=${hashKey}`, `--notify-webhook-url-file=${file}`]);
      assert.equal(run.code, 2, run.stderr);
      assertNoLeak(run);
      assert.match(run.stderr, new RegExp(`--notify-webhook-url-file ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .*\\(content not shown\\)`));
    });
  }
});
