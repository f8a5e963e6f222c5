/**
 * The controller's work queue, with client-go workqueue semantics: it holds
 * keys (`namespace/name`), not events, because reconciling is level-based and
 * a burst of events for one object needs only one run.
 *
 * - Dedupe. A key waiting to run is not queued twice. A key that is being
 *   processed when it is added again is marked dirty and runs once more after
 *   the current run ends, so no change is missed and no two workers ever hold
 *   the same key.
 * - Earliest wins. A key waits in at most one place: ready, or delayed until
 *   one due time. `add` and `addAfter` only ever move that time earlier; a
 *   later request for a key already due sooner is dropped. Debouncing is the
 *   caller's business.
 * - Bounded concurrency, FIFO among ready keys, except that keys the owner
 *   calls deferrable (a restart in progress, looked at again on a timer) run
 *   after every other ready key, until they have waited `deferLimitMs`: a new
 *   change's first write does not queue behind the progress checks of many
 *   restarts (as controller-runtime's priority queue puts the initial list
 *   behind new events), and no check waits more than the limit for it.
 * - Outcomes of `process`: resolving forgets the key's failures; resolving
 *   with `requeueAfterMs` also re-adds the key after that delay; rejecting (or
 *   throwing) reports to `onError` and re-adds the key after a per-key
 *   exponential backoff, base·2^(n-1) capped at max for the n-th failure in a
 *   row. Because earliest wins, a fresh `add` during a backoff runs the key
 *   at once (new state deserves a prompt look), while the failure count stays,
 *   so a key that keeps failing keeps backing off further.
 * - `shutdown()` stops starting work, drops every waiting key and timer, and
 *   resolves once in-flight runs have finished; their outcomes schedule
 *   nothing.
 *
 * Nothing the queue calls can make it reject or leave an unhandled rejection:
 * `process` failures go to `onError`, and a throwing `onError` is swallowed
 * (it is the reporter; there is nowhere further to report to).
 */
import { systemClock } from './clock.ts';
import type { Clock, Timer } from './clock.ts';

/**
 * What a run of `process` may ask for: `requeueAfterMs` re-adds the key after
 * that delay (earliest wins, as with `addAfter`; Infinity: never, NaN: now).
 */
export type ProcessResult = { readonly requeueAfterMs?: number } | void;

/**
 * What the queue reports as it works, for client-go's `workqueue_*` metrics (controller/metrics.ts).
 * Durations are in milliseconds; depth, unfinished work and the longest run are read from the queue.
 */
export interface QueueMetrics {
  /** A key was queued (ready, or marked to run again after its current run). */
  added(): void;
  /** A key was re-added after a failure (client-go's AddRateLimited). */
  retried(): void;
  /** A key started to run after waiting `ms` since it became ready. */
  started(waitedMs: number): void;
  /** A run took `ms`. */
  finished(ms: number): void;
}

/** Per-key retry backoff after failures. */
export interface Backoff {
  /** Delay after the first failure in a row. */
  readonly baseMs: number;
  /** No delay exceeds this. */
  readonly maxMs: number;
}

/** Options of a WorkQueue. */
export interface WorkQueueOptions {
  /** Most keys processed at once (a positive integer). */
  readonly concurrency: number;
  /** Reconciles one key. Never called twice concurrently for the same key. */
  readonly process: (key: string) => Promise<ProcessResult>;
  readonly clock?: Clock;
  /** Default: 100 ms doubling up to 5 min. */
  readonly backoff?: Backoff;
  /** Told about every failed run; `attempt` is 1 for the first failure in a row. */
  readonly onError?: (key: string, error: unknown, attempt: number) => void;
  /** Told about adds, retries, waits and runs. */
  readonly metrics?: QueueMetrics;
  /** Keys that may wait behind the other ready keys (asked when a worker frees up); default none. */
  readonly deferrable?: (key: string) => boolean;
  /** The longest a deferrable ready key waits behind others, ms (default 5 s). */
  readonly deferLimitMs?: number;
}

/** The default of `deferLimitMs`. */
export const DEFAULT_DEFER_LIMIT_MS = 5_000;

/** The default retry backoff: 100 ms, doubling, capped at 5 minutes. */
export const DEFAULT_BACKOFF: Backoff = Object.freeze({ baseMs: 100, maxMs: 5 * 60_000 });

/** `start()` was called on a queue that has been shut down. */
export class QueueShutDownError extends Error {
  override readonly name = 'QueueShutDownError';
}

