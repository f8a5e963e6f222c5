import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { systemClock } from '../../controller/clock.ts';
import { FakeClock, settle } from '../support/fake-clock.ts';
import { QueueShutDownError, WorkQueue } from '../../controller/queue.ts';
import type { ProcessResult, WorkQueueOptions } from '../../controller/queue.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every unhandled rejection during a test fails it: the queue promises there are none. */
let unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on('unhandledRejection', onUnhandled);
});
afterEach(async () => {
  await settle();
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, []);
});

type Step = 'ok' | 'fail' | 'hold' | { readonly requeueAfterMs: number };

/**
 * A queue on a fake clock whose `process` logs `<time> <key>` at every start
 * and then follows the key's script (default `ok`). `hold` waits for
 * `release(key)`, which settles the oldest held run of that key.
 */
function harness(options: Partial<WorkQueueOptions> & { readonly scripts?: Record<string, Step[]> } = {}) {
  const clock = new FakeClock();
  const log: string[] = [];
  const errors: string[] = [];
  const held = new Map<string, Array<(outcome: 'ok' | 'fail') => void>>();
  const active = new Map<string, number>();
  let running = 0;
  let maxRunning = 0;
  let maxPerKey = 0;
  const scripts = new Map(Object.entries(options.scripts ?? {}).map(([key, steps]) => [key, [...steps]]));

  const process = async (key: string): Promise<ProcessResult> => {
    log.push(`${clock.now()} ${key}`);
    running++;
    maxRunning = Math.max(maxRunning, running);
    active.set(key, (active.get(key) ?? 0) + 1);
    maxPerKey = Math.max(maxPerKey, active.get(key) ?? 0);
    try {
      let step = scripts.get(key)?.shift() ?? 'ok';
      if (step === 'hold') {
        const waiting = held.get(key) ?? [];
        held.set(key, waiting);
        step = await new Promise<'ok' | 'fail'>((resolve) => waiting.push(resolve));
      }
      if (step === 'fail') throw new Error(`${key} failed`);
      return step === 'ok' ? undefined : step;
    } finally {
      running--;
      active.set(key, (active.get(key) ?? 1) - 1);
    }
  };
  const queue = new WorkQueue({
    concurrency: 1,
    process,
    clock,
    backoff: { baseMs: 100, maxMs: 500 },
    onError: (key, error, attempt) => void errors.push(`${clock.now()} ${key} #${attempt} ${(error as Error).message}`),
    ...options,
  });
  const release = async (key: string, outcome: 'ok' | 'fail' = 'ok'): Promise<void> => {
    const next = held.get(key)?.shift();
    assert.ok(next !== undefined, `no held run of ${key}`);
    next(outcome);
    await settle();
  };
  return { clock, queue, log, errors, release, stats: () => ({ maxRunning, maxPerKey }) };
}

