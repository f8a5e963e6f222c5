/**
 * The fake `Clock` of unit tests: time moves only when the test says so.
 * Due timers run in time order (ties in the order they were armed), including
 * timers armed by timers during the same advance. Only tests use it, so it
 * lives here rather than in the controller it drives (controller/clock.ts).
 */
import { delayOf, type Clock, type Timer } from '../../controller/clock.ts';

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
