/**
 * Time, injected. Everything in the controller that waits (the work queue's
 * delays and backoff, the token bucket's refill) reads the time and arms
 * timers through a `Clock`, so tests run on fake time and never sleep.
 *
 * - `now()` is epoch milliseconds, so the same clock can stamp times the
 *   controller reports. The wall clock can step backwards; consumers that
 *   measure intervals clamp negative ones to zero.
 * - Real timers are unref'd: a pending retry or refill must never keep the
 *   process alive after shutdown has been asked for.
 * - `FakeClock` runs due timers in time order (ties in the order they were
 *   armed), including timers armed by timers during the same advance.
 */
import { setTimeout as setNodeTimeout, clearTimeout as clearNodeTimeout } from 'node:timers';

/** A timer armed by a Clock. */
export interface Timer {
  /** Disarms the timer; a no-op once it has fired or been cancelled. */
  cancel(): void;
}

/** The time source and timer factory every waiting component takes. */
export interface Clock {
  /** Epoch milliseconds (the wall clock: it can jump, so never use it to prove an interval). */
  now(): number;
  /**
   * Milliseconds on a monotonic clock with an arbitrary origin: never jumps when the wall clock is
   * set, and keeps running while the process is stopped (SIGSTOP), so intervals that bound safety
   * (leadership) are measured with it.
   */
  monotonic(): number;
  /** Runs `fn` once after `ms` milliseconds (negative or NaN: as soon as possible). */
  setTimer(fn: () => void, ms: number): Timer;
}

/** Node clamps longer delays to 1 ms, so longer waits are armed in legs of at most this. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/** The real clock: `Date.now()` and unref'd Node timers. A fresh object per call. */
/** Resolves after `ms` on `clock`, or at once when `signal` aborts (never rejects: the caller checks the signal). */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const timer = clock.setTimer(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      timer.cancel();
      resolve();
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function systemClock(): Clock {
  return {
    now: () => Date.now(),
    monotonic: () => performance.now(),
    setTimer(fn: () => void, ms: number): Timer {
      let handle: ReturnType<typeof setNodeTimeout> | undefined;
      const arm = (remaining: number): void => {
        const leg = Math.min(remaining, MAX_TIMEOUT_MS);
        handle = setNodeTimeout(() => {
          if (remaining > leg) arm(remaining - leg);
          else {
            handle = undefined;
            fn();
          }
        }, leg);
        handle.unref();
      };
      arm(delayOf(ms));
      return {
        cancel() {
          if (handle !== undefined) clearNodeTimeout(handle);
          handle = undefined;
        },
      };
    },
  };
}

/** A Clock for tests: time moves only when the test says so. */
export class FakeClock implements Clock {
  #now: number;
  #monotonic = 0;
  #sequence = 0;
  readonly #timers = new Map<number, { readonly dueAt: number; readonly fn: () => void }>();

  /** Starts at `startMs` epoch milliseconds (default 0). */
  constructor(startMs = 0) {
    this.#now = startMs;
  }

  /** The fake current time. */
  now(): number {
    return this.#now;
  }

  /** The fake monotonic time: starts at 0 and moves only with `advance`, never with `jumpWallClock`. */
  monotonic(): number {
    return this.#monotonic;
  }

  /**
   * Sets the fake wall clock forward (or back, with a negative `ms`) as an NTP step or an operator would:
   * `now()` jumps, the monotonic clock and the timers (which run on elapsed time) do not move.
   */
  jumpWallClock(ms: number): void {
    this.#now += ms;
    for (const [id, timer] of this.#timers) this.#timers.set(id, { ...timer, dueAt: timer.dueAt + ms });
  }

  /** Arms a fake timer, due `ms` after the fake current time. */
  setTimer(fn: () => void, ms: number): Timer {
    const id = this.#sequence++;
    this.#timers.set(id, { dueAt: this.#now + delayOf(ms), fn });
    return { cancel: () => void this.#timers.delete(id) };
  }

  /** Timers armed and not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /**
   * Moves time forward by `ms`, running every timer that falls due on the way
   * at its own due time, synchronously. Promise callbacks a timer starts do
   * not run until the caller yields; use `advanceAsync` when they should.
   */
  advance(ms: number): void {
    const target = this.#now + delayOf(ms);
    for (let next = this.#nextDue(target); next !== undefined; next = this.#nextDue(target)) this.#fire(next);
    this.#moveTo(target);
  }

  /**
   * Like `advance`, but lets pending promise callbacks and immediates settle
   * before the first timer and after each one, as they would between real
   * timers. Work that a timer starts can thus arm further timers within the
   * same advance (a failed retry arming its backoff, say).
   */
  async advanceAsync(ms: number): Promise<void> {
    const target = this.#now + delayOf(ms);
    await settle();
    for (let next = this.#nextDue(target); next !== undefined; next = this.#nextDue(target)) {
      this.#fire(next);
      await settle();
    }
    this.#moveTo(target);
  }

  /** Moves both clocks to the wall time `target`: elapsed time passes on both. */
  #moveTo(target: number): void {
    if (target > this.#now) this.#monotonic += target - this.#now;
    this.#now = target;
  }

  #nextDue(limit: number): number | undefined {
    let best: number | undefined;
    let bestDue = limit;
    // Map iteration is in arming order, so `<` keeps the earliest-armed among equal due times.
    for (const [id, timer] of this.#timers) {
      if (timer.dueAt < bestDue || (best === undefined && timer.dueAt === bestDue)) {
        best = id;
        bestDue = timer.dueAt;
      }
    }
    return best;
  }

  #fire(id: number): void {
    const timer = this.#timers.get(id);
    if (timer === undefined) return;
    this.#timers.delete(id);
    this.#moveTo(Math.max(this.#now, timer.dueAt));
    timer.fn();
  }
}

/** Resolves after the microtask queue has drained and one turn of the event loop has passed. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function delayOf(ms: number): number {
  return Number.isNaN(ms) || ms < 0 ? 0 : ms;
}

/** A signal that aborts `ms` from now on `clock` (or with `parent`); `cancel` disarms its timer once the work is done. */
export function deadlineSignal(clock: Clock, ms: number, parent?: AbortSignal): { readonly signal: AbortSignal; cancel(): void } {
  const controller = new AbortController();
  const timer = clock.setTimer(() => controller.abort(new DeadlineExceededError(`deadline of ${Math.round(ms)} ms exceeded`)), ms);
  const onParent = (): void => controller.abort(parent?.reason);
  if (parent?.aborted === true) onParent();
  else parent?.addEventListener('abort', onParent, { once: true });
  return {
    signal: controller.signal,
    cancel() {
      timer.cancel();
      parent?.removeEventListener('abort', onParent);
    },
  };
}

/** The reason of a `deadlineSignal` that ran out. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
}