describe('WorkQueue', () => {
  it('dedupes a key that is already waiting, and keeps FIFO order', async () => {
    const { queue, log } = harness();
    queue.add('a');
    queue.add('b');
    queue.add('a');
    queue.add('c');
    queue.add('b');
    assert.equal(queue.depth, 3);
    queue.start();
    await settle();
    assert.deepEqual(log, ['0 a', '0 b', '0 c']);
    assert.equal(queue.depth, 0);
    assert.equal(queue.has('a'), false);
  });

  it('runs a key added during its processing once more afterwards, behind keys already waiting', async () => {
    const { queue, log, release } = harness({ scripts: { a: ['hold'] } });
    queue.start();
    queue.add('a');
    await settle();
    assert.deepEqual(log, ['0 a']);
    queue.add('b');
    queue.add('a');
    queue.add('a');
    // The dirty key is not ready until its run ends, as with client-go's Len.
    assert.equal(queue.depth, 1);
    assert.equal(queue.has('a'), true);
    await release('a');
    assert.deepEqual(log, ['0 a', '0 b', '0 a']);
    assert.equal(queue.has('a'), false);
  });

  it('never processes more than `concurrency` keys at once, starting them in FIFO order', async () => {
    const { queue, log, release, stats } = harness({ concurrency: 2, scripts: { a: ['hold'], b: ['hold'], c: ['hold'], d: ['hold'], e: ['hold'] } });
    for (const key of ['a', 'b', 'c', 'd', 'e']) queue.add(key);
    queue.start();
    await settle();
    assert.deepEqual(log, ['0 a', '0 b']);
    assert.equal(queue.depth, 3);
    await release('b');
    assert.deepEqual(log, ['0 a', '0 b', '0 c']);
    await release('a');
    assert.deepEqual(log, ['0 a', '0 b', '0 c', '0 d']);
    await release('c');
    await release('d');
    await release('e');
    assert.deepEqual(log, ['0 a', '0 b', '0 c', '0 d', '0 e']);
    assert.equal(stats().maxRunning, 2);
  });

  it('a deferrable key (a restart in progress) runs after the other ready keys, until it has waited its limit', async () => {
    const progress = new Set(['p1', 'p2']);
    const { clock, queue, log, release } = harness({ deferrable: (key) => progress.has(key), deferLimitMs: 1_000, scripts: { hold: ['hold'], hold2: ['hold'] } });
    queue.start();
    queue.add('hold');
    await settle();
    // Ready while the worker is busy: two progress checks, then a new change.
    queue.add('p1');
    queue.add('p2');
    queue.add('change');
    await release('hold');
    assert.deepEqual(log, ['0 hold', '0 change', '0 p1', '0 p2'], 'the new change first, then the checks in their order');
    // A check that has waited its limit runs in its turn.
    queue.add('hold2');
    await settle();
    queue.add('p1');
    await clock.advanceAsync(1_000);
    queue.add('late');
    await release('hold2');
    assert.deepEqual(log.slice(4), ['0 hold2', '1000 p1', '1000 late']);
  });

  it('never gives one key to two workers, even with workers free', async () => {
    const { queue, log, release, stats } = harness({ concurrency: 3, scripts: { a: ['hold', 'hold'] } });
    queue.start();
    queue.add('a');
    await settle();
    queue.add('a');
    queue.add('b');
    await settle();
    assert.deepEqual(log, ['0 a', '0 b']);
    await release('a');
    assert.deepEqual(log, ['0 a', '0 b', '0 a']);
    queue.add('a');
    await settle();
    assert.deepEqual(log, ['0 a', '0 b', '0 a']);
    await release('a');
    assert.deepEqual(log, ['0 a', '0 b', '0 a', '0 a']);
    assert.equal(stats().maxPerKey, 1);
  });

  it('addAfter: a sooner request moves a waiting key earlier', async () => {
    const { clock, queue, log } = harness();
    queue.start();
    queue.addAfter('a', 100);
    queue.addAfter('a', 50);
    assert.equal(queue.delayedCount, 1);
    assert.equal(queue.has('a'), true);
    await clock.advanceAsync(1000);
    assert.deepEqual(log, ['50 a']);
    assert.equal(clock.pendingTimers, 0);
  });

  it('addAfter: a later request leaves an earlier one alone', async () => {
    const { clock, queue, log } = harness();
    queue.start();
    queue.addAfter('a', 50);
    await clock.advanceAsync(10);
    queue.addAfter('a', 100);
    assert.equal(queue.delayedCount, 1);
    await clock.advanceAsync(1000);
    assert.deepEqual(log, ['50 a']);
  });

  it('addAfter: add beats a delay, and a delay never postpones a ready key', async () => {
    const { clock, queue, log } = harness();
    queue.addAfter('a', 100);
    queue.add('a');
    assert.equal(queue.delayedCount, 0);
    queue.add('b');
    queue.addAfter('b', 100);
    assert.equal(queue.delayedCount, 0);
    assert.equal(queue.depth, 2);
    queue.start();
    await clock.advanceAsync(1000);
    assert.deepEqual(log, ['0 a', '0 b']);
    assert.equal(clock.pendingTimers, 0);
  });

  it('addAfter rejects a delay that is not a finite number', () => {
    const { queue } = harness();
    assert.throws(() => queue.addAfter('a', Number.NaN), RangeError);
    assert.throws(() => queue.addAfter('a', Infinity), RangeError);
  });

  it('retries a failing key with doubling backoff up to the cap', async () => {
    const { clock, queue, log, errors } = harness({ scripts: { a: ['fail', 'fail', 'fail', 'fail', 'fail', 'fail'] } });
    queue.start();
    queue.add('a');
    await clock.advanceAsync(1700);
    assert.deepEqual(log, ['0 a', '100 a', '300 a', '700 a', '1200 a', '1700 a']);
    assert.deepEqual(errors, [
      '0 a #1 a failed',
      '100 a #2 a failed',
      '300 a #3 a failed',
      '700 a #4 a failed',
      '1200 a #5 a failed',
      '1700 a #6 a failed',
    ]);
    assert.equal(queue.delayedCount, 1);
    await clock.advanceAsync(500);
    assert.deepEqual(log.at(-1), '2200 a');
  });

  it('forgets the failures of a key once it succeeds', async () => {
    const { clock, queue, log, errors } = harness({ scripts: { a: ['fail', 'fail', 'ok', 'fail', 'ok'] } });
    queue.start();
    queue.add('a');
    await clock.advanceAsync(1000);
    queue.add('a');
    await clock.advanceAsync(1000);
    assert.deepEqual(log, ['0 a', '100 a', '300 a', '1000 a', '1100 a']);
    assert.deepEqual(errors, ['0 a #1 a failed', '100 a #2 a failed', '1000 a #1 a failed']);
  });

  it('keeps backoff per key', async () => {
    const { clock, queue, log } = harness({ scripts: { a: ['fail', 'fail'], b: ['fail'] } });
    queue.start();
    queue.add('a');
    await clock.advanceAsync(100);
    queue.add('b');
    await clock.advanceAsync(1000);
    assert.deepEqual(log, ['0 a', '100 a', '100 b', '200 b', '300 a']);
  });

  it('re-adds a key after requeueAfterMs, without backoff and forgetting failures', async () => {
    const { clock, queue, log, errors } = harness({ scripts: { a: ['fail', { requeueAfterMs: 250 }, 'fail', { requeueAfterMs: 250 }] } });
    queue.start();
    queue.add('a');
    await clock.advanceAsync(10_000);
    assert.deepEqual(log, ['0 a', '100 a', '350 a', '450 a', '700 a']);
    assert.deepEqual(errors, ['0 a #1 a failed', '350 a #1 a failed']);
    assert.equal(clock.pendingTimers, 0);
  });

  it('lets a fresh add cut a backoff short, without forgetting the failures', async () => {
    const { clock, queue, log, errors } = harness({ scripts: { a: ['fail', 'fail', 'fail'] } });
    queue.start();
    queue.add('a');
    await clock.advanceAsync(40);
    queue.add('a');
    await clock.advanceAsync(1000);
    assert.deepEqual(log, ['0 a', '40 a', '240 a', '640 a']);
    assert.deepEqual(errors.map((e) => e.split(' ')[2]), ['#1', '#2', '#3']);
  });

  it('shutdown waits for in-flight work, and then nothing runs', async () => {
    const { clock, queue, log, errors, release } = harness({ scripts: { a: ['hold'] } });
    queue.start();
    queue.add('a');
    queue.add('b');
    queue.addAfter('c', 100);
    await settle();
    let done = false;
    const drained = queue.shutdown().then(() => {
      done = true;
    });
    await settle();
    assert.equal(done, false);
    assert.equal(clock.pendingTimers, 0);
    assert.equal(queue.depth, 0);
    assert.equal(queue.delayedCount, 0);
    queue.add('a');
    queue.add('d');
    queue.addAfter('e', 10);
    await release('a', 'fail');
    await drained;
    assert.equal(done, true);
    // The failure is still reported, but schedules no retry.
    assert.deepEqual(errors, ['0 a #1 a failed']);
    await clock.advanceAsync(10_000);
    assert.deepEqual(log, ['0 a']);
    assert.equal(clock.pendingTimers, 0);
    assert.equal(queue.has('a'), false);
  });

  it('shutdown is idempotent, resolves at once when idle, and the queue cannot restart', async () => {
    const { queue } = harness();
    const first = queue.shutdown();
    assert.equal(queue.shutdown(), first);
    await first;
    assert.throws(() => queue.start(), QueueShutDownError);
  });

  it('survives an onError that throws or rejects, and a process that throws synchronously', async () => {
    const clock = new FakeClock();
    const runs: string[] = [];
    let calls = 0;
    const queue = new WorkQueue({
      concurrency: 1,
      clock,
      backoff: { baseMs: 100, maxMs: 500 },
      process: ((key: string) => {
        runs.push(`${clock.now()} ${key}`);
        calls++;
        if (calls <= 2) throw new Error('synchronous');
        return Promise.resolve();
      }),
      // oxlint-disable-next-line typescript/no-misused-promises -- the test passes a rejecting onError on purpose
      onError: ((_key: string, _error: unknown, attempt: number) => {
        if (attempt === 1) throw new Error('reporter broke');
        return Promise.reject(new Error('async reporter broke'));
      }),
    });
    queue.start();
    queue.add('a');
    await clock.advanceAsync(1000);
    assert.deepEqual(runs, ['0 a', '100 a', '300 a']);
    queue.add('b');
    await settle();
    assert.deepEqual(runs, ['0 a', '100 a', '300 a', '1000 b']);
  });

  it('reports the age of the oldest ready key, counting a dirty key from its add', async () => {
    const { clock, queue, release } = harness({ scripts: { a: ['hold'], b: ['hold'] } });
    assert.equal(queue.oldestWaitMs(), 0);
    queue.add('a');
    clock.advance(30);
    queue.add('b');
    assert.equal(queue.oldestWaitMs(), 30);
    queue.start();
    await settle();
    assert.equal(queue.oldestWaitMs(), 0);
    clock.advance(20);
    assert.equal(queue.oldestWaitMs(), 20);
    queue.add('a');
    clock.advance(5);
    await release('a');
    // b (ready since 30) is now processing; a is ready again, waiting since its add at 50.
    assert.equal(queue.depth, 1);
    assert.equal(queue.oldestWaitMs(), 5);
    await release('b');
  });

  it('rejects nonsense options', () => {
    const process = async (): Promise<void> => {};
    assert.throws(() => new WorkQueue({ concurrency: 0, process }), RangeError);
    assert.throws(() => new WorkQueue({ concurrency: 1.5, process }), RangeError);
    assert.throws(() => new WorkQueue({ concurrency: 1, process, backoff: { baseMs: 0, maxMs: 10 } }), RangeError);
    assert.throws(() => new WorkQueue({ concurrency: 1, process, backoff: { baseMs: 10, maxMs: 5 } }), RangeError);
    assert.throws(() => new WorkQueue({ concurrency: 1, process, backoff: { baseMs: 10, maxMs: Infinity } }), RangeError);
  });
});

