import { Composer, LineCounter, Parser, isMap, isScalar, isSeq } from 'yaml';
import type { Document, DocumentOptions, ParseOptions, SchemaOptions } from 'yaml';
import { InvalidInputError } from './errors.ts';
import { readFastDocument, scalarResolver } from './fast-yaml.ts';
import type { FastNode, FastPair } from './fast-yaml.ts';

/**
 * The YAML layer of the plugin: split each rendered stream into documents,
 * keep every document's original text (so an untouched document is emitted
 * byte for byte), and turn the YAML into plain values with the limits that
 * untrusted input needs. Parsing uses YAML 1.1, because Argo CD reads our
 * output with Go's YAML 1.1 parser: `yes`/`on` are booleans there, so they
 * must be booleans for the hash and the policy too.
 */

/** Bounds for untrusted input. */
export interface DocumentLimits {
  /** Largest accepted document, in UTF-16 code units of its source text (≈ bytes for YAML). */
  readonly maxDocumentBytes: number;
  /** yaml's alias budget for turning one document into values (guards against "billion laughs"). */
  readonly maxAliasCount: number;
}

/** 8 MiB per document is far above any real manifest (etcd's object limit is 1.5 MiB). */
export const DEFAULT_LIMITS: DocumentLimits = Object.freeze({
  maxDocumentBytes: 8 * 1024 * 1024,
  maxAliasCount: 100,
});

/** One non-empty document of a rendered stream. */
export interface ParsedDocument {
  /** The stream's label: a file path relative to the app directory, or `<stdin>`, `<kustomize build>`... */
  readonly file: string;
  /** Zero-based position of the document in its stream, counting empty documents too. */
  readonly index: number;
  /** The document's source text exactly as it was in the stream. */
  readonly text: string;
  /** Whether `text` starts with its own `---` marker (after any leading comments). */
  readonly explicitStart: boolean;
  /** The parsed value (YAML 1.1 core schema, plain objects and arrays). */
  readonly value: unknown;
  /** The document's root node with source ranges; ranges minus `rangeBase` index into `text`. */
  readonly root: TreeNode;
  /** Where `text` begins in the source the node ranges refer to. */
  readonly rangeBase: number;
}

/**
 * A node as the stamper sees it, from either reader: the fast one's tree, or
 * a view of yaml's syntax tree. `other` is anything the stamper cannot edit
 * through (an alias).
 */
export type TreeNode = FastNode | { readonly type: 'other'; readonly range: readonly [number, number] };

/** A stream of text produced by a source (file, kustomize, helm, stdin). */
export interface TextStream {
  readonly label: string;
  readonly text: string;
}

/**
 * The parse options of every document. YAML 1.1 as Go's parser (sigs.k8s.io/yaml, go-yaml v2) reads it,
 * minus what that parser does not resolve: timestamps stay strings (go-yaml v2 decodes them as strings
 * into untyped values) and there are no base-60 numbers (`22:22` is a string in Go).
 * `prettyErrors: false` keeps source excerpts, which may be Secret data, out of messages.
 */
export const PARSE_OPTIONS: Readonly<ParseOptions & DocumentOptions & SchemaOptions> = Object.freeze({
  version: '1.1',
  prettyErrors: false,
  uniqueKeys: true,
  strict: true,
  keepSourceTokens: false,
  customTags: (tags: Tags): Tags =>
    tags.filter((tag) => {
      const t = tag as { tag?: unknown; format?: unknown };
      return t.tag !== 'tag:yaml.org,2002:timestamp' && t.format !== 'TIME';
    }),
});

type Tags = NonNullable<Exclude<SchemaOptions['customTags'], ((tags: never) => unknown)>>;

/**
 * Parses every document of a stream. Empty documents (nothing but comments,
 * or an explicit `null`) are dropped, as Argo CD drops them. Throws
 * InvalidInputError naming the stream, the document and a line/column.
 */
