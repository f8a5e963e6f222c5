import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor, WaitTimeoutError } from './wait.ts';

test('waitFor returns a condition met on the attempt before the abort fires (a process that printed the line, then exited)', async () => {
  // Between two attempts the process prints the awaited line and exits.
  let printed = false;
  let exited = false;
  let attempts = 0;
  const value = await waitFor('the line', () => {
    attempts += 1;
    if (attempts === 1) {
      setImmediate(() => {
        printed = true;
        exited = true;
      });
    }
    return printed && 'seen';
  }, {
    intervalMs: 5,
    abortIf: () => {
      if (exited) throw new Error('exited');
    },
  });
  assert.equal(value, 'seen');
});

test('waitFor stops with the abort error once a failed attempt sees the abort condition', async () => {
  let attempts = 0;
  await assert.rejects(
    waitFor('never', () => {
      attempts += 1;
      return false;
    }, { intervalMs: 1, abortIf: () => {
      if (attempts >= 3) throw new Error('exited');
    } }),
    /exited/,
  );
  assert.equal(attempts, 3);
});

test('waitFor times out naming what it waited for, with the last error as cause', async () => {
  const error: unknown = await waitFor('the thing', () => {
    throw new Error('not yet');
  }, { timeoutMs: 20, intervalMs: 5 }).catch((caught: unknown) => caught);
  assert.ok(error instanceof WaitTimeoutError);
  assert.match(error.message, /waiting for the thing/);
  assert.equal((error.cause as Error).message, 'not yet');
});