/** A deduplicating, delaying, retrying work queue with bounded concurrency. */
export class WorkQueue {
  readonly #concurrency: number;
  readonly #process: (key: string) => Promise<ProcessResult>;
  readonly #clock: Clock;
  readonly #backoff: Backoff;
  readonly #onError: ((key: string, error: unknown, attempt: number) => void) | undefined;
  readonly #metrics: QueueMetrics | undefined;
  readonly #deferrable: ((key: string) => boolean) | undefined;
  readonly #deferLimitMs: number;

  /** Ready keys in FIFO order, with the time each became ready. Never holds a key being processed. */
  readonly #ready = new Map<string, number>();
  /** Keys being processed that were added again meanwhile, with the time of that add. */
  readonly #dirty = new Map<string, number>();
  /** Keys being processed, with the monotonic time each run started. */
  readonly #processing = new Map<string, number>();
  readonly #delayed = new Map<string, { readonly dueAt: number; readonly timer: Timer }>();
  /** Failures in a row, per key; forgotten on success. */
  readonly #failures = new Map<string, number>();

  #started = false;
  #closed = false;
  #drained: Promise<void> | undefined;
  #resolveDrained: (() => void) | undefined;

  /** Throws RangeError on a non-positive or fractional concurrency, or a backoff that is not 0 < base ≤ max. */
  constructor(options: WorkQueueOptions) {
    if (!Number.isSafeInteger(options.concurrency) || options.concurrency < 1) {
      throw new RangeError(`concurrency must be a positive integer, got ${options.concurrency}`);
    }
    const backoff = options.backoff ?? DEFAULT_BACKOFF;
    if (!(backoff.baseMs > 0 && backoff.maxMs >= backoff.baseMs && Number.isFinite(backoff.maxMs))) {
      throw new RangeError(`backoff must satisfy 0 < baseMs <= maxMs < Infinity, got ${backoff.baseMs} and ${backoff.maxMs}`);
    }
    this.#concurrency = options.concurrency;
    this.#process = options.process;
    this.#clock = options.clock ?? systemClock();
    this.#backoff = { baseMs: backoff.baseMs, maxMs: backoff.maxMs };
    this.#onError = options.onError;
    this.#metrics = options.metrics;
    this.#deferrable = options.deferrable;
    this.#deferLimitMs = options.deferLimitMs ?? DEFAULT_DEFER_LIMIT_MS;
  }