export function parseStream(stream: TextStream, limits: DocumentLimits = DEFAULT_LIMITS, options: { readonly fast?: boolean } = {}): ParsedDocument[] {
  if (options.fast !== false) {
    const fast = parseStreamFast(stream, limits);
    if (fast !== undefined) return fast;
  }
  const jsonChunks = splitJsonStream(stream.text);
  if (jsonChunks !== undefined) {
    // A stream of concatenated JSON objects (what Argo CD accepts when output starts with `{`):
    // each object becomes its own document.
    const lineCounter = lineCounterFor(stream.text);
    const documents: ParsedDocument[] = [];
    jsonChunks.forEach(([start, end], index) => {
      if (end - start > limits.maxDocumentBytes) throw oversize(stream.label, index, end - start, limits);
      const segment = parseSegment(stream, stream.text.slice(start, end), start, index, lineCounter, limits);
      if (segment.length !== 1) {
        throw new InvalidInputError({ file: stream.label, document: index }, 'expected exactly one JSON object');
      }
      const only = segment[0];
      if (only !== undefined && only.document !== undefined) documents.push(only.document);
    });
    return documents;
  }
  rejectOversizedRegions(stream, limits);
  return parseSegment(stream, stream.text, 0, 0, undefined, limits).flatMap((entry) =>
    entry.document === undefined ? [] : [entry.document],
  );
}

const resolvePlain = scalarResolver(PARSE_OPTIONS);
const DOC_MARKER = /^---(?=[ \n]|$)/gm;

/**
 * The fast path: documents split at line-start `---` markers and read by
 * `fast-yaml.ts`; a document it gives up on is read by yaml alone. Returns
 * undefined when the stream's shape itself is unusual (directives, `...`,
 * content on a `---` line, tabs, CR, JSON), and the whole stream then goes
 * through yaml, so both paths split documents and count them identically.
 */
