/**
 * Argo CD's sync windows (AppProject `spec.syncWindows`), evaluated exactly
 * as Argo CD's application controller does for an automated sync
 * (pkg/apis/application/v1alpha1: SyncWindows.Matches, then CanSync(false)),
 * plus what Argo CD does not compute: when a held restart may go ahead.
 * Pure: no clock (the instant is an argument), no I/O.
 *
 * The rules, from Argo CD's code:
 * - Only windows that match the Application count (Matches): applications by
 *   name, clusters by destination name or server, namespaces by destination
 *   namespace, each a glob list; by default any one list matching is enough,
 *   with `andOperator` every list that is set must match. A window with no
 *   list set matches nothing.
 * - A window is active at instant T when its cron schedule fired at some wall
 *   time f with W - duration < f < W, where W is T shifted by the zone's UTC
 *   offset at T (Argo CD shifts a UTC clock; it does not evaluate the cron in
 *   the zone). Both ends are open: at the firing itself it is not yet active,
 *   at firing + duration no longer.
 * - Deny wins: an active deny window holds the sync (a manual sync passes when
 *   every active deny window has manualSync). Else an active allow window lets
 *   it through. Else if allow windows match but none is active, the sync is
 *   held (manual passes when all of them have manualSync). Else it passes.
 * - A window whose schedule or duration does not parse makes every evaluation
 *   of its Application fail, and Argo CD then does not sync. A kind other than
 *   `allow`/`deny` is never a deny nor an allow: it changes nothing.
 * - A schedule that never fires within five years (`0 0 30 2 *`) is, through
 *   robfig's zero time, always active. Argo CD's quirk, kept.
 * `syncOverrun` concerns syncs already running when a window closes; a
 * restart is a single act, so it does not apply.
 */
import { parseGoDuration } from '../../core/index.ts';
import { CronSyntaxError, parseCron } from './cron.ts';
import type { CronSchedule } from './cron.ts';
import { globMatch } from './glob.ts';
import { loadWindowZone, offsetChangeBetween } from './time-zone.ts';
import type { WindowZone } from './time-zone.ts';

/** One entry of `spec.syncWindows`, as written. */
export interface SyncWindowSpec {
  readonly kind: string;
  readonly schedule: string;
  readonly duration: string;
  readonly applications: readonly string[];
  readonly namespaces: readonly string[];
  readonly clusters: readonly string[];
  readonly manualSync: boolean;
  readonly timeZone: string;
  readonly andOperator: boolean;
}

/** What of an Application the matching reads. */
export interface WindowApplication {
  readonly name: string;
  readonly destination: { readonly server: string; readonly name: string; readonly namespace: string };
}

/** A window ready to evaluate, or the reason it cannot be. */
export type CompiledWindow =
  | {
      readonly index: number;
      readonly spec: SyncWindowSpec;
      readonly valid: true;
      readonly schedule: CronSchedule;
      readonly durationMs: number;
      readonly zone: WindowZone;
    }
  | { readonly index: number; readonly spec: SyncWindowSpec; readonly valid: false; readonly problem: string };

/** The outcome for one Application at one instant. */
export interface WindowVerdict {
  readonly allowed: boolean;
  readonly reason:
    | 'no-matching-window'
    | 'allow-window-active'
    | 'no-window-active'
    | 'deny-window-active'
    | 'outside-allow-windows'
    | 'invalid-window';
  /** Indexes into `spec.syncWindows` of the windows that decided (the active denies, the active or inactive allows, the invalid ones). */
  readonly windows: readonly number[];
  /** For `invalid-window`: what is wrong, naming the window. */
  readonly problem?: string;
}

/** A held verdict with the earliest instant at which the same evaluation allows. */
export interface HoldVerdict extends WindowVerdict {
  /** Milliseconds since the epoch; `undefined` when not within the horizon (or never: an invalid window). */
  readonly opensAt: number | undefined;
}

/**
 * Reads `spec.syncWindows` of an AppProject object. A field of the wrong type
 * is reported in `problems` (naming `spec.syncWindows[i].field`) and its window
 * kept as invalid, so a broken project holds its apps as Argo CD's would
 * (whose decoding of the whole object would fail).
 */
