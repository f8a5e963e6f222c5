/**
 * The identity skim against Go: wherever skimIdentity answers, its apiVersion,
 * kind and metadata name/generateName/namespace are exactly what Go reads from
 * the document (the last of repeated keys); where a column-0 line could belong
 * to a deeper value for Go, it does not answer. A document Go cannot read at
 * all may still be skimmed (its schema is not checked): Argo CD then fails on
 * it exactly as it would on the renderer's own output. And a skimmed document
 * is emitted byte for byte.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { readsBeyondIdentity } from '../../core/index.ts';
import { parseStream } from '../../plugin/yaml/documents.ts';
import { skimIdentity } from '../../plugin/yaml/skim.ts';
import type { Identity } from '../../plugin/yaml/skim.ts';
import { ensureTools } from '../tools.ts';
import { FIXTURES, GOLDEN } from './cli.ts';
import { Gen } from './gen.ts';
import { readWithGo } from './goyaml.ts';

let goyaml = '';
before(async () => {
  goyaml = (await ensureTools()).goyaml;
});

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.ya?ml$/.test(name) ? [path] : [];
  });
}

/** The identity fields of Go's reading of a one-document stream, or undefined when Go reads no single mapping. */
function goIdentity(documents: readonly ({ json: unknown } | { error: string })[]): unknown {
  const [only] = documents;
  if (documents.some((d) => 'error' in d)) return undefined;
  if (documents.length !== 1 || only === undefined || !('json' in only)) return 'go: not one document';
  const object = only.json as { apiVersion?: unknown; kind?: unknown; metadata?: Record<string, unknown> };
  const metadata: Record<string, unknown> = {};
  for (const field of ['name', 'generateName', 'namespace']) if (object.metadata?.[field] !== undefined) metadata[field] = object.metadata[field];
  return { apiVersion: object.apiVersion, kind: object.kind, metadata };
}

/** Skims every one-document stream and compares each answer with Go; returns how many were answered. */
function assertSkimMatchesGo(streams: readonly string[]): number {
  const go = readWithGo(goyaml, streams);
  let answered = 0;
  streams.forEach((text, i) => {
    const identity: Identity | undefined = skimIdentity(text, 0, text.length);
    if (identity === undefined) return;
    const theirs = goIdentity(go[i] ?? []);
    if (theirs === undefined) return; // Go rejects the document: Argo CD fails on it, with or without the plugin
    answered++;
    assert.deepStrictEqual({ ...identity, metadata: { ...identity.metadata } }, theirs, `skim and Go differ:\n${JSON.stringify(text)}`);
  });
  return answered;
}

const CRD = 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.example.com\n';

