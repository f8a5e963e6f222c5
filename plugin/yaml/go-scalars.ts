/**
 * Plain scalars resolved exactly as Argo CD resolves them: sigs.k8s.io/yaml
 * on go-yaml v2 (`resolve.go`), whose YAML 1.1 is not the specification's.
 * A plain scalar is a number only if Go's `strconv` parses it: `e5`, `.`,
 * `._1` stay strings, `0o17` and `0777` are octal ints, `1_000`
 * is 1000, a hex number beyond 64 bits is a string. Both readers use this
 * one function, so neither can disagree with Go (a test runs Go itself).
 *
 * Values JavaScript cannot hold as Go does (an int beyond 2^53, `.inf`,
 * `.nan`, which Argo CD cannot even turn into JSON, a float beyond 1.8e308) are reported as
 * UNREPRESENTABLE: the caller rejects the document instead of guessing.
 */

/** Marks a scalar Go reads as a value this plugin cannot represent faithfully. */
export const UNREPRESENTABLE: unique symbol = Symbol('unrepresentable');

/** What a plain scalar is for Go: a string, null, a boolean, a number, or UNREPRESENTABLE. */
export type GoScalar = string | null | boolean | number | typeof UNREPRESENTABLE;

const NULLS = new Set(['', '~', 'null', 'Null', 'NULL']);
const TRUES = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);
const FALSES = new Set(['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']);
const SPECIAL_FLOATS = new Set(['.nan', '.NaN', '.NAN', '.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF', '-.inf', '-.Inf', '-.INF']);
/** The first characters go-yaml's `resolveTable` gives a hint for (or the empty string, null): anything else is a string. */
const MAYBE_NOT_STRING = /^(?:[-+.0-9~nNyYtTfFoO]|$)/;
/** go-yaml v2's `yamlStyleFloat`. */
const YAML_STYLE_FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
/** What Go's `strconv.ParseFloat` accepts after a leading `.` (no underscores without a base prefix). */
const DOT_FLOAT = /^\.[0-9]+(?:[eE][-+]?[0-9]+)?$/;
/** `strconv.ParseInt(s, 0, 64)` syntax once underscores are gone: sign, base prefix, digits. */
const GO_INT = /^([-+]?)(?:0[xX]([0-9a-fA-F]+)|0[bB]([01]+)|0[oO]([0-7]+)|0([0-7]+)|([1-9][0-9]*|0))$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** Resolves a plain (unquoted, untagged) scalar's text as go-yaml v2 does. */
export function resolveGoPlain(source: string): GoScalar {
  // Most scalars start with a character no null, bool or number starts with: a string at once, without
  // classifyGoPlain's tuple (this runs for every plain key and value the fast reader reads).
  const first = source.charCodeAt(0);
  if (source.length > 0 && !mayStartNonString(first)) return source;
  // `name`, `type`, `true`, `on`: a plain scalar starting with one of the letters is a boolean or null
  // only as one of a few words of at most five letters (classifyGoPlain's sets), else a string.
  if (isHintLetter(first)) {
    if (source.length > 5) return source;
    if (NULLS.has(source)) return null;
    if (TRUES.has(source)) return true;
    if (FALSES.has(source)) return false;
    return source;
  }
  // Ports, replicas, sizes: a short decimal integer is a safe integer as it is, without the BigInt round trip.
  if (isShortDecimal(source)) return Number(source);
  return classifyGoPlain(source)[1];
}

