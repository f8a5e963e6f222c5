import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { BudgetExceededError, RenderError, exitCodeFor } from '../../plugin/errors.ts';
import { renderSource } from '../../plugin/source/index.ts';
import { runProcess } from '../../plugin/source/process.ts';
import type { RunOptions } from '../../plugin/source/process.ts';
import { configFor, fakeTool, fixtureCopy, isAlive, tempDir } from './source-support.ts';
import { LOCAL_WAIT, waitFor } from '../support/wait.ts';

const never = new AbortController().signal;

async function run(script: string, overrides: Partial<RunOptions> = {}): Promise<string> {
  const dir = await tempDir();
  const command = await fakeTool(dir, 'tool', script);
  const out = await runProcess({ tool: 'tool', command, args: [], display: 'tool run', cwd: dir, env: { PATH: process.env['PATH'] ?? '' }, signal: never, ...overrides });
  return out.toString('utf8');
}

describe('runProcess', () => {
  it('returns stdout and hands argv to the program without a shell', async () => {
    const marker = path.join(await tempDir(), 'pwned');
    const args = [`$(touch ${marker})`, `a; touch ${marker}`, '`id`', "it's \"quoted\"", '*'];
    const out = await run('for a in "$@"; do printf "%s\\n" "$a"; done', { args });
    assert.equal(out, `${args.join('\n')}\n`);
    assert.ok(!existsSync(marker));
  });

  it('feeds stdin when given', async () => {
    assert.equal(await run('cat', { stdin: 'values: from-stdin\n' }), 'values: from-stdin\n');
  });

  it('fails with the tool, its exit code and only the tail of its stderr', async () => {
    const script = 'i=0; while [ $i -lt 2000 ]; do echo "noise line $i" >&2; i=$((i+1)); done; echo "Error: resource missing.yaml not found" >&2; exit 7';
    await assert.rejects(run(script), (error: unknown) => {
      assert.ok(error instanceof RenderError);
      assert.equal(exitCodeFor(error), 3);
      assert.match(error.message, /^tool run failed with exit code 7\n/);
      assert.ok(error.stderrTail.endsWith('Error: resource missing.yaml not found'), error.stderrTail.slice(-200));
      assert.ok(error.stderrTail.startsWith('…noise line'), error.stderrTail.slice(0, 50));
      assert.ok(!error.stderrTail.includes('noise line 0\n'));
      assert.ok(error.stderrTail.length <= 4100);
      return true;
    });
  });

  it('reports a program killed by a signal', async () => {
    await assert.rejects(run('kill -KILL $$'), /tool run was killed by SIGKILL/);
  });

  it('reports a missing executable as not installed, with the override variable', async () => {
    const dir = await tempDir();
    await assert.rejects(
      runProcess({ tool: 'helm', command: path.join(dir, 'helm'), args: [], display: 'helm template', cwd: dir, env: {}, signal: never, overrideVariable: 'DRIFTLESS_HELM' }),
      (error: unknown) => {
        assert.ok(error instanceof RenderError);
        assert.match(error.message, /^helm is not installed or not on PATH \(looked for ".*helm"\); install it or set DRIFTLESS_HELM to its full path$/);
        return true;
      },
    );
  });

  it('reports a file that is not executable', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'kustomize');
    await writeFile(file, '#!/bin/sh\n');
    await chmod(file, 0o644);
    await assert.rejects(
      runProcess({ tool: 'kustomize', command: file, args: [], display: 'kustomize build', cwd: dir, env: {}, signal: never }),
      /kustomize \(".*kustomize"\) is not executable/,
    );
  });

  it('reports arguments and environment over the kernel limit as a render error, not a crash', async () => {
    // One string over Linux' MAX_ARG_STRLEN (128 KiB), as a huge KUBE_API_VERSIONS would be.
    const huge = 'apps/v1,'.repeat(20_000);
    await assert.rejects(run('true', { env: { KUBE_API_VERSIONS: huge } }), (error: unknown) => {
      assert.ok(error instanceof RenderError, String(error));
      assert.match(error.message, /^tool run could not be started: .*E2BIG/);
      return true;
    });
  });

  it('refuses more stdout than the limit and stops the program', async () => {
    const dir = await tempDir();
    const pidFile = path.join(dir, 'pid');
    await assert.rejects(run(`echo $$ > ${pidFile}; while :; do echo "0123456789abcdef"; done`, { maxStdoutBytes: 1000 }), (error: unknown) => {
      assert.ok(error instanceof RenderError);
      assert.match(error.message, /tool run produced more than 1000 bytes of output; refusing to read more/);
      return true;
    });
    const pid = Number(await readFile(pidFile, 'utf8'));
    await waitFor('the flooding program to stop', () => !isAlive(pid), LOCAL_WAIT);
  });

  it('does not start the program when the signal is already aborted', async () => {
    const marker = path.join(await tempDir(), 'ran');
    const controller = new AbortController();
    controller.abort(new Error('time budget of 1s exceeded'));
    await assert.rejects(run(`touch ${marker}`, { signal: controller.signal }), (error: unknown) => {
      assert.ok(error instanceof BudgetExceededError);
      assert.equal(exitCodeFor(error), 1);
      assert.match(error.message, /^tool run was stopped: time budget of 1s exceeded$/);
      return true;
    });
    assert.ok(!existsSync(marker));
  });

  it('on abort, kills the whole process group: the program and what it started', { timeout: 30_000 }, async () => {
    const dir = await tempDir();
    const controller = new AbortController();
    const running = run(`sleep 300 & echo $! > ${dir}/child; echo $$ > ${dir}/parent; wait`, { signal: controller.signal });
    await waitFor('the program to start', () => existsSync(`${dir}/parent`) && existsSync(`${dir}/child`), LOCAL_WAIT);
    const parent = Number(await readFile(`${dir}/parent`, 'utf8'));
    const child = Number(await readFile(`${dir}/child`, 'utf8'));
    assert.ok(isAlive(parent) && isAlive(child));
    controller.abort(new Error('received SIGTERM'));
    await assert.rejects(running, (error: unknown) => error instanceof BudgetExceededError && /received SIGTERM/.test(error.message));
    await waitFor('the program and its child to be gone', () => !isAlive(parent) && !isAlive(child), LOCAL_WAIT);
  });

  it('sends SIGKILL after the grace period to a program that ignores SIGTERM', { timeout: 30_000 }, async () => {
    const dir = await tempDir();
    const controller = new AbortController();
    const running = run(`trap '' TERM; echo $$ > ${dir}/pid; while :; do sleep 0.05; done`, { signal: controller.signal, killGraceMs: 200 });
    await waitFor('the program to start', () => existsSync(`${dir}/pid`), LOCAL_WAIT);
    const pid = Number(await readFile(`${dir}/pid`, 'utf8'));
    controller.abort(new Error('time budget of 5s exceeded'));
    await assert.rejects(running, BudgetExceededError);
    assert.ok(!isAlive(pid));
  });
});

