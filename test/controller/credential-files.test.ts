/**
 * Files that hold credentials — the kubeconfig, the hash key file, the
 * notification URL file — never reach the output of the real process, also
 * when they are malformed: a YAML error names the file, line and column and
 * what is wrong, and quotes no line of it. No cluster needed: every run here
 * fails before the first request.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LEAK_CANARY } from './support/fixtures.ts';
import { findLeak } from './support/leak.ts';

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
