import { isDeepStrictEqual } from 'node:util';
import { HASH_ANNOTATION } from '../core/index.ts';
import { parseStream } from './yaml/documents.ts';
import { readFastDocument } from './yaml/fast-yaml.ts';
import type { ParsedDocument, TreeNode } from './yaml/documents.ts';
import { InvalidInputError } from './errors.ts';
import { parsedLocation } from './yaml/locate.ts';
import type { FastMap, FastPair } from './yaml/fast-yaml.ts';

/**
 * Writes the hash annotation into a document by splicing text, so that the
 * rest of the document keeps its exact bytes (comments, quoting, `yes`/`on`,
 * big integers, anchors). Every edited document is checked to mean the input
 * plus the annotation before it is used (by the fast reader's line rules for
 * the usual insertion, else by parsing it again and comparing values): if a
 * layout ever defeats the splicing, the command fails instead of emitting a
 * manifest that means something else.
 */

/** One annotation to write: where the pod template is (from the document root) and the value. */
export interface Stamp {
  /** Path from the document root to the pod template mapping; numbers index `items` of a List. */
  readonly templatePath: readonly (string | number)[];
  /** `v1:<64 hex>`. */
  readonly hash: string;
}

/** A text change in source coordinates (the document's node ranges). */
interface Edit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
  /**
   * Only for whole lines inserted before the first key of a block mapping, at its column: the keys
   * nested down to the hash (`['annotations', HASH_ANNOTATION]`), and the lines without their indentation.
   */
  readonly inserted?: { readonly keys: readonly string[]; readonly hash: string; readonly lines: readonly string[] };
}

/** The annotation stays below the template: `metadata.annotations[HASH_ANNOTATION]`. */
const ANNOTATION_PATH = ['metadata', 'annotations', HASH_ANNOTATION] as const;

/**
 * Thrown inside the splicer when the text to edit is not the template's own: the template (or a mapping
 * in it on the way to the annotation) is reached through an alias (`*name`) or merged in (`<<`). Go
 * expands those, so the text belongs to every use: `stampDocument` then writes the document out expanded.
 */
class SharedText extends Error {}

/** Raised when a stamped document would not mean exactly "the input plus the annotation". A bug, exit 1. */
export class StampVerificationError extends Error {
  override readonly name = 'StampVerificationError';
}

/** Returns the document's text with every stamp applied; the input text when `stamps` is empty. */
export function stampDocument(document: ParsedDocument, stamps: readonly Stamp[]): string {
  if (stamps.length === 0) return document.text;
  if (mayShare(document) && sharesStampedMapping(document.value, stamps)) return stampExpanded(document, stamps);
  let edits: Edit[];
  try {
    edits = insertionsByValue(document, stamps) ?? editsByTree(document, stamps);
  } catch (error) {
    if (error instanceof SharedText) return stampExpanded(document, stamps);
    throw error;
  }
  // Apply from the end so earlier offsets stay valid; ranges of different stamps never overlap.
  edits.sort((a, b) => b.start - a.start);
  let text = document.text;
  for (const edit of edits) {
    const start = edit.start - document.rangeBase;
    const end = edit.end - document.rangeBase;
    text = text.slice(0, start) + edit.text + text.slice(end);
  }
  if (!insertedByLineRules(document, edits, stamps)) verify(document, stamps, text);
  return text;
}

/**
 * Whether the document may hold aliases or merge keys: only yaml reads them (the fast reader gives up on
 * `&`, `*` and `<<`), and they need a `*` or `<<` in the text. A cheap filter before `sharesStampedMapping`.
 */
function mayShare(document: ParsedDocument): boolean {
  return document.fastRead !== true && (document.text.includes('*') || document.text.includes('<<'));
}

/**
 * Whether a mapping the stamp would edit (a template, its `metadata`, its `annotations`) or one around
 * it is used more than once in the document: an anchored mapping (`template: &tpl`) that an alias uses
 * elsewhere. yaml gives every use of an anchor the same object, as Go gives them the same content, so
 * a mapping reached by two ways is one that an edit of its text would change in both places.
 */
