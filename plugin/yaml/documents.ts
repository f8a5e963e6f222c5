import type { Document, DocumentOptions, ParseOptions, Scalar, SchemaOptions } from 'yaml';
import { InvalidInputError } from '../errors.ts';
import { loadYaml } from './lazy-yaml.ts';
import type { InputLocation } from '../errors.ts';
import { KeyCache, readFastDocument, readFastTree } from './fast-yaml.ts';
import { goAliasUse } from './go-aliases.ts';
import { GO_SCALAR_TAGS, classifyGoPlain } from './go-scalars.ts';
import type { FastDocument, FastNode, FastPair } from './fast-yaml.ts';
import { Locator, helmTemplateOf } from './locate.ts';
import { splitDocuments } from './split.ts';
import type { Region } from './split.ts';
import { skimIdentity } from './skim.ts';
import type { Identity } from './skim.ts';
import { apiGroup, readsBeyondIdentity } from '../../core/index.ts';

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
  /**
   * Most alias nodes (`*name`) in one document. Not Go's limit (Go bounds what aliases expand to, as
   * go-aliases.ts does here too), but yaml's: it finds each alias's anchor by a scan of the document's
   * anchors and aliases, so its time grows with the square of their number (10,000 took 2 s).
   */
  readonly maxAliases: number;
  /** Deepest nesting of mappings and sequences accepted (deeper input would exhaust the stack). */
  readonly maxDepth?: number;
}

