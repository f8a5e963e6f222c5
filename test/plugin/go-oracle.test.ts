/**
 * Go itself as the oracle. Argo CD reads the plugin's stdout with Go
 * (apimachinery's YAMLReader, then sigs.k8s.io/yaml on go-yaml v2); the
 * tool in `test/tools/goyaml/` does exactly that. For every input here:
 * (i) what the plugin reads equals what Go reads, document by document, or
 * the plugin rejects the input as invalid (exit 4) — never a silent
 * difference; (ii) `generate`'s output, read by Go, is the input read by Go
 * plus exactly the hash annotation on the stamped pod templates.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { HASH_ANNOTATION } from '../../core/index.ts';
import { generate } from '../../plugin/commands/generate.ts';
import { parseConfig } from '../../plugin/config.ts';
import { parseStream } from '../../plugin/yaml/documents.ts';
import { InvalidInputError, exitCodeFor } from '../../plugin/errors.ts';
import { joinDocuments } from '../../plugin/output.ts';
import { decodeSource } from '../../plugin/source/decode.ts';
import { stampDocument } from '../../plugin/stamp.ts';
import { FIXTURES, GOLDEN } from './cli.ts';
import { Gen } from './gen.ts';
import { readBytesWithGo, readWithGo } from './goyaml.ts';
import type { GoDocument } from './goyaml.ts';
import { ensureTools } from '../tools.ts';

let goyaml = '';
before(async () => {
  goyaml = (await ensureTools()).goyaml;
});

/** Reads many streams with one Go process. */
const goRead = (streams: readonly string[]): GoDocument[][] => readWithGo(goyaml, streams);

/** What the plugin reads: the values of its documents, or 'rejected' (exit 4). */
function pluginRead(text: string): unknown[] | 'rejected' {
  try {
    return parseStream({ label: 'x', text }).map((d) => d.value);
  } catch (error) {
    assert.ok(error instanceof InvalidInputError && exitCodeFor(error) === 4, `not a clean rejection: ${String(error)}`);
    return 'rejected';
  }
}

/** As JSON carries it (what Argo CD gets from Go). */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** Asserts (i) for every stream; returns how many the plugin rejected. */
function assertSameAsGo(streams: readonly string[]): number {
  const go = goRead(streams);
  let rejected = 0;
  streams.forEach((text, i) => {
    const ours = pluginRead(text);
    if (ours === 'rejected') {
      rejected++;
      return;
    }
    const theirs = go[i] ?? [];
    const failed = theirs.find((d): d is { error: string } => 'error' in d);
    assert.equal(failed, undefined, `Go rejects what the plugin accepts (${failed?.error}):\n${JSON.stringify(text)}`);
    assert.deepStrictEqual(ours.map(asJson), theirs.map((d) => (d as { json: unknown }).json), `plugin and Go read differently:\n${JSON.stringify(text)}`);
  });
  return rejected;
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.(ya?ml|json)$/.test(name) ? [path] : [];
  });
}

/** Plain scalars where YAML 1.1, the `yaml` package and Go have each been known to disagree. */
const SCALARS = [
  '.', 'e1', 'E10', '-e5', '.e1', '._', '._1', '1.7976931348623157e309', '1e400', '-1e400', '1e-400', '0o17', '0O17', '0x7fffffffffffffffff',
  '0x1F', '-0x1F', '+0x1F', '0b101', '-0b101', '12345678901234567890', '9223372036854775807', '9223372036854775808', '18446744073709551616',
  '9007199254740991', '9007199254740993', '-9007199254740993', 'yes', 'Yes', 'YES', 'yEs', 'on', 'On', 'no', 'off', 'y', 'Y', 'n', 'N', 'true', 'True',
  'tRUE', '~', 'null', 'Null', 'nULL', '0777', '08', '09', '0999', '00', '-0', '+0', '1_000', '_1', '1__0', '0_x1', '+1', '-1', '+', '-', '.inf', '-.inf',
  '+.inf', '.Inf', '.INF', '.NaN', '.nan', 'nan', 'inf', 'infinity', '2001-12-14', '2001-12-14t21:59:43.10-05:00', '2001-12-14 21:59:43.10',
  '2001-1-2', '22:22', '190:20:30', '1.', '1.5', '.5', '+.5', '-.5', '1e3', '1E3', '6.02e+23', '1.50', '0.1_0', '1,000', '0x', '0b', '0o', '0xG',
  '<<x', '=', 'a:b', 'a#b', 'http://x.example/a?b=c', '%x', '@x', '`x', '~x', 'nulls', 'yes!', 'o', 'O', 'f', 't',
  '1:20', 'oN', 'nO', '<<', '5.', '0_7', '1e', '.e5', '0.1.2', '+12_3', '-0b11', '+0x10', '0x_1', '0b1_0', '0o10', '010', '1e+3', '.5E-1', '1__',
  '-9223372036854775809', '1.5e3',
];

