import { createRequire } from 'node:module';
import type { Node, Pair } from 'yaml';

let yamlModule: typeof import('yaml') | undefined;

/**
 * The `yaml` package, loaded on the first out-of-band file read: the controller's idle process and
 * most renders never read one, and yaml is ~70 modules (ADR 0021). `require` keeps the read synchronous.
 */
function yaml(): typeof import('yaml') {
  yamlModule ??= createRequire(import.meta.url)('yaml') as typeof import('yaml');
  return yamlModule;
}

/**
 * The out-of-band file (`.driftless/out-of-band` at the app's source path;
 * ADR 0013, docs/hash-v1.md §7): per config changed outside Git, the keyed
 * digest the controller committed. The plugin folds a listed digest into the
 * hash of every workload that uses the config while the config itself is not
 * in the render, so a commit of this file rolls the workload through the
 * ordinary sync. Pure: text in, data or a located error out.
 */

/** Where the file lives, relative to the app's source path. Not a manifest name (no `.yaml`): see ADR 0013. */
export const OUT_OF_BAND_FILE = '.driftless/out-of-band';

/** The only format version. A different one is an error: an old plugin must not half-read a newer file. */
export const OUT_OF_BAND_VERSION = 1;

/** The kinds the file may list: the objects whose data can change outside Git. */
export const OUT_OF_BAND_KINDS = Object.freeze(['ConfigMap', 'Secret'] as const);
export type OutOfBandKind = (typeof OUT_OF_BAND_KINDS)[number];

/** A digest as the controller writes it: hash v1 of the config's single entry, keyed. */
const DIGEST = /^v1:[0-9a-f]{64}$/;
/** RFC 1123 label: a namespace. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** RFC 1123 subdomain: a ConfigMap or Secret name. */
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const FIELDS = Object.freeze(['kind', 'namespace', 'name', 'digest'] as const);

/** One listed config. */
export interface OutOfBandEntry {
  readonly kind: OutOfBandKind;
  readonly namespace: string;
  readonly name: string;
  /** `v1:` and 64 lowercase hex digits; opaque to the plugin. */
  readonly digest: string;
  /** Where it was read: the file's label and the 1-based line of the entry. */
  readonly origin: { readonly file: string; readonly line: number };
}

/** The parsed file: entries by (namespace, kind, name). */
export interface OutOfBandIndex {
  readonly file: string;
  readonly entries: readonly OutOfBandEntry[];
  readonly byKey: ReadonlyMap<string, OutOfBandEntry>;
}

/** The file is not valid. `line` is 1-based; the message never quotes a value. */
export class OutOfBandFileError extends Error {
  override readonly name = 'OutOfBandFileError';
  readonly file: string;
  readonly line: number;
  readonly problem: string;

  constructor(file: string, line: number, problem: string, options?: ErrorOptions) {
    super(`${file}:${line}: ${problem}`, options);
    this.file = file;
    this.line = line;
    this.problem = problem;
  }
}

/** The lookup key of a config. NUL cannot occur in any of the parts. */
export function outOfBandKey(namespace: string, kind: string, name: string): string {
  return `${namespace}\u0000${kind}\u0000${name}`;
}

/**
 * The folding decision: the entry whose digest goes into a workload's hash
 * for one config it selects, or `undefined`. Only a ConfigMap or Secret that
 * is not itself in the render and is listed for the workload's namespace is
 * folded: a config in the render is hashed from Git, so its Git content
 * wins, and a listed digest never doubles it. A Secret provided by a source
 * in the render (an ExternalSecret) is not itself in the render: its source's
 * spec and the listed digest are both hashed.
 */
export function listedOutOfBand(
  index: OutOfBandIndex | undefined,
  namespace: string,
  kind: string,
  name: string,
  inRender: boolean,
): OutOfBandEntry | undefined {
  if (index === undefined || inRender) return undefined;
  return index.byKey.get(outOfBandKey(namespace, kind, name));
}

