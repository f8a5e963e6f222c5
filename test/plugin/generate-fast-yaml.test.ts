/**
 * The fast reader against yaml: on every input where the fast path answers,
 * it must split, index, read and stamp exactly as the yaml path does. The
 * corpus: fixtures, every golden output (real kustomize/helm renders),
 * targeted layouts, and a few thousand generated documents.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DEFAULT_LIMITS, parseStream, parseStreamFast } from '../../plugin/yaml/documents.ts';
import { readFastDocument, readFastTree } from '../../plugin/yaml/fast-yaml.ts';
import type { FastNode } from '../../plugin/yaml/fast-yaml.ts';
import type { ParsedDocument } from '../../plugin/yaml/documents.ts';
import { stampDocument } from '../../plugin/stamp.ts';
import { FIXTURES, GOLDEN } from './cli.ts';
import { Gen } from './gen.ts';

const HASH = `v1:${'ab'.repeat(32)}`;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.(ya?ml|json)$/.test(name) ? [path] : [];
  });
}

/** Stamps every Deployment-like document at spec.template, or returns its text. */
function stamped(doc: ParsedDocument): string {
  const value = doc.value as { kind?: unknown; spec?: { template?: unknown } } | null;
  if (value?.spec?.template === undefined || typeof value.spec.template !== 'object') return doc.text;
  try {
    return stampDocument(doc, [{ templatePath: ['spec', 'template'], hash: HASH }]);
  } catch (error) {
    return `error: ${(error as Error).name}`;
  }
}

/** A tree's plain value, built the simple way: last of repeated keys wins. */
function valueOf(node: FastNode): unknown {
  if (node.type === 'scalar') return node.value;
  if (node.type === 'seq') return node.items.map(valueOf);
  return Object.fromEntries(node.pairs.map((pair) => [pair.key, valueOf(pair.value)]));
}

/** Compares both paths; returns whether the fast path answered. */
function same(text: string, where: string): boolean {
  let fast: ParsedDocument[] | undefined;
  try {
    fast = parseStreamFast({ label: 'x', text }, DEFAULT_LIMITS);
  } catch (error) {
    // A document the fast reader left to yaml was invalid: the same error as the yaml path's.
    assert.throws(() => parseStream({ label: 'x', text }, DEFAULT_LIMITS, { fast: false }), { message: (error as Error).message }, where);
    return false;
  }
  if (fast === undefined) return false;
  let slow: ParsedDocument[];
  try {
    slow = parseStream({ label: 'x', text }, DEFAULT_LIMITS, { fast: false });
  } catch (error) {
    assert.fail(`${where}: the fast path accepted what yaml rejects (${(error as Error).message}):\n${text}`);
  }
  const view = (docs: ParsedDocument[]) => docs.map((d) => ({ index: d.index, text: d.text, explicitStart: d.explicitStart, value: d.value }));
  assert.deepStrictEqual(view(fast), view(slow), `${where}:\n${text}`);
  assert.deepStrictEqual(fast.map(stamped), slow.map(stamped), `${where}: stamping differs`);
  return true;
}