function sharesStampedMapping(value: unknown, stamps: readonly Stamp[]): boolean {
  const uses = new Map<object, number>();
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    const count = (uses.get(node) ?? 0) + 1;
    uses.set(node, count);
    if (count === 1) for (const child of Object.values(node)) stack.push(child);
  }
  const shared = (node: unknown): boolean => typeof node === 'object' && node !== null && (uses.get(node) ?? 0) > 1;
  return stamps.some((stamp) => {
    let node: unknown = value;
    for (const step of [...stamp.templatePath, ...ANNOTATION_PATH.slice(0, -1)]) {
      if (shared(node)) return true;
      node = (node as Record<string | number, unknown> | null | undefined)?.[step];
    }
    return shared(node);
  });
}

/**
 * The stamp for a template whose text is shared (an anchor used elsewhere, an alias, a merge key): the
 * document is written out as Go reads it, every alias and merge expanded, as JSON (which Go's YAML
 * reader reads as the same values; Argo CD turns every document into JSON anyway), with the annotation
 * in each stamped template only. So no other use changes, and each workload has its own hash even when
 * two share one template. Comments and the layout of this document are lost; the text before its
 * content (its `---`, leading comments) and its line endings are kept. Checked like every stamp.
 */
function stampExpanded(document: ParsedDocument, stamps: readonly Stamp[]): string {
  // Through JSON: every use of a shared mapping becomes its own copy, as in Go's reading.
  const copy = JSON.parse(JSON.stringify(document.value)) as unknown;
  for (const stamp of stamps) {
    const template = getIn(copy, stamp.templatePath);
    const field = stamp.templatePath.map(String);
    if (!isObject(template)) throw new InvalidInputError(parsedLocation(document), `${field.join('.')}: the pod template must be a mapping`);
    let map = template;
    for (const key of ANNOTATION_PATH.slice(0, -1)) {
      field.push(key);
      const child = map[key];
      if (child === undefined || child === null) map[key] = {};
      else if (!isObject(child)) throw new InvalidInputError(parsedLocation(document), `${field.join('.')}: must be a mapping`);
      map = map[key] as Record<string, unknown>;
    }
    map[HASH_ANNOTATION] = stamp.hash;
  }
  const eol = document.text.includes('\r\n') ? '\r\n' : '\n';
  const contentStart = Math.max(0, document.root.range[0] - document.rangeBase);
  const text = `${document.text.slice(0, contentStart)}${JSON.stringify(copy, null, 2).replaceAll('\n', eol)}${eol}`;
  verify(document, stamps, text);
  return text;
}

function editsByTree(document: ParsedDocument, stamps: readonly Stamp[]): Edit[] {
  const source = new Source(document);
  return stamps.map((stamp) => source.ensure(source.navigate(stamp.templatePath), [...ANNOTATION_PATH], stamp.hash, stamp.templatePath.map(String)));
}

/**
 * The usual stamp without the document's tree (reading a workload again for it was most of what
 * stamping cost): the pod template's mappings are found through the value (the last of repeated
 * keys, as `navigate` and `ensure` take them) and placed through the fast reader's `blockMaps`, and
 * the edit is the one `ensure` makes there: `#insertPair` into the deepest existing block mapping
 * of template, metadata, annotations, before its first key, at its column. Undefined wherever
 * `ensure` could do anything else (a null, flow or missing-from-blockMaps mapping on the way, an
 * existing hash, a first key sharing its line with `- `): the tree decides those. The fast reader
 * reads no merge keys (so none can hide a key here) and no CR (so lines end in `\n`).
 */
