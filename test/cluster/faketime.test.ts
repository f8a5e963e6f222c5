/**
 * libfaketime really shifts a Node process's wall clock, by the offset asked,
 * and leaves its monotonic clock (timers) running at the true pace.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { shiftedClockEnv } from './faketime.ts';

/** Runs Node under the shift; returns its Date.now() minus ours, in seconds, and how long its 200 ms timer took by our clock. */
async function probe(offsetSeconds: number): Promise<{ offset: number; timerMs: number }> {
  const env = { ...process.env, ...(await shiftedClockEnv(offsetSeconds)) };
  const script = 'const a = Date.now(); process.stdout.write(`${a}\\n`); setTimeout(() => process.stdout.write(`${Date.now()}\\n`), 200);';
  const before = Date.now();
  const child = spawn(process.execPath, ['-e', script], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  const after = Date.now();
  assert.equal(code, 0);
  const [first, second] = output.trim().split('\n').map(Number) as [number, number];
  // Its first reading happened between our `before` and `after`.
  const offset = first < before ? (first - before) / 1000 : first > after ? (first - after) / 1000 : 0;
  return { offset, timerMs: second - first };
}

for (const shift of [-5, 5, -120]) {
  test(`a process under shiftedClockEnv(${shift}) reads the wall clock ${shift} s off`, async () => {
    const { offset, timerMs } = await probe(shift);
    assert.ok(Math.abs(offset - shift) < 1.5, `measured ${offset} s`);
    // Shifted, not scaled: a 200 ms timer takes 200 ms of its own (shifted) wall clock too.
    assert.ok(timerMs >= 200 && timerMs < 200 + 2000, `timer took ${timerMs} ms`);
  });
}

test('shiftedClockEnv refuses a fractional offset', async () => {
  await assert.rejects(shiftedClockEnv(1.5), RangeError);
});
