/**
 * JSON read the way Go's `encoding/json` (v1) reads it into a struct, for the
 * cluster Secret's `config`: Argo CD unmarshals it with `json.Unmarshal`, and
 * a config Argo CD accepts must mean the same thing here.
 *
 * `JSON.parse` is not enough: Go matches object keys to struct fields
 * case-insensitively (`BearerToken` fills `bearerToken`), and a key given
 * twice is decoded twice into the same value — a nested struct or map is
 * merged, not replaced — where `JSON.parse` keeps only the last one. So the
 * text is parsed into a tree that keeps every member in order, and the
 * decoders below apply Go's rules to it. Pure.
 */

/** A parsed JSON value with every object member kept, duplicates included, in order. */
export type JsonNode =
  | { readonly kind: 'object'; readonly members: readonly (readonly [string, JsonNode])[] }
  | { readonly kind: 'array'; readonly items: readonly JsonNode[] }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'number'; readonly text: string }
  | { readonly kind: 'bool'; readonly value: boolean }
  | { readonly kind: 'null' };

/** The text is not JSON, or a value has the wrong type for its field; names the field, never a value. */
export class GoJsonError extends Error {
  override readonly name = 'GoJsonError';
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// A JSON string: no raw control characters, only the escapes JSON allows.
// oxlint-disable-next-line no-control-regex -- the grammar forbids exactly these
const STRING = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;
const SPACE = /[ \t\n\r]*/y;
const MAX_DEPTH = 1000;

/** A recursive-descent reader over `text`; `at` is the next character. */
class Reader {
  at = 0;
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }

  skip(): void {
    SPACE.lastIndex = this.at;
    SPACE.exec(this.text);
    this.at = SPACE.lastIndex;
  }

  fail(): never {
    throw new GoJsonError(`not valid JSON (at offset ${this.at})`);
  }

  /** Consumes `word` or fails. */
  literal(word: string): void {
    if (!this.text.startsWith(word, this.at)) this.fail();
    this.at += word.length;
  }

  string(): string {
    STRING.lastIndex = this.at;
    const match = STRING.exec(this.text);
    if (match === null) return this.fail();
    this.at = STRING.lastIndex;
    // Go replaces an unpaired surrogate escape with U+FFFD; JSON.parse keeps it.
    return (JSON.parse(match[0]) as string).toWellFormed();
  }

  /** Reads `{…}` or `[…]` after its opening bracket: items until `close`, separated by commas. */
  sequence(close: string, item: () => void): void {
    this.at++;
    this.skip();
    if (this.text[this.at] === close) {
      this.at++;
      return;
    }
    for (;;) {
      item();
      this.skip();
      if (this.text[this.at] === ',') this.at++;
      else if (this.text[this.at] === close) break;
      else this.fail();
    }
    this.at++;
  }

  object(depth: number): JsonNode {
    const members: [string, JsonNode][] = [];
    this.sequence('}', () => {
      this.skip();
      if (this.text[this.at] !== '"') this.fail();
      const key = this.string();
      this.skip();
      if (this.text[this.at] !== ':') this.fail();
      this.at++;
      members.push([key, this.value(depth + 1)]);
    });
    return { kind: 'object', members };
  }

  value(depth: number): JsonNode {
    // Go's decoder allows 10,000 levels; a recursive parser overflows the stack before that. No cluster
    // config nests more than three, so deeper text is refused (not read differently).
    if (depth > MAX_DEPTH) throw new GoJsonError(`nested deeper than ${MAX_DEPTH} levels`);
    this.skip();
    const c = this.text[this.at];
    if (c === '{') return this.object(depth);
    if (c === '[') {
      const items: JsonNode[] = [];
      this.sequence(']', () => items.push(this.value(depth + 1)));
      return { kind: 'array', items };
    }
    if (c === '"') return { kind: 'string', value: this.string() };
    if (c === 't') return (this.literal('true'), { kind: 'bool', value: true });
    if (c === 'f') return (this.literal('false'), { kind: 'bool', value: false });
    if (c === 'n') return (this.literal('null'), { kind: 'null' });
    NUMBER.lastIndex = this.at;
    const number = NUMBER.exec(this.text);
    if (number === null) return this.fail();
    this.at = NUMBER.lastIndex;
    return { kind: 'number', text: number[0] };
  }
}

/** Parses `text` as one JSON value (RFC 8259, as Go's scanner does); throws GoJsonError. */
export function parseGoJson(text: string): JsonNode {
  const reader = new Reader(text);
  const root = reader.value(0);
  reader.skip();
  if (reader.at !== text.length) reader.fail();
  return root;
}