describe('renderers on PATH (stand-ins; the real ones are tested in source-kustomize and source-helm)', () => {
  it('runs the kustomize found on PATH and stops it, with its children, on abort', { timeout: 30_000 }, async () => {
    const app = await fixtureCopy('kustomize');
    const bin = path.join(await tempDir(), 'bin');
    const state = await tempDir();
    await fakeTool(bin, 'kustomize', `echo "$@" > ${state}/args; sleep 300 & echo $! > ${state}/child; echo $$ > ${state}/pid; wait`);
    const controller = new AbortController();
    const rendering = renderSource(configFor(app, [], { PATH: `${bin}${path.delimiter}/usr/bin:/bin` }), controller.signal);
    await waitFor('the stand-in kustomize to start', () => existsSync(`${state}/pid`) && existsSync(`${state}/child`), LOCAL_WAIT);
    assert.equal(await readFile(`${state}/args`, 'utf8'), 'build .\n');
    const pids = [Number(await readFile(`${state}/pid`, 'utf8')), Number(await readFile(`${state}/child`, 'utf8'))];
    controller.abort(new Error('time budget of 90s exceeded'));
    await assert.rejects(rendering, (error: unknown) => {
      assert.ok(error instanceof BudgetExceededError);
      assert.equal(error.message, 'kustomize build was stopped: time budget of 90s exceeded');
      return true;
    });
    await waitFor('kustomize and its child to be gone', () => pids.every((pid) => !isAlive(pid)), LOCAL_WAIT);
  });

  it('says kustomize is not installed when it is not on PATH', async () => {
    const app = await fixtureCopy('kustomize');
    const empty = await tempDir();
    await assert.rejects(renderSource(configFor(app, [], { PATH: empty }), never), (error: unknown) => {
      assert.ok(error instanceof RenderError);
      assert.match(error.message, /^kustomize is not installed or not on PATH \(looked for "kustomize"\); install it or set DRIFTLESS_KUSTOMIZE/);
      return true;
    });
  });

  it('says the renderer has started while it is still running, so the caller can load the rest meanwhile', { timeout: 30_000 }, async () => {
    for (const [fixture, tool] of [['helm-chart', 'helm'], ['kustomize', 'kustomize']] as const) {
      const app = await fixtureCopy(fixture);
      const bin = path.join(await tempDir(), 'bin');
      const gate = path.join(await tempDir(), 'go');
      // The stand-in renders only once the test opens the gate, which it does when told that the renderer started.
      await fakeTool(bin, tool, `while [ ! -e ${gate} ]; do sleep 0.05; done; echo "kind: From${tool}"`);
      const events: string[] = [];
      const rendering = renderSource(configFor(app, [], { PATH: `${bin}${path.delimiter}/usr/bin:/bin` }), never, {
        stdin: process.stdin,
        onRendererStarted: () => {
          events.push('started');
          void writeFile(gate, '');
        },
      });
      const streams = await rendering;
      events.push('rendered');
      assert.deepEqual(events, ['started', 'rendered'], tool);
      assert.equal(streams[0]?.text, `kind: From${tool}\n`);
    }
  });

  it('uses DRIFTLESS_HELM instead of PATH', async () => {
    const app = await fixtureCopy('helm-chart');
    const helm = await fakeTool(await tempDir(), 'my-helm', 'echo "kind: FromOverride"');
    const streams = await renderSource(configFor(app, [], { PATH: await tempDir(), DRIFTLESS_HELM: helm }), never);
    assert.deepEqual(streams, [{ label: '<helm template>', text: 'kind: FromOverride\n', rendered: true }]);
  });
});