/** Values that are not plain scalars: escapes, block scalars, tags, anchors, odd flow. */
const VALUES = [
  '"\\N"', '"\\_"', '"\\L"', '"\\P"', '"\\e"', '"\\a"', '"\\v"', '"\\x41"', '"\\U0001F600"', "'a\\nb'", '"a\\\n  b"', '"a\n  b"', 'a\n  b',
  '|+\n  x\n\n', '>\n  a\n  b\n\n  c\n', '>-\n  a\n   b\n  c\n', '|2\n   x\n', '! x', '!!str 1', '!!int "1"', '!!float 1', '!!bool yes',
  '!!null ""', '!!binary aGk=', '&a x', '{a: 1, a: 2}', '[a, b, ]', '{a: 1, }', '? a', '"\\t"', '"\t"', 'a\tb', '"@x"', '{a:1}', '[?a]', '[a:b]',
];

/** Pod templates in layouts the stamper must handle (or refuse with exit 4). */
const TEMPLATES = [
  '    metadata:\n      annotations: # none yet\n    spec: {}\n',
  '    metadata: # c\n    spec: {}\n',
  '    metadata:\n      annotations:   \n    spec: {}\n',
  ' {}\n',
  '\n',
  ' # c\n',
  "    metadata:\n      annotations:\n        driftless.dev/config-hash: 'v1:old' # keep\n    spec: {}\n",
  '    metadata:\n      annotations:\n        driftless.dev/config-hash: >-\n          v1:old\n        a: b\n    spec: {}\n',
  '    metadata:\n      annotations:\n        driftless.dev/config-hash: |-\n          v1:old\n        a: b\n    spec: {}\n',
  '    metadata:\n      annotations:\n        ? driftless.dev/config-hash\n        : old\n    spec: {}\n',
  '    metadata:\n      annotations:\n        "driftless.dev/config-hash": old\n    spec: {}\n',
  '    metadata:\n      annotations: {"driftless.dev/config-hash": old}\n    spec: {}\n',
  '    metadata:\n      annotations: {driftless.dev/config-hash: }\n    spec: {}\n',
  '    metadata:\n      annotations: {a: b,\n        c: d}\n    spec: {}\n',
  '    ? metadata\n    : labels: {a: b}\n    spec: {}\n',
  '    metadata: {labels: {a: b}}   # c\n    spec: {}\n',
  '    metadata:\n      labels:\n        a: b\n    spec:\n      containers: []\n',
  // Duplicate keys: Go keeps the last, so the stamp must land in the last mapping of each name.
  '    metadata:\n      annotations:\n        a: "1"\n      labels: {app: w}\n      annotations:\n        b: "2"\n    spec: {}\n',
  '    metadata:\n      annotations:\n        a: "1"\n      annotations:\n    spec: {}\n',
  '    metadata:\n      annotations: {a: "1"}\n    metadata:\n      labels: {app: w}\n    spec: {}\n',
  '    metadata:\n      labels: {app: w}\n    spec: {}\n    metadata: {annotations: {}, annotations: {b: c}}\n',
  '    metadata:\n      annotations:\n        driftless.dev/config-hash: "v1:a"\n        x: y\n        driftless.dev/config-hash: "v1:b"\n    spec: {}\n',
  '    metadata:\n      labels:\n        app: w\n        tier: web\n        app: w\n    spec: {}\n',
];

