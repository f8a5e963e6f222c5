/**
 * Fleet safety, the pure decisions: when a workload may start its next
 * restart (minimum interval, Reloader's pause period), whether a restart's
 * replacement pods failed their health gate, and whether the fleet-wide
 * circuit breaker is open. Everything is computed from what the API server
 * holds — the workload's `driftless.dev/restart-at` and
 * `driftless.dev/restart-halted` annotations and its pods — so a controller
 * restart or a leader change neither resets a cooldown, nor forgets a halt,
 * nor closes a tripped breaker (ADR 0010).
 */
import { FLEET_ANNOTATIONS, canonicalJson, parseGoDuration } from '../../core/index.ts';
import { formatTime } from '../bookkeeping.ts';
import type { PodSummary, WorkloadSummary } from '../model.ts';
import { isLivePod } from '../restart/stale-pods.ts';

/** The fleet-safety settings from the configuration (all durations in ms; 0 = off). */
export interface FleetOptions {
  readonly minRestartIntervalMs: number;
  readonly pausePeriodMs: number;
  readonly healthGateTimeoutMs: number;
  readonly breakerThreshold: number;
  readonly breakerWindowMs: number;
}

/** Why a workload waits before its next restart. */
export type CooldownCause = 'min-restart-interval' | 'pause-period';

/** The per-workload wait between two restart starts. */
export interface Cooldown {
  readonly ms: number;
  /** Which setting gave `ms` (the longer one wins); `undefined` when both are 0. */
  readonly cause: CooldownCause | undefined;
  /** A bad pause-period annotation, in words (then the global pause period is used). */
  readonly problem?: string;
}

/**
 * The cooldown of a workload: the longer of `--min-restart-interval` and its
 * pause period (the Reloader annotation, else `--pause-period`).
 */
export function cooldownFor(workload: WorkloadSummary, options: FleetOptions): Cooldown {
  const text = workload.annotations[FLEET_ANNOTATIONS.pausePeriod];
  let pause = options.pausePeriodMs;
  let problem: string | undefined;
  if (text !== undefined) {
    const parsed = parseGoDuration(text);
    if (parsed === undefined) problem = `${FLEET_ANNOTATIONS.pausePeriod}: ${JSON.stringify(text)} is not a duration such as 5m; using --pause-period`;
    else pause = parsed;
  }
  const ms = Math.max(options.minRestartIntervalMs, pause);
  const cause: CooldownCause | undefined = ms === 0 ? undefined : pause > options.minRestartIntervalMs ? 'pause-period' : 'min-restart-interval';
  return problem === undefined ? { ms, cause } : { ms, cause, problem };
}

/**
 * How long a new restart must still wait, given the T of the last one
 * (`undefined`: never restarted, no wait). T is when the previous change was
 * first seen, which is within the debounce of that restart's start.
 */
export function cooldownRemaining(lastRestartAt: number | undefined, cooldownMs: number, now: number): number {
  if (lastRestartAt === undefined || cooldownMs <= 0) return 0;
  return Math.max(0, lastRestartAt + cooldownMs - now);
}

/** A halted restart, as recorded on the workload. */
export interface Halt {
  /** Epoch ms (whole seconds). */
  readonly at: number;
  /** Names pods and durations, never a config value. */
  readonly reason: string;
}

/** The annotation value of a halt: canonical JSON, so the same halt gives the same bytes. */
export function formatHalt(halt: Halt): string {
  return canonicalJson({ at: formatTime(halt.at), reason: halt.reason });
}

/**
 * Parses `restart-halted`. Anything present but unreadable still halts (an
 * operator's hand-written `"true"` means stop), dated 0 so that it never
 * counts towards the breaker's window.
 */
export function parseHalt(text: string | undefined): Halt | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as { at?: unknown; reason?: unknown };
    const at = typeof value.at === 'string' ? Date.parse(value.at) : Number.NaN;
    return { at: Number.isFinite(at) ? at : 0, reason: typeof value.reason === 'string' ? value.reason : text };
  } catch {
    return { at: 0, reason: text };
  }
}

/** What the health gate says about a restart's replacement pods. */
export type GateVerdict =
  | { readonly action: 'pass' }
  /** Some replacement is not Ready yet, within its deadline. */
  | { readonly action: 'wait'; readonly pod: string }
  | { readonly action: 'fail'; readonly reason: string };

/**
 * The health gate of a restart at T: every pod created at or after T (the
 * replacements) must be Ready within `timeoutMs` of its creation. A pod that
 * is being deleted or has terminated is not judged (its controller replaces it).
 */
export function healthGate(pods: readonly PodSummary[], restartAt: number, now: number, timeoutMs: number): GateVerdict {
  let waiting: string | undefined;
  const sorted = [...pods].sort((a, b) => a.createdAt - b.createdAt || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const pod of sorted) {
    // The mirror image of isStalePod: a live pod created at or after T is a replacement.
    if (pod.createdAt < restartAt || !isLivePod(pod) || pod.readySince !== undefined) continue;
    const age = now - pod.createdAt;
    if (timeoutMs > 0 && age >= timeoutMs) {
      return { action: 'fail', reason: `replacement pod ${pod.name} not Ready ${Math.round(age / 1000)}s after its creation (health gate ${Math.round(timeoutMs / 1000)}s)` };
    }
    waiting ??= pod.name;
  }
  return waiting === undefined ? { action: 'pass' } : { action: 'wait', pod: waiting };
}

/** The fleet-wide circuit breaker's state. */
export type BreakerState =
  | { readonly open: false }
  /** `since`: the halt that completed the threshold; `halts`: how many fell in that window. */
  | { readonly open: true; readonly since: number; readonly halts: number };

/**
 * Open when `threshold` halts (their recorded times) fall within one window
 * of `windowMs`. It is latched by the halts themselves: the annotations stay
 * until an operator removes them, so it stays open across controller
 * restarts and closes exactly when enough halts have been cleared.
 */
export function breakerState(haltTimes: Iterable<number>, threshold: number, windowMs: number): BreakerState {
  const times = [...haltTimes].filter((t) => t > 0).sort((a, b) => a - b);
  for (let last = threshold - 1; last < times.length; last++) {
    const first = times[last - threshold + 1] as number;
    const at = times[last] as number;
    if (at - first <= windowMs) {
      let halts = threshold;
      while (last + 1 < times.length && (times[last + 1] as number) - first <= windowMs) {
        last++;
        halts++;
      }
      return { open: true, since: at, halts };
    }
  }
  return { open: false };
}
