/**
 * A sync window's `timeZone` as Argo CD applies it: Go's time.LoadLocation,
 * with an empty or unknown name falling back to UTC, and only the zone's UTC
 * offset at the evaluated instant used (Argo CD shifts the clock by the
 * offset instead of evaluating the cron schedule in the zone). Offsets come
 * from the ICU time zone data Node ships (Go uses the system's or its own
 * embedded tzdata: both are IANA's, their versions may differ by a release).
 */

/** A zone ready for repeated offset look-ups. */
export interface WindowZone {
  /** The name as written; `''` for none. */
  readonly name: string;
  /** Whether the name was unknown and UTC used instead (Argo CD logs a warning and does the same). */
  readonly fellBackToUtc: boolean;
  /** The zone's offset from UTC at the instant, in milliseconds (whole seconds). */
  offsetAt(instantMs: number): number;
}

const UTC_ZONE: Omit<WindowZone, 'name' | 'fellBackToUtc'> = Object.freeze({ offsetAt: () => 0 });

/**
 * Loads a zone by IANA name. `''`, `UTC` and `Local` (a controller runs in a
 * container whose local zone is UTC; Go's `Local` would be the process's) are
 * UTC. Names Go's case-sensitive tzdata lookup would refuse — unknown ones,
 * and a known name in the wrong case, which ICU alone would accept — fall
 * back to UTC with `fellBackToUtc`.
 */
export function loadWindowZone(name: string): WindowZone {
  if (name === '' || name === 'UTC' || name === 'Local') return Object.freeze({ name, fellBackToUtc: false, ...UTC_ZONE });
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: name,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
  } catch {
    return Object.freeze({ name, fellBackToUtc: true, ...UTC_ZONE });
  }
  const resolved = format.resolvedOptions().timeZone;
  if (resolved !== name && resolved.toLowerCase() === name.toLowerCase()) return Object.freeze({ name, fellBackToUtc: true, ...UTC_ZONE });
  return Object.freeze({ name, fellBackToUtc: false, offsetAt: (instantMs: number) => offsetOf(format, instantMs) });
}

/** The zone's wall clock at the instant, read back as if it were UTC, minus the instant (seconds precision). */
function offsetOf(format: Intl.DateTimeFormat, instantMs: number): number {
  const whole = Math.floor(instantMs / 1000) * 1000;
  const parts: Record<string, string> = {};
  for (const part of format.formatToParts(whole)) parts[part.type] = part.value;
  let year = Number(parts['year']);
  if (parts['era'] === 'BC' || parts['era'] === 'B') year = 1 - year;
  const wall = Date.UTC(year, Number(parts['month']) - 1, Number(parts['day']), Number(parts['hour']), Number(parts['minute']), Number(parts['second']));
  return wall - whole;
}

/**
 * The first instant in (fromMs, toMs] at which the zone's offset differs
 * from its offset at `fromMs`, to the millisecond; `undefined` when the
 * offset is the same at both ends. Callers keep the span at most a day, in
 * which no zone changes its offset twice.
 */
export function offsetChangeBetween(zone: WindowZone, fromMs: number, toMs: number): number | undefined {
  const before = zone.offsetAt(fromMs);
  if (zone.offsetAt(toMs) === before) return undefined;
  let low = fromMs;
  let high = toMs;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (zone.offsetAt(middle) === before) low = middle;
    else high = middle;
  }
  return high;
}