/**
 * Go's key folding for matching a key to a field name (encoding/json's
 * `foldName`): ASCII letters fold to upper case, and so do the two non-ASCII
 * runes whose simple case folding reaches an ASCII letter (KELVIN SIGN → K,
 * LATIN SMALL LETTER LONG S → S). Other runes never equal an ASCII field name.
 */
export function goFoldName(key: string): string {
  return key.replace(/[a-z]/g, (c) => c.toUpperCase()).replace(/\u212a/g, 'K').replace(/\u017f/g, 'S');
}

/**
 * Finds the struct field `key` names: an exact match first, then Go's
 * case-insensitive one; undefined for an unknown key (Go ignores it).
 */
export function matchField<F extends string>(key: string, fields: readonly F[]): F | undefined {
  const exact = fields.find((field) => field === key);
  if (exact !== undefined) return exact;
  const folded = goFoldName(key);
  return fields.find((field) => goFoldName(field) === folded);
}

function typeError(field: string, want: string, node: JsonNode): GoJsonError {
  return new GoJsonError(`${field}: cannot read a JSON ${node.kind} as ${want}`);
}

/** A Go `string` field: null leaves it as it was. */
export function goString(node: JsonNode, field: string, previous: string): string {
  if (node.kind === 'null') return previous;
  if (node.kind !== 'string') throw typeError(field, 'a string', node);
  return node.value;
}

/** A Go `bool` field: null leaves it as it was. */
export function goBool(node: JsonNode, field: string, previous: boolean): boolean {
  if (node.kind === 'null') return previous;
  if (node.kind !== 'bool') throw typeError(field, 'a boolean', node);
  return node.value;
}

// Go's base64.StdEncoding: padded, and `\r`/`\n` anywhere are skipped.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * A Go `[]byte` field: a base64 string (how encoding/json writes bytes), or an
 * array of numbers 0–255; null empties it. Returns the bytes, undefined for nil.
 */
export function goBytes(node: JsonNode, field: string): Buffer | undefined {
  if (node.kind === 'null') return undefined;
  if (node.kind === 'string') {
    const text = node.value.replace(/[\r\n]/g, '');
    if (!BASE64.test(text)) throw new GoJsonError(`${field}: not valid base64`);
    return Buffer.from(text, 'base64');
  }
  if (node.kind === 'array') {
    return Buffer.from(node.items.map((item) => {
      if (item.kind === 'null') return 0;
      if (item.kind !== 'number' || !/^\d+$/.test(item.text) || Number(item.text) > 255) throw typeError(field, 'a byte', item);
      return Number(item.text);
    }));
  }
  throw typeError(field, 'base64 bytes', node);
}

/** A Go `[]string` field: replaced by each array; null makes it nil (undefined); a null item is "". */
export function goStrings(node: JsonNode, field: string): string[] | undefined {
  if (node.kind === 'null') return undefined;
  if (node.kind !== 'array') throw typeError(field, 'a list of strings', node);
  return node.items.map((item) => goString(item, field, ''));
}

/** A Go `map[string]string` field: each object is merged into the map there is; null makes it nil. */
export function goStringMap(node: JsonNode, field: string, previous: Record<string, string> | undefined): Record<string, string> | undefined {
  if (node.kind === 'null') return undefined;
  if (node.kind !== 'object') throw typeError(field, 'an object of strings', node);
  const map: Record<string, string> = { ...previous };
  for (const [key, item] of node.members) map[key] = goString(item, `${field}.${key}`, '');
  return map;
}

/**
 * Decodes a Go struct: calls `set` for each member whose key names one of
 * `fields` (Go's matching), in order, so a later duplicate wins or merges as in
 * Go. Unknown keys are skipped. `null` for the struct itself does nothing.
 */
export function goStruct<F extends string>(node: JsonNode, where: string, fields: readonly F[], set: (field: F, value: JsonNode) => void): void {
  if (node.kind === 'null') return;
  if (node.kind !== 'object') throw typeError(where, 'an object', node);
  for (const [key, value] of node.members) {
    const field = matchField(key, fields);
    if (field !== undefined) set(field, value);
  }
}

/** The node as JSON text (every member kept), for a `runtime.RawExtension` field that Go keeps as raw bytes. */
export function goJsonText(node: JsonNode): string {
  switch (node.kind) {
    case 'object': return `{${node.members.map(([key, value]) => `${JSON.stringify(key)}:${goJsonText(value)}`).join(',')}}`;
    case 'array': return `[${node.items.map(goJsonText).join(',')}]`;
    case 'string': return JSON.stringify(node.value);
    case 'number': return node.text;
    case 'bool': return String(node.value);
    case 'null': return 'null';
  }
}