function insertionsByValue(document: ParsedDocument, stamps: readonly Stamp[]): Edit[] | undefined {
  const blockMaps = document.blockMaps;
  if (blockMaps === undefined) return undefined;
  const text = document.text;
  const base = document.rangeBase;
  const edits: Edit[] = [];
  for (const stamp of stamps) {
    const template = getIn(document.value, stamp.templatePath);
    if (!isObject(template) || !blockMaps.has(template)) return undefined;
    let map: Record<string, unknown> = template;
    let depth = 0;
    for (; depth < ANNOTATION_PATH.length; depth++) {
      const key = ANNOTATION_PATH[depth] as string;
      if (!Object.hasOwn(map, key)) break;
      const child = map[key];
      if (depth === ANNOTATION_PATH.length - 1 || !isObject(child) || !blockMaps.has(child)) return undefined;
      map = child;
    }
    const keyStart = blockMaps.get(map) as number;
    const lineStart = text.lastIndexOf('\n', keyStart - base - 1) + 1 + base;
    for (let i = lineStart; i < keyStart; i++) if (text.charCodeAt(i - base) !== 32) return undefined;
    const keys = ANNOTATION_PATH.slice(depth);
    const lines = blockLines(keys, stamp.hash);
    const prefix = ' '.repeat(keyStart - lineStart);
    edits.push({ start: lineStart, end: lineStart, text: lines.map((line) => `${prefix}${line}\n`).join(''), inserted: { keys, hash: stamp.hash, lines } });
  }
  return edits;
}

/**
 * The check of the common edit without reading the document again (which was most of a stamped
 * workload's cost): whole lines inserted before the first key of a block mapping, at that key's
 * column, in a document the fast reader read. That reader is line-based and reads forward: the line
 * before the insertion point is the parent key (or `-`) with an empty value, or a blank or comment
 * line, none of which looks ahead past the next content line; an inserted `key:` line at the
 * mapping's column, with its deeper lines, is one more pair of that mapping; and reading continues at
 * the old first key in the same state (same line, depth and column) as before, so every other value
 * is read as it was. The new pair is the only one with its key (ensure inserts only a missing key),
 * so it is the one Go keeps; and the navigation took the last of repeated keys, as the value does,
 * so the mapping is the one at the template's path. What is left to check is the inserted lines
 * themselves: read alone (dedented) by the same reader, they must be exactly the keys and the hash.
 * Any other edit (flow mappings, a filled-in null, a replaced value, a `- key:` line), two edits at
 * one place, or a document yaml read: the stamped document is read again in full (`verify`).
 */
function insertedByLineRules(document: ParsedDocument, edits: readonly Edit[], stamps: readonly Stamp[]): boolean {
  if (document.fastRead !== true || edits.length !== stamps.length) return false;
  const starts = new Set<number>();
  for (const edit of edits) {
    if (edit.inserted === undefined || edit.start !== edit.end || starts.has(edit.start)) return false;
    starts.add(edit.start);
  }
  for (const edit of edits) {
    const { keys, hash, lines } = edit.inserted as NonNullable<Edit['inserted']>;
    const alone = lines.map((line) => `${line}\n`).join('');
    const read = readFastDocument(alone, 0, alone.length, keys.length + 1);
    if (read === undefined || !sameValue(read.value, nested(keys, hash))) throw verificationError(document);
  }
  return true;
}

/** `{a: {b: hash}}` for keys `a`, `b`. */
function nested(keys: readonly string[], hash: string): unknown {
  return keys.reduceRight<unknown>((value, key) => ({ [key]: value }), hash);
}

function verificationError(document: ParsedDocument): StampVerificationError {
  return new StampVerificationError(
    `${document.file}#${document.index}: could not add ${HASH_ANNOTATION} without changing the rest of the document (unusual YAML layout); please report this`,
  );
}

/** Quoted for YAML and JSON alike: the hash never needs escaping. */
function quoted(value: string): string {
  return JSON.stringify(value);
}

class Source {
  readonly #document: ParsedDocument;
  /** Asked for once: the fast reader's documents read their tree on every ask (they do not keep it). */
  readonly #root: TreeNode;

  constructor(document: ParsedDocument) {
    this.#document = document;
    this.#root = document.root;
  }