describe('FakeClock', () => {
  it('runs due timers in time order, ties in arming order, including timers armed by timers', () => {
    const clock = new FakeClock(1000);
    const fired: string[] = [];
    clock.setTimer(() => fired.push(`${clock.now()} c`), 30);
    clock.setTimer(() => {
      fired.push(`${clock.now()} a`);
      clock.setTimer(() => fired.push(`${clock.now()} a+5`), 5);
      clock.setTimer(() => fired.push(`${clock.now()} a+0`), 0);
    }, 10);
    clock.setTimer(() => fired.push(`${clock.now()} b`), 10);
    const cancelled = clock.setTimer(() => fired.push('never'), 20);
    cancelled.cancel();
    clock.setTimer(() => fired.push(`${clock.now()} late`), 31);
    clock.advance(30);
    assert.deepEqual(fired, ['1010 a', '1010 b', '1010 a+0', '1015 a+5', '1030 c']);
    assert.equal(clock.now(), 1030);
    assert.equal(clock.pendingTimers, 1);
    clock.advance(1);
    assert.deepEqual(fired.at(-1), '1031 late');
  });
});

describe('systemClock', () => {
  it('fires and cancels real timers', async () => {
    const clock = systemClock();
    const fired: string[] = [];
    clock.setTimer(() => fired.push('cancelled'), 0).cancel();
    await new Promise<void>((resolve) => clock.setTimer(() => resolve(), 1));
    assert.deepEqual(fired, []);
  });

  it('never keeps the process alive with a pending timer', () => {
    const script = "import { systemClock } from './controller/clock.ts'; systemClock().setTimer(() => console.log('fired'), 60_000);";
    // The timeout is a safety net for a regression (a ref'd timer would hold the child for a minute), not an assertion.
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    assert.equal(child.error, undefined);
    assert.equal(child.status, 0, child.stderr);
    assert.equal(child.stdout, '');
  });
});
