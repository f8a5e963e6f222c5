/**
 * Every command of the `driftless` executable answers `--help` (exit 0, its
 * usage on stdout, nothing on stderr), and the top-level usage and the
 * unknown-command message name every command — through the real process and
 * bin/driftless.js's routing, as a user runs it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const bin = join(import.meta.dirname, '..', 'bin', 'driftless.js');

/** Every command a user can run, each with the words its usage starts with. */
const COMMANDS: readonly (readonly [readonly string[], string])[] = [
  [['generate'], 'driftless generate'],
  [['explain'], 'driftless explain'],
  [['migrate-app'], 'driftless migrate-app'],
  [['serve'], 'driftless serve'],
  [['controller'], 'driftless controller'],
  [['explain', '--live'], 'driftless explain --live'],
];

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function driftless(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    // No render socket, no kubeconfig: --help must not need either.
    const env = { ...process.env, DRIFTLESS_RENDER_SOCKET: '', KUBECONFIG: '' };
    execFile(process.execPath, [bin, ...args], { env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

describe('driftless --help', () => {
  for (const [command, usage] of COMMANDS) {
    for (const flag of ['--help', '-h']) {
      it(`${command.join(' ')} ${flag} prints its usage on stdout and exits 0`, async () => {
        const run = await driftless([...command, flag]);
        assert.equal(run.code, 0, run.stderr);
        assert.equal(run.stderr, '');
        assert.match(run.stdout, /^Usage/);
        assert.ok(run.stdout.includes(usage), `the usage names ${usage}:\n${run.stdout}`);
      });
    }
  }

  it('the top-level usage names every command', async () => {
    const run = await driftless(['--help']);
    assert.equal(run.code, 0, run.stderr);
    for (const [, usage] of COMMANDS) assert.ok(run.stdout.includes(usage), `the usage names ${usage}:\n${run.stdout}`);
  });

  for (const args of [['render'], []]) {
    it(`${args.length === 0 ? 'no command' : 'an unknown command'} is refused naming every command`, async () => {
      const run = await driftless(args);
      assert.equal(run.code, 2);
      assert.equal(run.stdout, '');
      for (const name of ['generate', 'explain', 'migrate-app', 'serve', 'controller']) {
        assert.match(run.stderr, new RegExp(`\\b${name}\\b`), `the message names ${name}: ${run.stderr}`);
      }
    });
  }
});
