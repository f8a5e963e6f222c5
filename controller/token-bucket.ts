/**
 * A token bucket: the client-side QPS limit in front of every API request,
 * and the pacing of restarts.
 *
 * - The bucket holds at most `burst` tokens and starts full; it refills
 *   continuously at `ratePerSecond`. Each `take` or `tryTake` spends one.
 * - Waiters are served strictly in arrival order, and `tryTake` never jumps
 *   the line: while anyone waits it returns false.
 * - Aborting a waiting `take` rejects it with the signal's reason and gives
 *   its place to the next waiter; no token is spent.
 * - A timer that fires late (millisecond rounding, a busy event loop) does
 *   not lower the rate: up to one token's worth of lateness is carried over.
 *   A longer stall is lost, so the catch-up never exceeds burst + 1 at once.
 * - `ratePerSecond: Infinity` means unlimited: every take succeeds at once
 *   (that is how configuration spells "no limit"). A rate of 0 is rejected:
 *   a bucket that never refills would, once its burst is spent, hang every
 *   caller forever, which is never what a limit means. Negative or NaN rates
 *   and a burst that is not a positive integer are rejected too (RangeError).
 */
import { systemClock } from './clock.ts';
import type { Clock, Timer } from './clock.ts';

/** Options of a TokenBucket. */
export interface TokenBucketOptions {
  /** Tokens added per second: a positive number, or Infinity for no limit. */
  readonly ratePerSecond: number;
  /** Capacity, and the initial fill: a positive integer. */
  readonly burst: number;
  readonly clock?: Clock;
}

interface Waiter {
  readonly resolve: () => void;
  readonly detach: () => void;
}

/** A FIFO token bucket rate limiter. */
export class TokenBucket {
  readonly #rate: number;
  readonly #burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #refilledAt: number;
  /** Insertion-ordered, with O(1) removal for aborts. */
  readonly #waiters = new Set<Waiter>();
  #timer: Timer | undefined;

  /** Throws RangeError on a rate that is not positive (Infinity allowed) or a burst that is not a positive integer. */
  constructor(options: TokenBucketOptions) {
    const { ratePerSecond, burst } = options;
    if (!(ratePerSecond > 0)) {
      throw new RangeError(`ratePerSecond must be positive (Infinity for no limit), got ${ratePerSecond}`);
    }
    if (!Number.isSafeInteger(burst) || burst < 1) throw new RangeError(`burst must be a positive integer, got ${burst}`);
    this.#rate = ratePerSecond;
    this.#burst = burst;
    this.#clock = options.clock ?? systemClock();
    this.#tokens = burst;
    this.#refilledAt = this.#clock.now();
  }

  /** Takes a token if one is available now and nobody is waiting. */
  tryTake(): boolean {
    if (this.#rate === Infinity) return true;
    if (this.#waiters.size > 0) return false;
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /**
   * Gives back a token taken for work that never happened (a restart whose first write the API server
   * refused): capped at the burst, and handed to the first waiter if there is one.
   */
  refund(): void {
    if (this.#rate === Infinity) return;
    this.#refill();
    this.#tokens = Math.min(this.#burst, this.#tokens + 1);
    this.#serve();
  }

  /**
   * Resolves once a token is available and every earlier waiter has been
   * served. Rejects with `signal.reason` if the signal aborts first (or
   * already has).
   */
  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    if (this.tryTake()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiters.delete(waiter);
        if (this.#waiters.size === 0) this.#disarm();
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        resolve,
        detach: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(waiter);
      this.#arm();
    });
  }

  #refill(): void {
    const now = this.#clock.now();
    // A wall clock stepping back must not drain the bucket.
    const elapsed = Math.max(0, now - this.#refilledAt);
    const accrued = this.#tokens + (elapsed * this.#rate) / 1000;
    this.#tokens = Math.min(this.#burst, accrued);
    this.#refilledAt = now;
    if (accrued > this.#burst && this.#waiters.size > 0) {
      // A waiter was owed its token the moment it accrued; the timer just fired late (whole
      // milliseconds, a busy loop). Capping would lose that lateness every time, which at
      // burst 1 lowers the real rate (334 ms per token at 3/s). Carry it as elapsed time instead,
      // but at most one token's worth, so a long stall does not turn into a burst over the limit.
      const carried = Math.min(accrued - this.#burst, 1);
      this.#refilledAt = now - (carried * 1000) / this.#rate;
    }
  }

  /** Arms one timer for when the next token will be there, unless one is armed. */
  #arm(): void {
    if (this.#timer !== undefined) return;
    this.#refill();
    // Rounded up so that when it fires, a whole token has accrued on a millisecond clock.
    const ms = Math.max(1, Math.ceil(((1 - this.#tokens) * 1000) / this.#rate));
    this.#timer = this.#clock.setTimer(() => {
      this.#timer = undefined;
      this.#serve();
    }, ms);
  }

  #disarm(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #serve(): void {
    this.#refill();
    for (const waiter of this.#waiters) {
      if (this.#tokens < 1) break;
      this.#tokens -= 1;
      this.#waiters.delete(waiter);
      waiter.detach();
      waiter.resolve();
    }
    if (this.#waiters.size > 0) this.#arm();
  }
}
