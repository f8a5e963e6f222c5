/**
 * Line diff and normalisation helpers shared by the plugin tests: what a
 * stamped document may differ by, checked independently of the stamper.
 */
import { parseAllDocuments } from 'yaml';
import { HASH_ANNOTATION } from '../../core/index.ts';

/** Lines only in `a` (removed) and only in `b` (added), by longest common subsequence. */
export function lineDiff(a: string, b: string): { removed: string[]; added: string[] } {
  const x = a.split('\n');
  const y = b.split('\n');
  const n = x.length;
  const m = y.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    const row = lcs[i] as Uint32Array;
    const below = lcs[i + 1] as Uint32Array;
    for (let j = m - 1; j >= 0; j--) {
      row[j] = x[i] === y[j] ? (below[j + 1] as number) + 1 : Math.max(below[j] as number, row[j + 1] as number);
    }
  }
  const removed: string[] = [];
  const added: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) {
      i++;
      j++;
    } else if (((lcs[i + 1] as Uint32Array)[j] as number) >= ((lcs[i] as Uint32Array)[j + 1] as number)) {
      removed.push(x[i++] as string);
    } else {
      added.push(y[j++] as string);
    }
  }
  while (i < n) removed.push(x[i++] as string);
  while (j < m) added.push(y[j++] as string);
  return { removed, added };
}

/** A line the stamper may add: a created `metadata:`/`annotations:` key, or a line holding the annotation (block or flow). */
export const ALLOWED_ADDED = /^(\s*metadata:|\s*annotations:|.*driftless\.dev\/config-hash: "v1:[0-9a-f]{64}".*|.*"driftless\.dev\/config-hash": "v1:[0-9a-f]{64}".*)$/;

/** A line the stamper may replace: a null or empty `annotations`, a flow line it extends, an old hash value. */
export const ALLOWED_REMOVED = /^(\s*annotations:\s*(null|~)?\s*|.*annotations: \{\}.*|.*"annotations": \{\}.*|.*driftless\.dev\/config-hash.*)$/;

/** Parses a stream the way Argo CD's Go parser reads it (YAML 1.1), dropping empty documents. */
export function parseYaml11(text: string): unknown[] {
  return parseAllDocuments(text, {
    version: '1.1',
    customTags: (tags) => tags.filter((t) => (t as { tag?: string }).tag !== 'tag:yaml.org,2002:timestamp' && (t as { format?: string }).format !== 'TIME'),
  })
    .map((doc) => {
      const [error] = doc.errors;
      if (error !== undefined) throw error;
      return doc.toJS() as unknown;
    })
    .filter((value) => value !== null && value !== undefined);
}

/** Removes the hash annotation everywhere, then empty or null `annotations`, then `metadata` left empty. */
export function withoutHash(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutHash);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === HASH_ANNOTATION) continue;
    out[key] = withoutHash(inner);
  }
  const annotations = out['annotations'];
  if (annotations === null || (typeof annotations === 'object' && Object.keys(annotations).length === 0)) {
    delete out['annotations'];
  }
  return out;
}

/** `withoutHash`, then drops `metadata: {}` of pod templates that only held created annotations. */
export function normalise(value: unknown): unknown {
  const stripped = withoutHash(value);
  const prune = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(prune);
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(v)) {
      const pruned = prune(inner);
      if (key === 'metadata' && pruned !== null && typeof pruned === 'object' && Object.keys(pruned).length === 0) continue;
      out[key] = pruned;
    }
    return out;
  };
  return prune(stripped);
}

/**
 * Asserts `after` differs from `before` only by the annotation: every added
 * line holds the annotation or a created `metadata:`/`annotations:` key, and
 * every removed line is a null/empty annotations line, an old hash value, or
 * reappears in an added line with only the annotation inserted.
 */
export function annotationOnlyProblems(before: string, after: string): string[] {
  const { removed, added } = lineDiff(before, after);
  const problems: string[] = [];
  for (const line of added) if (!ALLOWED_ADDED.test(line)) problems.push(`added: ${line}`);
  for (const line of removed) {
    if (ALLOWED_REMOVED.test(line) || /v1:/.test(line)) continue;
    if (!added.some((candidate) => isInsertion(line, candidate))) problems.push(`removed: ${line}`);
  }
  return problems;
}

/** `to` is `from` with one span inserted (or a null-ish span replaced) that holds the annotation. */
function isInsertion(from: string, to: string): boolean {
  let prefix = 0;
  while (prefix < from.length && prefix < to.length && from[prefix] === to[prefix]) prefix++;
  let suffix = 0;
  while (suffix < from.length - prefix && suffix < to.length - prefix && from[from.length - 1 - suffix] === to[to.length - 1 - suffix]) suffix++;
  const oldMiddle = from.slice(prefix, from.length - suffix);
  const newMiddle = to.slice(prefix, to.length - suffix);
  return newMiddle.includes(HASH_ANNOTATION) && /^(|null|~|\{\}|.*v1:.*)$/.test(oldMiddle.trim().replace(/^\{|\}$/g, ''));
}