  /** The character at a source offset. */
  #text(start: number, end: number): string {
    return this.#document.text.slice(start - this.#document.rangeBase, end - this.#document.rangeBase);
  }

  /** The document's own line ending, so inserted lines never mix `\n` into a CRLF file. */
  get eol(): string {
    return this.#document.text.includes('\r\n') ? '\r\n' : '\n';
  }

  #lineStart(offset: number): number {
    const base = this.#document.rangeBase;
    return this.#document.text.lastIndexOf('\n', offset - base - 1) + 1 + base;
  }

  #lineEnd(offset: number): number {
    const base = this.#document.rangeBase;
    const i = this.#document.text.indexOf('\n', offset - base);
    return (i === -1 ? this.#document.text.length : i) + base;
  }

  #fail(field: readonly string[], problem: string): never {
    throw new InvalidInputError(parsedLocation(this.#document), `${field.join('.')}: ${problem}`);
  }

  /** Follows a path of mapping keys and sequence indexes to the pod template mapping. */
  navigate(path: readonly (string | number)[]): FastMap {
    let node: TreeNode | undefined = this.#root;
    const walked: string[] = [];
    for (const step of path) {
      walked.push(String(step));
      if (node?.type === 'other') throw new SharedText();
      if (typeof step === 'number') {
        node = node?.type === 'seq' ? node.items[step] : undefined;
      } else {
        node = node?.type === 'map' ? findPair(node, step)?.value : undefined;
      }
      // Not in the text: merged in with `<<` (the value has it, so the planner found it).
      if (node === undefined) throw new SharedText();
    }
    if (node?.type === 'other') throw new SharedText();
    if (node?.type !== 'map') this.#fail(walked, 'the pod template must be a mapping');
    return node;
  }

  #where(): string {
    return `${this.#document.file}#${this.#document.index}`;
  }

  /** The edit that makes `keys` (below `map`) end in the quoted hash. */
  ensure(map: FastMap, keys: readonly string[], hash: string, field: readonly string[]): Edit {
    const [key, ...rest] = keys;
    if (key === undefined) throw new Error('ensure needs at least one key');
    const here = [...field, key];
    // Keys merged in with `<<` are not in this mapping's text: adding one here would override them all.
    if (findPair(map, '<<') !== undefined) throw new SharedText();
    const pair = findPair(map, key);
    if (pair === undefined) return this.#insertPair(map, keys, hash);
    const value = pair.value as TreeNode;
    if (value.type === 'other') throw new SharedText();
    if (rest.length === 0) {
      if (isNullNode(value)) return this.#replaceNull(map, pair, [], hash);
      return this.#replaceValue(value, quoted(hash));
    }
    if (value.type === 'map') return this.ensure(value, rest, hash, here);
    if (isNullNode(value)) return this.#replaceNull(map, pair, rest, hash);
    return this.#fail(here, 'must be a mapping');
  }

  /** Adds `keys...: hash` as the first entry of `map`. */
  #insertPair(map: FastMap, keys: readonly string[], hash: string): Edit {
    const first = map.pairs[0];
    const range = map.range;
    if (map.flow) {
      const pairText = flowPair(keys, hash);
      if (first === undefined) return { start: range[0], end: range[1], text: `{${pairText}}` };
      const keyStart = first.keyRange[0];
      const lineStart = this.#lineStart(keyStart);
      const indent = this.#text(lineStart, keyStart);
      // Pretty-printed JSON: a line of its own; compact JSON: inline.
      if (/^[ \t]*$/.test(indent)) return { start: lineStart, end: lineStart, text: `${indent}${pairText},${this.eol}` };
      return { start: keyStart, end: keyStart, text: `${pairText}, ` };
    }
    if (first === undefined) throw new StampVerificationError(`${this.#where()}: an empty block mapping`);
    const keyStart = first.keyRange[0];
    const lineStart = this.#lineStart(keyStart);
    const prefix = this.#text(lineStart, keyStart);
    const lines = blockLines(keys, hash);
    if (/^ *$/.test(prefix)) {
      return { start: lineStart, end: lineStart, text: lines.map((line) => prefix + line + this.eol).join(''), inserted: { keys, hash, lines } };
    }
    // The first key shares its line with sequence indicators (`- key:`): start there, realign the old key.
    const pad = ' '.repeat(keyStart - lineStart);
    const [head, ...tail] = lines;
    return { start: keyStart, end: keyStart, text: [head, ...tail.map((line) => pad + line)].join(this.eol) + this.eol + pad };
  }

  /** Fills a key whose value is empty or null with `rest...: hash` (or the hash itself when `rest` is empty). */
  #replaceNull(map: FastMap, pair: FastPair, rest: readonly string[], hash: string): Edit {
    const valueRange = pair.value.range;
    const keyRange = pair.keyRange;
    const needsSpace = valueRange[0] === valueRange[1] && this.#text(valueRange[0] - 1, valueRange[0]) === ':';
    if (rest.length === 0) {
      return { start: valueRange[0], end: valueRange[1], text: `${needsSpace ? ' ' : ''}${quoted(hash)}` };
    }
    if (!map.flow) {
      const lineEnd = this.#lineEnd(valueRange[1]);
      const trailing = this.#text(valueRange[1], lineEnd);
      const colon = this.#document.text.indexOf(':', keyRange[1] - this.#document.rangeBase) + this.#document.rangeBase;
      if (/^[ \t\r]*$/.test(trailing) && colon >= keyRange[1] && colon <= valueRange[0]) {
        const keyStart = keyRange[0];
        const pad = ' '.repeat(keyStart - this.#lineStart(keyStart) + 2);
        return {
          start: colon + 1,
          end: valueRange[1],
          text: blockLines(rest, hash).map((line) => `${this.eol}${pad}${line}`).join(''),
        };
      }
    }
    // Flow context, or a comment after the value: a flow mapping fits in place of the scalar
    // (a space before a comment right after it: `}# c` would not be a comment).
    const commentNext = this.#text(valueRange[1], valueRange[1] + 1) === '#';
    return { start: valueRange[0], end: valueRange[1], text: `${needsSpace ? ' ' : ''}{${flowPair(rest, hash)}}${commentNext ? ' ' : ''}` };
  }

  /** Overwrites an existing annotation value, keeping the line structure around it. */
  #replaceValue(value: TreeNode, text: string): Edit {
    const range = value.range;
    const old = this.#text(range[0], range[1]);
    // A block scalar's range ends with its line break: keep that break, in the document's style.
    return { start: range[0], end: range[1], text: old.endsWith('\r\n') ? `${text}\r\n` : old.endsWith('\n') ? `${text}\n` : text };
  }
}