/** Whole streams: long keys, tabs, folding, block scalar chomping, merges, anchors, markers, JSON. */
const LAYOUTS = [
  `${'k'.repeat(1100)}: v\n`, `"${'k'.repeat(1100)}": v\n`, 'a: b\n\tc: d\n', 'a:\n  - b\n\t- c\n', 'a: "x\ty"\n', 'a: x\ty\n', "a: 'x\ty'\n",
  'a: plain\n  multi\n  line\n', 'a: plain\n\n  para\n', 'a: "q\n\n  para"\n', '&k a: 1\nb: *k\n', '? |\n  block key\n: v\n', ': v\n', 'a:\n- b\n-\n- c\n',
  'a: [1, 2\n  , 3]\n', 'a: {b: 1,\n  c: 2}\n', 'a: >\n  f1\n   more\n  f2\n', 'a: |-\n\n  x\n', 'a: |\n  x\n\n\n', 'a: >+\n  x\n\n', 'a: |1\n  x\n',
  'a: "\\u00e9\\x0a"\n', 'a: "\\0"\n', 'a: b #c\n', 'a: b#c\n', 'a: -1\nb: - 1\n', 'a: !!str\n', 'a: !!str ~\n', 'a: ! 12\n',
  'a: &x\nb: *x\n', '- a\n- b\n', 'just a string\n', '42\n', '[1, 2]\n', 'a: 1\n---\n- x\n', 'a: 0.0\nb: -0.0\nc: 1.0e+2\n', 'a: 100000000000000000000\n',
  'a: 1e15\nb: 1e16\nc: 1e21\nd: 123456789.123456789\n', 'a: 0x1p3\n', 'a: 1_0.5\n', 'a: 1.5_0\n', 'a: +.5e1\n', 'a: 00010\n', 'a: -0o7\n', 'a: 0B11\n', 'a: 0X1f\n',
  'a:   \n  b: 1\n', 'a: b: c\n', 'a: [b: c]\n', 'a: {b}\n', 'a: {? b}\n', 'a: {b: }\n', '"a": b\n"a\\u0020": c\n',
  'b: &b {x: 1}\nm:\n  <<: [*b]\n', 'b: &b [1]\nm:\n  <<: *b\n', 'm:\n  <<: {x: 1}\n', 'm:\n  <<: {x: 1}\n  <<: {y: 2}\n', 'b: &b {x: 1}\nm: {<<: *b, y: 2}\n',
  'b: &b {x: {y: 1}}\nm:\n  <<: *b\n  x: {z: 2}\n', 'a: &a {k: v}\nb: &b {<<: *a, j: w}\nm:\n  <<: *b\n', 'm:\n  "<<": {x: 1}\n', 'm:\n  <<: ~\n',
  '&a a: &b b\n*a : *b\n', 'a: &a 1\nb: *a\nc: &a 2\nd: *a\n', 'a: *nope\n', 'a: &a [*a]\n', 'k: &x\n', 'x: !!str &a 1\ny: *a\n',
  'a: 1\n...\n', 'a: 1\n...\nb: 2\n', 'a: 1\n... # c\n---\nb: 2\n', '---\n---\n', '--- # c\na: 1\n', '---\ta: 1\n', '--- \n a: 1\n',
  '#c\n  ---\na: 1\n', 'a: |\n  ---\n  x\n', 'a: |\n---\n', 'a: "x\n---\n  y"\n', '- &a a\n- *a\n', 'a: [&a 1, *a]\n', 'a: {&k b: 1, c: *k}\n',
  'apiVersion: v1\nkind: List\nitems:\n- a: 1\n', '{"a": 1, "a": 2}\n', '{"a": 1}\n---\n{"b": 2}\n', '{"a": 1}{"b": 2}', '[{"a": 1}]\n', '{"a": 1e400}\n',
  'a: 1\nb: 2\na: 3\n', 'm:\n  x: 1\nm:\n  z: 2\n', 'm: {a: 1, a: 2}\n', '"a": 1\na: 2\n', "a: 1\n'a': 2\n", 'true: a\nyes: b\n', '1: a\n0x1: b\n',
  '1: a\n"1": b\n', 'true: a\n"true": b\n', 'a: 1\n? a\n: 3\n', 'b: &b {x: 1}\nm:\n  <<: *b\n  x: 2\n  x: 3\n', 'l:\n- {a: 1, a: [2]}\n- a: {b: 1}\n  a: ~\n',
  // Multi-line plain and single-quoted scalars, as controller-gen folds CRD descriptions (the fast reader's).
  'a: word one\n  two\n  three\n', 'a: one\n\n  two\n', 'a: one\n\n\n  two\n\n', 'a: one   \n    two  \n  three\nb: x\n', 'l:\n- one\n  two\n- three\n',
  'l:\n  - k: one\n      two\n    j: x\n', 'a:\n  b: one\n   two\n  c: d\n', 'a: one\n  two\n   three\n  four\nb: x\n', 'a: one\n  two #c\nb: x\n',
  'a: one\n  # comment\n  two\n', 'a: one\n  # comment\nb: two\n', 'a: one\n  - two\n', 'a: one\n  two: three\n', 'a: one\n  two:\n', 'a: 1\n  2\n', 'a: true\n  false\n',
  'a: one\n  "two"\n', 'a: one\n  [two]\n', 'a: one\n  ---\n', 'a: one\n  ...\n', 'a: x\n  y #\n', 'a: x\n \n  y\n', 'a: x\n  y\n \n',
  "a: 'one\n  two'\n", "a: 'one ''q''\n\n  two'   # c\nb: 1\n", "a: 'one\n  # not a comment\n  two'\n", "a: 'one\ntwo'\n", "a: 'x\n\n\n  y\n  '\n",
  "a: 'x   \n   y'\n", "a: 'x\n  y' z\n", "a: 'x\n  y'\n  z\n", "l:\n- 'x\n  y'\n- b\n", "l:\n  - k: 'x: y\n      z'\n    j: x\n", "a: 'x\n  ''\n  y'\n",
  "a:\n  b: 'x\n  y'\n", "a: 'unclosed\n  y\n",
  '{"a": 12345678901234567890}\n', '{"a": "\\ud800"}\n', '{"a": NaN}\n', '{\n  "a": 1,\n  "b": [1, 2]\n}\n', ' {"a": 1}\n{"b": 2}\n', '{"a": 1}\n# c\n{"b": 2}\n',
];

