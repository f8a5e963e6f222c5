/**
 * The one polling helper of the tests: until a condition holds, for cluster
 * start-up, tests that wait on controllers, and unit tests that wait on a local
 * process or a real timer. Every wait has a deadline and says what it waited for;
 * a deadline bounds a wait, it never asserts a duration.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** A condition did not hold before its deadline. */
export class WaitTimeoutError extends Error {
  constructor(description: string, timeoutMs: number, options?: ErrorOptions) {
    super(`timed out after ${timeoutMs} ms waiting for ${description}`, options);
    this.name = 'WaitTimeoutError';
  }
}

/** Options of `waitFor`. */
export interface WaitOptions {
  readonly timeoutMs?: number;
  readonly intervalMs?: number;
  /**
   * Called after every attempt that found the condition false; throw from it to
   * stop waiting early (e.g. a process died). After, not before: a process that
   * printed the awaited line and then exited has met the condition.
   */
  readonly abortIf?: () => void;
}

/** For a local process, socket or in-process state: a short interval, and a deadline that still allows a loaded machine. */
export const LOCAL_WAIT: WaitOptions = Object.freeze({ timeoutMs: 10_000, intervalMs: 10 });

/**
 * Calls `check` until it returns a value other than `undefined` or `false`,
 * and returns that value. Errors thrown by `check` count as "not yet"; the
 * last one becomes the timeout error's cause.
 * @throws {WaitTimeoutError} when the deadline passes.
 */
export async function waitFor<T>(
  description: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: WaitOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const result = await check();
      if (result !== undefined && result !== false) return result;
    } catch (error) {
      lastError = error;
    }
    options.abortIf?.();
    if (Date.now() > deadline) {
      throw new WaitTimeoutError(description, timeoutMs, lastError === undefined ? undefined : { cause: lastError });
    }
    await sleep(options.intervalMs ?? 200);
  }
}
