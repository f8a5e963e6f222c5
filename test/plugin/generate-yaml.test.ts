/**
 * The YAML layer in process: stream splitting with original text, limits,
 * YAML 1.1 values, and the text splicing that adds the annotation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HASH_ANNOTATION } from '../../core/index.ts';
import { DEFAULT_LIMITS, parseStream, splitJsonStream } from '../../plugin/yaml/documents.ts';
import { InvalidInputError } from '../../plugin/errors.ts';
import { joinDocuments } from '../../plugin/output.ts';
import { stampDocument } from '../../plugin/stamp.ts';
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

/** Each level merges the one before nine times: 9^12 merged mappings for Go (and copies for yaml). */
const MERGE_BOMB = ['a0: &a0 {x: 1, y: 2}', ...Array.from({ length: 12 }, (_, i) => `a${i + 1}: &a${i + 1} {<<: [${Array(9).fill(`*a${i}`).join(', ')}], k${i}: 1}`)].join('\n') + '\n';

describe('parseStream', () => {
  it('keeps every document\'s text byte for byte and drops empty documents', () => {
    const text = '# head\n---\na: yes # c\n---\n# only a comment\n---\n\'b\': "on"\n...\n---\nnull\n---\nc: 1\n';
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

  it('bounds alias expansion as Go does: 150 aliases of a scalar are read, a billion laughs is refused', () => {
    const many = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata:\n  a: &v value\n${Array.from({ length: 150 }, (_, i) => `  k${i}: *v\n`).join('')}`;
    const [read] = parseStream({ label: 'many.yaml', text: many });
    assert.equal(Object.keys((read as { value: { data: object } }).value.data).length, 151);
    let bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n';
    for (let i = 1; i < 10; i++) bomb += `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${String.fromCharCode(96 + i)}`).join(',')}]\n`;
    assert.throws(
      () => parseStream({ label: 'bomb.yaml', text: bomb }),
      (e: unknown) => e instanceof InvalidInputError && /^bomb\.yaml#0: YAML aliases expand beyond the limit of Argo CD's YAML parser \("document contains excessive aliasing".*; write the values out instead of aliasing them$/.test(e.message),
    );
    // Merge keys expand too: Go decodes the merged mapping again for each use (and yaml would copy it).
    assert.throws(() => parseStream({ label: 'm.yaml', text: MERGE_BOMB }), /excessive aliasing/);
  });

  it('refuses more aliases than yaml resolves in reasonable time, saying what to change', () => {
    const text = `a: &v 1\n${Array.from({ length: 11 }, (_, i) => `k${i}: *v\n`).join('')}`;
    assert.throws(
      () => parseStream({ label: 'n.yaml', text }, { ...DEFAULT_LIMITS, maxAliases: 10 }),
      (e: unknown) => e instanceof InvalidInputError && e.message.startsWith("n.yaml#0: more than 10 YAML aliases (*name) in one document, the plugin's limit; write some of the values out"),
    );
    assert.equal(parseStream({ label: 'n.yaml', text }, { ...DEFAULT_LIMITS, maxAliases: 11 }).length, 1);
  });

  it('reads plain scalars as Go does: e5, ".", 1e400 are strings; 0o17 and 1_000 ints', () => {
    const value = only('a: e5\nb: E10\nc: .\nd: ._1\ne: -e5\nf: 0o17\ng: 1_000\nh: 0x7fffffffffffffffff\ni: "0o17"\nj: 08\nk: .5\n').value;
    assert.deepEqual(value, { a: 'e5', b: 'E10', c: '.', d: '._1', e: '-e5', f: 15, g: 1000, h: '0x7fffffffffffffffff', i: '0o17', j: 8, k: 0.5 });
    // Both readers: the same text through yaml alone.
    assert.deepEqual(parseStream({ label: 's', text: 'a: [e5, ., 0o17]\n' }, DEFAULT_LIMITS, { fast: false })[0]?.value, { a: ['e5', '.', 15] });
  });

  it('rejects, naming the line, what JSON cannot carry as Go reads it, and tags Go reads otherwise', () => {
    for (const [text, problem] of [
      ['a: 1\nb: 12345678901234567890\n', /line 2, column 4: a number that JSON cannot carry exactly/],
      ['a: .inf\n', /a number that JSON cannot carry exactly/],
      ['a: 1.7976931348623157e309\n', /a number that JSON cannot carry exactly/],
      ['{"a": 1e400}\n', /a number that JSON cannot carry exactly/],
      ['a: 1\n...\nb: 2\n', /line 3, column 1: a document after a \.\.\. end marker must start with ---/],
      ['a: !!int S3cr3tValue\n', /line 1, column 4: /],
      ['a: !!binary aGk=\n', /line 1, column 4: a !!binary value, .*; put the base64 text without the tag under data \(Secret\) or binaryData \(ConfigMap\)/],
      ['a: !<tag:yaml.org,2002:binary> aGk=\n', /line 1, column 4: a !!binary value/],
      ['a: !!set {x}\n', /line 1, column 4: a !!set value, .*; remove the tag/],
      ['a: !!omap [{x: 1}]\n', /a !!omap value, .*; remove the tag/],
      ['a: !!timestamp 2001-01-01\n', /a !!timestamp value, .*; remove the tag and quote the value/],
      ['a: !foo x\n', /line 1, column 4: a tag that is not a standard YAML type, .*; remove the tag/],
      ['a: !<S3cr3tValue> x\n', /line 1, column 4: a tag that is not a standard YAML type/],
      ['~: 1\n', /a mapping key must be a string, an integer or a boolean/],
      ['1e3: 1\n', /a mapping key must be a string, an integer or a boolean/],
      ['b: &b {x: 1}\nm:\n  y: 2\n  <<: *b\n', /line 4, column 3: a merge key \(<<\) must come first/],
      ['a: [x?y]\n', /a "\?" inside an unquoted value/],
      ['--- a\n', /line 1, column 1: a line starting with --- must be a document separator/],
    ] as const) {
      assert.throws(() => parseStream({ label: 'f.yaml', text }), (e: unknown) => e instanceof InvalidInputError && problem.test(e.message) && !/S3cr3t|aGk=/.test(e.message), text);
    }
  });

  it('numbers documents as Argo CD splits them on every path, also in a refusal after a ... end marker', () => {
    // `b: 2` is in the splitter's document #1 (after `...` it reads on to the next `---`); yaml alone sees a third document.
    const text = 'x: 0\n---\na: 1\n...\nb: 2\n---\nc: 3\n';
    for (const fast of [true, false]) {
      assert.throws(
        () => parseStream({ label: 'f.yaml', text }, DEFAULT_LIMITS, { fast }),
        (e: unknown) => e instanceof InvalidInputError && e.message.startsWith('f.yaml#1: line 5, column 1: a document after a ... end marker must start with ---'),
        `fast: ${fast}`,
      );
    }
    // The documents around a `...` keep the splitter's bounds and numbers on both paths.
    const ended = 'x: 0\n---\na: 1\n...\n# after the end\n---\nc: 3\n';
    for (const fast of [true, false]) {
      const docs = parseStream({ label: 'f.yaml', text: ended }, DEFAULT_LIMITS, { fast });
      assert.deepEqual(docs.map((d) => [d.index, d.text, d.explicitStart]), [[0, 'x: 0\n', false], [1, '---\na: 1\n...\n# after the end\n', true], [2, '---\nc: 3\n', true]]);
    }
  });

  it('drops a leading byte order mark, and rejects one later or a line break only Go sees', () => {
    const docs = parseStream({ label: 'b.yaml', text: '\ufeffapiVersion: v1\nkind: List\n' });
    assert.deepEqual(docs[0]?.value, { apiVersion: 'v1', kind: 'List' });
    assert.equal(joinDocuments(docs), '---\napiVersion: v1\nkind: List\n');
    for (const [text, where] of [['a: 1\n---\n\ufeffb: 2\n', /^f\.yaml#1: line 3, column 1: a byte order mark/], ['data:\n  a: x # c\u2028  b: hidden\n', /^f\.yaml#0: line 2, column 11: U\+2028/], ['a: "x\u0085y"\n', /U\+0085/], ['a: x\u2029\n', /U\+2029/], ['a: 1\rb: 2\r', /line 1, column 5: a carriage return not followed by a line feed/], ['a: "x\ry"\n', /carriage return/]] as const) {
      assert.throws(() => parseStream({ label: 'f.yaml', text }), (e: unknown) => e instanceof InvalidInputError && where.test(e.message), JSON.stringify(text));
    }
  });

  it('bounds nesting depth and what aliases expand to, with exit-4 errors', () => {
    const deep = `x: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`;
    assert.throws(() => parseStream({ label: 'd.yaml', text: deep }), (e: unknown) => e instanceof InvalidInputError && /nests/.test(e.message));
    const keys = Array.from({ length: 3000 }, (_, i) => `${' '.repeat(i)}k${i}:\n`).join('');
    assert.throws(() => parseStream({ label: 'd.yaml', text: keys }), (e: unknown) => e instanceof InvalidInputError && /nests/.test(e.message));
    const big = `s: &s "${'x'.repeat(200_000)}"\n${Array.from({ length: 60 }, (_, i) => `k${i}: *s\n`).join('')}`;
    assert.throws(
      () => parseStream({ label: 'a.yaml', text: big }, { ...DEFAULT_LIMITS, maxDocumentBytes: 1_000_000 }),
      (e: unknown) => e instanceof InvalidInputError && e.message.startsWith('a.yaml#0: YAML aliases expand the document beyond 1000000 bytes'),
    );
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

  it('stamps a template shared through an anchor as Go reads it: each use written out, only the workload annotated', () => {
    // The pod template *is* an anchor, used again by a PodTemplate of the same List: splicing the annotation
    // into the anchored text would annotate the PodTemplate too (Go expands the alias).
    const anchored = 'apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: a}\n  spec:\n    template: &tpl\n      metadata:\n        labels: {app: a}\n      spec: {containers: [{name: c, image: i}]}\n- apiVersion: v1\n  kind: PodTemplate\n  metadata: {name: p}\n  template: *tpl\n';
    const doc = only(anchored);
    const out = stampDocument(doc, [{ templatePath: ['items', 0, 'spec', 'template'], hash: HASH }]);
    const [read] = parseStream({ label: 'out', text: out });
    const { items } = (read as { value: { items: { spec?: { template: unknown }; template?: unknown }[] } }).value;
    assert.deepEqual(items[0]?.spec?.template, { metadata: { labels: { app: 'a' }, annotations: { [HASH_ANNOTATION]: HASH } }, spec: { containers: [{ name: 'c', image: 'i' }] } });
    assert.deepEqual(items[1]?.template, { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'c', image: 'i' }] } }, 'the other use is unchanged');
    assert.equal(items.length, 2);

    // Two workloads of one template (`template: *tpl`): each gets its own hash, as their namespaces differ.
    const two = anchored.replace('kind: PodTemplate\n  metadata: {name: p}\n  template: *tpl', 'kind: Deployment\n  metadata: {name: b, namespace: other}\n  spec:\n    template: *tpl');
    const other = `v1:${'f'.repeat(64)}`;
    const both = stampDocument(only(two), [{ templatePath: ['items', 0, 'spec', 'template'], hash: HASH }, { templatePath: ['items', 1, 'spec', 'template'], hash: other }]);
    const [readBoth] = parseStream({ label: 'out', text: both });
    const stamped = (readBoth as { value: { items: { spec: { template: { metadata: { annotations: Record<string, string> } } } }[] } }).value.items;
    assert.equal(stamped[0]?.spec.template.metadata.annotations[HASH_ANNOTATION], HASH);
    assert.equal(stamped[1]?.spec.template.metadata.annotations[HASH_ANNOTATION], other);

    // A template built with a merge key: the merged keys, then the annotation, as Go reads them.
    const merged = 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nbase: &base\n  metadata:\n    labels: {a: b}\n  spec: {}\nspec:\n  template:\n    <<: *base\n';
    const fromMerge = parseStream({ label: 'out', text: stampDocument(only(merged), [{ templatePath: ['spec', 'template'], hash: HASH }]) })[0]?.value as { base: unknown; spec: { template: unknown } };
    assert.deepEqual(fromMerge.spec.template, { metadata: { labels: { a: 'b' }, annotations: { [HASH_ANNOTATION]: HASH } }, spec: {} });
    assert.deepEqual(fromMerge.base, { metadata: { labels: { a: 'b' } }, spec: {} }, 'the merged mapping is unchanged');
  });

  it('keeps the document\'s own --- and its line endings when it writes a shared template out', () => {
    const text = '---\r\napiVersion: apps/v1\r\nkind: Deployment\r\nmetadata: {name: x}\r\nx: &t {spec: {}}\r\nspec:\r\n  template: *t\r\n';
    const out = stampDocument(only(text), [{ templatePath: ['spec', 'template'], hash: HASH }]);
    assert.ok(out.startsWith('---\r\n{'), out);
    assert.ok(out.endsWith('}\r\n') && !/[^\r]\n/.test(out), JSON.stringify(out));
  });

  it('an anchor that no alias uses, or one outside the template, changes nothing: the annotation is spliced in', () => {
    const text = 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, labels: &l {a: b}}\nspec:\n  selector: {matchLabels: *l}\n  template: &unused\n    metadata:\n      labels: {a: b}\n    spec: {}\n';
    const out = stampDocument(only(text), [{ templatePath: ['spec', 'template'], hash: HASH }]);
    assert.equal(out, text.replace('    metadata:\n      labels', `    metadata:\n      annotations:\n        ${HASH_ANNOTATION}: "${HASH}"\n      labels`));
  });

  it('keeps a comment after an empty annotations/metadata a comment, and CRLF line endings', () => {
    for (const tail of ['    metadata:\n      annotations: # none yet\n', '    metadata: # c\n', '    metadata:\n      annotations: # c\n      labels: {a: b}\n']) {
      const out = stampDocument(only(deployment(tail)), [{ templatePath: ['spec', 'template'], hash: HASH }]);
      assert.match(out, /[}"] # (none yet|c)\n/, out);
    }
    const crlf = deployment('    metadata:\n      labels: {a: b}\n').replaceAll('\n', '\r\n');
    const out = stampDocument(only(crlf), [{ templatePath: ['spec', 'template'], hash: HASH }]);
    assert.doesNotMatch(out, /[^\r]\n/, 'no bare LF in a CRLF document');
    assert.match(out, new RegExp(`${HASH_ANNOTATION}: "${HASH}"\\r\\n`));
  });

  it('names the document and field when the template is not a mapping', () => {
    assert.throws(
      () => stampDocument(only(deployment('    metadata: [a]\n')), [{ templatePath: ['spec', 'template'], hash: HASH }]),
      (e: unknown) => e instanceof InvalidInputError && /^in\.yaml#0 Deployment x: spec\.template\.metadata: must be a mapping$/.test(e.message),
    );
  });
});