export function readSyncWindows(appProject: unknown): { windows: readonly CompiledWindow[]; problems: readonly string[] } {
  const list = (appProject as { spec?: { syncWindows?: unknown } } | null)?.spec?.syncWindows;
  if (list === undefined || list === null) return { windows: [], problems: [] };
  if (!Array.isArray(list)) return { windows: [], problems: ['spec.syncWindows must be a list'] };
  const problems: string[] = [];
  const windows = list.map((raw: unknown, index) => {
    const at = `spec.syncWindows[${index}]`;
    const fieldProblems: string[] = [];
    const record = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
    if (record === undefined) fieldProblems.push(`${at} must be a mapping`);
    const text = (field: string): string => {
      const value = record?.[field];
      if (value === undefined || value === null) return '';
      if (typeof value !== 'string') fieldProblems.push(`${at}.${field} must be a string`);
      return typeof value === 'string' ? value : '';
    };
    const strings = (field: string): string[] => {
      const value = record?.[field];
      if (value === undefined || value === null) return [];
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
        fieldProblems.push(`${at}.${field} must be a list of strings`);
        return [];
      }
      return value as string[];
    };
    const flag = (field: string): boolean => {
      const value = record?.[field];
      if (value === undefined || value === null) return false;
      if (typeof value !== 'boolean') fieldProblems.push(`${at}.${field} must be true or false`);
      return value === true;
    };
    const spec: SyncWindowSpec = Object.freeze({
      kind: text('kind'),
      schedule: text('schedule'),
      duration: text('duration'),
      applications: Object.freeze(strings('applications')),
      namespaces: Object.freeze(strings('namespaces')),
      clusters: Object.freeze(strings('clusters')),
      manualSync: flag('manualSync'),
      timeZone: text('timeZone'),
      andOperator: flag('andOperator'),
    });
    problems.push(...fieldProblems);
    if (fieldProblems.length > 0) return Object.freeze({ index, spec, valid: false as const, problem: fieldProblems.join('; ') });
    return compileWindow(spec, index);
  });
  return { windows: Object.freeze(windows), problems: Object.freeze(problems) };
}

/** Parses a window's schedule, duration and zone once. */
export function compileWindow(spec: SyncWindowSpec, index: number): CompiledWindow {
  const at = `spec.syncWindows[${index}]`;
  let schedule: CronSchedule;
  try {
    schedule = parseCron(spec.schedule);
  } catch (error) {
    if (!(error instanceof CronSyntaxError)) throw error;
    return Object.freeze({ index, spec, valid: false, problem: `${at}: cannot parse schedule '${spec.schedule}': ${error.message}` });
  }
  const durationMs = parseSignedGoDuration(spec.duration);
  if (durationMs === undefined) {
    return Object.freeze({ index, spec, valid: false, problem: `${at}: cannot parse duration '${spec.duration}': not a Go duration such as 1h or 90m` });
  }
  return Object.freeze({ index, spec, valid: true, schedule, durationMs, zone: loadWindowZone(spec.timeZone) });
}

/** Go's time.ParseDuration, sign included (Argo CD accepts `-1h`; such a window is never active). */
function parseSignedGoDuration(text: string): number | undefined {
  const sign = text.startsWith('-') ? -1 : 1;
  const body = text.startsWith('-') || text.startsWith('+') ? text.slice(1) : text;
  const value = parseGoDuration(body);
  return value === undefined ? undefined : sign * value;
}

/** Argo CD's SyncWindows.Matches for one Application, in project order. */
export function matchingWindows(windows: readonly CompiledWindow[], app: WindowApplication): CompiledWindow[] {
  return windows.filter((window) => windowMatches(window.spec, app));
}

function windowMatches(spec: SyncWindowSpec, app: WindowApplication): boolean {
  // The same steps, short-cuts included, as Argo CD's loop body.
  let matched = false;
  let isSet = false;
  if (spec.applications.length > 0) {
    isSet = true;
    matched = spec.applications.some((pattern) => globMatch(pattern, app.name));
  }
  if (spec.andOperator && !matched && isSet) return false;
  if (!spec.andOperator && matched) return true;
  if (spec.clusters.length > 0) {
    isSet = true;
    const { name, server } = app.destination;
    matched = spec.clusters.some((pattern) => (name !== '' && globMatch(pattern, name)) || (server !== '' && globMatch(pattern, server)));
  }
  if (isSet && spec.andOperator && !matched) return false;
  if (!spec.andOperator && matched) return true;
  if (spec.namespaces.length > 0) {
    matched = spec.namespaces.some((pattern) => globMatch(pattern, app.destination.namespace));
  }
  return matched;
}

/** The window's wall clock at an instant: the instant shifted by its zone's offset then. */
function wallAt(window: CompiledWindow & { valid: true }, instantMs: number): number {
  return instantMs + window.zone.offsetAt(instantMs);
}

