import { resolveGoPlain } from './go-scalars.ts';

/**
 * Reads only what proves a document's identity: apiVersion, kind and
 * metadata's name, generateName and namespace. Most bytes of a chart are in
 * objects the plugin emits untouched (a CustomResourceDefinition is often
 * several megabytes of schema): when their kind needs nothing more
 * (`readsBeyondIdentity`), reading the rest is wasted.
 *
 * Certain, or nothing: the answer is what Go reads, or undefined (the caller
 * then reads the document in full). The top level must be a block mapping
 * whose keys sit at column 0. Only a multi-line quoted scalar or a multi-line
 * flow collection could pull a column-0 line into a deeper value for Go (a
 * plain scalar cannot continue at column 0, and a block scalar's content is
 * indented), so every deeper line is lexed just far enough to see that none
 * opens one that reaches column 0 (quoted scalars over several lines are
 * followed to their end); block scalar bodies are skipped. Anchors, aliases, tags, complex
 * keys, escapes in the identity's values, flow metadata: undefined. A
 * repeated key takes its last value, as Go does.
 */

/** The identity of an object, as a plain value `toManifest` reads. */
export interface Identity {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: Readonly<Record<string, string>>;
}

/** Thrown internally to give up; never escapes this module. */
class Unsure extends Error {}

/** What a line outside metadata reads as: only its shape matters there, so no key or value is built (most bytes of a CRD are such lines). */
const UNREAD: LineRead = Object.freeze({ key: undefined, scalar: undefined, open: false });

const TOP_KEY = /([A-Za-z][A-Za-z0-9_-]*):(?=[ \n]|$)/y;

/**
 * A run of deeper lines the lexer would pass over without a finding: indented, after any `- ` a plain key
 * or scalar, and after a key's `: ` a plain value (each starting with none of the characters that open
 * something else, and with no `:`, `#`, tab or CR anywhere); or blank. Such a line opens nothing that can
 * reach column 0 and is no error the lexer stops at, so a native regular expression steps over most of a
 * CRD's schema at once instead of the lexer going line by line (the identity skim was ~210 ms of a 12 MB chart).
 */
const PLAIN_LINES = /(?: +(?:-(?: +|(?=\n)))*(?:[^\n "'[\]{}|>&*!?%@`,#:\t\r-][^\n:#\t\r]*(?::(?: +[^\n "'[\]{}|>&*!?%@`,#:\t\r-][^\n:#\t\r]*| *))?)?)?\n/y;
const PLAIN_LINE_RUN = new RegExp(`(?:${PLAIN_LINES.source})+`, 'y');

/**
 * A quoted scalar from its opening quote to the quote that closes it, over lines as long as none has
 * content at column 0 (where Go would still be inside it); in double quotes no escaped line break (its
 * folding is left to the full reader). `''` is a quote inside single quotes, never the end: the
 * lookahead keeps a failed search from backtracking to one.
 */
const SINGLE_QUOTED = /'(?:[^'\n]|''|\n(?![^ \n]))*'(?!')/y;
const DOUBLE_QUOTED = /"(?:[^"\\\n]|\\[^\n]|\n(?![^ \n]))*"/y;
const IDENTITY_FIELDS = new Set(['name', 'generateName', 'namespace']);

/** The identity of the block mapping in `text[start, end)`, or undefined when it cannot be proven without a full read. */
export function skimIdentity(text: string, start: number, end: number): Identity | undefined {
  try {
    return new Skim(text, end).read(start);
  } catch (error) {
    if (error instanceof Unsure) return undefined;
    throw error;
  }
}

/** What the lexer found on one line: a key, and the value when it is a single-line scalar. */
interface LineRead {
  readonly key: string | undefined;
  /** The line's scalar value (string, number, ...), `undefined` for none or for a value that is not one scalar. */
  readonly scalar: unknown;
  /** The line ends its key with nothing after it: the value is on the following lines. */
  readonly open: boolean;
}

class Skim {
  readonly #text: string;
  readonly #end: number;
  /** While in a block scalar's body: lines deeper than this column (and blank lines) are its content. */
  #blockIndent = -1;
  /** The column of the body's first line; a line between the two columns ends the scalar oddly (Unsure). */
  #blockContent = -1;
  /** The end of the current line; a quoted scalar over several lines moves it to the line where it closes. */
  #lineEnd = 0;
  /** Whether the last quoted scalar went over lines (its value is then folded: not an identity's). */
  #multiLine = false;

