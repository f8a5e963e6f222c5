import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ManifestError,
  isConfigMap,
  isSecret,
  isSecretProviderClass,
  providedSecretName,
  secretSourceKind,
  sourceTemplateAnnotations,
} from '../../core/index.ts';
import { manifest } from './helpers.ts';

const object = (apiVersion: string, kind: string, spec?: unknown) =>
  manifest({ apiVersion, kind, metadata: { name: 'own' }, ...(spec === undefined ? {} : { spec }) });

describe('providedSecretName', () => {
  const cases: [string, ReturnType<typeof manifest>, string | undefined][] = [
    ['SealedSecret names the Secret in spec.template.metadata.name', object('bitnami.com/v1alpha1', 'SealedSecret', { template: { metadata: { name: 'db' } } }), 'db'],
    ['SealedSecret defaults to its own name', object('bitnami.com/v1alpha1', 'SealedSecret', { encryptedData: {} }), 'own'],
    ['ExternalSecret names the Secret in spec.target.name', object('external-secrets.io/v1', 'ExternalSecret', { target: { name: 'db' } }), 'db'],
    ['ExternalSecret defaults to its own name', object('external-secrets.io/v1beta1', 'ExternalSecret', { target: {} }), 'own'],
    ['Certificate names the Secret in spec.secretName', object('cert-manager.io/v1', 'Certificate', { secretName: 'tls' }), 'tls'],
    ['a Certificate without spec.secretName provides nothing', object('cert-manager.io/v1', 'Certificate', {}), undefined],
    ['a kind of the wrong group provides nothing', object('example.com/v1', 'SealedSecret', {}), undefined],
    ['a Secret is not a source', object('v1', 'Secret'), undefined],
    ['a SecretProviderClass is referenced, not a Secret source', object('secrets-store.csi.x-k8s.io/v1', 'SecretProviderClass', {}), undefined],
  ];
  for (const [name, m, expected] of cases) {
    it(name, () => assert.equal(providedSecretName(m), expected));
  }
});

describe('sourceTemplateAnnotations', () => {
  const annotations = { 'reloader.stakater.com/match': 'true' };
  const cases: [string, ReturnType<typeof manifest>][] = [
    ['SealedSecret spec.template.metadata.annotations', object('bitnami.com/v1alpha1', 'SealedSecret', { template: { metadata: { annotations } } })],
    ['ExternalSecret spec.target.template.metadata.annotations', object('external-secrets.io/v1', 'ExternalSecret', { target: { template: { metadata: { annotations } } } })],
    ['Certificate spec.secretTemplate.annotations', object('cert-manager.io/v1', 'Certificate', { secretName: 'tls', secretTemplate: { annotations } })],
  ];
  for (const [name, m] of cases) {
    it(`reads ${name}`, () => assert.deepEqual({ ...sourceTemplateAnnotations(m) }, annotations));
  }
  it('is empty when the source has no template', () => {
    assert.deepEqual({ ...sourceTemplateAnnotations(object('cert-manager.io/v1', 'Certificate', { secretName: 'tls' })) }, {});
  });
  it('is empty for an object that is not a source', () => {
    assert.deepEqual({ ...sourceTemplateAnnotations(object('v1', 'ConfigMap')) }, {});
  });
  it('rejects a non-string template annotation, naming the field', () => {
    const m = object('cert-manager.io/v1', 'Certificate', { secretName: 'tls', secretTemplate: { annotations: { 'reloader.stakater.com/ignore': true } } });
    assert.throws(() => sourceTemplateAnnotations(m), (error: unknown) =>
      error instanceof ManifestError && error.field === 'spec.secretTemplate.annotations[reloader.stakater.com/ignore]');
  });
});

describe('kind predicates', () => {
  it('recognise core ConfigMap and Secret, and the CSI SecretProviderClass, by group', () => {
    assert.equal(isConfigMap(object('v1', 'ConfigMap')), true);
    assert.equal(isConfigMap(object('example.com/v1', 'ConfigMap')), false);
    assert.equal(isSecret(object('v1', 'Secret')), true);
    assert.equal(isSecret(object('example.com/v1', 'Secret')), false);
    assert.equal(isSecretProviderClass(object('secrets-store.csi.x-k8s.io/v1', 'SecretProviderClass')), true);
    assert.equal(isSecretProviderClass(object('example.com/v1', 'SecretProviderClass')), false);
    assert.equal(secretSourceKind(object('bitnami.com/v1alpha1', 'SealedSecret'))?.kind, 'SealedSecret');
  });
});
