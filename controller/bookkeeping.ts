/**
 * What the controller records on a workload's own metadata — never its spec
 * or template — so that every decision is level-triggered from the API server
 * and survives restarts and leader changes (ADR 0007):
 *
 * - `driftless.dev/restarted-for`: per out-of-band config, the keyed digest of
 *   the content the workload's pods are (or are being made) current with, as
 *   canonical JSON `{"Secret/db":"v1:…"}`. Per config, not one combined hash,
 *   so that a config joining or leaving the set is told apart from a content
 *   change, and Events can name what changed.
 * - `driftless.dev/restart-at`: T of the last restart started, RFC 3339 in
 *   whole seconds. A restart at T replaces the pods created before T.
 *
 * Both are written by server-side apply as field manager `driftless`, so
 * Argo CD, which never rendered these keys, sees no drift. The keys are named
 * in core/annotations.ts (`BOOKKEEPING`), with every other annotation key.
 */
import { canonicalJson } from '../core/index.ts';

/** The digest recorded for a selected config that does not exist (yet). */
export const ABSENT = 'absent';

/** `Kind/name` → digest. */
export type DigestMap = Readonly<Record<string, string>>;

/** The key of a config in a DigestMap. */
export function configKey(kind: string, name: string): string {
  return `${kind}/${name}`;
}

/** Parses `restarted-for`; `undefined` when absent or not a JSON object of strings (then it is rewritten). */
export function parseDigestMap(text: string | undefined): DigestMap | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    const entries = Object.entries(value as Record<string, unknown>);
    if (!entries.every(([, digest]) => typeof digest === 'string')) return undefined;
    return Object.freeze(Object.fromEntries(entries) as Record<string, string>);
  } catch {
    return undefined;
  }
}

/** The annotation value of a DigestMap: canonical JSON, so equal maps give equal bytes (compare before write). */
export function formatDigestMap(map: DigestMap): string {
  return canonicalJson(map);
}

/** Epoch ms of `restart-at`, or `undefined` when absent or unparsable. */
export function parseRestartAt(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

/** RFC 3339 in whole seconds, as `metav1.Time` (and Argo Rollouts' restartAt) are written. */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The restart time for content first seen at `seenAt`: rounded *up* to the
 * next whole second, because pod creation times have whole-second precision —
 * a pod created in the same second as the change may have read the old
 * content, so it must count as created before T.
 */
export function restartTimeFor(seenAt: number): number {
  return Math.ceil(seenAt / 1000) * 1000;
}

/**
 * The restart time for content the API server wrote at `writtenAt` (a managedFields time: whole seconds,
 * truncated, so the write happened within the second after it): the next whole second, so a pod created in
 * the same second as the write (its creationTimestamp truncated the same way) counts as created before T.
 */
export function restartTimeForWrite(writtenAt: number): number {
  return Math.floor(writtenAt / 1000) * 1000 + 1000;
}