function adversarial(): string[] {
  const streams: string[] = [];
  // Each scalar as a value, a key, a list item, in flow, quoted (must stay a string).
  for (const s of SCALARS) {
    const safe = /^[%@`]/.test(s) ? `"${s}"` : s;
    streams.push(`v: ${safe}\n`, `${safe}: v\n`, `l:\n- ${safe}\n`, `f: [${safe}]\n`, `q: "${s}"\nr: '${s}'\n`);
    streams.push(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${safe}\n  namespace: ${safe}\ndata:\n  k: ${safe}\n`);
  }
  for (const v of VALUES) streams.push(`v: ${v}\n`, `l:\n- ${v}\n`);
  streams.push(...LAYOUTS);
  streams.push(
    '\ufeffapiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bom\n',
    '\ufeff---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bom\n',
    'a: 1\n---\n\ufeffb: 2\n',
    'data:\n  a: x # c\u2028  b: hidden\n',
    'data:\n  a: x\u2029b: y\n',
    'data:\n  a: "x\u0085y"\n',
    'data:\r\n  a: x\r\n  b: "y"\r\n---\r\nc: 1\r\n',
    'data:\r  a: x\r',
    'a: "x\ry"\n',
    'a: "\\ud800"\n', 'a: "\\ud83d\\ude00"\n', 'a: "\\\\ud800"\n', '"\\uD800": 1\n', 'a: |\n  {"json": "\\ud83d\\ude00"}\n', "a: '\\ud800'\n",
    'a: "x\r\n  y"\r\nb: |\r\n  l1\r\n  l2\r\n',
    'a:\n\tb: 1\n',
    'a: b\t# tab before a comment\nc:\t1\n',
    'base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n',
    'base: &b {x: 1, y: 2}\nm:\n  y: 3\n  <<: *b\n',
    'a: &a {x: 1}\nb: &b {x: 2, y: 2}\nm:\n  <<: [*a, *b]\n',
    'k: !!int 5\n', 'k: !!int S3cr3t\n', 'k: !!float 1\n', 'k: !!str 5\n', 'k: !!bool yes\n', 'k: !!binary aGk=\n', 'k: !!map x\n', 'k: !!seq x\n',
    'k: !<tag:x> y\n', 'k: !foo y\n', 'k: !!null ~\n', 'k: !!timestamp 2001-12-14\n', '? [a]\n: 1\n', '~: 1\n', '1.5: a\n', 'true: a\nyes: b\n',
    'x: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n',
    'a: |\n  literal\n  text\nb: >\n  folded\n  text\nc: "multi\n  line"\nd: plain\n  continued\n',
    '%YAML 1.1\n---\na: 1\n', 'a: 1\n...\n---\nb: 2\n', '--- a\n', '---\n', 'null\n', '# only a comment\n', '{"a": 1}\n{"b": 2}\n',
    'k: "\\x41\\u00e9\\U0001F600\\N\\_\\L\\P"\n', "k: 'it''s'\n", 'k: "a\\\n  b"\n',
  );
  return streams;
}

