import { UNREPRESENTABLE, resolveGoPlain } from './go-scalars.ts';

/**
 * A fast reader for the YAML that renderers actually print (kustomize, helm,
 * kubectl): block mappings and sequences, plain and single-quoted scalars
 * (also folded over several lines, as controller-gen writes CRD descriptions),
 * single-line double-quoted scalars, literal block scalars, one-line flow
 * collections, comments. It gives up (returns undefined) on anything else —
 * anchors, tags, multi-line double-quoted and folded block scalars, tabs, odd
 * indentation, non-string keys —
 * and the caller then uses the `yaml` package, which handles all of YAML.
 *
 * Why: `yaml` builds a full concrete and abstract syntax tree and runs at a
 * few MB/s; Argo CD renders every app on every refresh. Plain scalars are
 * resolved by `go-scalars.ts`, the function the slow path's tags use too,
 * so both paths give Go's values; differential tests (against yaml and
 * against Go itself) keep it so.
 */

/** A node with the source offsets the stamper needs. */
export type FastNode = FastMap | FastSeq | FastScalar;

export interface FastMap {
  readonly type: 'map';
  readonly flow: boolean;
  /** [start, end) of the mapping's text. */
  readonly range: readonly [number, number];
  readonly pairs: readonly FastPair[];
}

export interface FastSeq {
  readonly type: 'seq';
  readonly flow: boolean;
  readonly range: readonly [number, number];
  readonly items: readonly FastNode[];
}

export interface FastScalar {
  readonly type: 'scalar';
  /** [start, end) of the scalar's text (empty for a missing value, just after the `:`). */
  readonly range: readonly [number, number];
  readonly value: unknown;
}

export interface FastPair {
  readonly key: string;
  readonly keyRange: readonly [number, number];
  readonly value: FastNode;
}

/** Thrown internally to give up; never escapes this module. */
class GiveUp extends Error {}

interface Line {
  /** Offset of the line's first character. */
  readonly start: number;
  /** Offset just after the line's last character (before `\n`). */
  readonly end: number;
  /** Column of the first non-space character, or -1 for a blank or comment-only line. */
  readonly indent: number;
}

/** A plain scalar's value for Go; a value JavaScript cannot carry exactly is left to yaml (which rejects it). */
function resolvePlain(source: string): unknown {
  const value = resolveGoPlain(source);
  if (value === UNREPRESENTABLE) throw new GiveUp();
  return value;
}

/** The result for one document body: its value, `null` for a body with no content (otherwise always a mapping). */
export interface FastDocument {
  readonly value: unknown;
  /**
   * Where the pod template's mappings sit, for the stamper (no second reading of a workload): every
   * block mapping of the value that is the value of a `template`, `metadata` or `annotations` key,
   * with the source offset of its first key. Undefined when there is none.
   */
  readonly blockMaps: ReadonlyMap<object, number> | undefined;
}

/**
 * Reads the block mapping in `text[start, end)` (a document body after its
 * `---` line) as a plain value, built directly (no tree: the tree with its
 * offsets is only needed for the few documents that get stamped, and building
 * it for all was most of the reader's allocations). Returns undefined when the
 * body has something the fast reader does not handle; `{ value: null }` for a
 * body of only comments and blank lines.
 */
export function readFastDocument(text: string, start: number, end: number, maxDepth: number, keys?: KeyCache): FastDocument | undefined {
  return attempt(() => {
    const reader = new Reader(text, start, end, maxDepth, false, keys);
    const root = reader.root();
    return { value: root ?? null, blockMaps: reader.blockMaps };
  });
}

/**
 * The tree with source offsets, for the stamper: the same reading as
 * `readFastDocument` (one reader, one set of decisions), building nodes instead of values.
 */
export function readFastTree(text: string, start: number, end: number, maxDepth: number, keys?: KeyCache): FastMap | undefined {
  return attempt(() => new Reader(text, start, end, maxDepth, true, keys).root() as FastMap | undefined);
}

/** Keys up to this length are remembered by a KeyCache. */
const CACHED_KEY_LENGTH = 40;