/** 8 MiB per document is far above any real manifest (etcd's object limit is 1.5 MiB). */
export const DEFAULT_LIMITS: DocumentLimits = Object.freeze({
  maxDocumentBytes: 8 * 1024 * 1024,
  maxAliases: 5000,
  maxDepth: 200,
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
  /**
   * Only for a document read no further than its identity (its kind needs no
   * more, `readsBeyondIdentity`): `{ apiVersion, kind, metadata }` as Go reads
   * them. `value` is then read on first use.
   */
  readonly identity?: Identity;
  /** The document's root node with source ranges; ranges minus `rangeBase` index into `text`. */
  readonly root: TreeNode;
  /** Where `text` begins in the source the node ranges refer to. */
  readonly rangeBase: number;
  /**
   * Set when the fast reader read the document (its value and its tree): the stamper may then check an
   * edit by that reader's line rules instead of reading the stamped document again (stamp.ts).
   */
  readonly fastRead?: true;
  /**
   * From the fast reader: each block mapping of `value` that is the value of a `template`, `metadata`
   * or `annotations` key, with the source offset of its first key; the stamper's usual insertion
   * needs nothing else, so a workload is not read a second time for its tree.
   */
  readonly blockMaps?: ReadonlyMap<object, number>;
  /** The template file helm names for the document (its `# Source:` comment), for messages. */
  readonly template?: string;
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
  /** A renderer's output (helm, kustomize) rather than a file: messages count lines within the document. */
  readonly rendered?: boolean;
}

/** The tags Go knows besides its scalar resolution: mappings, sequences, strings and the merge key. */
const KEPT_TAGS = new Set(['tag:yaml.org,2002:map', 'tag:yaml.org,2002:seq', 'tag:yaml.org,2002:str', 'tag:yaml.org,2002:merge']);

/**
 * The parse options of every document: YAML 1.1 as Argo CD's Go parser
 * (sigs.k8s.io/yaml, go-yaml v2) reads it. yaml's own 1.1 scalar tags are
 * replaced by Go's resolution (`go-scalars.ts`: `e5` is a string, `0o17` an
 * int, timestamps and base-60 numbers strings); `!!binary`, `!!set`,
 * `!!omap`, `!!pairs` and `!!timestamp` are not known, so they are errors.
 * `prettyErrors: false` keeps source excerpts, which may be Secret data, out of messages.
 */
export const PARSE_OPTIONS: Readonly<ParseOptions & DocumentOptions & SchemaOptions> = Object.freeze({
  version: '1.1',
  prettyErrors: false,
  // Go's reader keeps the last of duplicate keys, and so does yaml's toJS without this check; keys that
  // collide only by name (`1` and `"1"`) are refused in checkGoCompatibility.
  uniqueKeys: false,
  strict: true,
  keepSourceTokens: false,
  customTags: (tags: Tags): Tags => [
    ...tags.filter((tag) => KEPT_TAGS.has(String((tag as { tag?: unknown }).tag))),
    ...(GO_SCALAR_TAGS as unknown as Tags),
  ],
});

type Tags = NonNullable<Exclude<SchemaOptions['customTags'], ((tags: never) => unknown)>>;

/**
 * Parses every document of a stream. Empty documents (nothing but comments,
 * or an explicit `null`) are dropped, as Argo CD drops them. Throws
 * InvalidInputError naming the stream, the document and a line/column.
 */
export function parseStream(input: TextStream, limits: DocumentLimits = DEFAULT_LIMITS, options: { readonly fast?: boolean } = {}): ParsedDocument[] {
  // A byte order mark starts the stream, not the first document: Go skips it when it reads our input,
  // but after the `---` we may put in front of the document it would become part of the first key.
  const stream = input.text.charCodeAt(0) === 0xfeff ? { ...input, text: input.text.slice(1) } : input;
  rejectForeignCharacters(stream);
  rejectBadSeparators(stream);
  if (options.fast !== false) {
    const fast = parseStreamFast(stream, limits);
    if (fast !== undefined) return fast;
  }
  const jsonChunks = splitJsonStream(stream.text);
  if (jsonChunks !== undefined) {
    // A stream of concatenated JSON objects (what Argo CD accepts when output starts with `{`):
    // each object becomes its own document.
    const documents: ParsedDocument[] = [];
    jsonChunks.forEach(([start, end], index) => {
      if (end - start > limits.maxDocumentBytes) throw oversize(stream.label, index, end - start, limits);
      const document = parseSegment(stream, [start, end, false], index, limits);
      if (document !== undefined) documents.push(document);
    });
    return documents;
  }
  // The same regions as the fast path's, each read by yaml alone, as Argo CD's splitter hands each to Go.
  const regions = splitDocuments(stream.text);
  rejectOversizedRegions(stream, regions, limits);
  const documents: ParsedDocument[] = [];
  regions.forEach(([start, , end, explicit], index) => {
    const document = parseSegment(stream, [start, end, explicit], index, limits);
    if (document !== undefined) documents.push(document);
  });
  return documents;
}

/**
 * Characters that Go's YAML parser takes for line breaks (NEL, LINE
 * SEPARATOR, PARAGRAPH SEPARATOR) and `yaml` does not, plus a byte order
 * mark after the start: the two parsers would see different keys and values
 * (`a: x # c<U+2028>b: hidden` has a key `b` only for Go), so neither reading
 * can be trusted; the same for a carriage return without a line feed. Rejected
 * anywhere, even in quoted text, where Go folds them.
 * And the characters Go's reader refuses anywhere in its input, comments and
 * quoted text included, where `yaml` reads them: C0 and C1 control characters
 * but tab, LF, CR (and NEL, above), DEL, U+FFFE and U+FFFF. Runs on every
 * stream, so it is two regular-expression scans and nothing more.
 */
function rejectForeignCharacters(stream: TextStream): void {
  // Two scans, not one: V8 finds the few line-break characters by a skip loop (under 1 ms for 12 MB of
  // ASCII), and one class of all of them ran at 27 ms, twice the two together.
  const lineBreak = /[\u0085\u2028\u2029\ufeff]|\r(?!\n)/.exec(stream.text);
  // eslint-disable-next-line no-control-regex -- control characters are what this looks for
  const refused = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u0084\u0086-\u009f\ufffe\uffff]/.exec(stream.text);
  const found = lineBreak === null || (refused !== null && refused.index < lineBreak.index) ? refused : lineBreak;
  if (found === null) return;
  const offset = found.index;
  const document = Math.max(0, splitDocuments(stream.text.slice(0, offset + 1)).length - 1);
  const locator = new Locator(stream);
  const code = found[0].charCodeAt(0);
  const codeName = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  const name = found[0] === '\ufeff' ? 'a byte order mark (U+FEFF) after the start of the stream'
    : found[0] === '\r' ? 'a carriage return not followed by a line feed (CR-only line endings?), which Argo CD\'s YAML parser reads as a line break and this plugin\'s does not; use LF or CRLF line endings, or write it as \\r in a double-quoted string'
    : found === lineBreak ? `${codeName}, which Argo CD's YAML parser reads as a line break and this plugin's does not`
    : `${codeName}, a character Argo CD's YAML parser refuses anywhere in its input (a control character, or a noncharacter), even in a comment or a quoted string${code === 0 ? ' (UTF-16 without a byte order mark? save the file as UTF-8)' : ''}`;
  const fix = found[0] === '\r' ? '' : '; remove it or write it as an escape in a double-quoted string';
  throw new InvalidInputError(locator.where(document, offset), `${locator.at(offset)}: ${name}${fix}`);
}