function isNullNode(node: TreeNode): boolean {
  return node.type === 'scalar' && node.value === null;
}

/**
 * The pair of `map` whose key is the string `key`: the last one when the key is repeated, since that
 * is the one Go (and so Argo CD) keeps; a stamp written into an earlier one would be dropped.
 */
function findPair(map: FastMap, key: string): FastPair | undefined {
  return map.pairs.findLast((pair) => pair.key === key);
}

/** `a:` / `  b:` / `    c: "hash"` with two-space steps, relative to the first key's column. */
function blockLines(keys: readonly string[], hash: string): string[] {
  return keys.map((key, depth) => {
    const pad = '  '.repeat(depth);
    return depth === keys.length - 1 ? `${pad}${key}: ${quoted(hash)}` : `${pad}${key}:`;
  });
}

/** `"a": {"b": {"c": "hash"}}`: valid JSON and valid YAML flow. */
function flowPair(keys: readonly string[], hash: string): string {
  const [key, ...rest] = keys;
  if (key === undefined) return quoted(hash);
  return rest.length === 0 ? `${quoted(key)}: ${quoted(hash)}` : `${quoted(key)}: {${flowPair(rest, hash)}}`;
}

/**
 * The stamped text must parse to exactly the original value plus the
 * annotations: undo each stamp on the re-parsed value (no copy of the
 * original needed) and compare what is left with the original.
 */