/**
 * The plain keys a stream's documents used before, one per length and first character (the last
 * one seen), shared by the reads of one stream. A key equal to a remembered one is that same
 * string: no slice, no second resolution (a plain key's checks depend on its text alone), and
 * V8 stores a property under a string it already knows without looking the key up in its string
 * table, which was a good part of reading a mapping.
 */
export class KeyCache {
  readonly #slots: (string | undefined)[] = [];

  /** The remembered key equal to `text[start, end)`, if there is one. */
  find(text: string, start: number, end: number): string | undefined {
    const length = end - start;
    const first = text.charCodeAt(start);
    if (length > CACHED_KEY_LENGTH || first >= 128) return undefined;
    const key = this.#slots[length * 128 + first];
    return key !== undefined && text.startsWith(key, start) ? key : undefined;
  }

  /** Remembers a plain key that was read and resolved to itself. */
  remember(key: string): void {
    const first = key.charCodeAt(0);
    if (key.length <= CACHED_KEY_LENGTH && first < 128) this.#slots[key.length * 128 + first] = key;
  }
}

function attempt<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    // Too deep (by the limit, or for the stack): yaml's path reports it as invalid input.
    if (error instanceof GiveUp || error instanceof RangeError) return undefined;
    throw error;
  }
}

/**
 * Whether a plain scalar cannot start like this (`/^[?:,[\]{}#&*!|>'"%@`]|^-(?:[ ]|$)/`): an indicator, or
 * `-` alone or before a space. Char codes instead of a regular expression: this runs for every key and value.
 */
function forbiddenPlainStart(source: string): boolean {
  switch (source.charCodeAt(0)) {
    case 63: case 58: case 44: case 91: case 93: case 123: case 125: case 35: case 38:
    case 42: case 33: case 124: case 62: case 39: case 34: case 37: case 64: case 96:
      return true;
    case 45:
      return source.length === 1 || source.charCodeAt(1) === 32;
    default:
      return false;
  }
}

/**
 * What the reader's methods return: a FastNode when it builds the tree, the
 * plain value (as yaml's `toJS` builds it) otherwise. One reader for both, so
 * the stamper's tree and the planner's value can never read a document differently.
 */
type Built = unknown;

class Reader {
  readonly #text: string;
  readonly #lines: Line[] = [];
  readonly #maxDepth: number;
  readonly #tree: boolean;
  #depth = 0;
  #i = 0;
  /** The source offset where the node returned last ends (its range's end), in both modes. */
  #end = 0;
  /**
   * Where the scalar or key text a lexing method returned last ends (after a closing quote, or the
   * trimmed end of a plain scalar); for `#key` also `#valueStart`. Fields instead of a returned tuple:
   * these run for every key and value, and a tuple each was a good part of the reader's garbage.
   */
  #to = 0;
  #valueStart = 0;
  /** In value mode: the mapping the last block `#mapping` built, and where its first key starts. */
  #lastBlock: object | undefined;
  #lastBlockStart = 0;
  #blockMaps: Map<object, number> | undefined;
  readonly #keys: KeyCache | undefined;

  constructor(text: string, start: number, end: number, maxDepth: number, tree: boolean, keys?: KeyCache) {
    this.#text = text;
    this.#keys = keys;
    this.#maxDepth = maxDepth;
    this.#tree = tree;
    if (text.slice(start, end).includes('\t')) throw new GiveUp(); // tabs: whitespace rules differ by context, leave to yaml
    let pos = start;
    while (pos < end) {
      let lineEnd = text.indexOf('\n', pos);
      if (lineEnd === -1 || lineEnd > end) lineEnd = end;
      let col = pos;
      while (col < lineEnd && text.charCodeAt(col) === 32) col++;
      const c = text.charCodeAt(col);
      const blank = col === lineEnd || c === 35; /* # */
      if (c === 9 || c === 13) throw new GiveUp(); // tabs, CR: leave to yaml
      this.#lines.push({ start: pos, end: lineEnd, indent: blank ? -1 : col - pos });
      pos = lineEnd + 1;
    }
  }

