/**
 * Redaction of Secret values from a renderer's stderr tail. A renderer can echo
 * any value it was handed (`{{ fail .Values.pw }}`, kustomize's "invalid
 * literal source <literal>"), and the tail goes into error messages that reach
 * Argo CD's UI; the contract is that a Secret's value never appears there.
 */

/** What a redacted value becomes. */
export const REDACTED = '[redacted]';

/**
 * Shorter values are not redacted. Replacing every `1`, `on` or `dev` would
 * mangle line numbers and words all over the message while protecting nothing:
 * a value of three characters or fewer is guessed in a few million tries, so it
 * is no secret worth the name.
 */
export const MIN_REDACT_LENGTH = 4;

const REDACTED_BYTES = Buffer.from(REDACTED, 'utf8');

/**
 * The byte strings to look for: each value as it is, its base64 (without
 * padding, so both padded and unpadded output match) and its JSON/Go-quoted
 * escaping when that differs (a value with `"`, `\` or a newline printed by
 * `%q` or in a JSON error). Deduplicated, in a stable order.
 */
export function redactionForms(values: readonly string[]): Buffer[] {
  const forms = new Set<string>();
  for (const value of values) {
    // Code points on purpose: the guessing argument counts characters, not bytes or grapheme clusters.
    // oxlint-disable-next-line typescript/no-misused-spread
    if ([...value].length < MIN_REDACT_LENGTH) continue;
    forms.add(value);
    forms.add(Buffer.from(value, 'utf8').toString('base64').replace(/=+$/, ''));
    forms.add(JSON.stringify(value).slice(1, -1));
  }
  return [...forms].filter((form) => form.length >= MIN_REDACT_LENGTH).map((form) => Buffer.from(form, 'utf8'));
}

/** The end of a stream as it is read: `truncated` once earlier bytes were dropped. */
export interface RollingTail {
  readonly bytes: Buffer;
  readonly truncated: boolean;
}

/**
 * How many bytes a rolling tail keeps for a final tail of `tailBytes`: that
 * plus the longest form, so that a value cut by a trim can only be left, in
 * part, in bytes before the final tail (which redactTail never shows).
 */
export function rollingKeepBytes(forms: readonly Buffer[], tailBytes: number): number {
  return tailBytes + forms.reduce((longest, form) => Math.max(longest, form.length), 0);
}

/** Appends a chunk; past twice `keep` bytes, only the last `keep` are kept (amortised copying). */
export function appendToTail(tail: RollingTail, chunk: Buffer, keep: number): RollingTail {
  const bytes = Buffer.concat([tail.bytes, chunk]);
  return bytes.length > keep * 2 ? { bytes: bytes.subarray(-keep), truncated: true } : { bytes, truncated: tail.truncated };
}

/**
 * The last `tailBytes` of `bytes` with every form replaced by `[redacted]`.
 * Occurrences are found in all of `bytes` before the tail is cut, and the cut
 * never splits one: a value straddling it is dropped whole, so no fragment of
 * it shows. `truncated` says `bytes` is itself the end of a longer stream, kept
 * as appendToTail does with rollingKeepBytes.
 * `cut` says the text does not start at the stream's beginning.
 */
export function redactTail(bytes: Buffer, truncated: boolean, forms: readonly Buffer[], tailBytes: number): { text: string; cut: boolean } {
  const ranges = occurrences(bytes, forms);
  const cut = truncated || bytes.length > tailBytes;
  let start = cut ? Math.max(0, bytes.length - tailBytes) : 0;
  // Ranges are merged, so at most one contains `start`.
  for (const [from, to] of ranges) if (from < start && to > start) start = to;
  const parts: Buffer[] = [];
  let position = start;
  for (const [from, to] of ranges) {
    if (to <= start) continue;
    parts.push(bytes.subarray(position, from), REDACTED_BYTES);
    position = to;
  }
  parts.push(bytes.subarray(position));
  return { text: Buffer.concat(parts).toString('utf8'), cut };
}

/** Every occurrence of every form (overlapping ones too), merged into sorted, disjoint [from, to) ranges. */
function occurrences(bytes: Buffer, forms: readonly Buffer[]): [number, number][] {
  const found: [number, number][] = [];
  for (const form of forms) {
    for (let at = bytes.indexOf(form); at !== -1; at = bytes.indexOf(form, at + 1)) found.push([at, at + form.length]);
  }
  found.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: [number, number][] = [];
  for (const [from, to] of found) {
    const last = merged.at(-1);
    if (last !== undefined && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}