describe('Go oracle: the plugin reads every document as Argo CD does, or rejects it', () => {
  it('fixtures and golden renders', () => {
    const paths = [...files(FIXTURES), ...files(GOLDEN).filter((p) => !p.endsWith('.json'))];
    const streams = paths.map((p) => readFileSync(p, 'utf8')).filter((t) => !t.includes('\0'));
    assert.ok(streams.length > 10);
    const rejected = assertSameAsGo(streams);
    assert.ok(rejected < streams.length / 2, `${rejected} of ${streams.length} rejected`);
  });

  it('adversarial scalars and layouts', () => {
    const streams = adversarial();
    const rejected = assertSameAsGo(streams);
    // Most of them are read, not just refused.
    assert.ok(rejected < streams.length / 4, `${rejected} of ${streams.length} rejected`);
  });

  it('bytes: what Go refuses (not UTF-8, control characters) or cuts short (UTF-16) the plugin refuses; the rest it reads alike', async () => {
    const encode = (text: string): Buffer => Buffer.from(text, 'utf8');
    const utf16 = (text: string, bom: readonly number[], encoding: 'utf16le' | 'be'): Buffer => {
      const le = Buffer.from(text, 'utf16le');
      return Buffer.concat([Buffer.from(bom), encoding === 'utf16le' ? le : Buffer.from(le).swap16()]);
    };
    const head = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n';
    const refused: Buffer[] = [
      ...[[0xe9], [0xe8], [0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]].map((bad) =>
        Buffer.concat([encode(`${head}data: {a: "caf`), Buffer.from(bad), encode('"}\n')])),
      Buffer.concat([encode(`${head}---\n${head}# `), Buffer.from([0xe9]), encode('\n')]),
      ...[0x00, 0x01, 0x1b, 0x7f, 0x80, 0x9f, 0xfffe, 0xffff].map((code) => encode(`${head}data: {a: "x${String.fromCharCode(code)}y"}\n`)),
      encode(`${head}# a comment with a NUL \u0000\n`),
      utf16(`${head}---\n${head}`, [0xff, 0xfe], 'utf16le'),
      utf16(`${head}---\n${head}`, [0xfe, 0xff], 'be'),
      utf16(head, [], 'utf16le'),
    ];
    for (const stream of refused) {
      const go = readBytesWithGo(goyaml, stream);
      const goRefuses = go.some((d) => 'error' in d);
      // UTF-16 with a byte order mark: Go reads the first document only, and silently.
      assert.ok(goRefuses || go.length === 1, `Go reads all of ${stream.toString('hex')}: ${JSON.stringify(go)}`);
      await assert.rejects(async () => parseStream(await decodeSource('x', stream, false)), (error: unknown) =>
        error instanceof InvalidInputError && exitCodeFor(error) === 4, stream.toString('hex'));
    }
    // A byte order mark, tab, NEL-free non-ASCII and the highest planes are UTF-8 that both read alike.
    const read = [`\ufeff${head}data: {a: "caf\u00e9 \u00a0 \ud7ff \ue000 \ufffd \u{10000} \u{10ffff}\tx"}\n`];
    for (const text of read) {
      const go = readBytesWithGo(goyaml, encode(text));
      const ours = parseStream(await decodeSource('x', encode(text), false)).map((d) => asJson(d.value));
      assert.deepStrictEqual(ours, go.map((d) => (d as { json: unknown }).json));
    }
  });

  it('aliases: accepted and refused exactly where Go accepts and refuses them (it bounds expansion, not count)', () => {
    const streams: string[] = [];
    // Go refuses once aliases are over 99% of what it decoded (less past 400,000 values): m lists of k,
    // with filler before or after, fall on both sides of that line (m=150, k=1 is the issue's 150 aliases).
    for (const k of [1, 40, 100, 400]) {
      for (const m of [150, 300, 1000, 3000]) {
        for (const filler of [0, 30, 2000]) {
          for (const before of [true, false]) {
            const list = `a: &a [${Array.from({ length: k }, (_, i) => `v${i}`).join(', ')}]\nb: [${Array(m).fill('*a').join(', ')}]\n`;
            const fill = `f: [${Array(filler).fill('0').join(', ')}]\n`;
            streams.push(before ? fill + list : list + fill);
          }
        }
      }
    }
    let bomb = 'a: &a [x, x, x, x, x, x, x, x, x]\n';
    for (let i = 1; i < 10; i++) bomb += `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${String.fromCharCode(96 + i)}`).join(', ')}]\n`;
    streams.push(bomb);
    streams.push(['a0: &a0 {x: 1, y: 2}', ...Array.from({ length: 12 }, (_, i) => `a${i + 1}: &a${i + 1} {<<: [${Array(9).fill(`*a${i}`).join(', ')}], k${i}: 1}`)].join('\n') + '\n');
    const go = goRead(streams);
    let refusedByGo = 0;
    streams.forEach((text, i) => {
      const goRefuses = (go[i] ?? []).some((d) => 'error' in d && /excessive aliasing/.test(d.error));
      if (goRefuses) refusedByGo++;
      const ours = pluginRead(text);
      assert.equal(ours === 'rejected', goRefuses, `Go ${goRefuses ? 'refuses' : 'reads'} ${text.length > 300 ? `${text.slice(0, 300)}…` : text}`);
      if (ours !== 'rejected') assert.deepStrictEqual(ours.map(asJson), (go[i] ?? []).map((d) => (d as { json: unknown }).json));
    });
    // Both outcomes occur, so the comparison tests the boundary.
    assert.ok(refusedByGo > 2 && refusedByGo < streams.length - 10, `${refusedByGo} of ${streams.length} refused by Go`);
  });

  it('2,000 generated documents full of YAML 1.1 traps', () => {
    const streams: string[] = [];
    for (let seed = 1; seed <= 1000; seed++) {
      const gen = new Gen(seed);
      streams.push(`---\n${gen.nonWorkload(0)}\n---\n${gen.workload(1)}\n`);
    }
    const rejected = assertSameAsGo(streams);
    assert.ok(rejected < streams.length / 10, `${rejected} of ${streams.length} rejected`);
  });
});

describe('Go oracle: generate output read by Go is the input plus the annotation', () => {
  it('200 random streams with workloads', async () => {
    const config = parseConfig(['generate', '-'], { ARGOCD_APP_NAMESPACE: 'demo' }, process.cwd());
    const inputs: string[] = [];
    const outputs: string[] = [];
    for (let seed = 2001; seed <= 2200; seed++) {
      const gen = new Gen(seed);
      const docs = ['apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: "v"', gen.nonWorkload(0), gen.workload(1), gen.workload(2)];
      const input = docs.map((d) => `---\n${d}\n`).join('');
      let output: string;
      try {
        output = (await generate(config, new AbortController().signal, async () => [{ label: '<stdin>', text: input }])).stdout;
      } catch (error) {
        assert.equal(exitCodeFor(error), 4, String(error));
        continue;
      }
      inputs.push(input);
      outputs.push(output);
    }
    assert.ok(inputs.length > 150, `${200 - inputs.length} of 200 rejected`);
    const go = goRead([...inputs, ...outputs]);
    let stamped = 0;
    inputs.forEach((input, i) => {
      const before = go[i] as GoDocument[];
      const after = go[inputs.length + i] as GoDocument[];
      assert.equal(before.length, after.length, input);
      after.forEach((doc, d) => {
        assert.ok('json' in doc, `Go cannot read the output:\n${outputs[i]}`);
        const original = before[d] as { json: unknown };
        stamped += unstamp(doc.json, original.json);
        assert.deepStrictEqual(doc.json, original.json, `output means something else:\n${outputs[i]}`);
      });
    });
    assert.ok(stamped >= inputs.length, `only ${stamped} annotations found`);
  });
});

describe('Go oracle: stamped layouts read by Go are the input plus the annotation', () => {
  it('every template layout, with LF and CRLF, with and without a BOM', () => {
    const hash = `v1:${'ab'.repeat(32)}`;
    const inputs: string[] = [];
    const outputs: string[] = [];
    let refused = 0;
    for (const template of TEMPLATES) {
      for (const variant of [(t: string) => t, (t: string) => t.replaceAll('\n', '\r\n'), (t: string) => `\ufeff${t}`]) {
        const input = variant(`apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w\nspec:\n  template:${template.startsWith(' ') && !template.startsWith('    ') ? '' : '\n'}${template}`.replace(':\n\n', ':\n'));
        let output: string;
        try {
          const [doc] = parseStream({ label: 'x', text: input });
          assert.ok(doc !== undefined);
          output = joinDocuments([{ text: stampDocument(doc, [{ templatePath: ['spec', 'template'], hash }]), explicitStart: doc.explicitStart }]);
        } catch (error) {
          assert.equal(exitCodeFor(error), 4, `${String(error)}\n${JSON.stringify(input)}`);
          refused++;
          continue;
        }
        if (input.includes('\r\n')) assert.doesNotMatch(output, /[^\r]\n/, `mixed line endings:\n${JSON.stringify(output)}`);
        inputs.push(input);
        outputs.push(output);
      }
    }
    assert.ok(refused <= 6, `${refused} refused`);
    const go = goRead([...inputs, ...outputs]);
    inputs.forEach((input, i) => {
      const [before] = go[i] as GoDocument[];
      const [after] = go[inputs.length + i] as GoDocument[];
      assert.ok(before !== undefined && 'json' in before, `Go cannot read the input: ${JSON.stringify(input)}`);
      assert.ok(after !== undefined && 'json' in after, `Go cannot read the output: ${JSON.stringify(outputs[i])} (${JSON.stringify(after)})`);
      assert.equal(unstamp(after.json, before.json), 1, JSON.stringify(outputs[i]));
      assert.deepStrictEqual(after.json, before.json, `output means something else: ${JSON.stringify(outputs[i])}`);
    });
  });
});

describe('Go oracle: a template whose text is shared (anchor, alias, merge key) is stamped as Go reads it', () => {
  it('only the stamped template gets the annotation; every other use of the anchor reads as before', () => {
    const hash = `v1:${'cd'.repeat(32)}`;
    const head = 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w\n';
    const layouts = [
      'x: &t {metadata: {labels: {a: b}}, spec: {}}\nspec:\n  template: *t\n',
      'spec:\n  template: &t\n    spec: {}\nother: *t\n',
      'spec:\n  template: &t\n    metadata:\n      labels: {a: b}\n    spec: {}\nother: [*t, *t]\n',
      'base: &b {spec: {}}\nspec:\n  template:\n    <<: *b\n    metadata: {labels: {x: y}}\n',
      'base: &b {metadata: {labels: {x: y}}}\nspec:\n  template:\n    <<: [*b, {spec: {}}]\n',
      'spec:\n  template:\n    metadata: &m\n      labels: {a: b}\n    spec: {}\nextra: *m\n',
      'spec:\n  template:\n    metadata:\n      annotations: &an {k: v}\n    spec: {}\nextra: {a: *an}\n',
      'spec: &s\n  template:\n    spec: {}\nspec2: *s\n',
    ];
    const inputs: string[] = [];
    const outputs: string[] = [];
    for (const layout of layouts) {
      for (const variant of [(t: string) => t, (t: string) => `# lead\n---\n${t}`, (t: string) => t.replaceAll('\n', '\r\n')]) {
        const input = variant(`${head}${layout}`);
        const [doc] = parseStream({ label: 'x', text: input });
        assert.ok(doc !== undefined);
        inputs.push(input);
        outputs.push(joinDocuments([{ text: stampDocument(doc, [{ templatePath: ['spec', 'template'], hash }]), explicitStart: doc.explicitStart }]));
      }
    }
    const go = goRead([...inputs, ...outputs]);
    inputs.forEach((input, i) => {
      const [before] = go[i] as GoDocument[];
      const [after] = go[inputs.length + i] as GoDocument[];
      assert.ok(before !== undefined && 'json' in before, `Go cannot read the input: ${JSON.stringify(input)}`);
      assert.ok(after !== undefined && 'json' in after, `Go cannot read the output: ${JSON.stringify(outputs[i])} (${JSON.stringify(after)})`);
      assert.equal(unstamp(after.json, before.json), 1, JSON.stringify(outputs[i]));
      assert.deepStrictEqual(after.json, before.json, `output means something else: ${JSON.stringify(input)} -> ${JSON.stringify(outputs[i])}`);
    });
  });
});