/** Argo CD's SyncWindow.active: the schedule fired within the last `duration` of wall time, both ends open. */
export function isActive(window: CompiledWindow & { valid: true }, instantMs: number): boolean {
  const wall = wallAt(window, instantMs);
  const next = window.schedule.next(wall - window.durationMs);
  // robfig's zero time (no firing within five years) is before any instant.
  return next === undefined || next < wall;
}

/**
 * Argo CD's CanSync over the windows that match an Application (pass the
 * output of matchingWindows) at an instant. `manual` is Argo CD's isManual: a
 * restart by the controller is automatic, so it passes `false`.
 */
export function evaluateWindows(matched: readonly CompiledWindow[], instantMs: number, manual = false): WindowVerdict {
  if (matched.length === 0) return verdict(true, 'no-matching-window', []);
  const invalid = matched.filter((w) => !w.valid);
  if (invalid.length > 0) {
    const problems = invalid.map((w) => (w.valid ? '' : w.problem));
    return { ...verdict(false, 'invalid-window', invalid.map((w) => w.index)), problem: problems.join('; ') };
  }
  const valid = matched as readonly (CompiledWindow & { valid: true })[];
  const active = valid.filter((w) => isActive(w, instantMs));
  const activeDenies = active.filter((w) => w.spec.kind === 'deny');
  if (activeDenies.length > 0) {
    const allManual = activeDenies.every((w) => w.spec.manualSync);
    return verdict(manual && allManual, 'deny-window-active', activeDenies.map((w) => w.index));
  }
  const activeAllows = active.filter((w) => w.spec.kind === 'allow');
  if (activeAllows.length > 0) return verdict(true, 'allow-window-active', activeAllows.map((w) => w.index));
  const inactiveAllows = valid.filter((w) => w.spec.kind === 'allow' && !active.includes(w));
  if (inactiveAllows.length > 0) {
    const allManual = inactiveAllows.every((w) => w.spec.manualSync);
    return verdict(manual && allManual, 'outside-allow-windows', inactiveAllows.map((w) => w.index));
  }
  return verdict(true, 'no-window-active', []);
}

function verdict(allowed: boolean, reason: WindowVerdict['reason'], windows: number[]): WindowVerdict {
  return { allowed, reason, windows: Object.freeze(windows) };
}

const DAY = 24 * 60 * 60 * 1000;
/** How far ahead `untilOpen` looks by default: a year covers every schedule a window sensibly has. */
export const DEFAULT_HORIZON_MS = 366 * DAY;

/**
 * The verdict at `instantMs`, and when held, the earliest instant (to the
 * millisecond) at which the same evaluation allows an automatic restart.
 * The verdict can change only where some window's wall clock crosses a
 * firing or a firing's end, or where a zone's offset changes, so those
 * instants are visited in order; at most a day apart, to see every offset
 * change. `opensAt` is `undefined` for an invalid window (Argo CD will not sync
 * until the project is fixed) and when nothing opens within the horizon.
 */
export function untilOpen(matched: readonly CompiledWindow[], instantMs: number, horizonMs = DEFAULT_HORIZON_MS): HoldVerdict {
  const now = evaluateWindows(matched, instantMs);
  if (now.allowed || now.reason === 'invalid-window') return { ...now, opensAt: undefined };
  const valid = matched as readonly (CompiledWindow & { valid: true })[];
  const end = instantMs + horizonMs;
  let t = instantMs;
  while (t < end) {
    let candidate = Math.min(t + DAY, end);
    for (const window of valid) {
      const wall = wallAt(window, t);
      const offset = wall - t;
      // The next firing (entering) and the next firing + duration (leaving), as wall times after `wall`.
      const entering = window.schedule.next(wall);
      const fromLeaving = window.schedule.next(wall - window.durationMs);
      for (const boundary of [entering, fromLeaving === undefined ? undefined : fromLeaving + window.durationMs]) {
        if (boundary !== undefined && boundary > wall) candidate = Math.min(candidate, boundary - offset);
      }
      const change = offsetChangeBetween(window.zone, t, candidate);
      if (change !== undefined) candidate = Math.min(candidate, change);
    }
    // Windows are open intervals: the state at a boundary itself, and just after it.
    for (const at of [candidate, candidate + 1]) {
      if (at > instantMs && evaluateWindows(matched, at).allowed) return { ...now, opensAt: at };
    }
    t = candidate + 1;
  }
  return { ...now, opensAt: undefined };
}
