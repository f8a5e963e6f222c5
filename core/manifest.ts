import { ManifestError } from './errors.ts';
import type { Manifest, Origin } from './model.ts';

/** Where an object is being read: the app's destination namespace and, for errors, its document. */
export interface ManifestContext {
  /** Namespace of objects that do not set `metadata.namespace` (Argo CD's destination namespace). */
  readonly defaultNamespace: string;
  readonly origin?: Origin;
}

/** True for a plain (non-array, non-null) object. */
export function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads a nested field, or `undefined` when any step is missing or not an object. */
export function getPath(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const step of path) {
    if (!isRecord(current) || !Object.hasOwn(current, step)) return undefined;
    current = current[step];
  }
  return current;
}

/** The API group of an `apiVersion`: `apps` for `apps/v1`, `""` for the core group's `v1`. */
export function apiGroup(apiVersion: string): string {
  const slash = apiVersion.lastIndexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}

/**
 * Extracts the identity every rule needs from one parsed object, once.
 * Throws ManifestError when the object is not a Kubernetes object: not a
 * mapping, or without a string `apiVersion`, `kind` and `metadata.name`.
 * An object with only `metadata.generateName` (Argo CD hooks) is accepted
 * with `name` `""`: nothing can reference it by name.
 */
export function toManifest(object: unknown, context: ManifestContext): Manifest {
  const origin = context.origin;
  // What an error names the object by; built only for an error (this runs for every object of a render).
  const guess = (): { kind: string; name: string; namespace: string; origin?: Origin } => ({
    kind: isRecord(object) && typeof object['kind'] === 'string' ? object['kind'] : '<object>',
    name: typeof getPath(object, ['metadata', 'name']) === 'string' ? (getPath(object, ['metadata', 'name']) as string) : '',
    namespace: context.defaultNamespace,
    ...(origin === undefined ? {} : { origin }),
  });
  if (!isRecord(object)) {
    throw new ManifestError(guess(), '.', 'a Kubernetes object must be a mapping');
  }
  const apiVersion = object['apiVersion'];
  if (typeof apiVersion !== 'string' || apiVersion === '') {
    throw new ManifestError(guess(), 'apiVersion', 'must be a non-empty string');
  }
  const kind = object['kind'];
  if (typeof kind !== 'string' || kind === '') {
    throw new ManifestError(guess(), 'kind', 'must be a non-empty string');
  }
  const metadata = object['metadata'];
  if (!isRecord(metadata)) {
    throw new ManifestError(guess(), 'metadata', 'must be a mapping');
  }
  const name = metadata['name'];
  const generateName = metadata['generateName'];
  // Argo CD applies objects that only have generateName (typically hook Jobs); they get name ''.
  const generated = (name === undefined || name === null || name === '') && typeof generateName === 'string' && generateName !== '';
  if (!generated && (typeof name !== 'string' || name === '')) {
    throw new ManifestError(guess(), 'metadata.name', 'must be a non-empty string (or use metadata.generateName)');
  }
  const namespace = metadata['namespace'];
  if (namespace !== undefined && namespace !== null && typeof namespace !== 'string') {
    throw new ManifestError(guess(), 'metadata.namespace', 'must be a string');
  }
  const group = apiGroup(apiVersion);
  const resolvedName = generated ? '' : (name as string);
  const resolvedNamespace = typeof namespace === 'string' && namespace !== '' ? namespace : context.defaultNamespace;
  // Two literals rather than a spread of an optional field: one shape each, no copying.
  return Object.freeze(origin === undefined
    ? { object, group, kind, name: resolvedName, namespace: resolvedNamespace }
    : { object, group, kind, name: resolvedName, namespace: resolvedNamespace, origin });
}

/**
 * Flattens `kind: List` and typed lists (`ConfigMapList`, ...) into their
 * `items`, recursively, so that `kubectl get -o yaml` output can be fed in.
 * Items are returned as they are (same references, never copied), so a caller
 * can map a stamped item back to its document. Anything else is returned alone.
 */
export function expandLists(object: unknown): unknown[] {
  if (isRecord(object) && typeof object['kind'] === 'string' && object['kind'].endsWith('List') && Array.isArray(object['items'])) {
    return (object['items'] as unknown[]).flatMap((item) => expandLists(item));
  }
  return [object];
}

/** A lookup table of kinds by group, then kind; frozen lists in, never mutated after. */
export function byGroupAndKind<T extends { readonly group: string; readonly kind: string }>(kinds: readonly T[]): ReadonlyMap<string, ReadonlyMap<string, T>> {
  const groups = new Map<string, Map<string, T>>();
  for (const k of kinds) {
    let group = groups.get(k.group);
    if (group === undefined) {
      group = new Map();
      groups.set(k.group, group);
    }
    if (!group.has(k.kind)) group.set(k.kind, k);
  }
  return groups;
}