function verify(document: ParsedDocument, stamps: readonly Stamp[], text: string): void {
  const fail = (): never => {
    throw verificationError(document);
  };
  let values: unknown[];
  try {
    // Read back by the same reader that read the input: this checks the splice, not the reader. The
    // readers themselves are held to Go's reading by the Go-oracle tests, and re-reading every stamped
    // workload with yaml cost more than half of generate's time (ADR 6).
    values = parseStream({ label: document.file, text }, { maxDocumentBytes: Number.MAX_SAFE_INTEGER, maxAliases: Number.MAX_SAFE_INTEGER, maxDepth: Number.MAX_SAFE_INTEGER }).map((d) => d.value);
  } catch {
    return fail();
  }
  const reparsed = values[0];
  if (values.length !== 1) fail();
  for (const stamp of stamps) {
    const before = getIn(document.value, stamp.templatePath);
    const after = getIn(reparsed, stamp.templatePath);
    if (!isObject(before) || !isObject(after)) return fail();
    const metadata = after['metadata'];
    if (!isObject(metadata)) return fail();
    const annotations = metadata['annotations'];
    if (!isObject(annotations) || annotations[HASH_ANNOTATION] !== stamp.hash) return fail();
    const oldMetadata = before['metadata'];
    const oldAnnotations = isObject(oldMetadata) ? oldMetadata['annotations'] : undefined;
    if (isObject(oldAnnotations) && Object.hasOwn(oldAnnotations, HASH_ANNOTATION)) {
      annotations[HASH_ANNOTATION] = oldAnnotations[HASH_ANNOTATION];
      continue;
    }
    delete annotations[HASH_ANNOTATION];
    if (isObject(oldAnnotations)) continue;
    // The stamper created the annotations map (and maybe metadata): put back what was there.
    if (Object.keys(annotations).length !== 0) return fail();
    if (isObject(oldMetadata)) {
      if (oldAnnotations === undefined && Object.hasOwn(oldMetadata, 'annotations')) metadata['annotations'] = undefined;
      else if (oldAnnotations === undefined) delete metadata['annotations'];
      else metadata['annotations'] = oldAnnotations;
    } else if (Object.keys(metadata).length === 1) {
      if (Object.hasOwn(before, 'metadata')) after['metadata'] = oldMetadata;
      else delete after['metadata'];
    } else {
      return fail();
    }
  }
  if (!sameValue(reparsed, document.value)) fail();
}

/**
 * `isDeepStrictEqual` for what the readers produce (plain objects, arrays, strings, numbers, booleans,
 * null), without its generic machinery, which ran for every stamped workload. Anything else (another
 * prototype, symbol keys) is handed to `isDeepStrictEqual` itself, so this is never a weaker check.
 */
function sameValue(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  const proto = Object.getPrototypeOf(a) as unknown;
  if (proto !== Object.getPrototypeOf(b)) return false;
  if (proto === Array.prototype) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length || !isPlainArray(x) || !isPlainArray(y)) return isDeepStrictEqual(a, b);
    for (let i = 0; i < x.length; i++) if (!sameValue(x[i], y[i])) return false;
    return true;
  }
  if (proto !== Object.prototype && proto !== null) return isDeepStrictEqual(a, b);
  if (Object.getOwnPropertySymbols(a).length !== 0 || Object.getOwnPropertySymbols(b).length !== 0) return isDeepStrictEqual(a, b);
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  for (const key of keys) {
    if (!Object.prototype.propertyIsEnumerable.call(y, key) || !sameValue(x[key], y[key])) return false;
  }
  return true;
}

/** An array with only its index properties (no holes, no extra keys): compared by index above. */
function isPlainArray(array: unknown[]): boolean {
  return Object.keys(array).length === array.length && Object.getOwnPropertySymbols(array).length === 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function getIn(root: unknown, path: readonly (string | number)[]): unknown {
  let node = root;
  for (const step of path) node = (node as Record<string | number, unknown> | null | undefined)?.[step];
  return node;
}
