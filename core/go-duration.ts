/**
 * Go's `time.ParseDuration` syntax, because Argo CD's own timeouts
 * (`ARGOCD_EXEC_TIMEOUT`) are written in it and operators copy them over.
 */

const UNIT_MS: Readonly<Record<string, number>> = Object.freeze({
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3,
  'μs': 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
});

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

/**
 * Parses a Go duration such as `90s`, `2m`, `1m30s` or `1.5h` into milliseconds.
 * Returns `undefined` for anything Go would reject (and for a sign, which a
 * timeout has no use for). `0` alone is valid in Go and parses to 0.
 */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (text === '') return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const match = PART.exec(text);
    if (match === null) return undefined;
    const [, number, unit] = match;
    total += Number(number) * (UNIT_MS[unit as string] as number);
  }
  return Number.isFinite(total) ? total : undefined;
}
