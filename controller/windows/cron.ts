/**
 * Cron schedules exactly as Argo CD reads a sync window's `schedule`:
 * github.com/robfig/cron/v3 with the parser
 * `cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)`
 * (five fields, no seconds, no `@daily` descriptors, no `L`/`W`/`#`), and
 * `Schedule.Next` evaluated on a UTC clock. Pure: numbers in, numbers out.
 * Why not a cron library: see controller/windows/README.md.
 */

/** A parsed schedule. Times are milliseconds on a naive wall clock (UTC arithmetic, no zone). */
export interface CronSchedule {
  /** The expression as written, for messages. */
  readonly text: string;
  /**
   * The first firing strictly after `afterMs`, as robfig's `Next`; `undefined`
   * where robfig returns the zero time (no firing within five years of `afterMs`).
   */
  next(afterMs: number): number | undefined;
}

/** The schedule cannot be parsed; `message` reads like robfig's error. */
export class CronSyntaxError extends Error {
  override readonly name = 'CronSyntaxError';
}

interface Bounds {
  readonly min: number;
  readonly max: number;
  readonly names?: Readonly<Record<string, number>>;
}

const MINUTES: Bounds = { min: 0, max: 59 };
const HOURS: Bounds = { min: 0, max: 23 };
const DOM: Bounds = { min: 1, max: 31 };
const MONTHS: Bounds = {
  min: 1,
  max: 12,
  names: { jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, oct: 10, nov: 11, dec: 12 },
};
const DOW: Bounds = { min: 0, max: 6, names: { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 } };

/** One field: which values match, and whether it was written as `*`/`?` (robfig's star bit). */
interface Field {
  readonly values: ReadonlySet<number>;
  readonly star: boolean;
}

/** Go's strconv.Atoi in base 10 (an optional sign, then digits), then robfig's "no negatives". */
function parseInt10(text: string, whole: string): number {
  if (!/^[+-]?[0-9]+$/.test(text)) throw new CronSyntaxError(`failed to parse int from ${text}: invalid syntax (in "${whole}")`);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new CronSyntaxError(`failed to parse int from ${text}: value out of range (in "${whole}")`);
  if (value < 0) throw new CronSyntaxError(`negative number (${value}) not allowed: ${text} (in "${whole}")`);
  return value;
}

function parseIntOrName(text: string, bounds: Bounds, whole: string): number {
  const named = bounds.names?.[text.toLowerCase()];
  return named ?? parseInt10(text, whole);
}

/** robfig's getRange: `*`, `?`, `n`, `n-m`, each optionally `/step`; a single `n/step` runs to the maximum. */
function parseRange(expr: string, bounds: Bounds, values: Set<number>, whole: string): boolean {
  const rangeAndStep = expr.split('/');
  const lowAndHigh = (rangeAndStep[0] as string).split('-');
  const single = lowAndHigh.length === 1;
  let start: number;
  let end: number;
  let star = false;
  const low = lowAndHigh[0] as string;
  if (low === '*' || low === '?') {
    // As robfig: a star ignores anything after a hyphen.
    start = bounds.min;
    end = bounds.max;
    star = true;
  } else {
    start = parseIntOrName(low, bounds, whole);
    if (lowAndHigh.length === 1) end = start;
    else if (lowAndHigh.length === 2) end = parseIntOrName(lowAndHigh[1] as string, bounds, whole);
    else throw new CronSyntaxError(`too many hyphens: ${expr} (in "${whole}")`);
  }
  let step = 1;
  if (rangeAndStep.length === 2) {
    step = parseInt10(rangeAndStep[1] as string, whole);
    if (single) end = bounds.max;
    if (step > 1) star = false;
  } else if (rangeAndStep.length > 2) {
    throw new CronSyntaxError(`too many slashes: ${expr} (in "${whole}")`);
  }
  if (start < bounds.min) throw new CronSyntaxError(`beginning of range (${start}) below minimum (${bounds.min}): ${expr} (in "${whole}")`);
  if (end > bounds.max) throw new CronSyntaxError(`end of range (${end}) above maximum (${bounds.max}): ${expr} (in "${whole}")`);
  if (start > end) throw new CronSyntaxError(`beginning of range (${start}) beyond end of range (${end}): ${expr} (in "${whole}")`);
  if (step === 0) throw new CronSyntaxError(`step of range should be a positive number: ${expr} (in "${whole}")`);
  for (let v = start; v <= end; v += step) values.add(v);
  return star;
}