const TARGETED = [
  'a: 1\n',
  '# c\n---\na: 1\n---\n# only\n---\nb: [1, "2", {c: d}]\n',
  'a:\n- 1\n- b: 2\n  c: 3\n-\n- - x\n',
  'a:\n  - 1\n  -   b: 2\n      c: 3\n',
  'k: |\n  line\n\n  more # not a comment\n\nnext: |-\n  x\n  y\nz: 1\n',
  'k: |\n    deep\n  shallow\n',
  'k: >\n  folded\n',
  'k: |+\n  keep\n\n',
  'k: |2\n   x\n',
  '"quoted key": v\n\'single\': \'it\'\'s\'\n',
  'a: "esc \\" \\\\ \\n \\t \\u00e9 \\/"\nb: "\\x41"\n',
  'on: 1\n',
  'y: yes\nn: no\n',
  'a: e5\nb: E10\nc: .5\nd: +1\ne: +.inf\nf: Off\ng: tRUE\nh: ~x\ni: nan\nj: -\n',
  'a: yes\nb: on\nc: 0777\nd: 0x1F\ne: 1e3\nf: 2024-01-01\ng: 22:22\nh: ~\ni: null\nj: 12345678901234567890\nk: .inf\nl: -.NaN\nm: 1_000\nn1: 0b101\n',
  'a: b: c\n',
  'a: b\n  c\n',
  'a:\n  b: 1\n   c: 2\n',
  'a: 1\na: 2\n',
  '<<: {a: 1}\n',
  'a: &x 1\nb: *x\n',
  'a: !!str 1\n',
  'a: {b: 1, c: [2, 3], "d":4, e: {}}\n',
  'a: {b: 1,}\n',
  'a: {b}\n',
  'a: [b: c]\n',
  'a: {b: 1\n  , c: 2}\n',
  'a: "multi\n  line"\n',
  'a: plain\n  continued\n',
  'a: 1 # c\nb: "2" # c\nc: # c\n  d: 3\n',
  'a:   \nb: x\n',
  'constructor: 1\n__proto__: 2\ntoString: 3\n',
  'a: -1\nb: -x\nc: :x\nd: ?x\n',
  'a: x #y\nb: x#y\n',
  '- a\n- b\n',
  'scalar\n',
  '--- |\n  text\n',
  '--- # c\na: 1\n',
  'a: 1\n...\n---\nb: 2\n',
  '%YAML 1.1\n---\na: 1\n',
  'a:\tb\n',
  'a: 1\r\nb: 2\r\n',
  'a:\n  b:\n  c:\n    - d\n',
  'kind: List\nitems:\n- kind: A\n  spec:\n    template:\n      spec: {}\n',
  'spec:\n  template:\n    metadata:\n      annotations:\n    spec: {}\n',
  'spec:\n  template:\n    metadata:\n      annotations: ~\n      labels: {a: b}\n',
  'spec:\n  template:\n    metadata: {annotations: {}}\n',
  'spec:\n  template:\n    metadata:\n      annotations:\n        driftless.dev/config-hash: |\n          old\n        x: y\n',
  'spec:\n  template:\n    metadata:\n      annotations:\n        driftless.dev/config-hash:   \n',
  // Duplicate keys: the last wins, and a stamp goes into the last mapping (Go's reading).
  'a: 1\nb: 2\na: 3\n',
  'a: {b: 1, b: 2}\n',
  '"a": 1\na: 2\n',
  'spec:\n  template:\n    metadata:\n      annotations: {a: "1"}\n      labels: {app: w}\n      annotations:\n        b: "2"\n    spec: {}\n',
  'spec:\n  template:\n    metadata:\n      annotations: {a: "1"}\n    metadata:\n      labels: {app: w}\n    spec: {}\n',
  'spec:\n  template:\n    spec: {}\n  template:\n    metadata: {}\n    spec: {}\n',
  'spec:\n  template:\n    metadata:\n      annotations:\n        driftless.dev/config-hash: "v1:a"\n        driftless.dev/config-hash: "v1:b"\n',
  'spec:\n  template:\n    metadata: {annotations: {}, annotations: {a: b}}\n',
];