/** Removes the annotation generate added (and the maps it had to create); returns how many it removed. */
function unstamp(after: unknown, before: unknown): number {
  let count = 0;
  for (const path of [['spec', 'template'], ['spec', 'jobTemplate', 'spec', 'template']]) {
    const a = dig(after, path);
    const b = dig(before, path);
    const metadata = a?.['metadata'] as Record<string, unknown> | undefined;
    const annotations = metadata?.['annotations'] as Record<string, unknown> | undefined;
    if (annotations === undefined || typeof annotations[HASH_ANNOTATION] !== 'string') continue;
    assert.match(annotations[HASH_ANNOTATION], /^v1:[0-9a-f]{64}$/);
    count++;
    const oldMetadata = b?.['metadata'] as Record<string, unknown> | null | undefined;
    const oldAnnotations = oldMetadata?.['annotations'] as Record<string, unknown> | null | undefined;
    if (oldAnnotations !== undefined && oldAnnotations !== null && HASH_ANNOTATION in oldAnnotations) {
      annotations[HASH_ANNOTATION] = oldAnnotations[HASH_ANNOTATION];
      continue;
    }
    delete annotations[HASH_ANNOTATION];
    if (Object.keys(annotations).length > 0 || (oldAnnotations !== undefined && oldAnnotations !== null)) continue;
    if (oldMetadata !== undefined && oldMetadata !== null) {
      if ('annotations' in oldMetadata) metadata!['annotations'] = oldAnnotations;
      else delete metadata!['annotations'];
    } else if (Object.keys(metadata!).length === 1) {
      if (b !== undefined && 'metadata' in b) a!['metadata'] = oldMetadata;
      else delete a!['metadata'];
    }
  }
  return count;
}