/** robfig's getField: comma-separated ranges, empty pieces dropped (Go's strings.FieldsFunc). */
function parseField(text: string, bounds: Bounds, whole: string): Field {
  const values = new Set<number>();
  let star = false;
  for (const expr of text.split(',').filter((piece) => piece !== '')) {
    if (parseRange(expr, bounds, values, whole)) star = true;
  }
  return { values, star };
}

/**
 * Parses a five-field schedule (minute hour day-of-month month day-of-week)
 * as Argo CD does. Throws CronSyntaxError for anything robfig's parser
 * configured that way refuses, including descriptors (`@daily`) and the
 * `TZ=`/`CRON_TZ=` prefix (accepted by robfig, but then applied on top of the
 * window's own time zone; a sync window says its zone in `timeZone`).
 */
export function parseCron(text: string): CronSchedule {
  if (text.length === 0) throw new CronSyntaxError('empty spec string');
  if (text.startsWith('TZ=') || text.startsWith('CRON_TZ=')) {
    throw new CronSyntaxError(`a TZ= or CRON_TZ= prefix is not supported in a sync window schedule; use timeZone (in "${text}")`);
  }
  if (text.startsWith('@')) throw new CronSyntaxError(`parser does not accept descriptors: ${text}`);
  // Go's strings.Fields: split on Unicode white space.
  const fields = text.split(/\s+/u).filter((f) => f !== '');
  if (fields.length !== 5) throw new CronSyntaxError(`expected exactly 5 fields, found ${fields.length}: [${fields.join(' ')}]`);
  const [minute, hour, dom, month, dow] = fields as [string, string, string, string, string];
  const spec: Spec = {
    minute: parseField(minute, MINUTES, text),
    hour: parseField(hour, HOURS, text),
    dom: parseField(dom, DOM, text),
    month: parseField(month, MONTHS, text),
    dow: parseField(dow, DOW, text),
  };
  return Object.freeze({ text, next: (afterMs: number) => nextFiring(spec, afterMs) });
}

interface Spec {
  readonly minute: Field;
  readonly hour: Field;
  readonly dom: Field;
  readonly month: Field;
  readonly dow: Field;
}

/** robfig's dayMatches: with a star in either day field both must match, else either may (Vixie cron). */
function dayMatches(spec: Spec, date: Date): boolean {
  const domMatch = spec.dom.values.has(date.getUTCDate());
  const dowMatch = spec.dow.values.has(date.getUTCDay());
  if (spec.dom.star || spec.dow.star) return domMatch && dowMatch;
  return domMatch || dowMatch;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/**
 * The smallest time with second 0 and matching fields that is strictly
 * after `afterMs`, searched no later than the end of the year five years
 * after `afterMs` + 1 s: robfig's Next and its year limit (it then returns the
 * zero time, which Argo CD's `Before` treats as long past).
 */
function nextFiring(spec: Spec, afterMs: number): number | undefined {
  // The upcoming whole second, then (seconds are always 0) the upcoming whole minute.
  let t = Math.floor(afterMs / SECOND) * SECOND + SECOND;
  const yearLimit = new Date(t).getUTCFullYear() + 5;
  t = Math.ceil(t / MINUTE) * MINUTE;
  for (;;) {
    const d = new Date(t);
    if (d.getUTCFullYear() > yearLimit) return undefined;
    if (!spec.month.values.has(d.getUTCMonth() + 1)) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
      continue;
    }
    if (!dayMatches(spec, d)) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
      continue;
    }
    if (!spec.hour.values.has(d.getUTCHours())) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours() + 1);
      continue;
    }
    if (!spec.minute.values.has(d.getUTCMinutes())) {
      t += MINUTE;
      continue;
    }
    return t;
  }
}