/**
 * Argo CD splits the stream at every line that starts with `---` before
 * any YAML parsing, and refuses one with anything but a comment after it
 * (`--- a`, `----`, `---x`), where YAML would read a value or a scalar.
 */
function rejectBadSeparators(stream: TextStream): void {
  const found = /^---(?:[ \t]*[^ \t\r\n#]|[^ \t\r\n])/m.exec(stream.text);
  if (found === null) return;
  const document = Math.max(0, splitDocuments(stream.text.slice(0, found.index + 1)).length - 1);
  const locator = new Locator(stream);
  throw new InvalidInputError(
    locator.where(document, found.index),
    `${locator.at(found.index)}: a line starting with --- must be a document separator, followed by nothing but a comment (Argo CD splits documents there)`,
  );
}

/**
 * The fast path: documents split at line-start `---` markers and read by
 * `fast-yaml.ts`; a document it gives up on is read by yaml alone. Returns
 * undefined when the stream's shape itself is unusual (directives, `...`,
 * content on a `---` line, tabs, CR, JSON), and every document then goes
 * through yaml. Both paths split with `splitDocuments`, so they cut and
 * count documents identically.
 */
export function parseStreamFast(stream: TextStream, limits: DocumentLimits = DEFAULT_LIMITS): ParsedDocument[] | undefined {
  const text = stream.text;
  if (text.includes('\r') || text.includes('\t') || /^(?:%|\.\.\.)/m.test(text)) return undefined;
  if (/^\s*[{[]/.test(text)) return undefined; // JSON (or flow) documents: yaml's path
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
  const regions = splitDocuments(text);
  const documents: ParsedDocument[] = [];
  const keys = new KeyCache();
  for (let index = 0; index < regions.length; index++) {
    const [start, bodyStart, end, explicit, marker] = regions[index] as Region;
    // Content on the `---` line: yaml's path. A bare `---` line, the usual, needs no regular expression.
    const bareMarker = bodyStart === marker + 4 && text.charCodeAt(marker + 3) === 10;
    if (explicit && !bareMarker && !/^(?:[ ]*| +#.*)\n?$/.test(text.slice(marker + 3, bodyStart))) return undefined;
    if (end - start > limits.maxDocumentBytes) throw oversize(stream.label, index, end - start, limits);
    const identity = readsInFull(text, bodyStart) ? undefined : skimIdentity(text, bodyStart, end);
    if (identity !== undefined && !readsBeyondIdentity(apiGroup(identity.apiVersion), identity.kind)) {
      documents.push(new SkimmedDocument(stream, index, [start, bodyStart, end, explicit], identity, limits));
      continue;
    }
    const read = readFastDocument(text, bodyStart, end, maxDepth, keys);
    if (read === undefined) {
      // Only this document is unusual: yaml reads it alone (errors still name stream lines).
      const document = parseSegment(stream, [start, end, explicit], index, limits);
      if (document !== undefined) documents.push(document);
      continue;
    }
    if (read.value === null) continue;
    documents.push(new FastReadDocument(stream.label, index, text, [start, bodyStart, end, explicit], read, maxDepth));
  }
  return documents;
}

/** What every document of a stream holds, whichever reader read it: its place, its text and helm's template name. */
class StreamDocument {
  readonly file: string;
  readonly index: number;
  readonly text: string;
  readonly explicitStart: boolean;
  readonly rangeBase: number;
  readonly template: string | undefined;

  constructor(file: string, index: number, source: string, start: number, end: number, explicit: boolean) {
    this.file = file;
    this.index = index;
    this.text = source.slice(start, end);
    this.explicitStart = explicit;
    this.rangeBase = start;
    this.template = helmTemplateOf(this.text);
  }
}

/**
 * A document the fast reader read. Its tree is only needed if it gets stamped: read then, instead of
 * building thousands of trees (allocation and garbage collection were most of the run time), on every
 * ask and not kept (a kept tree lives to the end of the run; the stamper asks once per document).
 * A class rather than an object literal with a getter: one shape and no closures for thousands of documents.
 */
class FastReadDocument extends StreamDocument implements ParsedDocument {
  readonly value: unknown;
  readonly fastRead = true as const;
  readonly blockMaps: ReadonlyMap<object, number> | undefined;
  readonly #source: string;
  readonly #bodyStart: number;
  readonly #end: number;
  readonly #maxDepth: number;

  constructor(file: string, index: number, source: string, [start, bodyStart, end, explicit]: readonly [number, number, number, boolean], read: FastDocument, maxDepth: number) {
    super(file, index, source, start, end, explicit);
    this.value = read.value;
    this.blockMaps = read.blockMaps;
    this.#source = source;
    this.#bodyStart = bodyStart;
    this.#end = end;
    this.#maxDepth = maxDepth;
  }

  get root(): TreeNode {
    const root = readFastTree(this.#source, this.#bodyStart, this.#end, this.#maxDepth);
    if (root === undefined) throw new Error('internal: a document read once could not be read again');
    return root;
  }
}

const DEFAULT_MAX_DEPTH = 200;

/** `apiVersion: x` and `kind: y` as a document's first lines (after comments), as renderers print them. */
const LEADING_IDENTITY = /(?:#[^\n]*\n)*apiVersion: ([A-Za-z0-9./-]+)\nkind: ([A-Za-z0-9]+)\n/y;

/**
 * Whether a document evidently needs its full read (a workload, a config, a
 * List...): then skimming its identity first is wasted work. Only a hint,
 * and a safe one: a later repeated `kind` could change the kind, but the full
 * read is what a skim that is unsure falls back to anyway, and it is always right.
 */
function readsInFull(text: string, bodyStart: number): boolean {
  LEADING_IDENTITY.lastIndex = bodyStart;
  const match = LEADING_IDENTITY.exec(text);
  return match !== null && readsBeyondIdentity(apiGroup(match[1] as string), match[2] as string);
}

/**
 * A document whose kind needs nothing but its identity (skim.ts): emitted as
 * it is, its value read only if something asks for it (a test, a message),
 * by the reader that would have read it.
 */
class SkimmedDocument extends StreamDocument implements ParsedDocument {
  readonly identity: Identity;
  readonly #stream: TextStream;
  readonly #bodyStart: number;
  readonly #end: number;
  readonly #limits: DocumentLimits;
  #full: ParsedDocument | undefined;

  constructor(stream: TextStream, index: number, [start, bodyStart, end, explicit]: readonly [number, number, number, boolean], identity: Identity, limits: DocumentLimits) {
    super(stream.label, index, stream.text, start, end, explicit);
    this.identity = identity;
    this.#stream = stream;
    this.#bodyStart = bodyStart;
    this.#end = end;
    this.#limits = limits;
  }

  get value(): unknown {
    return this.#read().value;
  }

  get root(): TreeNode {
    return this.#read().root;
  }

  #read(): ParsedDocument {
    if (this.#full !== undefined) return this.#full;
    const text = this.#stream.text;
    const maxDepth = this.#limits.maxDepth ?? DEFAULT_MAX_DEPTH;
    const fast = readFastDocument(text, this.#bodyStart, this.#end, maxDepth);
    const root = fast === undefined || fast.value === null ? undefined : readFastTree(text, this.#bodyStart, this.#end, maxDepth);
    this.#full = fast !== undefined && root !== undefined
      ? { file: this.file, index: this.index, text: this.text, explicitStart: this.explicitStart, value: fast.value, root, rangeBase: this.rangeBase }
      : parseSegment(this.#stream, [this.rangeBase, this.#end, this.explicitStart], this.index, this.#limits);
    if (this.#full === undefined) throw new Error('internal: a document with a kind has no value');
    return this.#full;
  }
}

/** A view of a yaml node as a TreeNode, built lazily: only the stamped path is ever looked at. */
function fromYaml(node: unknown): TreeNode {
  const { isMap, isScalar, isSeq } = loadYaml();
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
            // A merge key (its value is a symbol) is named `<<`, so the stamper can see that keys are merged in.
            key: isScalar(key) && typeof key.value === 'string' ? key.value : isScalar(key) && typeof key.value === 'symbol' ? '<<' : '\u0000not-a-string',
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

/** Rejects a huge document before yaml spends time and memory on it (on any document: before any is read). */
function rejectOversizedRegions(stream: TextStream, regions: readonly Region[], limits: DocumentLimits): void {
  if (stream.text.length <= limits.maxDocumentBytes) return;
  regions.forEach(([start, , end], index) => {
    if (end - start > limits.maxDocumentBytes) throw oversize(stream.label, index, end - start, limits);
  });
}

/**
 * One document of a stream as `splitDocuments` found it, or one object of a
 * JSON stream: [start, end) in the stream, and whether it has its own `---`.
 */
type Segment = readonly [start: number, end: number, explicit: boolean];

/**
 * Reads one document, `segment` of the stream, with yaml. The document's
 * bounds are the splitter's, never yaml's: yaml only reads what the splitter
 * cut, as Go only reads what Argo CD's splitter cuts. Undefined for a
 * document with nothing in it (comments, `null`).
 */
function parseSegment(stream: TextStream, [start, end, explicit]: Segment, index: number, limits: DocumentLimits): ParsedDocument | undefined {
  const text = stream.text.slice(start, end);
  const locator = new Locator(stream, text.length === stream.text.length ? undefined : [start, end]);
  // Offsets of yaml's nodes and tokens are relative to `text`.
  const problems: Problems = {
    at: (offset) => locator.at(start + offset),
    where: (offset) => locator.where(index, start + offset),
  };
  try {
    return composeSegment(stream, text, index, explicit, limits, problems);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new InvalidInputError(
      { file: stream.label, document: index },
      `the YAML nests too deeply to read (the limit is ${limits.maxDepth ?? DEFAULT_MAX_DEPTH} levels of mappings and sequences)`,
      { cause: error },
    );
  }
}

/** How composeSegment names a place in its text: `at` for the line, `where` for the document and its object. */
interface Problems {
  at(offset: number): string;
  where(offset: number): InputLocation;
}

function composeSegment(stream: TextStream, text: string, index: number, explicit: boolean, limits: DocumentLimits, problems: Problems): ParsedDocument | undefined {
  const locate = (offset: number): string => problems.at(offset);
  // Named only on the way to an error (it reads the document again): its last character is surely its own.
  const where = (offset = Math.max(0, text.length - 1)): InputLocation => problems.where(offset);
  const { Composer, Parser } = loadYaml();
  const parser = new Parser();
  const composer = new Composer(PARSE_OPTIONS);
  const documents: Document.Parsed[] = [];
  let afterEnd = false;
  for (const token of parser.parse(text)) {
    if (token.type === 'directive') {
      throw new InvalidInputError(
        where(token.offset),
        `${locate(token.offset)}: YAML directives (${token.source.split(/\s/)[0] ?? '%'}) are not supported`,
      );
    }
    // After `...`, Argo CD's splitter keeps reading the same document up to the next `---`, and Go's
    // parser then ignores everything after the `...`: a document there would vanish for Argo CD.
    if (token.type === 'document' && afterEnd) {
      throw new InvalidInputError(
        where(token.offset),
        `${locate(token.offset)}: a document after a ... end marker must start with --- (Argo CD would ignore it)`,
      );
    }
    if (token.type === 'doc-end') afterEnd = true;
    for (const doc of composer.next(token)) documents.push(doc);
  }
  for (const doc of composer.end(false, text.length)) documents.push(doc);
  const firstStreamError = composer.streamInfo().errors[0];
  if (firstStreamError !== undefined) {
    throw new InvalidInputError(where(firstStreamError.pos[0]), `${locate(firstStreamError.pos[0])}: ${safeMessage(firstStreamError.message)}`);
  }
  // The splitter cut at every line-start `---`, and a second document after `...` is refused above.
  if (documents.length > 1) throw new InvalidInputError(where(), 'could not split the YAML stream into documents');
  const ast = documents[0];
  if (ast === undefined) return undefined;
  // Warnings are errors too: an unknown tag (`!foo`, `!<...>`) is read differently by Go.
  const error = ast.errors[0] ?? ast.warnings[0];
  if (error !== undefined) {
    const problem = error.code === 'TAG_RESOLVE_FAILED' && error.message.startsWith('Unresolved tag') ? unreadTag(error.message) : safeMessage(error.message);
    throw new InvalidInputError(where(error.pos[0]), `${locate(error.pos[0])}: ${problem}`);
  }
  const hasAliases = checkGoCompatibility(ast, text, where, locate);
  if (text.length > limits.maxDocumentBytes) throw oversize(stream.label, index, text.length, limits);
  if (hasAliases) checkAliases(ast, where, limits);
  let value: unknown;
  try {
    // Aliases are bounded above, as Go bounds them; yaml's own count (100 uses of an anchor) is stricter than Go's.
    value = ast.toJS({ maxAliasCount: -1 });
  } catch (cause) {
    throw new InvalidInputError(where(), `cannot read the document: ${cause instanceof Error ? safeMessage(cause.message) : 'unknown error'}`, { cause });
  }
  if (value === null || value === undefined) return undefined;
  checkExpansion(value, where, limits);
  const template = helmTemplateOf(text);
  return {
    file: stream.label,
    index,
    text,
    explicitStart: explicit,
    value,
    root: fromYaml(ast.contents),
    // yaml read the document alone: its node ranges index into `text`.
    rangeBase: 0,
    ...(template === undefined ? {} : { template }),
  };
}

/**
 * What Go reads differently than `yaml`, found in the syntax tree: mapping
 * keys Go names otherwise (null, float, a collection), a merge key after
 * explicit keys (Go lets the merged values overwrite them, YAML does not),
 * a `?` inside a plain scalar in a flow collection (it ends the scalar for Go),
 * a `\u` escape of a surrogate (Go refuses even a valid pair).
 */
/** `\uD800`-`\uDFFF` as an escape (after an even number of backslashes), in a double-quoted scalar's source. */
const SURROGATE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u[dD][89a-fA-F]/;

/** Returns whether the document holds an alias (`*name`), which checkAliases then bounds. */
function checkGoCompatibility(ast: Document.Parsed, text: string, where: (offset?: number) => InputLocation, locate: (offset: number) => string): boolean {
  const { isAlias, isMap, isScalar, isSeq } = loadYaml();
  let hasAliases = false;
  // A plain walk with an explicit stack: yaml's `visit` was a tenth of the time of a stamped render.
  const stack: [unknown, boolean][] = [[ast.contents, false]];
  while (stack.length > 0) {
    const [node, inFlow] = stack.pop() as [unknown, boolean];
    if (isScalar(node)) {
      // The scalar's own source text (its range), not its value: only an escape is refused, never the characters.
      if (node.type === 'QUOTE_DOUBLE' && node.range !== undefined && node.range !== null && SURROGATE_ESCAPE.test(text.slice(node.range[0], node.range[1]))) {
        throw new InvalidInputError(where(node.range?.[0] ?? 0), `${locate(node.range?.[0] ?? 0)}: a \\u escape of a UTF-16 surrogate (\\uD800-\\uDFFF), which Argo CD's YAML parser refuses; write the character itself or use \\U with 8 hex digits`);
      }
      if (inFlow && node.type === 'PLAIN' && typeof node.source === 'string' && node.source.includes('?')) {
        throw new InvalidInputError(where(node.range?.[0] ?? 0), `${locate(node.range?.[0] ?? 0)}: a "?" inside an unquoted value in [...] or {...} ends the value for Argo CD's YAML parser; quote the value`);
      }
    } else if (isAlias(node)) {
      hasAliases = true;
    } else if (isSeq(node)) {
      const flow = inFlow || node.flow === true;
      for (const item of node.items) stack.push([item, flow]);
    } else if (isMap(node)) {
      const flow = inFlow || node.flow === true;
      // Go's key type for each JSON name: a repeated key is a duplicate (last wins), but `1` and `"1"` are two
      // Go keys that JSON names alike, and which one Argo CD keeps depends on Go's random map order.
      const goKeyTypes = new Map<string, string>();
      node.items.forEach((pair, i) => {
        const key = pair.key;
        const at = (key as { range?: readonly number[] } | null)?.range?.[0] ?? node.range?.[0] ?? 0;
        const value = isScalar(key) ? key.value : undefined;
        if (typeof value === 'symbol') {
          if (i > 0) throw new InvalidInputError(where(at), `${locate(at)}: a merge key (<<) must come first in its mapping: Argo CD lets it overwrite the keys before it`);
        } else {
          // A number key is an int for Go only as Go resolves it (`1e3` is a float there, named `1000` by yaml).
          const goInt = typeof value === 'number' && (key as Scalar).type === 'PLAIN' && classifyGoPlain(String((key as Scalar).source))[0] === 'int';
          const plainKey = typeof value === 'string' || typeof value === 'boolean' || goInt;
          if (!plainKey) throw new InvalidInputError(where(at), `${locate(at)}: a mapping key must be a string, an integer or a boolean (Argo CD reads other keys differently or not at all)`);
          const name = String(value);
          const seen = goKeyTypes.get(name);
          if (seen !== undefined && seen !== typeof value) {
            throw new InvalidInputError(where(at), `${locate(at)}: two keys of this mapping have the same name but different types (such as 1 and "1", or true and "true"); Argo CD keeps one of them at random, so quote both or neither`);
          }
          goKeyTypes.set(name, typeof value);
          stack.push([key, flow]);
        }
        stack.push([pair.value, flow]);
      });
    }
  }
  return hasAliases;
}

/**
 * Refuses what Argo CD's YAML parser refuses, aliases that expand too far
 * (go-aliases.ts), before yaml expands them; and more aliases than yaml can
 * resolve in reasonable time (`maxAliases`).
 */
function checkAliases(ast: Document.Parsed, where: () => InputLocation, limits: DocumentLimits): void {
  const use = goAliasUse(ast, limits.maxAliases);
  if (use.aliases > limits.maxAliases) {
    throw new InvalidInputError(where(), `more than ${limits.maxAliases} YAML aliases (*name) in one document, the plugin's limit; write some of the values out instead of aliasing them, or split the document`);
  }
  if (use.excessive) {
    throw new InvalidInputError(
      where(),
      'YAML aliases expand beyond the limit of Argo CD\'s YAML parser ("document contains excessive aliasing": once over 100 values come from aliases, ' +
        'they may be at most 99% of the values decoded, less in documents of over 400,000 values); write the values out instead of aliasing them',
    );
  }
}

/** Bounds what aliases expand to and how deep values nest, before core code walks them recursively. */
function checkExpansion(value: unknown, where: () => InputLocation, limits: DocumentLimits): void {
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
  let budget = limits.maxDocumentBytes;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    budget -= typeof node === 'string' ? node.length + 1 : 1;
    if (budget < 0) {
      throw new InvalidInputError(where(), `YAML aliases expand the document beyond ${limits.maxDocumentBytes} bytes (the per-document limit)`);
    }
    if (typeof node !== 'object' || node === null) continue;
    if (depth >= maxDepth) throw new InvalidInputError(where(), `the document nests deeper than ${maxDepth} levels of mappings and sequences`);
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
  }
}

/** The standard YAML types Go reads and this plugin does not, and what to write instead. */
const UNREAD_TAGS: ReadonlyMap<string, string> = new Map([
  ['binary', "which Argo CD's YAML parser decodes from base64 and this plugin does not read; put the base64 text without the tag under data (Secret) or binaryData (ConfigMap), or write the decoded text as a plain string"],
  ['set', "which this plugin does not read (Argo CD reads it as a mapping of nulls); remove the tag and write a plain mapping"],
  ['omap', "which this plugin does not read (Argo CD reads it as a sequence of mappings); remove the tag and write a plain sequence"],
  ['pairs', "which this plugin does not read (Argo CD reads it as a sequence of mappings); remove the tag and write a plain sequence"],
  ['timestamp', "which this plugin does not read (Argo CD reads it as a string); remove the tag and quote the value"],
]);

/**
 * The refusal of a tag yaml could not resolve (PARSE_OPTIONS keeps only the tags Go reads as this
 * plugin does), naming the tag only when it is a standard type: any other tag is input, maybe a secret.
 */
function unreadTag(message: string): string {
  const standard = /^Unresolved tag: tag:yaml\.org,2002:([a-z]+)$/.exec(message)?.[1];
  const fix = standard === undefined ? undefined : UNREAD_TAGS.get(standard);
  if (standard !== undefined && fix !== undefined) return `a !!${standard} value, ${fix}`;
  return "a tag that is not a standard YAML type, which Argo CD's YAML parser ignores or reads otherwise; remove the tag (quote the value to keep it a string)";
}

/**
 * yaml's messages without the input bytes some of them quote (a tag, an
 * escape, a token's source, which can be a Secret's value), on one line, bounded.
 */
const REDACTIONS: readonly (readonly [RegExp, string])[] = [
  [/^Maximum call stack size exceeded.*$/s, 'the YAML nests too deeply to read'],
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