  /** See FastDocument's `blockMaps`. */
  get blockMaps(): ReadonlyMap<object, number> | undefined {
    return this.#blockMaps;
  }

  /** The body's root mapping; undefined for a body of only comments and blank lines. */
  root(): Built {
    const first = this.#peek();
    if (first === undefined) return undefined;
    if (first.indent !== 0) throw new GiveUp();
    const root = this.#mapping(0, first.start);
    if (this.#peek() !== undefined) throw new GiveUp();
    return root;
  }

  /** A scalar node, or its value alone; either way `#end` is where it ends. */
  #scalar(start: number, end: number, value: unknown): Built {
    this.#end = end;
    return this.#tree ? { type: 'scalar', range: [start, end], value } : value;
  }

  /** One level deeper into collections; past the limit, yaml's path rejects the document. */
  #enter(): void {
    if (++this.#depth > this.#maxDepth) throw new GiveUp();
  }

  /** The next line with content, skipping blank and comment lines. */
  #peek(): Line | undefined {
    while (this.#i < this.#lines.length) {
      const line = this.#lines[this.#i] as Line;
      if (line.indent !== -1) return line;
      this.#i++;
    }
    return undefined;
  }

  /** A block mapping whose keys sit at column `indent`; the first key starts at `firstKey` (maybe mid-line after `- `). */
  #mapping(indent: number, firstKey: number): Built {
    this.#enter();
    const pairs: FastPair[] | undefined = this.#tree ? [] : undefined;
    const out: Record<string, unknown> = {};
    let keyStart = firstKey;
    let rangeEnd = firstKey;
    for (;;) {
      const line = this.#lines[this.#i] as Line;
      // A repeated key stays in `pairs` (the stamper looks for the last one) and wins in the value, as in Go.
      const key = this.#key(keyStart, line.end);
      const keyEnd = this.#to;
      const value = this.#value(indent, keyEnd, this.#valueStart, line, true);
      if (pairs !== undefined) pairs.push({ key, keyRange: [keyStart, keyEnd], value: value as FastNode });
      else {
        setOwn(out, key, value);
        if (this.#lastBlock !== undefined && value === this.#lastBlock && (key === 'template' || key === 'metadata' || key === 'annotations')) {
          this.#blockMaps ??= new Map();
          this.#blockMaps.set(value, this.#lastBlockStart);
        }
      }
      rangeEnd = Math.max(rangeEnd, this.#end);
      const next = this.#peek();
      if (next === undefined || next.indent < indent) break;
      if (next.indent > indent) throw new GiveUp();
      const col = next.start + indent;
      if (this.#text.charCodeAt(col) === 45 /* - */ && this.#isDash(col)) break; // an indentless sequence ends us
      keyStart = col;
    }
    this.#depth--;
    this.#end = rangeEnd;
    if (pairs !== undefined) return { type: 'map', flow: false, range: [firstKey, rangeEnd], pairs };
    this.#lastBlock = out;
    this.#lastBlockStart = firstKey;
    return out;
  }

  /** A block sequence whose `-` sit at column `indent`. */
  #sequence(indent: number): Built {
    this.#enter();
    const items: Built[] = [];
    const first = this.#peek() as Line;
    const start = first.start + indent;
    let end = start;
    for (;;) {
      const line = this.#peek();
      if (line === undefined || line.indent !== indent) break;
      const dash = line.start + indent;
      if (this.#text.charCodeAt(dash) !== 45 || !this.#isDash(dash)) break;
      let content = dash + 1;
      while (content < line.end && this.#text.charCodeAt(content) === 32) content++;
      let item: Built;
      if (content === line.end || this.#text.charCodeAt(content) === 35 /* # */) {
        // `-` alone: the item is on the following lines, or null.
        if (content !== line.end && this.#text.charCodeAt(content - 1) !== 32) throw new GiveUp();
        this.#i++;
        const next = this.#peek();
        if (next !== undefined && next.indent > indent) item = this.#block(next);
        else item = this.#scalar(dash + 1, dash + 1, null);
      } else if (this.#isKey(content, line.end)) {
        item = this.#mapping(content - line.start, content);
      } else {
        const c = this.#text.charCodeAt(content);
        if (c === 45 /* - */ && this.#isDash(content)) throw new GiveUp(); // `- - x`
        item = this.#inlineValue(indent, content, line);
      }
      items.push(item);
      end = Math.max(end, this.#end);
    }
    this.#depth--;
    this.#end = end;
    return this.#tree ? { type: 'seq', flow: false, range: [start, end], items: items as FastNode[] } : items;
  }

  /** A block node starting on `line` (a mapping or a sequence). */
  #block(line: Line): Built {
    const col = line.start + line.indent;
    if (this.#text.charCodeAt(col) === 45 && this.#isDash(col)) return this.#sequence(line.indent);
    if (!this.#isKey(col, line.end)) throw new GiveUp(); // a multi-line scalar or something odd
    return this.#mapping(line.indent, col);
  }

  /** The value after a key's `:` (`valueStart` is the first non-space after it, or the line end). */
  #value(indent: number, keyEnd: number, valueStart: number, line: Line, inMap: boolean): Built {
    if (valueStart === line.end || this.#text.charCodeAt(valueStart) === 35 /* # */) {
      if (valueStart !== line.end && this.#text.charCodeAt(valueStart - 1) !== 32) throw new GiveUp();
      this.#i++;
      const next = this.#peek();
      if (next === undefined) return this.#scalar(valueStart, valueStart, null);
      if (next.indent > indent) return this.#block(next);
      if (inMap && next.indent === indent) {
        const col = next.start + indent;
        if (this.#text.charCodeAt(col) === 45 && this.#isDash(col)) return this.#sequence(indent);
      }
      return this.#scalar(valueStart, valueStart, null);
    }
    return this.#inlineValue(indent, valueStart, line);
  }

  /** A value that starts on the current line at `start`; consumes the line (and a block scalar's lines). */
  #inlineValue(indent: number, start: number, line: Line): Built {
    const text = this.#text;
    const c = text.charCodeAt(start);
    let node: Built;
    if (c === 124 /* | */) {
      return this.#literal(indent, start, line);
    } else if (c === 34 /* " */) {
      const value = this.#doubleQuoted(start, line.end);
      node = this.#scalar(start, this.#to, value);
    } else if (c === 39 /* ' */) {
      const value = this.#singleQuotedLines(indent, start, line);
      node = this.#scalar(start, this.#to, value);
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      node = this.#flow(start, line.end);
    } else {
      const source = this.#plain(start, line.end);
      const end = this.#to;
      // Without a comment after it, the scalar may go on over deeper lines (CRD descriptions do, by thousands).
      const folded = end === this.#trimmedEnd(start, line.end) ? this.#plainLines(indent, source) : undefined;
      node = folded === undefined ? this.#scalar(start, end, resolvePlain(source)) : this.#scalar(start, folded.end, resolvePlain(folded.value));
    }
    const after = this.#end;
    // The scalar may have ended on a later line than it began.
    this.#restOfLine(after, (this.#lines[this.#i] as Line).end);
    this.#i++;
    // A deeper line after a scalar would continue it (multi-line plain) or be an error: leave both to yaml.
    const next = this.#peek();
    if (next !== undefined && next.indent > indent) throw new GiveUp();
    this.#end = after;
    return node;
  }

  /** A flow collection that opens at `start` and closes on the same line. */
  #flow(start: number, lineEnd: number): Built {
    this.#enter();
    const text = this.#text;
    const isMap = text.charCodeAt(start) === 123;
    const close = isMap ? 125 : 93;
    const pairs: FastPair[] = [];
    const out: Record<string, unknown> = {};
    const items: Built[] = [];
    let i = this.#skipSpaces(start + 1, lineEnd);
    if (text.charCodeAt(i) === close) return this.#flowEnd(start, i + 1, isMap, pairs, out, items);
    for (;;) {
      if (isMap) {
        const keyStart = i;
        let key: string;
        let keyEnd: number;
        const k = text.charCodeAt(i);
        if (k === 34 || k === 39) {
          key = k === 34 ? this.#doubleQuoted(i, lineEnd) : this.#singleQuoted(i, lineEnd);
          keyEnd = this.#to;
          i = this.#skipSpaces(keyEnd, lineEnd);
          if (text.charCodeAt(i) !== 58) throw new GiveUp();
        } else {
          const source = this.#flowPlain(i, lineEnd);
          const end = this.#to;
          if (text.charCodeAt(end) !== 58) throw new GiveUp(); // `{a}` or `{a :b}`: leave to yaml
          const resolved = resolvePlain(source);
          if (typeof resolved !== 'string' || source === '<<') throw new GiveUp();
          key = resolved;
          keyEnd = end;
          i = end;
        }
        i++; // the `:`
        const next = text.charCodeAt(i);
        if (next !== 32 && !(k === 34 || k === 39)) throw new GiveUp();
        i = this.#skipSpaces(i, lineEnd);
        const value = this.#flowValue(i, lineEnd);
        if (this.#tree) pairs.push({ key, keyRange: [keyStart, keyEnd], value: value as FastNode });
        else setOwn(out, key, value);
        i = this.#end;
      } else {
        items.push(this.#flowValue(i, lineEnd));
        i = this.#end;
      }
      i = this.#skipSpaces(i, lineEnd);
      const c = text.charCodeAt(i);
      if (c === close) return this.#flowEnd(start, i + 1, isMap, pairs, out, items);
      if (c !== 44 /* , */) throw new GiveUp();
      i = this.#skipSpaces(i + 1, lineEnd);
      if (text.charCodeAt(i) === close) throw new GiveUp(); // trailing comma: leave to yaml
    }
  }

  /** A closed flow collection `[start, end)`. */
  #flowEnd(start: number, end: number, isMap: boolean, pairs: FastPair[], out: Record<string, unknown>, items: Built[]): Built {
    this.#depth--;
    this.#end = end;
    if (!this.#tree) return isMap ? out : items;
    const range: [number, number] = [start, end];
    return isMap ? { type: 'map', flow: true, range, pairs } : { type: 'seq', flow: true, range, items: items as FastNode[] };
  }

  #flowValue(i: number, lineEnd: number): Built {
    const text = this.#text;
    const c = text.charCodeAt(i);
    if (c === 123 || c === 91) return this.#flow(i, lineEnd);
    if (c === 34 || c === 39) {
      const value = c === 34 ? this.#doubleQuoted(i, lineEnd) : this.#singleQuoted(i, lineEnd);
      return this.#scalar(i, this.#to, value);
    }
    const source = this.#flowPlain(i, lineEnd);
    const end = this.#to;
    if (text.charCodeAt(end) === 58) throw new GiveUp(); // `[a: b]`: a pair in a sequence
    return this.#scalar(i, end, resolvePlain(source));
  }

  /** A plain scalar inside a flow collection: stops at `,`, `]`, `}`, `: ` and ` #`. */
  #flowPlain(i: number, lineEnd: number): string {
    const text = this.#text;
    let end = i;
    for (; end < lineEnd; end++) {
      const c = text.charCodeAt(end);
      if (c === 44 || c === 93 || c === 125 || c === 91 || c === 123) break;
      if (c === 58 /* : */) {
        const n = text.charCodeAt(end + 1);
        if (n === 32 || n === 44 || n === 93 || n === 125 || end + 1 === lineEnd) break;
      }
      if (c === 35 /* # */ && text.charCodeAt(end - 1) === 32) throw new GiveUp();
      if (c === 63 /* ? */) throw new GiveUp(); // ends the scalar for Go, not for yaml: yaml's path rejects it
    }
    if (end === lineEnd) throw new GiveUp(); // unclosed on this line
    let trimmed = end;
    while (trimmed > i && text.charCodeAt(trimmed - 1) === 32) trimmed--;
    const source = text.slice(i, trimmed);
    if (source === '' || forbiddenPlainStart(source)) throw new GiveUp();
    this.#to = trimmed;
    return source;
  }

  /** A `-` followed by a space, a line break or the end: a sequence entry indicator. */
  #isDash(i: number): boolean {
    if (this.#text.charCodeAt(i) !== 45) return false;
    const n = this.#text.charCodeAt(i + 1);
    return n === 32 || n === 10 || Number.isNaN(n);
  }

  /** The offset of the first `:` followed by a space or the line end in [start, lineEnd), or -1. */
  #keyColon(start: number, lineEnd: number): number {
    const text = this.#text;
    for (let i = start; i < lineEnd; i++) {
      if (text.charCodeAt(i) === 58 && (i + 1 === lineEnd || text.charCodeAt(i + 1) === 32)) return i;
    }
    return -1;
  }

  #skipSpaces(i: number, end: number): number {
    while (i < end && this.#text.charCodeAt(i) === 32) i++;
    return i;
  }

  /** Only spaces and a comment may follow a value on its line. */
  #restOfLine(from: number, end: number): void {
    let i = from;
    while (i < end && this.#text.charCodeAt(i) === 32) i++;
    if (i === end) return;
    if (this.#text.charCodeAt(i) !== 35 || i === from) throw new GiveUp();
  }

  /** `|` or `|-` with content lines indented more than `indent`. */
  #literal(indent: number, start: number, line: Line): Built {
    const text = this.#text;
    const header = text.slice(start, line.end).replace(/ +#.*$/, '').trimEnd();
    if (header !== '|' && header !== '|-') throw new GiveUp();
    const strip = header === '|-';
    const lines = this.#lines;
    let i = this.#i + 1;
    let contentIndent = -1;
    const parts: string[] = [];
    let end = line.end;
    for (; i < lines.length; i++) {
      const l = lines[i] as Line;
      const raw = text.slice(l.start, l.end);
      const spaces = raw.length - raw.trimStart().length;
      const isEmpty = raw.trim() === '';
      if (isEmpty) {
        // Spaces beyond the indentation are content (or, before the first line, an error): leave to yaml.
        if (raw.length > (contentIndent === -1 ? 0 : contentIndent)) throw new GiveUp();
        parts.push('');
        continue;
      }
      if (contentIndent === -1) {
        if (spaces <= indent) break;
        contentIndent = spaces;
      }
      if (spaces < contentIndent) break;
      parts.push(raw.slice(contentIndent));
      end = l.end;
    }
    if (contentIndent === -1) throw new GiveUp();
    // Trailing empty lines belong to the chomping, not the content.
    while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
    if (text.charCodeAt(end) !== 10) throw new GiveUp(); // no final line break: leave the edge to yaml
    // Consume through the last content line; trailing blank lines are skipped by #peek.
    let last = this.#i + 1;
    while (last < lines.length && (lines[last] as Line).start <= end) last++;
    this.#i = last;
    const value = parts.join('\n') + (strip ? '' : '\n');
    const next = this.#peek();
    if (next !== undefined && next.indent > indent) throw new GiveUp();
    return this.#scalar(start, end + 1, value);
  }

  /** Where the line's text ends once trailing spaces are cut. */
  #trimmedEnd(start: number, lineEnd: number): number {
    let end = lineEnd;
    while (end > start && this.#text.charCodeAt(end - 1) === 32) end--;
    return end;
  }

  /**
   * The lines after the current one that continue a plain scalar (deeper than
   * `indent`), folded as Go folds them: one line break becomes a space, n+1
   * become n line feeds; each line's outer spaces are cut. Returns undefined
   * when the scalar ends on its first line (then `#i` is unchanged), and gives up
   * on a continuation line that Go could read otherwise (an indicator first, a
   * `: ` or ` #` inside, a comment line among the lines, and so on).
   */
  #plainLines(indent: number, first: string): { value: string; end: number } | undefined {
    const text = this.#text;
    const lines = this.#lines;
    let value = first;
    let end = -1;
    let breaks = 0;
    let last = this.#i;
    for (let i = this.#i + 1; i < lines.length; i++) {
      const l = lines[i] as Line;
      if (l.indent === -1) {
        let col = l.start;
        while (col < l.end && text.charCodeAt(col) === 32) col++;
        if (col !== l.end) break; // a comment line ends the scalar (deeper lines after it: yaml's path)
        breaks++;
        continue;
      }
      if (l.indent <= indent) break;
      const from = l.start + l.indent;
      const to = this.#trimmedEnd(from, l.end);
      const content = text.slice(from, to);
      if (forbiddenPlainStart(content) || content.includes(': ') || content.includes(' #') || content.endsWith(':')) throw new GiveUp();
      value += breaks === 0 ? ` ${content}` : '\n'.repeat(breaks);
      if (breaks !== 0) value += content;
      breaks = 0;
      end = to;
      last = i;
    }
    if (end === -1) return undefined;
    this.#i = last;
    return { value, end };
  }

  /**
   * A single-quoted scalar from `start`, on one line or folded over deeper lines
   * as Go folds them (like `#plainLines`; `''` is a quote). Leaves `#i` on the
   * line where it closes and returns its value and the offset after the quote.
   */
  #singleQuotedLines(indent: number, start: number, line: Line): string {
    const text = this.#text;
    const lines = this.#lines;
    let out = '';
    let i = start + 1;
    let lineIndex = this.#i;
    let lineEnd = line.end;
    for (;;) {
      let run = i;
      for (; i < lineEnd; i++) {
        if (text.charCodeAt(i) !== 39) continue;
        if (text.charCodeAt(i + 1) === 39) {
          out += text.slice(run, i + 1);
          i++;
          run = i + 1;
          continue;
        }
        out += text.slice(run, i);
        this.#i = lineIndex;
        this.#to = i + 1;
        return out;
      }
      out += text.slice(run, this.#trimmedEnd(run, lineEnd));
      let breaks = 0;
      let next: Line | undefined;
      let col = 0;
      while (next === undefined) {
        const l = lines[++lineIndex];
        if (l === undefined) throw new GiveUp();
        col = l.start;
        while (col < l.end && text.charCodeAt(col) === 32) col++;
        if (col === l.end) breaks++;
        else if (col - l.start <= indent) throw new GiveUp(); // not deeper than its key: leave the edge to yaml
        else next = l;
      }
      out += breaks === 0 ? ' ' : '\n'.repeat(breaks);
      i = col;
      lineEnd = next.end;
    }
  }

  #doubleQuoted(start: number, lineEnd: number): string {
    const text = this.#text;
    let out = '';
    let i = start + 1;
    let run = i;
    for (; i < lineEnd; i++) {
      const c = text.charCodeAt(i);
      if (c === 34) {
        out += text.slice(run, i);
        this.#to = i + 1;
        return out;
      }
      if (c === 92 /* \ */) {
        out += text.slice(run, i);
        const e = text[i + 1];
        switch (e) {
          case '\\': out += '\\'; break;
          case '"': out += '"'; break;
          case '/': out += '/'; break;
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case '0': out += '\0'; break;
          case 'u': {
            const hex = text.slice(i + 2, i + 6);
            // Not hex, or a surrogate (Go refuses those escapes, even in pairs): leave to yaml's path.
            if (!/^[0-9a-fA-F]{4}$/.test(hex) || /^[dD][89a-fA-F]/.test(hex)) throw new GiveUp();
            out += String.fromCharCode(parseInt(hex, 16));
            i += 4;
            break;
          }
          default:
            throw new GiveUp();
        }
        i++;
        run = i + 1;
      }
    }
    throw new GiveUp(); // continues on the next line
  }

  #singleQuoted(start: number, lineEnd: number): string {
    const text = this.#text;
    let out = '';
    let run = start + 1;
    for (let i = start + 1; i < lineEnd; i++) {
      if (text.charCodeAt(i) === 39) {
        if (text.charCodeAt(i + 1) === 39) {
          out += text.slice(run, i + 1);
          i++;
          run = i + 1;
          continue;
        }
        out += text.slice(run, i);
        this.#to = i + 1;
        return out;
      }
    }
    throw new GiveUp();
  }

  /** A single-line plain scalar from `start`: up to ` #` or the line end, trailing spaces trimmed. */
  #plain(start: number, lineEnd: number): string {
    const text = this.#text;
    let end = lineEnd;
    for (let i = start + 1; i < lineEnd; i++) {
      if (text.charCodeAt(i) === 35 /* # */ && text.charCodeAt(i - 1) === 32) {
        end = i - 1;
        break;
      }
    }
    while (end > start && text.charCodeAt(end - 1) === 32) end--;
    const source = text.slice(start, end);
    if (source === '' || forbiddenPlainStart(source) || source.includes(': ') || source.endsWith(':')) throw new GiveUp();
    this.#to = end;
    return source;
  }

  /** Whether a mapping key starts at `start` on this line. */
  #isKey(start: number, lineEnd: number): boolean {
    const text = this.#text;
    const c = text.charCodeAt(start);
    if (c === 34 || c === 39) {
      try {
        if (c === 34) this.#doubleQuoted(start, lineEnd);
        else this.#singleQuoted(start, lineEnd);
        const end = this.#to;
        return text.charCodeAt(end) === 58 && (end + 1 === lineEnd || text.charCodeAt(end + 1) === 32);
      } catch {
        return false;
      }
    }
    const colon = this.#keyColon(start, lineEnd);
    if (colon === -1) return false;
    // A comment before the colon makes this a plain scalar with a comment, not a key.
    for (let i = start + 1; i < colon; i++) if (text.charCodeAt(i) === 35 && text.charCodeAt(i - 1) === 32) return false;
    return true;
  }

  /**
   * Reads `key:` at `start`; the key must be a string to both YAML and JavaScript. `#to` is then where
   * the key ends and `#valueStart` where its value may begin.
   */
  #key(start: number, lineEnd: number): string {
    const text = this.#text;
    const c = text.charCodeAt(start);
    let key: string;
    let keyEnd: number;
    if (c === 34 || c === 39) {
      key = c === 34 ? this.#doubleQuoted(start, lineEnd) : this.#singleQuoted(start, lineEnd);
      keyEnd = this.#to;
      if (text.charCodeAt(keyEnd) !== 58) throw new GiveUp();
    } else {
      const colon = this.#keyColon(start, lineEnd);
      if (colon <= start) throw new GiveUp();
      keyEnd = colon;
      let trimmed = keyEnd;
      while (trimmed > start && text.charCodeAt(trimmed - 1) === 32) trimmed--;
      const known = this.#keys?.find(text, start, trimmed);
      if (known !== undefined) {
        key = known;
      } else {
        const source = text.slice(start, trimmed);
        if (forbiddenPlainStart(source) || source.includes(' #')) throw new GiveUp();
        const resolved = resolvePlain(source);
        if (typeof resolved !== 'string' || source === '<<') throw new GiveUp(); // `on:`, `1:`, merge keys: leave to yaml
        key = resolved;
        this.#keys?.remember(key);
      }
      keyEnd = trimmed;
      if (text.charCodeAt(keyEnd) !== 58) throw new GiveUp();
    }
    if (key.length > 1000) throw new GiveUp();
    let valueStart = keyEnd + 1;
    if (valueStart < lineEnd && text.charCodeAt(valueStart) !== 32) throw new GiveUp();
    while (valueStart < lineEnd && text.charCodeAt(valueStart) === 32) valueStart++;
    this.#to = keyEnd;
    this.#valueStart = valueStart;
    return key;
  }
}

/**
 * Sets `key` as an own property, like yaml's `toJS` (for `constructor` and `__proto__` too). Every key
 * is a string here, so a repeated key is the same Go key and the last value wins, as in Go (and yaml's
 * toJS). An assignment makes an own property for any key but `__proto__`, the one accessor on
 * Object.prototype: no `in` lookup per key.
 */
function setOwn(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
  else out[key] = value;
}
