/**
 * The out-of-band file (ADR 0013, docs/hash-v1.md §7): its strict format,
 * the writer's deterministic bytes, the folding decision and the hash entry.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  OUT_OF_BAND_FILE,
  OutOfBandFileError,
  formatOutOfBandFile,
  hashEntries,
  listedOutOfBand,
  outOfBandEntry,
  parseOutOfBandFile,
  planWorkloads,
} from '../../core/index.ts';
import { deployment, envFromPod, manifest } from './helpers.ts';

const D1 = `v1:${'a'.repeat(64)}`;
const D2 = `v1:${'0123456789abcdef'.repeat(4)}`;
const FILE = OUT_OF_BAND_FILE;

const valid = [
  'version: 1',
  'configs:',
  '- kind: Secret',
  '  namespace: "prod"',
  '  name: "db"',
  `  digest: ${D1}`,
  '- kind: ConfigMap',
  '  namespace: prod',
  '  name: app.settings',
  `  digest: ${D2}`,
  '',
].join('\n');

/** Asserts the text is refused at `line` with a problem matching `pattern`. */
function refuses(text: string, line: number, pattern: RegExp): void {
  assert.throws(() => parseOutOfBandFile(text, FILE), (error: unknown) => {
    assert.ok(error instanceof OutOfBandFileError, `expected OutOfBandFileError, got ${String(error)}`);
    assert.equal(error.file, FILE);
    assert.equal(error.line, line, `line of: ${error.message}`);
    assert.match(error.problem, pattern);
    assert.equal(error.message, `${FILE}:${line}: ${error.problem}`);
    return true;
  });
}