describe('fast YAML reader: same answers as yaml', () => {
  it('targeted layouts (and it gives up on what it does not handle)', () => {
    let answered = 0;
    for (const [i, text] of TARGETED.entries()) if (same(text, `targeted #${i}`)) answered++;
    assert.ok(answered >= 15, `the fast path answered only ${answered} of ${TARGETED.length}`);
    for (const text of ['a: &x 1\nb: *x\n', 'a: b: c\n', 'on: 1\n', '<<: {a: 1}\n', 'a: "multi\n  line"\n', 'a: >\n  f\n']) {
      assert.equal(readFastDocument(text, 0, text.length, 200), undefined, text);
    }
    assert.equal(parseStreamFast({ label: 'x', text: '%YAML 1.1\n---\na: 1\n' }), undefined);
    // Duplicate keys are read, not left to yaml: renders with them are common (ADR 6), and the last value wins.
    const repeated = 'a: 1\nb: [x]\na: 2\n';
    assert.deepEqual(readFastDocument(repeated, 0, repeated.length, 200)?.value, { a: 2, b: ['x'] });
  });

  it('multi-line plain and single-quoted scalars (CRD descriptions) are read, folded as yaml folds them', () => {
    const folded = [
      'a: word one\n  two\n  three\n', 'a: one\n\n  two\n', 'a: one\n\n\n  two\n\n', 'a: one   \n    two  \n  three\nb: x\n', 'l:\n- one\n  two\n- three\n',
      'l:\n  - k: one\n      two\n    j: x\n', 'a:\n  b: one\n   two\n  c: d\n', 'a: one\n  # comment\nb: two\n', 'a: 1\n  2\n', 'a: x\n \n  y\n',
      "a: 'one\n  two'\n", "a: 'one ''q''\n\n  two'   # c\nb: 1\n", "a: 'one\n  # not a comment\n  two'\n", "a: 'x\n\n\n  y\n  '\n", "a: 'x   \n   y'\n",
      "l:\n- 'x\n  y'\n- b\n", "l:\n  - k: 'x: y\n      z'\n    j: x\n", "a: 'x\n  ''\n  y'\n",
      'spec:\n  template:\n    metadata:\n      annotations:\n        note: a long\n          note\n    spec: {}\n',
    ];
    for (const text of folded) {
      assert.notEqual(readFastDocument(text, 0, text.length, 200), undefined, `left to yaml: ${JSON.stringify(text)}`);
      assert.ok(same(text, JSON.stringify(text)));
    }
    // Where Go could read a continuation line otherwise, the fast reader leaves the document to yaml.
    for (const text of ['a: one\n  - two\n', 'a: one\n  two: three\n', 'a: one\n  two #c\n', 'a: one\n  # comment\n  two\n', "a: 'one\ntwo'\n", 'a: x\n  [y]\n']) {
      assert.equal(readFastDocument(text, 0, text.length, 200), undefined, JSON.stringify(text));
      same(text, JSON.stringify(text));
    }
  });

  it('fixtures and every golden output (real kustomize and helm renders)', () => {
    let answered = 0;
    const corpus = [...files(FIXTURES), ...files(GOLDEN)];
    for (const file of corpus) if (same(readFileSync(file, 'utf8'), file)) answered++;
    assert.ok(answered >= corpus.length / 2, `the fast path answered only ${answered} of ${corpus.length}`);
  });

  it('2,000 generated documents, alone and in streams mixing both readers', () => {
    let read = 0;
    const docs: string[] = [];
    for (let seed = 5000; seed < 7000; seed++) {
      const gen = new Gen(seed);
      const doc = `${gen.chance(0.5) ? gen.nonWorkload(seed) : gen.workload(seed)}\n`;
      docs.push(doc);
      same(doc, `seed ${seed}`);
      const fast = readFastDocument(doc, 0, doc.length, 200);
      if (fast !== undefined) {
        read++;
        // The reader builds the value directly, and the stamper's tree on a second read: the two must agree.
        const tree = readFastTree(doc, 0, doc.length, 200);
        assert.ok(tree !== undefined, `seed ${seed}: read as a value but not as a tree`);
        assert.deepEqual(valueOf(tree), fast.value, `seed ${seed}`);
      }
    }
    assert.ok(read > 500, `the fast reader read only ${read} of 2000`);
    for (let i = 0; i < docs.length; i += 10) same(docs.slice(i, i + 10).map((d) => `---\n${d}`).join(''), `stream at ${i}`);
  });
});
