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
 * - Tests use `FakeClock` (test/support/fake-clock.ts), which runs on the same `delayOf`.
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

/** The real clock: `Date.now()` and unref'd Node timers. A fresh object per call. */
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

/** The delay a timer waits for `ms`: negative or NaN means as soon as possible (the real and the fake clock agree). */
export function delayOf(ms: number): number {
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