/** `0`, or 1 to 15 digits not starting with 0 (so never octal, always below 2^53). */
function isShortDecimal(source: string): boolean {
  const length = source.length;
  if (length === 0 || length > 15) return false;
  const first = source.charCodeAt(0);
  if (first === 48 /* 0 */) return length === 1;
  for (let i = 0; i < length; i++) {
    const c = source.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** `[-+.0-9~nNyYtTfFoO]`: the first characters of go-yaml's `resolveTable` hints (MAYBE_NOT_STRING). */
function mayStartNonString(c: number): boolean {
  return (c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46 || c === 126 || isHintLetter(c);
}

/** `[nNyYtTfFoO]`: the letters among the hints, which start only the null and boolean words. */
function isHintLetter(c: number): boolean {
  return c === 110 || c === 78 || c === 121 || c === 89 || c === 116 || c === 84 || c === 102 || c === 70 || c === 111 || c === 79;
}

/** Go's tag for a plain scalar: `str`, `null`, `bool`, `int`, `float`, or `unrepresentable`. */
export type GoKind = 'str' | 'null' | 'bool' | 'int' | 'float' | 'unrepresentable';

/** The kind and the value of a plain scalar for Go. */
export function classifyGoPlain(source: string): readonly [GoKind, GoScalar] {
  if (NULLS.has(source)) return ['null', null];
  const first = source.charCodeAt(0);
  // go-yaml's `resolveTable`: only these first characters can make a non-string.
  const isDigit = first >= 48 && first <= 57;
  const isSign = first === 43 || first === 45;
  if (first === 46 /* . */) {
    if (SPECIAL_FLOATS.has(source)) return ['unrepresentable', UNREPRESENTABLE];
    return DOT_FLOAT.test(source) ? finiteOr(source) : ['str', source];
  }
  if (!isDigit && !isSign) {
    if (TRUES.has(source)) return ['bool', true];
    if (FALSES.has(source)) return ['bool', false];
    return ['str', source];
  }
  if (SPECIAL_FLOATS.has(source)) return ['unrepresentable', UNREPRESENTABLE];
  const plain = source.replaceAll('_', '');
  const int = GO_INT.exec(plain);
  if (int !== null) {
    const [, sign, hex, bin, oct, legacyOct, dec] = int;
    const digits = hex !== undefined ? `0x${hex}` : bin !== undefined ? `0b${bin}` : oct !== undefined ? `0o${oct}` : legacyOct !== undefined ? `0o${legacyOct}` : (dec as string);
    const magnitude = BigInt(digits);
    const value = sign === '-' ? -magnitude : magnitude;
    // ParseInt (int64), then ParseUint (uint64, no sign); beyond both it is not an int for Go.
    if ((value >= INT64_MIN && value <= INT64_MAX) || (sign === '' && value <= UINT64_MAX)) {
      return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? ['int', Number(value)]
        : ['unrepresentable', UNREPRESENTABLE];
    }
  }
  if (YAML_STYLE_FLOAT.test(plain)) return finiteOr(plain);
  return ['str', source];
}

/**
 * `strconv.ParseFloat`: out of range is an error, and go-yaml then keeps the text as a string, but
 * the same text in a JSON document (which Argo CD decodes as JSON) is a number it cannot hold:
 * refused either way rather than read one way or the other.
 */
function finiteOr(text: string): readonly [GoKind, GoScalar] {
  const value = Number(text);
  return Number.isFinite(value) ? ['float', value] : ['unrepresentable', UNREPRESENTABLE];
}

/** A `yaml` scalar tag: `test` picks it for a plain scalar, `resolve` gives the value. */
export interface GoScalarTag {
  readonly tag: string;
  readonly default: true;
  readonly test: { test(source: string): boolean };
  resolve(source: string, onError: (message: string) => void): unknown;
}

function goTag(name: string, kinds: readonly GoKind[]): GoScalarTag {
  return {
    tag: `tag:yaml.org,2002:${name}`,
    default: true,
    // yaml tries every tag on every plain scalar: most start with a letter that makes them strings at once.
    test: { test: (source) => MAYBE_NOT_STRING.test(source) && kinds.includes(classifyGoPlain(source)[0]) },
    resolve(source, onError) {
      const value = resolveGoPlain(source);
      if (value === UNREPRESENTABLE) {
        onError('a number that JSON cannot carry exactly (an integer beyond 2^53, a float beyond 1.8e308, or .inf/.nan, which Argo CD rejects); quote it if it is a string');
        return source;
      }
      return value;
    },
  };
}

/**
 * The null, bool, int and float tags of `yaml`'s schema, replaced by Go's
 * resolution. Order matters: an int is tried before a float, and an explicit
 * `!!float` accepts an int (as Go does); a value Go would not decode with an
 * explicit tag (`!!int abc`) matches no tag and is an error.
 */
export const GO_SCALAR_TAGS: readonly GoScalarTag[] = Object.freeze([
  goTag('null', ['null']),
  goTag('bool', ['bool']),
  goTag('int', ['int', 'unrepresentable']),
  goTag('float', ['float', 'int', 'unrepresentable']),
]);