export function parseStreamFast(stream: TextStream, limits: DocumentLimits = DEFAULT_LIMITS): ParsedDocument[] | undefined {
  const text = stream.text;
  if (text.includes('\r') || text.includes('\t') || text.charCodeAt(0) === 0xfeff || /^(?:%|\.\.\.)/m.test(text)) return undefined;
  if (/^\s*[{\[]/.test(text)) return undefined; // JSON (or flow) documents: yaml's path
  const markers: number[] = [];
  DOC_MARKER.lastIndex = 0;
  for (let m = DOC_MARKER.exec(text); m !== null; m = DOC_MARKER.exec(text)) markers.push(m.index);
  // Regions: [start, bodyStart, end, explicit]. Leading comments before the first marker belong to the first document.
  const regions: [number, number, number, boolean][] = [];
  const leading = text.slice(0, markers[0] ?? text.length);
  if (markers[0] !== 0 && !(markers.length > 0 && /^(?:[ ]*(?:#[^\n]*)?\n)*$/.test(leading))) {
    regions.push([0, 0, markers[0] ?? text.length, false]);
  }
  for (let i = 0; i < markers.length; i++) {
    const marker = markers[i] as number;
    const lineEnd = text.indexOf('\n', marker);
    const bodyStart = lineEnd === -1 ? text.length : lineEnd + 1;
    const rest = text.slice(marker + 3, lineEnd === -1 ? text.length : lineEnd);
    if (!/^(?:[ ]*| +#.*)$/.test(rest)) return undefined; // content on the `---` line
    regions.push([regions.length === 0 ? 0 : marker, bodyStart, markers[i + 1] ?? text.length, true]);
  }
  const documents: ParsedDocument[] = [];
  for (const [index, [start, bodyStart, end, explicit]] of regions.entries()) {
    if (end - start > limits.maxDocumentBytes) throw oversize(stream.label, index, end - start, limits);
    const read = readFastDocument(text, bodyStart, end, resolvePlain);
    if (read === undefined) {
      // Only this document is unusual: yaml reads it alone (errors still name stream lines).
      const entries = parseSegment(stream, text.slice(start, end), start, index, undefined, limits);
      if (entries.length > 1) return undefined;
      const only = entries[0]?.document;
      if (only !== undefined) documents.push({ ...only, explicitStart: explicit });
      continue;
    }
    if (read.root === undefined) continue;
    // The tree is only needed for the few documents that get stamped: read it again then, instead of
    // keeping thousands of trees alive (old-space garbage collection was most of the run time).
    let root: TreeNode | undefined;
    documents.push({
      file: stream.label,
      index,
      text: text.slice(start, end),
      explicitStart: explicit,
      value: read.value,
      get root(): TreeNode {
        root ??= readFastDocument(text, bodyStart, end, resolvePlain)?.root;
        if (root === undefined) throw new Error('internal: a document read once could not be read again');
        return root;
      },
      rangeBase: start,
    });
  }
  return documents;
}

/** A view of a yaml node as a TreeNode, built lazily: only the stamped path is ever looked at. */
function fromYaml(node: unknown): TreeNode {
  const range = (node as { range?: readonly number[] } | null)?.range;
  const r: readonly [number, number] = [range?.[0] ?? 0, range?.[1] ?? 0];
  if (isMap(node)) {
    return {
      type: 'map',
      flow: node.flow === true,
      range: r,
      get pairs(): FastPair[] {
        return node.items.map((pair) => {
          const key = pair.key as { value?: unknown; range?: readonly number[] } | null;
          const keyRange: readonly [number, number] = [key?.range?.[0] ?? 0, key?.range?.[1] ?? 0];
          const value = pair.value === null
            ? { type: 'scalar' as const, range: [keyRange[1] + 1, keyRange[1] + 1] as const, value: null }
            : fromYaml(pair.value);
          return {
            // A key that is not a string (`on:` is a boolean in YAML 1.1) can never be one we look for.
            key: isScalar(key) && typeof key.value === 'string' ? key.value : '\u0000not-a-string',
            keyRange,
            value: value as FastNode,
          };
        });
      },
    };
  }
  if (isSeq(node)) {
    return { type: 'seq', flow: node.flow === true, range: r, get items(): FastNode[] { return node.items.map((item) => fromYaml(item) as FastNode); } };
  }
  if (isScalar(node)) return { type: 'scalar', range: r, value: node.value };
  return { type: 'other', range: r };
}

function oversize(file: string, document: number, size: number, limits: DocumentLimits): InvalidInputError {
  return new InvalidInputError({ file, document }, `document is ${size} bytes, over the limit of ${limits.maxDocumentBytes} bytes`);
}

/**
 * Rejects a huge document before yaml spends time and memory on it. A `---`
 * at the start of a line always starts a document (YAML forbids it inside
 * scalars), so the text between two of them bounds one document's size.
 */
function rejectOversizedRegions(stream: TextStream, limits: DocumentLimits): void {
  const text = stream.text;
  if (text.length <= limits.maxDocumentBytes) return;
  const marker = /^---(?=[ \t\r\n]|$)/gm;
  const starts = [0];
  for (let match = marker.exec(text); match !== null; match = marker.exec(text)) if (match.index > 0) starts.push(match.index);
  // Text before the first marker that holds only comments belongs to the first document.
  const first = text.slice(0, starts[1] ?? text.length);
  const shift = !text.startsWith('---') && /^(?:[ \t]*(?:#[^\n]*)?\r?\n)*[ \t]*$/.test(first) ? 1 : 0;
  starts.forEach((start, i) => {
    const end = starts[i + 1] ?? text.length;
    if (end - start > limits.maxDocumentBytes) throw oversize(stream.label, Math.max(0, i - shift), end - start, limits);
  });
}

interface SegmentEntry {
  readonly document: ParsedDocument | undefined;
}

/** Parses `text` (a stream, or one chunk of a JSON stream starting at `base` in the stream). */
function parseSegment(
  stream: TextStream,
  text: string,
  base: number,
  firstIndex: number,
  sharedLineCounter: LineCounter | undefined,
  limits: DocumentLimits,
): SegmentEntry[] {
  const locate = (offset: number): string => {
    const counter = sharedLineCounter ?? lineCounterFor(stream.text);
    const { line, col } = counter.linePos(base + offset);
    return `line ${line}, column ${col}`;
  };
  const parser = new Parser();
  const composer = new Composer(PARSE_OPTIONS);
  const starts: number[] = [];
  const explicit: boolean[] = [];
  const documents: Document.Parsed[] = [];
  for (const token of parser.parse(text)) {
    if (token.type === 'directive') {
      throw new InvalidInputError(
        { file: stream.label, document: firstIndex + starts.length },
        `${locate(token.offset)}: YAML directives (${token.source.split(/\s/)[0] ?? '%'}) are not supported`,
      );
    }
    if (token.type === 'document') {
      starts.push(token.offset);
      explicit.push(token.start.some((t) => t.type === 'doc-start'));
    }
    for (const doc of composer.next(token)) documents.push(doc);
  }
  for (const doc of composer.end(false, text.length)) documents.push(doc);
  const streamErrors = composer.streamInfo().errors;
  const firstStreamError = streamErrors[0];
  if (firstStreamError !== undefined) {
    throw new InvalidInputError(
      { file: stream.label, document: firstIndex + Math.max(0, starts.length - 1) },
      `${locate(firstStreamError.pos[0])}: ${safeMessage(firstStreamError.message)}`,
    );
  }
  if (documents.length !== starts.length) {
    throw new InvalidInputError({ file: stream.label }, 'could not split the YAML stream into documents');
  }
  return documents.map((ast, i) => {
    const index = firstIndex + i;
    const where = { file: stream.label, document: index };
    const error = ast.errors[0];
    if (error !== undefined) {
      throw new InvalidInputError(where, `${locate(error.pos[0])}: ${safeMessage(error.message)}`);
    }
    // The first document also owns any comments before it; later ones start at their token.
    const start = i === 0 ? 0 : (starts[i] ?? 0);
    const end = starts[i + 1] ?? text.length;
    const size = end - start;
    if (size > limits.maxDocumentBytes) throw oversize(stream.label, index, size, limits);
    let value: unknown;
    try {
      value = ast.toJS({ maxAliasCount: limits.maxAliasCount });
    } catch (cause) {
      const problem = cause instanceof Error && /excessive alias count/i.test(cause.message)
        ? `YAML aliases expand beyond the limit (maxAliasCount ${limits.maxAliasCount})`
        : `cannot read the document: ${cause instanceof Error ? safeMessage(cause.message) : 'unknown error'}`;
      throw new InvalidInputError(where, problem, { cause });
    }
    if (value === null || value === undefined) return { document: undefined };
    return {
      document: {
        file: stream.label,
        index,
        text: text.slice(start, end),
        explicitStart: explicit[i] ?? false,
        value,
        root: fromYaml(ast.contents),
        rangeBase: start,
      },
    };
  });
}

function lineCounterFor(text: string): LineCounter {
  const counter = new LineCounter();
  counter.addNewLine(0);
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) counter.addNewLine(i + 1);
  return counter;
}

/**
 * yaml's messages without the input bytes some of them quote (a tag, an
 * escape, a token's source, which can be a Secret's value), on one line, bounded.
 */
const REDACTIONS: readonly (readonly [RegExp, string])[] = [
  [/^(Plain value cannot start with) .*$/s, '$1 this character'],
  [/^(Unknown directive|Unsupported YAML version) .*$/s, '$1'],
  [/^(Could not resolve tag|Not a valid tag|Unresolved tag):? .*$/s, '$1'],
  [/^The .* tag has no suffix$/s, 'A tag has no suffix'],
  [/^Verbatim tags aren't resolved.*$/s, "Verbatim tags aren't resolved"],
  [/^(Block scalar header includes extra characters):? .*$/s, '$1'],
  [/^(Invalid escape sequence) .*$/s, '$1'],
  [/^(Anchors and tags must be after the) .* (indicator)$/s, '$1 $2'],
  [/^Unexpected (?!, in )(?:.*) in ([a-z ]+)$/s, 'Unexpected token in $1'],
  // Parser error tokens: `<message>: "<the token's source>"`.
  [/^([^"]*?): ".*"$/s, '$1'],
  [/^Unresolved alias.*$/s, 'an alias refers to an anchor that is not defined before it'],
];

function safeMessage(message: string): string {
  let out = message;
  for (const [pattern, replacement] of REDACTIONS) {
    if (pattern.test(out)) {
      out = out.replace(pattern, replacement);
      break;
    }
  }
  const first = out.split('\n', 1)[0] ?? '';
  return first.length > 200 ? `${first.slice(0, 200)}…` : first;
}

/**
 * Splits a stream of concatenated JSON objects (`{...}{...}` or one per line)
 * into [start, end) ranges, or returns undefined when the text is not such a
 * stream of two or more objects (then it is parsed as YAML, which also covers
 * a single JSON object).
 */
export function splitJsonStream(text: string): Array<[number, number]> | undefined {
  let i = skipWhitespace(text, 0);
  if (text[i] !== '{') return undefined;
  const chunks: Array<[number, number]> = [];
  while (i < text.length) {
    if (text[i] !== '{') return undefined;
    const end = endOfJsonObject(text, i);
    if (end === undefined) return undefined;
    chunks.push([i, end]);
    i = skipWhitespace(text, end);
  }
  return chunks.length >= 2 ? chunks : undefined;
}

function skipWhitespace(text: string, from: number): number {
  let i = from;
  while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  return i;
}

/** The offset just after the `}` that closes the object opening at `start`, if the braces balance. */
function endOfJsonObject(text: string, start: number): number | undefined {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === '{' || c === '[') {
      depth++;
    } else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return undefined;
}
