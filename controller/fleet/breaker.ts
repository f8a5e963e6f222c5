/**
 * The fleet-wide breaker as the reconciler reads it: evaluated from every
 * cached workload's halt annotation (fleet/safety.ts `breakerState`), at most
 * once a second, and counting the halts we just wrote that the cache does not
 * show yet.
 */
import type { Logger } from 'pino';
import type { WorkloadSummary } from '../model.ts';
import { FLEET_ANNOTATIONS } from '../../core/index.ts';
import { breakerState, parseHalt, type BreakerState, type FleetOptions } from './safety.ts';

/** The breaker reads every workload's halt annotation; once a second is enough (a scan per restart start would not be). */
const BREAKER_RECHECK_MS = 1000;

/** The workloads the breaker counts halts on: their keys, and each as the reconciler reads it. */
export interface HaltSource {
  keys(): Iterable<string>;
  workload(key: string): WorkloadSummary | undefined;
}

/** The breaker's last evaluation and the halts written since. */
export class Breaker {
  readonly #fleet: FleetOptions;
  readonly #log: Logger;
  /** Halts we wrote that the cache may not show yet, with the resourceVersion they were based on. */
  readonly #unseenHalts = new Map<string, { readonly at: number; readonly basedOn: string }>();
  #last: { readonly at: number; readonly state: BreakerState } | undefined;

  constructor(fleet: FleetOptions, log: Logger) {
    this.#fleet = fleet;
    this.#log = log;
  }

  /** True while the breaker pauses every restart (as of its last evaluation). */
  get open(): boolean {
    return this.#last?.state.open === true;
  }

  /** We halted the workload at `at`, writing over version `basedOn`: counted now, and evaluated again at once. */
  halted(key: string, at: number, basedOn: string): void {
    this.#unseenHalts.set(key, { at, basedOn });
    this.#last = undefined;
  }

  /** The workload is gone. */
  forget(key: string): void {
    this.#unseenHalts.delete(key);
  }

  /** The breaker's state at `now`, evaluated again when its last evaluation is a second old. */
  at(now: number, source: HaltSource): BreakerState {
    if (this.#last !== undefined && now - this.#last.at < BREAKER_RECHECK_MS) return this.#last.state;
    const times: number[] = [];
    for (const key of source.keys()) {
      const workload = source.workload(key);
      const unseen = this.#unseenHalts.get(key);
      if (unseen !== undefined && workload?.resourceVersion !== unseen.basedOn) this.#unseenHalts.delete(key);
      const halt = this.#unseenHalts.get(key)?.at ?? parseHalt(workload?.annotations[FLEET_ANNOTATIONS.restartHalted])?.at;
      if (halt !== undefined) times.push(halt);
    }
    const state = breakerState(times, this.#fleet.breakerThreshold, this.#fleet.breakerWindowMs);
    const was = this.open;
    if (state.open && !was) this.#log.warn({ halts: state.halts }, 'restart breaker open: every restart is paused');
    if (!state.open && was) this.#log.info('restart breaker closed: restarts resume');
    this.#last = { at: now, state };
    return state;
  }
}