/**
 * Parses and validates the file, strictly, as Go's YAML 1.1 reader would see
 * it: one document, a mapping with exactly `version: 1` and `configs` (a
 * list), each item a mapping with exactly the string fields `kind`
 * (ConfigMap or Secret), `namespace`, `name` and `digest`, no duplicate
 * (kind, namespace, name). No anchors, aliases, tags or merge keys: the file
 * is written by a program and edited by people, and both stay simple.
 * Throws OutOfBandFileError naming the line and the field.
 */
export function parseOutOfBandFile(text: string, file: string): OutOfBandIndex {
  const lines = new (yaml().LineCounter)();
  const document = yaml().parseDocument(text, { version: '1.1', uniqueKeys: true, strict: true, prettyErrors: false, merge: false, lineCounter: lines });
  const lineAt = (offset: number | undefined): number => (offset === undefined ? 1 : lines.linePos(offset).line);
  const lineOf = (node: Node | null | undefined): number => lineAt(node?.range?.[0]);
  const problem = document.errors[0] ?? document.warnings[0];
  if (problem !== undefined) {
    throw new OutOfBandFileError(file, lineAt(problem.pos[0]), `not valid YAML: ${firstLine(problem.message)}`, { cause: problem });
  }
  const root = document.contents;
  if (root === null) throw new OutOfBandFileError(file, 1, `is empty; it must hold version: ${OUT_OF_BAND_VERSION} and configs`);
  rejectDecorations(root, file, lineOf);
  if (!yaml().isMap(root)) throw new OutOfBandFileError(file, lineOf(root), 'must be a mapping with version and configs');
  const top = fieldsOf(root.items, ['version', 'configs'], '', file, lineOf);
  const version = top.get('version');
  if (version === undefined) throw new OutOfBandFileError(file, lineOf(root), 'version is missing');
  if (!yaml().isScalar(version) || version.value !== OUT_OF_BAND_VERSION) {
    throw new OutOfBandFileError(file, lineOf(version), `version must be ${OUT_OF_BAND_VERSION} (the only format this plugin reads)`);
  }
  const configs = top.get('configs');
  if (configs === undefined) throw new OutOfBandFileError(file, lineOf(root), 'configs is missing');
  if (!yaml().isSeq(configs)) throw new OutOfBandFileError(file, lineOf(configs), 'configs must be a list');

  const entries: OutOfBandEntry[] = [];
  const byKey = new Map<string, OutOfBandEntry>();
  configs.items.forEach((item, i) => {
    const at = `configs[${i}]`;
    const node = item as Node;
    if (!yaml().isMap(node)) throw new OutOfBandFileError(file, lineOf(node), `${at} must be a mapping with ${FIELDS.join(', ')}`);
    const fields = fieldsOf(node.items, FIELDS, `${at}.`, file, lineOf);
    const text: Partial<Record<(typeof FIELDS)[number], string>> = {};
    for (const name of FIELDS) {
      const value = fields.get(name);
      if (value === undefined) throw new OutOfBandFileError(file, lineOf(node), `${at}.${name} is missing`);
      if (!yaml().isScalar(value) || typeof value.value !== 'string') {
        throw new OutOfBandFileError(file, lineOf(value), `${at}.${name} must be a string${yaml().isScalar(value) ? ' (quote it: YAML 1.1 reads it as another type)' : ''}`);
      }
      text[name] = value.value;
    }
    const { kind, namespace, name, digest } = text as Record<(typeof FIELDS)[number], string>;
    const kindOf = OUT_OF_BAND_KINDS.find((k) => k === kind);
    if (kindOf === undefined) throw new OutOfBandFileError(file, lineOf(fields.get('kind')), `${at}.kind must be one of ${OUT_OF_BAND_KINDS.join(', ')}`);
    if (namespace.length > 63 || !NAMESPACE.test(namespace)) {
      throw new OutOfBandFileError(file, lineOf(fields.get('namespace')), `${at}.namespace must be a namespace name (RFC 1123 label)`);
    }
    if (name.length > 253 || !NAME.test(name)) {
      throw new OutOfBandFileError(file, lineOf(fields.get('name')), `${at}.name must be a ${kindOf} name (RFC 1123 subdomain)`);
    }
    // The digest is derived from a Secret's data: the message says what is wrong, never what is there.
    if (!DIGEST.test(digest)) throw new OutOfBandFileError(file, lineOf(fields.get('digest')), `${at}.digest must be "v1:" followed by 64 lowercase hex digits`);
    const key = outOfBandKey(namespace, kindOf, name);
    const line = lineOf(node);
    const earlier = byKey.get(key);
    if (earlier !== undefined) {
      throw new OutOfBandFileError(file, line, `${at} lists ${kindOf} ${namespace}/${name} again (first at line ${earlier.origin.line})`);
    }
    const entry: OutOfBandEntry = Object.freeze({ kind: kindOf, namespace, name, digest, origin: Object.freeze({ file, line }) });
    entries.push(entry);
    byKey.set(key, entry);
  });
  return Object.freeze({ file, entries: Object.freeze(entries), byKey });
}

