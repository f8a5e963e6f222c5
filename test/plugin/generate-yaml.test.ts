/**
 * The YAML layer in process: stream splitting with original text, limits,
 * YAML 1.1 values, and the text splicing that adds the annotation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HASH_ANNOTATION } from '../../core/index.ts';
import { DEFAULT_LIMITS, parseStream, splitJsonStream } from '../../plugin/documents.ts';
import { InvalidInputError } from '../../plugin/errors.ts';
import { joinDocuments } from '../../plugin/output.ts';
import { StampVerificationError, stampDocument } from '../../plugin/stamp.ts';
import { annotationOnlyProblems, parseYaml11 } from './diff.ts';

const HASH = `v1:${'0123456789abcdef'.repeat(4)}`;
const only = (text: string, label = 'in.yaml') => {
  const docs = parseStream({ label, text });
  assert.equal(docs.length, 1);
  return docs[0]!;
};

/** Stamps and checks the result both ways: only annotation lines differ, and it means input + annotation. */
function stamp(text: string, templatePath: readonly (string | number)[] = ['spec', 'template']): string {
  const doc = only(text);
  const out = stampDocument(doc, [{ templatePath, hash: HASH }]);
  assert.deepEqual(annotationOnlyProblems(text, out), []);
  const value = parseYaml11(out)[0] as Record<string, any>;
  let node: any = value;
  for (const step of templatePath) node = node[step];
  assert.equal(node.metadata.annotations[HASH_ANNOTATION], HASH);
  return out;
}

