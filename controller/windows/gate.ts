/**
 * The sync-window gate of an in-cluster restart (issue 15 §8), pure: a
 * restart of a workload whose Application's AppProject has no open window
 * for an automatic sync is held, and the gate says until when and which
 * windows hold it. The restart path asks it right before it evicts or sets
 * `spec.restartAt`; a held restart is made when the window opens, and
 * several changes held meanwhile are one restart (the path's coalescing).
 *
 * What the gate does not know it does not hold: an untracked workload, an
 * Application or AppProject the controller does not watch (no CRD, no
 * permission) is open. Argo CD would not sync an Application whose project
 * is missing; a restart is not a sync, and holding every workload because a
 * project could not be read would be the worse failure.
 */
import type { AppProjectSummary, ApplicationSummary } from '../model.ts';
import { matchingWindows, untilOpen, type CompiledWindow, type WindowVerdict } from './sync-windows.ts';

/** Why a restart is held: the verdicts that do not allow an automatic sync. */
export type HeldReason = Extract<WindowVerdict['reason'], 'deny-window-active' | 'outside-allow-windows' | 'invalid-window'>;

/** What the gate says. */
export type WindowGate =
  | { readonly open: true }
  | {
      readonly open: false;
      /** Epoch ms at which the windows allow the restart; `undefined`: not within a year, or never (an invalid window). */
      readonly heldUntil: number | undefined;
      /** Which windows hold it, for an Event and `explain` (names the project and `spec.syncWindows[i]`, schedule, duration, zone). */
      readonly window: string;
      readonly reason: HeldReason;
    };

const OPEN: WindowGate = Object.freeze({ open: true });

/**
 * The gate for a workload's Application at `now`. `app` and `project` are
 * the watched summaries (`undefined` when not tracked or not watched).
 */
export function windowGate(app: Pick<ApplicationSummary, 'name' | 'project' | 'destination'> | undefined, project: AppProjectSummary | undefined, now: number): WindowGate {
  if (app === undefined || project === undefined || project.windows.length === 0) return OPEN;
  const matched = matchingWindows(project.windows, { name: app.name, destination: app.destination });
  if (matched.length === 0) return OPEN;
  const verdict = untilOpen(matched, now);
  if (verdict.allowed) return OPEN;
  const reason = verdict.reason as HeldReason;
  const deciding = verdict.windows.map((index) => matched.find((w) => w.index === index)).filter((w): w is CompiledWindow => w !== undefined);
  return Object.freeze({ open: false, heldUntil: verdict.opensAt, window: describe(project.name, reason, deciding, verdict.problem), reason });
}

/** `deny window spec.syncWindows[0] (schedule "0 22 * * *", duration 8h, time zone Europe/Berlin) of AppProject shop is active`. */
function describe(project: string, reason: HeldReason, windows: readonly CompiledWindow[], problem: string | undefined): string {
  const list = windows.map(windowText).join(', ');
  const plural = windows.length === 1 ? 'window' : 'windows';
  switch (reason) {
    case 'deny-window-active':
      return `deny ${plural} ${list} of AppProject ${project} ${windows.length === 1 ? 'is' : 'are'} active`;
    case 'outside-allow-windows':
      return `outside the allow ${plural} ${list} of AppProject ${project}`;
    case 'invalid-window':
      return `AppProject ${project} has an invalid sync window (${problem ?? list}); Argo CD does not sync it either`;
  }
}

function windowText(window: CompiledWindow): string {
  const { schedule, duration, timeZone } = window.spec;
  return `spec.syncWindows[${window.index}] (schedule ${JSON.stringify(schedule)}, duration ${duration || '""'}${timeZone === '' ? '' : `, time zone ${timeZone}`})`;
}

/** What `windowHold` reads: the gate's inputs, and whether the restart has acted yet. */
export interface WindowHoldInput {
  readonly app: Pick<ApplicationSummary, 'name' | 'project' | 'destination'> | undefined;
  readonly project: AppProjectSummary | undefined;
  readonly now: number;
  /** The act is still to be made; `false` never holds. */
  readonly notActed: boolean;
}

/** A restart held by the sync windows: why (for the one Event), and until when (`undefined`: no end known). */
export interface WindowHold {
  readonly reason: string;
  readonly until: number | undefined;
  /** The AppProject holding it. */
  readonly project: string;
}

/**
 * The sync windows' hold on an in-cluster act (ADR 0016); `undefined`: go on.
 * The restart path asks it for every act (an eviction, `spec.restartAt`, the
 * template annotation) and passes `notActed: true`; `false` never holds.
 */
export function windowHold(input: WindowHoldInput): WindowHold | undefined {
  if (!input.notActed) return undefined;
  const gate = windowGate(input.app, input.project, input.now);
  if (gate.open) return undefined;
  const until = gate.heldUntil === undefined ? 'with no open window known ahead' : `until ${new Date(gate.heldUntil).toISOString().replace(/\.\d{3}Z$/, 'Z')}`;
  return Object.freeze({ reason: `${gate.window}: the restart waits ${until}`, until: gate.heldUntil, project: input.project?.name ?? '' });
}
