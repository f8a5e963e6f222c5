/**
 * Stopping what the demo started, in reverse order, exactly once — whether it
 * ends normally, fails, or is interrupted half-way through starting something.
 */

/** Something that can be stopped. */
type Stop = () => Promise<unknown>;

/** The demo's running parts, newest last. */
export interface Teardown {
  /**
   * Awaits a start and registers how to stop what it returns. A start still
   * in progress when `stopAll` runs is awaited first, then stopped (a cluster
   * half-way up cannot be abandoned without leaving its processes and temp dir).
   */
  track<T>(what: string, start: Promise<T>, stop: (started: T) => Promise<unknown>): Promise<T>;
  /** Stops everything in reverse start order; idempotent. Failures are collected, not fatal to the rest. */
  stopAll(): Promise<readonly StopFailure[]>;
}

/** A part that did not stop cleanly. */
export interface StopFailure {
  readonly what: string;
  readonly error: unknown;
}

/** Something was started after the teardown had begun; it was stopped again. */
export class TeardownStartedError extends Error {
  constructor(what: string) {
    super(`${what} started while the demo was stopping; stopped it again`);
    this.name = 'TeardownStartedError';
  }
}

/** An empty teardown. */
export function createTeardown(): Teardown {
  const parts: { what: string; stop: Promise<Stop | undefined> }[] = [];
  let stopping: Promise<readonly StopFailure[]> | undefined;
  return {
    track(what, start, stop) {
      if (stopping !== undefined) {
        // Started after the teardown began (an interrupt raced a start): stop it at once.
        return start.then(async (started) => {
          await stop(started);
          throw new TeardownStartedError(what);
        });
      }
      // A failed start leaves nothing to stop here: each start cleans up after itself on failure.
      parts.push({ what, stop: start.then((started) => () => stop(started), () => undefined) });
      return start;
    },
    stopAll() {
      stopping ??= (async () => {
        const failures: StopFailure[] = [];
        for (const part of [...parts].reverse()) {
          const stop = await part.stop;
          try {
            await stop?.();
          } catch (error) {
            failures.push({ what: part.what, error });
          }
        }
        return failures;
      })();
      return stopping;
    },
  };
}
