/**
 * Whether a restart may start now, as data: the decision, the Events to record
 * on the workload and the deferral to count. The reconciler records them; this
 * module writes nothing and logs nothing.
 *
 * In order: a halted workload never starts; the breaker pauses every start;
 * the workload's cooldown (`--min-restart-interval`, its pause period); the
 * concurrency cap; the rate — last, so a token is only spent on a start that
 * happens (as Argo Rollouts counts before it acts).
 */
import { formatTime } from '../bookkeeping.ts';
import { normalEvent, warningEvent, type EventConfig, type WorkloadEvent } from '../events.ts';
import type { WorkloadSummary } from '../model.ts';
import { FLEET_ANNOTATIONS } from '../../core/index.ts';
import { cooldownFor, cooldownRemaining, type BreakerState, type CooldownCause, type FleetOptions, type Halt } from './safety.ts';

/** Fleet safety all off: no cooldown, no health gate, a breaker that never opens. */
export const FLEET_OFF: FleetOptions = Object.freeze({ minRestartIntervalMs: 0, pausePeriodMs: 0, healthGateTimeoutMs: 0, breakerThreshold: Number.MAX_SAFE_INTEGER, breakerWindowMs: 0 });

/** The fleet-wide limit on restart starts (a TokenBucket); `retryAfterMs` is when to look again. */
export interface StartLimiter {
  tryTake(): boolean;
  readonly retryAfterMs: number;
}

/** Why a start was deferred: the `cause` label of `driftless_restarts_deferred_total`. */
export type DeferCause = 'breaker' | 'rate' | CooldownCause;

/** Everything the admission reads. */
export interface AdmissionInput {
  readonly workload: WorkloadSummary;
  /** The configs whose change calls for the restart, as the Events name them. */
  readonly changed: readonly EventConfig[];
  /** The T of the workload's last restart, if it ever had one. */
  readonly lastRestartAt: number | undefined;
  /** The workload's halt annotation, parsed. */
  readonly halt: Halt | undefined;
  readonly now: number;
  readonly fleet: FleetOptions;
  /** The breaker, read only when the workload is not halted itself (it scans every workload). */
  readonly breaker: () => BreakerState;
  /** The workload already holds a slot (its restart is in progress). */
  readonly holdsSlot: boolean;
  /** Restarts holding a slot now, and how many may. */
  readonly acting: number;
  readonly maxConcurrentRestarts: number;
  readonly checkIntervalMs: number;
  readonly limiter?: StartLimiter;
}

/** The answer: start now, or not and when to look again (`requeueAfterMs` undefined: at the next change). */
export type Admission =
  | { readonly start: true; readonly events: readonly WorkloadEvent[] }
  | {
    readonly start: false;
    readonly requeueAfterMs: number | undefined;
    readonly events: readonly WorkloadEvent[];
    readonly deferred?: DeferCause;
    /** Why, for a debug log line, when no Event says it. */
    readonly waiting?: string;
  };

/** Whether the restart may start now; takes a start token only when everything else admits it. */
export function admitStart(input: AdmissionInput): Admission {
  const { workload, changed, halt, now, lastRestartAt } = input;
  if (halt !== undefined) {
    const event = warningEvent('RestartHalted', `not restarted: restarts of this workload are halted (${halt.reason}); remove the annotation ${FLEET_ANNOTATIONS.restartHalted} to resume`, changed);
    return { start: false, requeueAfterMs: undefined, events: [event] };
  }
  const breaker = input.breaker();
  if (breaker.open) {
    const event = warningEvent('RestartPaused', `every restart is paused: ${breaker.halts} restarts halted within --breaker-window; remove the ${FLEET_ANNOTATIONS.restartHalted} annotations to resume`, changed);
    return { start: false, requeueAfterMs: input.checkIntervalMs, events: [event], deferred: 'breaker' };
  }
  const cooldown = cooldownFor(workload, input.fleet);
  const events: WorkloadEvent[] = cooldown.problem === undefined ? [] : [warningEvent('RestartWarning', cooldown.problem)];
  const wait = cooldownRemaining(lastRestartAt, cooldown.ms, now);
  if (wait > 0 && lastRestartAt !== undefined && cooldown.cause !== undefined) {
    const last = formatTime(lastRestartAt);
    const next = formatTime(lastRestartAt + cooldown.ms);
    const seconds = `${Math.round(cooldown.ms / 1000)}s`;
    // A config flipping within the interval is a fight (two issuers, one Secret): a Warning. A pause period is asked for.
    events.push(cooldown.cause === 'pause-period'
      ? normalEvent('RestartDeferred', `within the pause period (${seconds}) of the restart at ${last}: restarting at ${next}`, changed)
      : warningEvent('RestartDeferred', `again within --min-restart-interval (${seconds}) of the restart at ${last}: at most one restart per interval, next at ${next}`, changed));
    return { start: false, requeueAfterMs: wait, events, deferred: cooldown.cause };
  }
  // A restart a PodDisruptionBudget blocks does not hold a slot: ten blocked workloads must not stop the fleet.
  if (!input.holdsSlot && input.acting >= input.maxConcurrentRestarts) {
    return { start: false, requeueAfterMs: input.checkIntervalMs, events, waiting: 'waiting for a restart slot (max-concurrent-restarts)' };
  }
  const limiter = input.limiter;
  if (limiter !== undefined && !limiter.tryTake()) {
    return { start: false, requeueAfterMs: limiter.retryAfterMs, events, deferred: 'rate', waiting: 'waiting for a restart token (restart-rate)' };
  }
  return { start: true, events };
}