/** The fields of a mapping by name; an unknown or non-string key is an error naming its line. */
function fieldsOf(
  pairs: readonly Pair[],
  allowed: readonly string[],
  prefix: string,
  file: string,
  lineOf: (node: Node | null | undefined) => number,
): Map<string, Node> {
  const fields = new Map<string, Node>();
  for (const pair of pairs) {
    const key = pair.key as Node | null;
    const name = yaml().isScalar(key) ? key.value : undefined;
    if (typeof name !== 'string' || !allowed.includes(name)) {
      const shown = typeof name === 'string' && /^[A-Za-z][A-Za-z0-9]{0,40}$/.test(name) ? ` ${name}` : '';
      throw new OutOfBandFileError(file, lineOf(key), `${prefix}unknown field${shown}; the fields are ${allowed.join(', ')}`);
    }
    fields.set(name, (pair.value ?? key) as Node);
  }
  return fields;
}

/** Anchors, aliases and explicit tags anywhere: refused, so Go and this reader cannot disagree on them. */
function rejectDecorations(node: Node, file: string, lineOf: (node: Node | null | undefined) => number): void {
  const visit = (n: unknown): void => {
    if (n === null || typeof n !== 'object') return;
    const item = n as Node;
    if (yaml().isAlias(item)) throw new OutOfBandFileError(file, lineOf(item), 'aliases are not allowed here');
    if (typeof item.anchor === 'string') throw new OutOfBandFileError(file, lineOf(item), 'anchors are not allowed here');
    // yaml sets `tag` on a node only for an explicit tag in the source (`!!str 2`).
    if (typeof item.tag === 'string') throw new OutOfBandFileError(file, lineOf(item), 'explicit tags are not allowed here');
    if (yaml().isMap(item)) {
      for (const pair of item.items) {
        visit(pair.key);
        visit(pair.value);
      }
    }
    if (yaml().isSeq(item)) for (const child of item.items) visit(child);
  };
  visit(node);
}

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}

/**
 * The file's text for a set of entries, as the controller writes it: a
 * header comment, `version: 1`, then the entries sorted by namespace, kind
 * and name, one field per line in a fixed order, namespace and name
 * double-quoted (so YAML 1.1 can never read a name such as `on` or `123` as
 * another type). The same entries always give the same bytes.
 */
export function formatOutOfBandFile(entries: readonly Omit<OutOfBandEntry, 'origin'>[]): string {
  const sorted = [...entries].sort((a, b) => compare(a.namespace, b.namespace) || compare(a.kind, b.kind) || compare(a.name, b.name));
  const lines = [
    '# Digests of configs changed outside Git, written by the driftless controller.',
    '# A workload that uses a listed config which is not in its render gets the digest',
    '# folded into its driftless.dev/config-hash: committing this file rolls it through',
    '# the ordinary sync. Format: docs/hash-v1.md §7. Reverting an entry is safe.',
    `version: ${OUT_OF_BAND_VERSION}`,
  ];
  if (sorted.length === 0) lines.push('configs: []');
  else lines.push('configs:');
  for (const e of sorted) {
    lines.push(`- kind: ${e.kind}`, `  namespace: ${JSON.stringify(e.namespace)}`, `  name: ${JSON.stringify(e.name)}`, `  digest: ${e.digest}`);
  }
  return `${lines.join('\n')}\n`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