describe('parseOutOfBandFile', () => {
  it('reads each entry with its line, in file order', () => {
    const index = parseOutOfBandFile(valid, FILE);
    assert.deepEqual(index.entries.map((e) => [e.kind, e.namespace, e.name, e.digest, e.origin.line]), [
      ['Secret', 'prod', 'db', D1, 3],
      ['ConfigMap', 'prod', 'app.settings', D2, 7],
    ]);
    assert.equal(index.file, FILE);
  });

  it('accepts an empty list, flow style and comments', () => {
    assert.equal(parseOutOfBandFile('# none yet\nversion: 1\nconfigs: []\n', FILE).entries.length, 0);
    const flow = parseOutOfBandFile(`{version: 1, configs: [{kind: Secret, namespace: a, name: b, digest: "${D1}"}]}`, FILE);
    assert.equal(flow.entries[0]?.name, 'b');
  });

  it('refuses what Go could read differently or what is not ours, naming the line', () => {
    refuses('', 1, /is empty/);
    refuses('- 1\n', 1, /must be a mapping/);
    refuses('configs: []\n', 1, /version is missing/);
    refuses('version: 1\n', 1, /configs is missing/);
    refuses('version: 2\nconfigs: []\n', 1, /version must be 1/);
    refuses('version: "1"\nconfigs: []\n', 1, /version must be 1/);
    refuses('version: 1\nconfigs: {}\n', 2, /configs must be a list/);
    refuses('version: 1\nconfigs: []\nextra: 1\n', 3, /unknown field extra; the fields are version, configs/);
    refuses('version: 1\nversion: 1\nconfigs: []\n', 2, /not valid YAML: Map keys must be unique/);
    refuses('version: 1\nconfigs: []\n---\nversion: 1\n', 3, /not valid YAML/);
    refuses('version: 1\nconfigs: [\n', 3, /not valid YAML/);
  });

  it('refuses a bad entry at the line of the offending field', () => {
    const entry = (fields: string[]): string => `version: 1\nconfigs:\n- ${fields.join('\n  ')}\n`;
    const ok = ['kind: Secret', 'namespace: prod', 'name: db', `digest: ${D1}`];
    const replace = (i: number, field: string): string[] => ok.map((f, j) => (j === i ? field : f));
    refuses('version: 1\nconfigs:\n- just-a-string\n', 3, /configs\[0\] must be a mapping/);
    refuses(entry(ok.slice(0, 3)), 3, /configs\[0\]\.digest is missing/);
    refuses(entry([...ok, 'owner: me']), 7, /configs\[0\]\.unknown field owner/);
    refuses(entry(replace(0, 'kind: SecretProviderClass')), 3, /kind must be one of ConfigMap, Secret/);
    refuses(entry(replace(1, 'namespace: Prod')), 4, /namespace must be a namespace name/);
    refuses(entry(replace(1, `namespace: ${'a'.repeat(64)}`)), 4, /namespace must be/);
    refuses(entry(replace(2, 'name: db_creds')), 5, /name must be a Secret name/);
    // YAML 1.1, as Go reads it: `on` is a boolean and `123` an integer, never a name; the writer quotes.
    refuses(entry(replace(2, 'name: on')), 5, /name must be a string \(quote it/);
    refuses(entry(replace(2, 'name: 123')), 5, /name must be a string \(quote it/);
    refuses(entry(replace(2, 'name: [a]')), 5, /name must be a string$/);
    refuses(entry(replace(3, `digest: ${D1.toUpperCase().replace('V1', 'v1')}`)), 6, /digest must be "v1:" followed by 64 lowercase hex digits/);
    refuses(entry(replace(3, `digest: v2:${'a'.repeat(64)}`)), 6, /digest must be/);
    refuses(entry(replace(3, `digest: ${D1}0`)), 6, /digest must be/);
  });

  it('never quotes a digest or name it refuses', () => {
    const secretish = 'v1:NOT-A-DIGEST-but-maybe-a-password';
    assert.throws(() => parseOutOfBandFile(`version: 1\nconfigs:\n- {kind: Secret, namespace: a, name: b, digest: "${secretish}"}\n`, FILE), (error: Error) => {
      assert.doesNotMatch(error.message, /NOT-A-DIGEST/);
      return true;
    });
  });

  it('refuses a config listed twice, naming both lines', () => {
    const text = `version: 1\nconfigs:\n- {kind: Secret, namespace: a, name: b, digest: ${D1}}\n- {kind: Secret, namespace: a, name: b, digest: ${D2}}\n`;
    refuses(text, 4, /configs\[1\] lists Secret a\/b again \(first at line 3\)/);
    // The same name as another kind, or in another namespace, is another config.
    const distinct = `version: 1\nconfigs:\n- {kind: Secret, namespace: a, name: b, digest: ${D1}}\n- {kind: ConfigMap, namespace: a, name: b, digest: ${D1}}\n- {kind: Secret, namespace: c, name: b, digest: ${D1}}\n`;
    assert.equal(parseOutOfBandFile(distinct, FILE).entries.length, 3);
  });

  it('refuses anchors, aliases, explicit tags and merge keys', () => {
    refuses(`version: 1\nconfigs:\n- &e {kind: Secret, namespace: a, name: b, digest: ${D1}}\n- *e\n`, 3, /anchors are not allowed/);
    refuses(`version: !!int 1\nconfigs: []\n`, 1, /explicit tags are not allowed/);
    refuses(`version: 1\nconfigs:\n- {<<: {kind: Secret}, namespace: a, name: b, digest: ${D1}}\n`, 3, /unknown field/);
  });
});

describe('formatOutOfBandFile', () => {
  const entries = [
    { kind: 'Secret' as const, namespace: 'prod', name: 'on', digest: D1 },
    { kind: 'ConfigMap' as const, namespace: 'prod', name: '123', digest: D2 },
    { kind: 'Secret' as const, namespace: 'dev', name: 'db', digest: D2 },
  ];

  it('writes the same bytes for the same entries in any order, sorted by namespace, kind, name', () => {
    const text = formatOutOfBandFile(entries);
    assert.equal(formatOutOfBandFile([...entries].reverse()), text);
    const body = text.split('\n').filter((l) => !l.startsWith('#'));
    assert.deepEqual(body, [
      'version: 1',
      'configs:',
      '- kind: Secret', '  namespace: "dev"', '  name: "db"', `  digest: ${D2}`,
      '- kind: ConfigMap', '  namespace: "prod"', '  name: "123"', `  digest: ${D2}`,
      '- kind: Secret', '  namespace: "prod"', '  name: "on"', `  digest: ${D1}`,
      '',
    ]);
  });

  it('round-trips through the strict reader, names YAML 1.1 would retype included', () => {
    const read = parseOutOfBandFile(formatOutOfBandFile(entries), FILE);
    const key = (e: { kind: string; namespace: string; name: string; digest: string }): string => `${e.namespace}/${e.kind}/${e.name}=${e.digest}`;
    assert.deepEqual(read.entries.map(key).sort(), entries.map(key).sort());
    assert.equal(parseOutOfBandFile(formatOutOfBandFile([]), FILE).entries.length, 0);
  });
});

describe('listedOutOfBand', () => {
  const index = parseOutOfBandFile(valid, FILE);
  it('folds a listed config only when it is not in the render, in the same namespace and kind', () => {
    assert.equal(listedOutOfBand(index, 'prod', 'Secret', 'db', false)?.digest, D1);
    assert.equal(listedOutOfBand(index, 'prod', 'Secret', 'db', true), undefined);
    assert.equal(listedOutOfBand(index, 'dev', 'Secret', 'db', false), undefined);
    assert.equal(listedOutOfBand(index, 'prod', 'ConfigMap', 'db', false), undefined);
    assert.equal(listedOutOfBand(undefined, 'prod', 'Secret', 'db', false), undefined);
  });
});

describe('the out-of-band hash entry', () => {
  const KEY = { bytes: new TextEncoder().encode('driftless-test-key\n') };
  it('is {digest, kind: OutOfBand<Kind>, name} in canonical JSON, hashed like any entry', () => {
    // The message written out by hand, so the test does not trust canonicalJson to check itself.
    const message = `[{"digest":"${D1}","kind":"OutOfBandSecret","name":"db"}]`;
    const entry = outOfBandEntry('Secret', 'db', D1);
    assert.equal(hashEntries([entry]), `v1:${createHash('sha256').update(message).digest('hex')}`);
    assert.equal(hashEntries([entry], KEY), `v1:${createHmac('sha256', KEY.bytes).update(message).digest('hex')}`);
    assert.equal(outOfBandEntry('ConfigMap', 'db', D1).kind, 'OutOfBandConfigMap');
  });
});

describe('planWorkloads with an out-of-band file', () => {
  const index = parseOutOfBandFile(valid, FILE);
  const configMap = manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app.settings' }, data: { a: '1' } });
  const web = deployment('web', envFromPod({ configMaps: ['app.settings'], secrets: ['db'] }));

  it('adds the digest of a listed Secret outside the render to the entries, and changes the hash', () => {
    const without = planWorkloads([configMap, web], { mode: 'all', includeRollouts: true });
    const withFile = planWorkloads([configMap, web], { mode: 'all', includeRollouts: true, outOfBand: index });
    const [before] = without;
    const [after] = withFile;
    assert.ok(before !== undefined && after !== undefined);
    assert.deepEqual(after.entries.map((e) => e.kind), ['ConfigMap', 'OutOfBandSecret']);
    assert.notEqual(after.hash, before.hash);
    const secret = after.configs.find((c) => c.kind === 'Secret');
    assert.equal(secret?.outOfBand?.origin.line, 3);
    // The ConfigMap is in the render: Git's content is hashed, its listed digest is not.
    assert.equal(after.configs.find((c) => c.kind === 'ConfigMap')?.outOfBand, undefined);
  });

  it('gives a hash to a workload whose only selected config is listed', () => {
    const db = deployment('db', envFromPod({ secrets: ['db'] }));
    assert.equal(planWorkloads([db], { mode: 'all', includeRollouts: true })[0]?.hash, undefined);
    const [plan] = planWorkloads([db], { mode: 'all', includeRollouts: true, outOfBand: index });
    assert.equal(plan?.hash, hashEntries([outOfBandEntry('Secret', 'db', D1)]));
  });

  it('folds nothing for a config the policy does not select, or a skipped workload', () => {
    const optedOut = deployment('db', envFromPod({ secrets: ['db'] }), { annotations: { 'secret.reloader.stakater.com/auto': 'false' } });
    assert.equal(planWorkloads([optedOut], { mode: 'all', includeRollouts: true, outOfBand: index })[0]?.hash, undefined);
    const annotatedMode = planWorkloads([deployment('db', envFromPod({ secrets: ['db'] }))], { mode: 'annotated', includeRollouts: true, outOfBand: index });
    assert.equal(annotatedMode[0]?.hash, undefined);
  });
});
