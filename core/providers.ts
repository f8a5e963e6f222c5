import { byGroupAndKind, getPath } from './manifest.ts';
import type { Manifest } from './model.ts';
import { readAnnotations } from './policy.ts';

/** A Git-side kind that makes a controller create a Secret, and how to read it. */
export interface SecretSourceKind {
  readonly group: string;
  readonly kind: 'SealedSecret' | 'ExternalSecret' | 'Certificate';
  /** The name of the Secret it provides; `undefined` when the object names none (an invalid Certificate). */
  readonly providedName: (m: Manifest) => string | undefined;
  /** Where the annotations that the provided Secret will carry are written. */
  readonly templateAnnotationsPath: readonly string[];
}

function stringAt(m: Manifest, path: readonly string[]): string | undefined {
  const value = getPath(m.object, path);
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The Secret sources Driftless understands. Each provides a Secret in its own
 * namespace, under the name given by its spec or, for SealedSecret and
 * ExternalSecret, its own name.
 */
export const SECRET_SOURCE_KINDS: readonly SecretSourceKind[] = Object.freeze([
  {
    group: 'bitnami.com',
    kind: 'SealedSecret',
    providedName: (m: Manifest) => stringAt(m, ['spec', 'template', 'metadata', 'name']) ?? m.name,
    templateAnnotationsPath: Object.freeze(['spec', 'template', 'metadata', 'annotations']),
  },
  {
    group: 'external-secrets.io',
    kind: 'ExternalSecret',
    providedName: (m: Manifest) => stringAt(m, ['spec', 'target', 'name']) ?? m.name,
    templateAnnotationsPath: Object.freeze(['spec', 'target', 'template', 'metadata', 'annotations']),
  },
  {
    group: 'cert-manager.io',
    kind: 'Certificate',
    providedName: (m: Manifest) => stringAt(m, ['spec', 'secretName']),
    templateAnnotationsPath: Object.freeze(['spec', 'secretTemplate', 'annotations']),
  },
].map((entry) => Object.freeze(entry)) as SecretSourceKind[]);

/** The group of the Secrets Store CSI driver's SecretProviderClass. */
export const SECRET_PROVIDER_CLASS_GROUP = 'secrets-store.csi.x-k8s.io';

/** SECRET_SOURCE_KINDS by group, then kind: every object of a render is looked up. */
const SECRET_SOURCE_KIND_BY_GROUP: ReadonlyMap<string, ReadonlyMap<string, SecretSourceKind>> = byGroupAndKind(SECRET_SOURCE_KINDS);

/** The source kind of this API group and kind, or `undefined` for one that provides no Secret. */
export function secretSourceKindOf(group: string, kind: string): SecretSourceKind | undefined {
  return SECRET_SOURCE_KIND_BY_GROUP.get(group)?.get(kind);
}

/** The source kind of a manifest, or `undefined` when it provides no Secret. */
export function secretSourceKind(m: Manifest): SecretSourceKind | undefined {
  return secretSourceKindOf(m.group, m.kind);
}

/** The name of the Secret this object makes a controller create, if it is a source. */
export function providedSecretName(m: Manifest): string | undefined {
  return secretSourceKind(m)?.providedName(m);
}

/**
 * The annotations the provided Secret will carry, read from the source's
 * template (SealedSecret `spec.template.metadata`, ExternalSecret
 * `spec.target.template.metadata`, Certificate `spec.secretTemplate`), so
 * that `ignore` and `match` work on a Secret that is not in the render.
 */
export function sourceTemplateAnnotations(m: Manifest): Readonly<Record<string, string>> {
  const kind = secretSourceKind(m);
  return kind === undefined ? Object.freeze({}) : readAnnotations(m, kind.templateAnnotationsPath);
}

/** True for a core-group ConfigMap. */
export function isConfigMap(m: Manifest): boolean {
  return m.group === '' && m.kind === 'ConfigMap';
}

/** True for a core-group Secret. */
export function isSecret(m: Manifest): boolean {
  return m.group === '' && m.kind === 'Secret';
}

/** True for a Secrets Store CSI SecretProviderClass. */
export function isSecretProviderClass(m: Manifest): boolean {
  return m.group === SECRET_PROVIDER_CLASS_GROUP && m.kind === 'SecretProviderClass';
}
