import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock, settle } from '../support/fake-clock.ts';
import type { Clock, Timer } from '../../controller/clock.ts';
import { TokenBucket } from '../../controller/token-bucket.ts';

/** Starts `take`s and logs `<time> <label>` as each resolves, or `<time> <label> aborted: <reason>` as it rejects. */
function recorder(clock: FakeClock, bucket: TokenBucket) {
  const log: string[] = [];
  const take = (label: string, signal?: AbortSignal): void => {
    bucket.take(signal).then(
      () => void log.push(`${clock.now()} ${label}`),
      (reason: unknown) => void log.push(`${clock.now()} ${label} aborted: ${String(reason)}`),
    );
  };
  return { log, take };
}

/** A clock whose timers fire only when `stallUntil` says, however overdue: an event loop that was blocked. */
class StallingClock implements Clock {
  #now = 0;
  readonly #timers = new Set<{ readonly dueAt: number; readonly fn: () => void }>();
  now(): number {
    return this.#now;
  }
  monotonic(): number {
    return this.#now;
  }
  setTimer(fn: () => void, ms: number): Timer {
    const timer = { dueAt: this.#now + ms, fn };
    this.#timers.add(timer);
    return { cancel: () => void this.#timers.delete(timer) };
  }
  /** Moves time to `ms` without firing anything. */
  jump(ms: number): void {
    this.#now = ms;
  }
  /** Jumps to `ms` and fires the overdue timers, late, all at that time. */
  stallUntil(ms: number): void {
    this.jump(ms);
    for (const timer of [...this.#timers].filter((t) => t.dueAt <= ms)) {
      this.#timers.delete(timer);
      timer.fn();
    }
  }
}

describe('TokenBucket', () => {
  it('starts full, spends its burst, then refills at the rate', () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ ratePerSecond: 2, burst: 3, clock });
    assert.deepEqual([bucket.tryTake(), bucket.tryTake(), bucket.tryTake(), bucket.tryTake()], [true, true, true, false]);
    clock.advance(499);
    assert.equal(bucket.tryTake(), false);
    clock.advance(1);
    assert.equal(bucket.tryTake(), true);
    assert.equal(bucket.tryTake(), false);
  });

  it('never holds more than the burst, however long it idles', () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ ratePerSecond: 10, burst: 2, clock });
    clock.advance(3_600_000);
    assert.deepEqual([bucket.tryTake(), bucket.tryTake(), bucket.tryTake()], [true, true, false]);
  });

  it('serves waiters in arrival order, one per token, at the rate', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ ratePerSecond: 10, burst: 2, clock });
    const { log, take } = recorder(clock, bucket);
    for (const label of ['a', 'b', 'c', 'd', 'e']) take(label);
    await settle();
    assert.deepEqual(log, ['0 a', '0 b']);
    await clock.advanceAsync(250);
    assert.deepEqual(log, ['0 a', '0 b', '100 c', '200 d']);
    // Half a token has accrued, and it is e's.
    assert.equal(bucket.tryTake(), false);
    await clock.advanceAsync(50);
    assert.deepEqual(log, ['0 a', '0 b', '100 c', '200 d', '300 e']);
    assert.equal(clock.pendingTimers, 0);
  });

  it('keeps the average rate when a token takes a fractional number of milliseconds', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ ratePerSecond: 3, burst: 1, clock });
    const { log, take } = recorder(clock, bucket);
    for (const label of ['a', 'b', 'c', 'd']) take(label);
    await clock.advanceAsync(1000);
    assert.deepEqual(log, ['0 a', '334 b', '667 c', '1000 d']);
  });

  it('after a stall, serves at most one token beyond the burst before pacing again', async () => {
    const clock = new StallingClock();
    const bucket = new TokenBucket({ ratePerSecond: 10, burst: 1, clock });
    const log: string[] = [];
    for (const label of ['a', 'b', 'c', 'd', 'e']) void bucket.take().then(() => void log.push(`${clock.now()} ${label}`));
    await settle();
    clock.jump(5_000);
    // Tokens have accrued but b's timer has not fired yet: tryTake must not jump the line.
    assert.equal(bucket.tryTake(), false);
    for (const at of [10_000, 10_001, 10_050, 10_100, 10_200]) {
      clock.stallUntil(at);
      await settle();
    }
    assert.deepEqual(log, ['0 a', '10000 b', '10001 c', '10100 d', '10200 e']);
  });

  it('rejects an aborted take with the reason, and gives its place to the next waiter', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ ratePerSecond: 10, burst: 1, clock });
    const { log, take } = recorder(clock, bucket);
    const controller = new AbortController();
    take('a');
    take('b');
    take('c', controller.signal);
    take('d');
    await clock.advanceAsync(50);
    controller.abort('stopping');
    await clock.advanceAsync(250);
    assert.deepEqual(log, ['0 a', '50 c aborted: stopping', '100 b', '200 d']);
    // Nobody is left waiting, so the next token is free for anyone.
    await clock.advanceAsync(100);
    assert.equal(bucket.tryTake(), true);
  });

  it('rejects the take of an already aborted signal at once, spending no token', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ ratePerSecond: 1, burst: 1, clock });
    const reason = new Error('gone');
    await assert.rejects(bucket.take(AbortSignal.abort(reason)), (error) => error === reason);
    assert.equal(bucket.tryTake(), true);
  });

  it('disarms its timer once the last waiter aborts', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ ratePerSecond: 1, burst: 1, clock });
    const { log, take } = recorder(clock, bucket);
    const controller = new AbortController();
    take('a');
    take('b', controller.signal);
    await settle();
    assert.equal(clock.pendingTimers, 1);
    controller.abort('done');
    await settle();
    assert.equal(clock.pendingTimers, 0);
    assert.deepEqual(log, ['0 a', '0 b aborted: done']);
  });

  it('treats an Infinity rate as no limit', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ ratePerSecond: Infinity, burst: 1, clock });
    for (let i = 0; i < 1000; i++) assert.equal(bucket.tryTake(), true);
    await bucket.take();
    assert.equal(clock.pendingTimers, 0);
  });

  it('rejects a zero, negative or NaN rate and a burst that is not a positive integer', () => {
    for (const ratePerSecond of [0, -1, Number.NaN, -Infinity]) {
      assert.throws(() => new TokenBucket({ ratePerSecond, burst: 1 }), RangeError, `rate ${ratePerSecond}`);
    }
    for (const burst of [0, -1, 1.5, Number.NaN, Infinity]) {
      assert.throws(() => new TokenBucket({ ratePerSecond: 1, burst }), RangeError, `burst ${burst}`);
    }
  });
});

describe('TokenBucket.refund', () => {
  it('gives a token back for work that never happened, capped at the burst', () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ ratePerSecond: 1, burst: 2, clock });
    assert.equal(bucket.tryTake(), true);
    assert.equal(bucket.tryTake(), true);
    assert.equal(bucket.tryTake(), false, 'spent');
    bucket.refund();
    assert.equal(bucket.tryTake(), true, 'the refunded token');
    assert.equal(bucket.tryTake(), false);
    bucket.refund();
    bucket.refund();
    bucket.refund();
    assert.equal(bucket.tryTake(), true);
    assert.equal(bucket.tryTake(), true);
    assert.equal(bucket.tryTake(), false, 'never more than the burst');
  });
});
