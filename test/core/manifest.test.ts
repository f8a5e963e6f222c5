import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManifestError, apiGroup, expandLists, toManifest } from '../../core/index.ts';

describe('toManifest', () => {
  it('extracts group, kind, name and namespace', () => {
    const m = toManifest({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' } }, { defaultNamespace: 'prod' });
    assert.deepEqual({ group: m.group, kind: m.kind, name: m.name, namespace: m.namespace }, { group: 'apps', kind: 'Deployment', name: 'web', namespace: 'shop' });
  });
  it('falls back to the destination namespace', () => {
    for (const namespace of [undefined, null, '']) {
      const m = toManifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace } }, { defaultNamespace: 'prod' });
      assert.equal(m.namespace, 'prod');
    }
  });
  it('accepts an object named only by generateName (Argo CD hooks), with name ""', () => {
    const m = toManifest({ apiVersion: 'batch/v1', kind: 'Job', metadata: { generateName: 'migrate-' } }, { defaultNamespace: 'prod' });
    assert.equal(m.name, '');
  });
  it('keeps the origin and the very same object', () => {
    const object = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } };
    const m = toManifest(object, { defaultNamespace: '', origin: { file: 'a.yaml', document: 2 } });
    assert.equal(m.object, object);
    assert.deepEqual(m.origin, { file: 'a.yaml', document: 2 });
  });
  const invalid: [string, unknown, string][] = [
    ['a list', [1], '.'],
    ['a string', 'kind: x', '.'],
    ['no apiVersion', { kind: 'ConfigMap', metadata: { name: 'c' } }, 'apiVersion'],
    ['a numeric apiVersion', { apiVersion: 1, kind: 'ConfigMap', metadata: { name: 'c' } }, 'apiVersion'],
    ['no kind', { apiVersion: 'v1', metadata: { name: 'c' } }, 'kind'],
    ['no metadata', { apiVersion: 'v1', kind: 'ConfigMap' }, 'metadata'],
    ['no name and no generateName', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { labels: {} } }, 'metadata.name'],
    ['an empty name and an empty generateName', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: '', generateName: '' } }, 'metadata.name'],
    ['a numeric name', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 7, generateName: 'c-' } }, 'metadata.name'],
    ['a numeric namespace', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 3 } }, 'metadata.namespace'],
  ];
  for (const [name, object, field] of invalid) {
    it(`rejects ${name}, naming ${field} and the document`, () => {
      assert.throws(() => toManifest(object, { defaultNamespace: 'prod', origin: { file: 'x.yaml', document: 1 } }), (error: unknown) => {
        assert.ok(error instanceof ManifestError);
        assert.equal(error.field, field);
        assert.ok(error.message.startsWith('x.yaml#1 '), error.message);
        return true;
      });
    });
  }
});

describe('apiGroup', () => {
  for (const [apiVersion, group] of [['v1', ''], ['apps/v1', 'apps'], ['argoproj.io/v1alpha1', 'argoproj.io'], ['apps.openshift.io/v1', 'apps.openshift.io']] as const) {
    it(`${apiVersion} → "${group}"`, () => assert.equal(apiGroup(apiVersion), group));
  }
});

describe('expandLists', () => {
  const a = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } };
  const b = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'b' } };
  it('returns a plain object alone', () => assert.deepEqual(expandLists(a), [a]));
  it('flattens kind: List, keeping item identity', () => {
    const items = expandLists({ apiVersion: 'v1', kind: 'List', items: [a, b] });
    assert.equal(items[0], a);
    assert.equal(items[1], b);
  });
  it('flattens typed lists and nested lists', () => {
    assert.deepEqual(expandLists({ apiVersion: 'v1', kind: 'ConfigMapList', items: [a, { kind: 'List', items: [b] }] }), [a, b]);
  });
  it('leaves a *List kind without items alone (it may be a CRD named so)', () => {
    const odd = { apiVersion: 'x/v1', kind: 'AllowList', metadata: { name: 'l' }, spec: {} };
    assert.deepEqual(expandLists(odd), [odd]);
  });
  it('returns an empty list for an empty List', () => assert.deepEqual(expandLists({ kind: 'List', items: [] }), []));
});