  constructor(text: string, end: number) {
    this.#text = text;
    this.#end = end;
  }

  read(start: number): Identity | undefined {
    const text = this.#text;
    let apiVersion: unknown;
    let kind: unknown;
    let metadata: Record<string, string> | undefined;
    let metadataIndent = -1;
    let inMetadata = false;
    let deeperAllowed = false;
    let valueIndent = -1;
    let pos = start;
    for (; pos < this.#end; pos = this.#lineEnd + 1) {
      if (deeperAllowed && !inMetadata && valueIndent === -1 && this.#blockIndent < 0) {
        pos = this.#plainLinesFrom(pos);
        if (pos >= this.#end) break;
      }
      let lineEnd = text.indexOf('\n', pos);
      if (lineEnd === -1 || lineEnd > this.#end) lineEnd = this.#end;
      const lineStart = pos;
      this.#lineEnd = lineEnd;
      this.#multiLine = false;
      let col = lineStart;
      while (col < lineEnd && text.charCodeAt(col) === 32) col++;
      if (col === lineEnd) continue;
      const indent = col - lineStart;
      if (this.#blockIndent >= 0) {
        if (indent > this.#blockIndent) {
          if (this.#blockContent === -1) this.#blockContent = indent;
          else if (indent < this.#blockContent) throw new Unsure();
          continue;
        }
        this.#blockIndent = -1;
        this.#blockContent = -1;
      }
      const c = text.charCodeAt(col);
      if (c === 35 /* # */) continue;
      if (c === 9 || c === 13) throw new Unsure();
      // After an identity's value, a deeper line would continue it (a plain scalar goes on over lines).
      if (valueIndent !== -1 && indent > valueIndent) throw new Unsure();
      valueIndent = -1;
      if (indent === 0) {
        TOP_KEY.lastIndex = col;
        const match = TOP_KEY.exec(text);
        if (match === null || TOP_KEY.lastIndex > lineEnd) throw new Unsure();
        const key = match[1] as string;
        const read = this.#value(key, 0, TOP_KEY.lastIndex, lineEnd, true);
        deeperAllowed = read.open;
        inMetadata = false;
        if (key === 'apiVersion' || key === 'kind') {
          if (typeof read.scalar !== 'string') throw new Unsure();
          if (key === 'apiVersion') apiVersion = read.scalar;
          else kind = read.scalar;
        } else if (key === 'metadata') {
          if (!read.open) throw new Unsure(); // flow or scalar metadata: the full reader says what it is
          // A repeated `metadata` replaces the whole mapping, as in Go.
          metadata = {};
          metadataIndent = -1;
          inMetadata = true;
        }
        continue;
      }
      if (!deeperAllowed) throw new Unsure(); // a deeper line after a value on the key's line
      if (inMetadata && (metadataIndent === -1 || indent <= metadataIndent)) {
        if (metadataIndent === -1) metadataIndent = indent;
        if (indent !== metadataIndent) throw new Unsure();
        const read = this.#line(col, lineStart, lineEnd, true);
        if (read.key === undefined) throw new Unsure();
        if (IDENTITY_FIELDS.has(read.key)) {
          if (typeof read.scalar !== 'string') throw new Unsure();
          (metadata as Record<string, string>)[read.key] = read.scalar;
          valueIndent = indent;
        }
        continue;
      }
      this.#line(col, lineStart, lineEnd, false);
    }
    if (typeof apiVersion !== 'string' || typeof kind !== 'string' || metadata === undefined || metadataIndent === -1) return undefined;
    return { apiVersion, kind, metadata };
  }

  /**
   * A deeper line from its first character: sequence dashes, then a key and its value, or a value.
   * Without `values` the line is only lexed (every Unsure the same), and UNREAD stands for what was read.
   */
  #line(col: number, lineStart: number, lineEnd: number, values: boolean): LineRead {
    const text = this.#text;
    let p = col;
    let nodeCol = col;
    while (text.charCodeAt(p) === 45 /* - */ && (p + 1 === lineEnd || text.charCodeAt(p + 1) === 32)) {
      nodeCol = p;
      p = this.#spaces(p + 1, lineEnd);
      if (p === lineEnd) return values ? { key: undefined, scalar: undefined, open: true } : UNREAD;
    }
    const c = text.charCodeAt(p);
    const keyCol = p;
    if (c === 34 || c === 39) {
      const close = this.#quoteEnd(p);
      const end = this.#lineEnd;
      const after = this.#spaces(close, end);
      if (text.charCodeAt(after) === 58 && (after + 1 === end || text.charCodeAt(after + 1) === 32)) {
        // An escaped key could be `name` to Go; a key over lines is an error to it.
        if (this.#multiLine || this.#has(c === 34 ? 92 : 39, p + 1, close - 1)) throw new Unsure();
        return this.#value(values ? text.slice(p + 1, close - 1) : undefined, keyCol - lineStart, after + 1, end, values);
      }
      this.#restOfLine(close, end);
      return UNREAD;
    }
    if (c === 35 /* # */) return values ? { key: undefined, scalar: undefined, open: true } : UNREAD;
    if (isIndicator(c) || c === 124 || c === 62) {
      if (c === 91 || c === 123 || c === 124 || c === 62) return this.#value(undefined, nodeCol - lineStart, p, lineEnd, values);
      throw new Unsure();
    }
    // A plain key (up to `: `), or a plain scalar, whose quotes and brackets are only characters.
    for (let i = p; i < lineEnd; i++) {
      const d = text.charCodeAt(i);
      if (d === 35 && text.charCodeAt(i - 1) === 32) break;
      if (d === 58 && (i + 1 === lineEnd || text.charCodeAt(i + 1) === 32)) {
        if (!values) return this.#value(undefined, keyCol - lineStart, i + 1, lineEnd, false);
        let keyEnd = i;
        while (text.charCodeAt(keyEnd - 1) === 32) keyEnd--;
        return this.#value(text.slice(p, keyEnd), keyCol - lineStart, i + 1, lineEnd, true);
      }
    }
    return UNREAD;
  }

  /**
   * The value after a key's `:` at `from` (or a value at `from` when `key` is undefined); `keyIndent` is the key's column.
   * Without `values`, UNREAD instead of the value (the same Unsure either way).
   */
  #value(key: string | undefined, keyIndent: number, from: number, lineEnd: number, values: boolean): LineRead {
    const text = this.#text;
    const p = this.#spaces(from, lineEnd);
    if (p === lineEnd) return values ? { key, scalar: undefined, open: true } : UNREAD;
    const c = text.charCodeAt(p);
    if (c === 35) {
      if (p === from) throw new Unsure();
      return values ? { key, scalar: undefined, open: true } : UNREAD;
    }
    if (c === 34 || c === 39) {
      const close = this.#quoteEnd(p);
      this.#restOfLine(close, this.#lineEnd);
      if (!values) return UNREAD;
      // Escapes, doubled quotes and folded lines would need decoding: only a value without them is an identity's.
      const scalar = this.#multiLine || this.#has(c === 34 ? 92 : 39, p + 1, close - 1) ? undefined : text.slice(p + 1, close - 1);
      return { key, scalar, open: false };
    }
    if (c === 91 || c === 123) {
      this.#restOfLine(this.#flowEnd(p, lineEnd), lineEnd);
      return values ? { key, scalar: undefined, open: false } : UNREAD;
    }
    if (c === 124 || c === 62) {
      // A block scalar header; its body is every deeper line that follows.
      for (let i = p + 1; i < lineEnd; i++) {
        const d = text.charCodeAt(i);
        if (d === 32) {
          this.#restOfLine(i, lineEnd);
          break;
        }
        if (d !== 45 && d !== 43 && !(d >= 49 && d <= 57)) throw new Unsure();
      }
      this.#blockIndent = keyIndent;
      return values ? { key, scalar: undefined, open: false } : UNREAD;
    }
    if (isIndicator(c) || (c === 45 && (p + 1 === lineEnd || text.charCodeAt(p + 1) === 32))) throw new Unsure();
    let valueEnd = lineEnd;
    for (let i = p + 1; i < lineEnd; i++) {
      if (text.charCodeAt(i) === 35 && text.charCodeAt(i - 1) === 32) {
        valueEnd = i;
        break;
      }
    }
    while (text.charCodeAt(valueEnd - 1) === 32) valueEnd--;
    // `a: b: c` (an error for Go) or a value that ends in `:`: not a plain scalar to vouch for.
    if (text.charCodeAt(valueEnd - 1) === 58 || this.#hasColonSpace(p, valueEnd)) throw new Unsure();
    return values ? { key, scalar: resolveGoPlain(text.slice(p, valueEnd)), open: false } : UNREAD;
  }

  /** The start of the first line from `pos` on that is not in a run of PLAIN_LINES (whole lines before `#end` only). */
  #plainLinesFrom(pos: number): number {
    PLAIN_LINE_RUN.lastIndex = pos;
    if (!PLAIN_LINE_RUN.test(this.#text)) return pos;
    const to = PLAIN_LINE_RUN.lastIndex;
    if (to <= this.#end) return to;
    // The run went on into what follows this document: keep its whole lines before the end.
    return Math.max(pos, this.#text.lastIndexOf('\n', this.#end - 1) + 1);
  }

  /** Whether the character `code` occurs in `text[from, to)` (a loop, not indexOf: that would search on past `to`). */
  #has(code: number, from: number, to: number): boolean {
    for (let i = from; i < to; i++) if (this.#text.charCodeAt(i) === code) return true;
    return false;
  }

  /** Whether `: ` occurs in `text[from, to)`. */
  #hasColonSpace(from: number, to: number): boolean {
    for (let i = from; i + 1 < to; i++) if (this.#text.charCodeAt(i) === 58 && this.#text.charCodeAt(i + 1) === 32) return true;
    return false;
  }

  /**
   * The offset just after the quote that closes the quoted scalar opening at
   * `p`. A scalar that goes on over lines (CRD descriptions do) moves the
   * current line to the one where it closes (`#lineEnd`); one with a line at
   * column 0, where Go would still be inside it, is Unsure.
   */
  #quoteEnd(p: number): number {
    const text = this.#text;
    // One native match to the closing quote: quoted CRD descriptions run over many lines.
    const scalar = text.charCodeAt(p) === 34 ? DOUBLE_QUOTED : SINGLE_QUOTED;
    scalar.lastIndex = p;
    if (!scalar.test(text) || scalar.lastIndex > this.#end) throw new Unsure();
    const close = scalar.lastIndex;
    if (text.lastIndexOf('\n', close - 1) > p) {
      let lineEnd = text.indexOf('\n', close);
      if (lineEnd === -1 || lineEnd > this.#end) lineEnd = this.#end;
      this.#lineEnd = lineEnd;
      this.#multiLine = true;
    }
    return close;
  }

  /** The offset just after the bracket that closes the flow collection opening at `p`, on this line, or Unsure. */
  #flowEnd(p: number, lineEnd: number): number {
    const text = this.#text;
    let depth = 0;
    for (let i = p; i < lineEnd; i++) {
      const d = text.charCodeAt(i);
      if (d === 34 || d === 39) {
        i = this.#quoteEnd(i) - 1;
        if (this.#lineEnd !== lineEnd) throw new Unsure(); // a flow collection over lines could reach column 0
      }
      else if (d === 91 || d === 123) depth++;
      else if (d === 93 || d === 125) {
        if (--depth === 0) return i + 1;
      } else if (d === 35 && text.charCodeAt(i - 1) === 32) break;
    }
    throw new Unsure();
  }

  /** Only spaces and a comment may follow on the line. */
  #restOfLine(from: number, lineEnd: number): void {
    const p = this.#spaces(from, lineEnd);
    if (p !== lineEnd && (this.#text.charCodeAt(p) !== 35 || p === from)) throw new Unsure();
  }

  #spaces(from: number, lineEnd: number): number {
    let p = from;
    while (p < lineEnd && this.#text.charCodeAt(p) === 32) p++;
    return p;
  }
}

/** Characters that start something other than a plain scalar or a key: `&*!?%@`,]}[{` and a backquote. */
function isIndicator(c: number): boolean {
  return c === 38 || c === 42 || c === 33 || c === 63 || c === 37 || c === 64 || c === 96 || c === 44 || c === 93 || c === 125 || c === 91 || c === 123;
}