  /** Begins processing; keys added before are kept and run in the order they were added. Idempotent. */
  start(): void {
    if (this.#closed) throw new QueueShutDownError('the work queue has been shut down');
    this.#started = true;
    this.#pump();
  }

  /** Queues `key` to run as soon as a worker is free (see the module comment for dedupe). No-op after shutdown. */
  add(key: string): void {
    if (this.#closed || this.#ready.has(key) || this.#dirty.has(key)) return;
    this.#cancelDelayed(key);
    this.#metrics?.added();
    if (this.#processing.has(key)) this.#dirty.set(key, this.#clock.now());
    else {
      this.#ready.set(key, this.#clock.now());
      this.#pump();
    }
  }

  /**
   * Queues `key` to become ready in `ms` milliseconds, unless it is already
   * due sooner; a delay due later is moved earlier. `ms <= 0` is `add`.
   * Throws RangeError on NaN or Infinity.
   */
  addAfter(key: string, ms: number): void {
    if (!Number.isFinite(ms)) throw new RangeError(`delay must be a finite number of milliseconds, got ${ms}`);
    if (ms <= 0) {
      this.add(key);
      return;
    }
    if (this.#closed || this.#ready.has(key) || this.#dirty.has(key)) return;
    const dueAt = this.#clock.now() + ms;
    const existing = this.#delayed.get(key);
    if (existing !== undefined) {
      if (existing.dueAt <= dueAt) return;
      existing.timer.cancel();
    }
    const timer = this.#clock.setTimer(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    this.#delayed.set(key, { dueAt, timer });
  }

  /** True while `key` is ready, delayed or being processed. */
  has(key: string): boolean {
    return this.#ready.has(key) || this.#dirty.has(key) || this.#delayed.has(key) || this.#processing.has(key);
  }

  /**
   * Keys ready and waiting for a worker. Like client-go's `Len`, a key being
   * processed that is due to run again is not counted until its run ends.
   */
  get depth(): number {
    return this.#ready.size;
  }

  /** Keys waiting for a delay or backoff to pass. */
  get delayedCount(): number {
    return this.#delayed.size;
  }

  /**
   * How long the longest-waiting ready key has waited, in ms (0 when none).
   * A key that became due while it was being processed counts from then.
   * Scans the ready keys: meant for a metrics scrape, not a hot path.
   */
  oldestWaitMs(): number {
    let oldest = Infinity;
    for (const since of this.#ready.values()) oldest = Math.min(oldest, since);
    return oldest === Infinity ? 0 : Math.max(0, this.#clock.now() - oldest);
  }

  /** Seconds the runs in flight have taken so far, summed (client-go's unfinished work). */
  unfinishedWorkSeconds(): number {
    const now = this.#clock.monotonic();
    let total = 0;
    for (const since of this.#processing.values()) total += Math.max(0, now - since);
    return total / 1000;
  }

  /** Seconds the longest run in flight has taken so far (0 when none). */
  longestRunningSeconds(): number {
    const now = this.#clock.monotonic();
    let longest = 0;
    for (const since of this.#processing.values()) longest = Math.max(longest, now - since);
    return longest / 1000;
  }

  /**
   * Stops starting new work, drops every waiting key and timer, and resolves
   * when the runs in flight have finished. Idempotent: every call returns the
   * same promise.
   */
  shutdown(): Promise<void> {
    if (this.#drained !== undefined) return this.#drained;
    this.#closed = true;
    for (const { timer } of this.#delayed.values()) timer.cancel();
    this.#delayed.clear();
    this.#ready.clear();
    this.#dirty.clear();
    this.#drained = new Promise((resolve) => {
      this.#resolveDrained = resolve;
    });
    if (this.#processing.size === 0) this.#resolveDrained?.();
    return this.#drained;
  }

  #pump(): void {
    while (this.#started && !this.#closed && this.#processing.size < this.#concurrency) {
      const next = this.#next();
      if (next === undefined) return;
      const [key, readySince] = next;
      this.#ready.delete(key);
      this.#metrics?.started(Math.max(0, this.#clock.now() - readySince));
      this.#processing.set(key, this.#clock.monotonic());
      void this.#run(key);
    }
  }

  /**
   * The ready key to run next: the first that is not deferrable, or has waited its limit; else the first. The scan
   * passes only deferrable keys, so it is as long as the restarts in progress that are ready at once.
   */
  #next(): [string, number] | undefined {
    let first: [string, number] | undefined;
    const now = this.#clock.now();
    for (const entry of this.#ready) {
      first ??= entry;
      if (this.#deferrable === undefined || now - entry[1] >= this.#deferLimitMs || !this.#deferrable(entry[0])) return entry;
    }
    return first;
  }

  #cancelDelayed(key: string): void {
    this.#delayed.get(key)?.timer.cancel();
    this.#delayed.delete(key);
  }

  /** One run of `process`; never rejects. */
  async #run(key: string): Promise<void> {
    let outcome: { readonly ok: true; readonly result: ProcessResult } | { readonly ok: false; readonly error: unknown };
    try {
      // Deferred to a microtask so `add` never calls into `process` synchronously, and a synchronous throw is a failure like any other.
      outcome = { ok: true, result: await Promise.resolve().then(() => this.#process(key)) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    const startedAt = this.#processing.get(key) ?? this.#clock.monotonic();
    this.#processing.delete(key);
    this.#metrics?.finished(Math.max(0, this.#clock.monotonic() - startedAt));
    if (outcome.ok) this.#succeeded(key, outcome.result);
    else this.#failed(key, outcome.error);
    const againAt = this.#dirty.get(key);
    if (againAt !== undefined) {
      this.#dirty.delete(key);
      this.#cancelDelayed(key);
      this.#ready.set(key, againAt);
    }
    if (this.#closed) {
      if (this.#processing.size === 0) this.#resolveDrained?.();
      return;
    }
    this.#pump();
  }

  #succeeded(key: string, result: ProcessResult): void {
    this.#failures.delete(key);
    const after = result?.requeueAfterMs;
    if (after !== undefined && !this.#closed) this.#requeue(key, after);
  }

  #failed(key: string, error: unknown): void {
    const attempt = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, attempt);
    this.#report(key, error, attempt);
    if (this.#closed) return;
    this.#metrics?.retried();
    this.#requeue(key, Math.min(this.#backoff.maxMs, this.#backoff.baseMs * 2 ** (attempt - 1)));
  }

  /** `addAfter` for the queue's own re-adds: a key processed this moment is not in `#ready`, so the delay applies. */
  #requeue(key: string, ms: number): void {
    // `requeueAfterMs` comes from `process` and must not throw here: Infinity means never, and NaN
    // (a computation gone wrong) means now, since silently never reconciling again would be worse.
    if (ms === Infinity) return;
    this.addAfter(key, Number.isNaN(ms) ? 0 : ms);
  }

  #report(key: string, error: unknown, attempt: number): void {
    if (this.#onError === undefined) return;
    try {
      const returned: unknown = this.#onError(key, error, attempt);
      // Typed as void, but an async reporter would otherwise turn its own failure into an unhandled rejection.
      if (returned instanceof Promise) returned.catch(() => {});
    } catch {
      // The reporter failed; the queue must go on regardless.
    }
  }
}