function dig(value: unknown, path: readonly string[]): Record<string, unknown> | undefined {
  let node = value;
  for (const step of path) node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[step] : undefined;
  return typeof node === 'object' && node !== null && !Array.isArray(node) ? (node as Record<string, unknown>) : undefined;
}

/** A workload that takes `cfg` through envFrom, with `template` as the pod template's text (at column 4). */
const statefulSet = (template: string): string =>
  `apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: demo\nspec:\n  serviceName: db\n  selector:\n    matchLabels: {app: db}\n  template:\n${template}`;
const CONTAINERS = '      containers:\n        - name: db\n          image: db:1\n          envFrom:\n            - configMapRef: {name: cfg}\n';
const CONFIG = (data: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: demo\ndata:\n${data}`;

/**
 * Minimal reproductions of renders with duplicate keys, each with the stream Go reads it as (the last
 * value of every repeated key, written out once). Helm, kubectl and Argo CD accept them.
 */
const DUPLICATES: readonly { readonly name: string; readonly input: string; readonly dedup: string }[] = [
  {
    name: 'podAntiAffinity twice in a StatefulSet\'s affinity',
    input: statefulSet(`    metadata:\n      labels: {app: db}\n    spec:\n      affinity:\n        podAntiAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution: []\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            - topologyKey: kubernetes.io/hostname\n              labelSelector: {matchLabels: {app: db}}\n${CONTAINERS}`),
    dedup: statefulSet(`    metadata:\n      labels: {app: db}\n    spec:\n      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            - topologyKey: kubernetes.io/hostname\n              labelSelector: {matchLabels: {app: db}}\n${CONTAINERS}`),
  },
  {
    name: 'a pod-template label twice',
    input: statefulSet(`    metadata:\n      labels:\n        app: db\n        app.kubernetes.io/name: db\n        app: db\n    spec:\n${CONTAINERS}`),
    dedup: statefulSet(`    metadata:\n      labels:\n        app: db\n        app.kubernetes.io/name: db\n    spec:\n${CONTAINERS}`),
  },
  {
    name: 'annotations twice in the pod template\'s metadata',
    input: statefulSet(`    metadata:\n      annotations:\n        dropped: "1"\n      labels: {app: db}\n      annotations:\n        kept: "2"\n    spec:\n${CONTAINERS}`),
    dedup: statefulSet(`    metadata:\n      labels: {app: db}\n      annotations:\n        kept: "2"\n    spec:\n${CONTAINERS}`),
  },
  {
    name: 'metadata twice in the pod template',
    input: statefulSet(`    metadata:\n      annotations: {dropped: "1"}\n    spec:\n${CONTAINERS}    metadata:\n      labels: {app: db}\n`),
    dedup: statefulSet(`    spec:\n${CONTAINERS}    metadata:\n      labels: {app: db}\n`),
  },
  {
    name: 'template twice in the spec',
    input: statefulSet(`    metadata:\n      annotations: {dropped: "1"}\n    spec:\n      containers: [{name: old, image: old}]\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n${CONTAINERS}`),
    dedup: statefulSet(`    metadata: {labels: {app: db}}\n    spec:\n${CONTAINERS}`),
  },
  {
    name: 'the hash annotation twice, and a config key twice',
    input: statefulSet(`    metadata:\n      annotations:\n        ${HASH_ANNOTATION}: "v1:old"\n        ${HASH_ANNOTATION}: "v1:older"\n    spec:\n${CONTAINERS}`),
    dedup: statefulSet(`    metadata:\n      annotations:\n        ${HASH_ANNOTATION}: "v1:older"\n    spec:\n${CONTAINERS}`),
  },
];

describe('Go oracle: duplicate keys are read as Go reads them, in hashing and in stamping', () => {
  it('each reproduction: Go reads it as its de-duplicated form, and generate\'s outputs for both mean the same to Go', async () => {
    const config = parseConfig(['generate', '-'], {}, process.cwd());
    const run = async (text: string): Promise<string> => (await generate(config, new AbortController().signal, async () => [{ label: '<stdin>', text }])).stdout;
    const streams: string[] = [];
    for (const { input, dedup } of DUPLICATES) {
      // The config itself has a repeated key: the hash must be of the value Go keeps.
      const withConfig = (workload: string, data: string): string => `---\n${CONFIG(data)}---\n${workload}`;
      const pair = [withConfig(input, '  k: old\n  other: x\n  k: new\n'), withConfig(dedup, '  other: x\n  k: new\n')];
      streams.push(...pair, ...(await Promise.all(pair.map(run))));
    }
    const go = goRead(streams);
    DUPLICATES.forEach(({ name }, i) => {
      const [input, dedup, output, dedupOutput] = go.slice(i * 4, i * 4 + 4);
      assert.deepStrictEqual(input, dedup, `${name}: the reproduction's de-duplicated form is wrong`);
      assert.ok(output?.every((d) => 'json' in d), `${name}: Go cannot read the output:\n${streams[i * 4 + 2]}`);
      // Same objects and the same hash in the same place: the stamp went into the mapping Go keeps.
      assert.deepStrictEqual(output, dedupOutput, `${name}: the output means something else than for the de-duplicated input:\n${streams[i * 4 + 2]}`);
      const second = (documents: GoDocument[] | undefined): unknown => {
        const document = documents?.[1];
        return document !== undefined && 'json' in document ? document.json : undefined;
      };
      const workload = second(output);
      const before = second(input);
      assert.equal(unstamp(workload, before), 1, name);
      assert.deepStrictEqual(workload, before, name);
      // The original text is kept: only annotation text was added or replaced.
      assert.ok(streams[i * 4 + 2]?.includes('k: old'), name);
    });
  });
});
