import { createHash, createHmac, createSecretKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { ManifestError } from './errors.ts';
import { getPath, isRecord } from './manifest.ts';
import type { HashEntry, HashKey, Manifest } from './model.ts';

/** The version prefix of every hash value; a new algorithm gets a new prefix, never a silent change. */
export const HASH_VERSION = 'v1';

/**
 * JSON with object keys sorted by JavaScript's default sort (UTF-16 code
 * units) at every level, no whitespace, strings and numbers written as
 * JSON.stringify writes them. Arrays keep their order. Throws TypeError on
 * anything JSON cannot represent (undefined, functions, symbols, bigints,
 * non-finite numbers, non-plain objects), rather than silently dropping it.
 */
export function canonicalJson(value: unknown): string {
  // String building without intermediate arrays: this runs for every workload of every render.
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON cannot represent the number ${String(value)}`);
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonicalJson(value[i]);
        return out + ']';
      }
      const prototype = Object.getPrototypeOf(value) as unknown;
      if (prototype !== Object.prototype && prototype !== null) {
        throw new TypeError('canonical JSON accepts only plain objects and arrays');
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      let out = '{';
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i] as string;
        out += (i === 0 ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(record[key]);
      }
      return out + '}';
    }
    default:
      throw new TypeError(`canonical JSON cannot represent a value of type ${typeof value}`);
  }
}

const BASE64_BODY = /^[A-Za-z0-9+/]*$/;

/**
 * Decodes base64 exactly as the Kubernetes API server does (Go's
 * base64.StdEncoding): `\r` and `\n` are ignored anywhere, the rest must be
 * the standard alphabet with `=` padding to a multiple of four. Unused
 * trailing bits are tolerated, as Go's non-strict decoder does. Returns the
 * problem as a string instead of throwing so the caller can name the field;
 * the problem never contains the input.
 */
export function decodeBase64(text: string): Buffer | string {
  const compact = text.replace(/[\r\n]/g, '');
  if (compact.length % 4 !== 0) return 'is not valid base64: its length (without line breaks) is not a multiple of 4';
  const padding = compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0;
  const body = compact.slice(0, compact.length - padding);
  if (!BASE64_BODY.test(body)) {
    const offset = body.search(/[^A-Za-z0-9+/]/);
    const what = body[offset] === '=' ? 'padding "=" before the end' : 'a character outside the base64 alphabet';
    return `is not valid base64: ${what} at offset ${offset}`;
  }
  return Buffer.from(compact, 'base64');
}

/** The type of a YAML value in words, never the value itself. */
function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `a ${typeof value}`;
}

/** The string values of a map field; `what` names one value, e.g. `a base64 string`. */
function stringMap(m: Manifest, field: string, what: string): [string, string][] {
  const value = m.object[field];
  if (value === undefined || value === null) return [];
  if (!isRecord(value)) throw new ManifestError(m, field, `must be a mapping from keys to values that are each ${what}`);
  // A loop, not entries().map(): this runs for every ConfigMap and Secret of a render.
  const pairs: [string, string][] = [];
  for (const key of Object.keys(value)) {
    const item = value[key];
    if (typeof item !== 'string') {
      throw new ManifestError(m, `${field}.${key}`, `must be ${what}${what === 'a string' ? ' (quote it)' : ''}, got ${describeType(item)}`);
    }
    pairs.push([key, item]);
  }
  return pairs;
}

function decodedBase64Map(m: Manifest, field: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [key, text] of stringMap(m, field, 'a base64 string')) {
    const decoded = decodeBase64(text);
    if (typeof decoded === 'string') throw new ManifestError(m, `${field}.${key}`, decoded);
    out.set(key, decoded);
  }
  return out;
}

/**
 * A frozen record of the pairs. Object.fromEntries defines own properties, so
 * a key such as `__proto__` stays an ordinary key (plain objects, unlike
 * null-prototype ones, also keep V8's fast paths).
 */
function record(entries: Iterable<readonly [string, string]>): Record<string, string> {
  return Object.freeze(Object.fromEntries(entries));
}

/**
 * The hash v1 entry of a ConfigMap: `data` as is, `binaryData` re-encoded as
 * standard padded base64. Throws ManifestError naming `data.<key>` or
 * `binaryData.<key>` for a non-string value or base64 that does not decode.
 */
export function configMapEntry(m: Manifest): HashEntry {
  const data = stringMap(m, 'data', 'a string');
  const binary = decodedBase64Map(m, 'binaryData');
  return Object.freeze({
    kind: 'ConfigMap',
    name: m.name,
    data: record(data),
    binaryData: record([...binary].map(([key, bytes]) => [key, bytes.toString('base64')] as const)),
  });
}

/**
 * The hash v1 entry of a Secret, as the API server will store it: `data`
 * decoded from base64, then `stringData` (UTF-8) overriding the same keys,
 * each re-encoded as standard padded base64; `type` defaults to `Opaque`.
 * Throws ManifestError naming the field on bad input; never quotes a value.
 */
export function secretEntry(m: Manifest): HashEntry {
  const bytes = decodedBase64Map(m, 'data');
  for (const [key, text] of stringMap(m, 'stringData', 'a string')) bytes.set(key, Buffer.from(text, 'utf8'));
  const type = m.object['type'];
  if (type !== undefined && type !== null && typeof type !== 'string') throw new ManifestError(m, 'type', 'must be a string');
  return Object.freeze({
    kind: 'Secret',
    name: m.name,
    type: typeof type === 'string' && type !== '' ? type : 'Opaque',
    data: record([...bytes].map(([key, value]) => [key, value.toString('base64')] as const)),
  });
}

/** The Git-side objects that stand for a Secret created outside Git, and SecretProviderClass. */
export const SOURCE_ENTRY_KINDS = Object.freeze(['SealedSecret', 'ExternalSecret', 'Certificate', 'SecretProviderClass'] as const);
export type SourceEntryKind = (typeof SOURCE_ENTRY_KINDS)[number];

/**
 * The hash v1 entry of a source object: `{kind, name, spec}` with `spec`
 * `null` when absent. Throws ManifestError naming `spec` when it holds
 * something JSON cannot represent.
 */
export function sourceEntry(m: Manifest): HashEntry {
  const kind = SOURCE_ENTRY_KINDS.find((k) => k === m.kind);
  if (kind === undefined) throw new ManifestError(m, 'kind', `is not a Secret source (${SOURCE_ENTRY_KINDS.join(', ')})`);
  const spec = getPath(m.object, ['spec']) ?? null;
  try {
    canonicalJson(spec);
  } catch (error) {
    throw new ManifestError(m, 'spec', `cannot be hashed: ${(error as Error).message}`, { cause: error });
  }
  return Object.freeze({ kind, name: m.name, spec });
}

/**
 * The hash v1 entry of a config listed in the out-of-band file (§7): its
 * kind prefixed with `OutOfBand`, its name, and the listed digest as is. Its
 * own kind keeps it apart from a ConfigMap or Secret entry of the same name.
 */
export function outOfBandEntry(kind: 'ConfigMap' | 'Secret', name: string, digest: string): HashEntry {
  return Object.freeze({ kind: kind === 'ConfigMap' ? 'OutOfBandConfigMap' : 'OutOfBandSecret', name, digest });
}

function compareEntries(a: HashEntry, b: HashEntry): number {
  if (a.kind !== b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return 0;
}

/** Entries in hash v1 order: by `kind`, then `name` (JavaScript string order), stable for ties. */
export function sortEntries(entries: readonly HashEntry[]): HashEntry[] {
  return [...entries].sort(compareEntries);
}

/** Whether the entries are already in hash v1 order, as a plan's are: then no sorted copy is needed. */
function inOrder(entries: readonly HashEntry[]): boolean {
  for (let i = 1; i < entries.length; i++) if (compareEntries(entries[i - 1] as HashEntry, entries[i] as HashEntry) > 0) return false;
  return true;
}

/** The exact bytes that are hashed: canonical JSON of the sorted entries. */
export function hashMessage(entries: readonly HashEntry[]): string {
  return canonicalJson(inOrder(entries) ? entries : sortEntries(entries));
}

/**
 * The hash v1 value of a workload's entries: `v1:` + lowercase hex of
 * HMAC-SHA256(key, message) with a key, else of SHA-256(message), where the
 * message is the UTF-8 canonical JSON of the entries sorted by kind, then name.
 */
export function hashEntries(entries: readonly HashEntry[], key?: HashKey): string {
  const message = hashMessage(entries);
  const digest = key === undefined
    ? createHash('sha256').update(message, 'utf8').digest('hex')
    : createHmac('sha256', (key as Partial<PreparedHashKey>).secret ?? key.bytes).update(message, 'utf8').digest('hex');
  return `${HASH_VERSION}:${digest}`;
}

/** A key made ready for many hashes: `secret` is the same bytes as a KeyObject. */
export interface PreparedHashKey extends HashKey {
  readonly secret: KeyObject;
}

/**
 * The key with its KeyObject, for hashing many workloads with one key:
 * `createHmac` given raw bytes builds a KeyObject on every call, which was
 * most of the cost of an HMAC of a workload's few hundred bytes.
 */
export function prepareHashKey(key: HashKey): PreparedHashKey {
  return Object.freeze({ bytes: key.bytes, secret: createSecretKey(key.bytes) });
}