/** Layouts where a wrong answer would be easy: repeated keys, quotes and flows over lines, block scalars, odd keys. */
const LAYOUTS = [
  CRD,
  `${CRD}spec:\n  group: example.com\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        description: a plain\n          description\n        type: object\n`,
  `${CRD}kind: Deployment\n`,
  `kind: Deployment\n${CRD}`,
  `${CRD}metadata:\n  namespace: other\n`,
  `${CRD}  name: again\n`,
  `${CRD}  namespace: ns # c\n  labels:\n    a: b\n  generateName: g-\n`,
  `${CRD}spec:\n  description: "a quoted\nkind: Deployment"\n`,
  `${CRD}spec:\n  description: 'a quoted\nkind: Deployment'\n`,
  `${CRD}spec:\n  list: [a,\nkind: Deployment]\n`,
  `${CRD}spec:\n  map: {a: 1,\nkind: Deployment}\n`,
  `${CRD}spec:\n  - "x\nkind: Deployment"\n`,
  `${CRD}spec:\n  description: 'a quoted\n    over: lines'\n  b: "and\n\n x # y"   # c\n`,
  `${CRD}spec:\n  description: 'a quoted\n\n  \nkind: Deployment'\n`,
  `${CRD}spec:\n  description: "a \\\n  b"\n`,
  `apiVersion: v1\nkind: Service\nmetadata:\n  name: 'a\n    b'\n`,
  `apiVersion: v1\nkind: Service\nmetadata:\n  'name\n   x': 'a'\n`,
  `${CRD}spec:\n  text: |\n    "not a quote\n    kind: Deployment\n  other: x\n`,
  `${CRD}spec:\n  text: |\n      deep\n    shallower\nkind: Deployment\n`,
  `${CRD}spec: |\n  kind: Deployment\n  "x\n`,
  `${CRD}spec: >-\n  folded\n  "x\n`,
  `${CRD}spec:\n  a: "closed" # c\n  b: 'it''s'\n  c: [x, "y]", {z: 1}]\n  "d": e\n  'f': g\n`,
  `${CRD}spec:\n  plain: it's "quoted" [not] {a flow}\n    and 'continues\n`,
  `${CRD}spec:\n  plain: x\n    "continued\nkind: Deployment"\n`,
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n    continued\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: "a\\x62"\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  "na\\x6de": b\n  name: a\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  "name": b\n',
  "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  'name': 'b'\n",
  'apiVersion: v1\nkind: Service\nmetadata: {name: a}\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: 0x1F\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: yes\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: ~\n  generateName: x-\n',
  'apiVersion: v1\nkind: &k Service\nmetadata:\n  name: a\n',
  'apiVersion: v1\nkind: !!str Service\nmetadata:\n  name: a\n',
  'apiVersion: v1\n"kind": Role\nkind: Service\nmetadata:\n  name: a\n',
  'apiVersion: v1\nkind: Service # c\nmetadata: # c\n  name: a   # c\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n    # c\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  x: y\n   z: w\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec: x\n  y\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  ? complex\n  : key\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  x: &a [1]\n  y: *a\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  labels:\n    a: b\n  name: a\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n    name: a\n  namespace: b\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  annotations:\n    x: |\n      name: b\n      "q\n  namespace: n\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  - b\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: "a" x\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a: b\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  x: |2\n     y\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  - |\n   x\n  - y\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n- a\n- "b\nkind: Deployment"\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n...\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nkind: ConfigMap\n',
  'kind: Service\nmetadata:\n  name: a\n',
  'apiVersion: v1\nkind: Service\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n',
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  description: "a\\\n    b"\n',
  // Runs of plain lines, which are stepped over at once, ending in a line that must be lexed.
  `${CRD}spec:\n  a: b\n  - c: d\n  -\n   \n\n  e: "x\nkind: Deployment"\n`,
  `${CRD}spec:\n  a: b\n  c:  - x\n`,
  `${CRD}spec:\n  a: b\n  c: d: e\n`,
  `${CRD}spec:\n  a: b\n  c: d:\n`,
  `${CRD}spec:\n  a: it's [not] {a flow}\n  b: 'x\nkind: Deployment'\n`,
  `${CRD}spec:\n  a: b\n  c: |\n    "x\n  d: e\nkind: Deployment\n`,
  `${CRD}spec:\n  a: b\n  c: [1,\nkind: Deployment]\n`,
  `${CRD}spec:\n  a: b\n\tc: d\n`,
  `${CRD}spec:\n  a: b\n  ü: ß\nmetadata:\n  name: last\n`,
];

describe('identity skim: what Go reads, or no answer', () => {
  it('layouts built to mislead it', () => {
    const answered = assertSkimMatchesGo(LAYOUTS);
    assert.ok(answered >= 20, `answered only ${answered} of ${LAYOUTS.length}`);
    // Where a column-0 `kind:` could be inside a quoted or flow value for Go, there is no answer.
    for (const text of LAYOUTS.filter((t) => /\nkind: Deployment["'\]}]/.test(t))) assert.equal(skimIdentity(text, 0, text.length), undefined, JSON.stringify(text));
  });

  it('fixtures, golden renders and generated documents', () => {
    const documents: string[] = [];
    for (const path of [...files(FIXTURES), ...files(GOLDEN)]) {
      const text = readFileSync(path, 'utf8');
      if (text.includes('\r') || text.includes('\t')) continue;
      for (const part of text.split(/^---.*\n/m)) if (part.trim() !== '') documents.push(part);
    }
    for (let seed = 1; seed <= 1000; seed++) documents.push(`${new Gen(seed).nonWorkload(0)}\n`);
    const answered = assertSkimMatchesGo(documents);
    assert.ok(answered > documents.length / 10, `answered only ${answered} of ${documents.length}`);
  });

  it('a skimmed document is read no further, emitted as it is, and read in full when asked', () => {
    const text = `---\n${CRD}spec:\n  description: x\n    y\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {a: b}\n`;
    const [crd, configMap] = parseStream({ label: 'x', text });
    assert.ok(crd !== undefined);
    assert.equal(crd.identity?.kind, 'CustomResourceDefinition');
    assert.equal(configMap?.identity, undefined); // a config is always read in full
    assert.equal(crd.text, text.slice(0, text.indexOf('---\napiVersion: v1')));
    assert.deepEqual((crd.value as { spec: unknown }).spec, { description: 'x y' });
    assert.ok(!readsBeyondIdentity('apiextensions.k8s.io', 'CustomResourceDefinition'));
    for (const [group, kind] of [['apps', 'Deployment'], ['', 'Secret'], ['', 'ConfigMap'], ['', 'List'], ['rbac.authorization.k8s.io', 'RoleList'], ['bitnami.com', 'SealedSecret'], ['argoproj.io', 'Rollout'], ['secrets-store.csi.x-k8s.io', 'SecretProviderClass']] as const) {
      assert.ok(readsBeyondIdentity(group, kind), `${group}/${kind}`);
    }
  });
});