describe('parseStream', () => {
  it('keeps every document\'s text byte for byte and drops empty documents', () => {
    const text = '# head\n---\na: yes # c\n---\n# only a comment\n---\n\'b\': "on"\n...\n--- null\n---\nc: 1\n';
    const docs = parseStream({ label: 's', text });
    assert.deepEqual(docs.map((d) => d.index), [0, 2, 4]);
    assert.deepEqual(docs.map((d) => d.text), ['# head\n---\na: yes # c\n', '---\n\'b\': "on"\n...\n', '---\nc: 1\n']);
    assert.equal(joinDocuments(docs), '# head\n---\na: yes # c\n---\n\'b\': "on"\n...\n---\nc: 1\n');
  });

  it('adds a --- before a document without one and a final newline', () => {
    const docs = parseStream({ label: 's', text: 'a: 1' });
    assert.equal(docs[0]?.explicitStart, false);
    assert.equal(joinDocuments(docs), '---\na: 1\n');
  });

  it('reads values as YAML 1.1 the way Go does: booleans, octal; timestamps and base-60 stay strings', () => {
    const value = only('a: yes\nb: on\nc: 0755\nd: 2024-01-01\ne: 22:22\nf: "yes"\ng: 1e3\nh: ~\n').value;
    assert.deepEqual(value, { a: true, b: true, c: 493, d: '2024-01-01', e: '22:22', f: 'yes', g: 1000, h: null });
  });

  it('splits a stream of concatenated JSON objects, and leaves a single JSON object to YAML', () => {
    assert.deepEqual(splitJsonStream('{"a":"}"}\n {"b":[{}]}'), [[0, 9], [11, 21]]);
    assert.equal(splitJsonStream('{"a":1}\n'), undefined);
    assert.equal(splitJsonStream('{"a":1}\n---\n{"b":2}\n'), undefined);
    const docs = parseStream({ label: 'j', text: '{"a":1}\n{"b":2}' });
    assert.deepEqual(docs.map((d) => [d.index, d.text, d.value]), [[0, '{"a":1}', { a: 1 }], [1, '{"b":2}', { b: 2 }]]);
  });

  it('rejects a document over the size limit, naming it', () => {
    const text = `a: 1\n---\nb: "${'x'.repeat(200)}"\n`;
    assert.throws(
      () => parseStream({ label: 'big.yaml', text }, { ...DEFAULT_LIMITS, maxDocumentBytes: 100 }),
      (e: unknown) => e instanceof InvalidInputError && /^big\.yaml#1: document is \d+ bytes, over the limit of 100 bytes$/.test(e.message),
    );
    assert.equal(DEFAULT_LIMITS.maxDocumentBytes, 8 * 1024 * 1024);
  });

  it('rejects a huge document before parsing it, with the same message and index', () => {
    const limits = { ...DEFAULT_LIMITS, maxDocumentBytes: 100 };
    const big = `b: "${'x'.repeat(200)}`; // unterminated: only the size check can name it
    for (const [text, index] of [
      [`a: 1\n---\n${big}\n---\nc: 1\n`, 1],
      [`# only a comment\n---\n${big}\n`, 0],
      [`---\na: 1\n---\n${big}\n`, 1],
      [`${big}\n---\na: 1\n`, 0],
    ] as const) {
      assert.throws(
        () => parseStream({ label: 'big.yaml', text }, limits),
        (e: unknown) => e instanceof InvalidInputError && e.message.startsWith(`big.yaml#${index}: document is `),
        text.slice(0, 30),
      );
    }
    const chunks = `{"a":1}\n{"b":"${'x'.repeat(200)}"}`;
    assert.throws(() => parseStream({ label: 'j', text: chunks }, limits), /^InvalidInputError: j#1: document is \d+ bytes/);
  });

  it('bounds alias expansion', () => {
    const text = 'a: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b]\n';
    assert.throws(
      () => parseStream({ label: 'bomb.yaml', text }, { ...DEFAULT_LIMITS, maxAliasCount: 10 }),
      (e: unknown) => e instanceof InvalidInputError && /bomb\.yaml#0: YAML aliases expand beyond the limit \(maxAliasCount 10\)/.test(e.message),
    );
    assert.equal(parseStream({ label: 'ok.yaml', text }).length, 1, 'a few aliases are fine with the default');
  });

  it('reports the line and column of a parse error in the whole stream', () => {
    assert.throws(
      () => parseStream({ label: 'f.yaml', text: 'a: 1\n---\nb: 2\n---\nc: [\n' }),
      (e: unknown) => e instanceof InvalidInputError && /^f\.yaml#2: line \d+, column \d+: /.test(e.message),
    );
  });
});

describe('stampDocument', () => {
  const deployment = (template: string): string =>
    `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: 1\n  template:\n${template}`;

  it('creates metadata and annotations when the template has none', () => {
    const out = stamp(deployment('    spec:\n      containers: []\n'));
    assert.equal(out, deployment(`    metadata:\n      annotations:\n        ${HASH_ANNOTATION}: "${HASH}"\n    spec:\n      containers: []\n`));
  });

  it('adds the key first in existing block annotations, keeping the others', () => {
    const out = stamp(deployment('    metadata:\n      annotations:\n        a: "1"   # note\n    spec: {}\n'));
    assert.equal(out, deployment(`    metadata:\n      annotations:\n        ${HASH_ANNOTATION}: "${HASH}"\n        a: "1"   # note\n    spec: {}\n`));
  });

  it('replaces null, ~ and empty annotations with a block map', () => {
    for (const value of [' null', ' ~', '']) {
      const out = stamp(deployment(`    metadata:\n      annotations:${value}\n      labels: {a: b}\n    spec: {}\n`));
      assert.equal(out, deployment(`    metadata:\n      annotations:\n        ${HASH_ANNOTATION}: "${HASH}"\n      labels: {a: b}\n    spec: {}\n`));
    }
  });

  it('uses a flow map in place of null when a comment follows it', () => {
    const out = stamp(deployment('    metadata:\n      annotations: null # none yet\n    spec: {}\n'));
    assert.match(out, /annotations: \{"driftless\.dev\/config-hash": "v1:[0-9a-f]{64}"\} # none yet/);
  });

  it('fills flow maps, empty or not', () => {
    assert.match(stamp(deployment('    metadata: {annotations: {}}\n    spec: {}\n')), /metadata: \{annotations: \{"driftless\.dev\/config-hash": "v1:[0-9a-f]{64}"\}\}/);
    assert.match(stamp(deployment('    metadata: {labels: {a: b}}\n    spec: {}\n')), /metadata: \{"annotations": \{"driftless\.dev\/config-hash": "v1:[0-9a-f]{64}"\}, labels: \{a: b\}\}/);
  });

  it('replaces an existing value, whatever its style', () => {
    for (const old of ['"v1:old"', "'v1:old'", 'v1:old', 'null', '', '|\n          v1:old']) {
      const out = stamp(deployment(`    metadata:\n      annotations:\n        ${HASH_ANNOTATION}: ${old}\n        b: c\n    spec: {}\n`));
      assert.equal(out, deployment(`    metadata:\n      annotations:\n        ${HASH_ANNOTATION}: "${HASH}"\n        b: c\n    spec: {}\n`), old);
    }
  });

  it('keeps pretty JSON pretty and valid, and compact JSON compact', () => {
    const pretty = '{\n  "apiVersion": "apps/v1",\n  "kind": "Deployment",\n  "metadata": {"name": "x"},\n  "spec": {\n    "template": {\n      "spec": {}\n    }\n  }\n}\n';
    const out = stamp(pretty);
    assert.equal(JSON.parse(out).spec.template.metadata.annotations[HASH_ANNOTATION], HASH);
    assert.equal(out.split('\n').length, pretty.split('\n').length + 1);
    const compact = '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"template":{"metadata":{"labels":{"a":"b"}},"spec":{}}}}';
    const outCompact = stamp(compact);
    assert.equal(JSON.parse(outCompact).spec.template.metadata.labels.a, 'b');
    assert.equal(outCompact.includes('\n'), false);
  });

  it('stamps items of a List written with sequence indicators', () => {
    const list = 'apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: a}\n  spec:\n    template:\n      spec: {}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: b}\n  spec:\n    template:\n      metadata:\n        labels: {x: z}\n      spec: {}\n';
    const doc = only(list);
    const out = stampDocument(doc, [
      { templatePath: ['items', 0, 'spec', 'template'], hash: HASH },
      { templatePath: ['items', 1, 'spec', 'template'], hash: HASH },
    ]);
    const value = parseYaml11(out)[0] as any;
    assert.equal(value.items[0].spec.template.metadata.annotations[HASH_ANNOTATION], HASH);
    assert.equal(value.items[1].spec.template.metadata.annotations[HASH_ANNOTATION], HASH);
    assert.deepEqual(value.items[1].spec.template.metadata.labels, { x: 'z' });
  });

  it('stamps a template that starts on a sequence line (`- spec:`)', () => {
    const text = 'apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: a}\n  spec:\n    template:\n      spec: {}\n';
    const out = stamp(text, ['items', 0, 'spec', 'template']);
    assert.match(out, /\n {6}metadata:\n {8}annotations:\n/);
  });

  it('returns the original text when there is nothing to stamp', () => {
    const doc = only('a: yes\n');
    assert.equal(stampDocument(doc, []), 'a: yes\n');
  });

  it('refuses, instead of changing meaning, when the template comes from a merge key', () => {
    const text = 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nbase: &base\n  metadata:\n    labels: {a: b}\n  spec: {}\nspec:\n  template:\n    <<: *base\n';
    assert.throws(() => stampDocument(only(text), [{ templatePath: ['spec', 'template'], hash: HASH }]), StampVerificationError);
  });

  it('names the document and field when the template is not a mapping', () => {
    assert.throws(
      () => stampDocument(only(deployment('    metadata: [a]\n')), [{ templatePath: ['spec', 'template'], hash: HASH }]),
      (e: unknown) => e instanceof InvalidInputError && /^in\.yaml#0: spec\.template\.metadata: must be a mapping$/.test(e.message),
    );
  });
});
