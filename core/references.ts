import { isRecord } from './manifest.ts';
import type { ConfigKind, Reference, ReferenceField } from './model.ts';

/** The container lists of a pod spec, in the order references are reported. */
const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'] as const;

function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Names in a path are readable locators; fall back to the index for an unnamed item. */
function label(item: unknown, key: string, index: number): string {
  return isRecord(item) ? (nonEmptyString(item[key]) ?? String(index)) : String(index);
}

interface Found {
  readonly kind: ConfigKind;
  readonly name: string;
  readonly field: ReferenceField;
  readonly optional: boolean;
}

function ref(kind: ConfigKind, field: ReferenceField, holder: unknown, nameKey: string): Found | undefined {
  if (!isRecord(holder)) return undefined;
  const name = nonEmptyString(holder[nameKey]);
  if (name === undefined) return undefined;
  return { kind, name, field, optional: holder['optional'] === true };
}

function containerReferences(listName: string, container: unknown, index: number): Reference[] {
  if (!isRecord(container)) return [];
  const containerName = label(container, 'name', index);
  const containers = Object.freeze([containerName]);
  const out: Reference[] = [];
  const at = `${listName}[${containerName}]`;
  list(container['env']).forEach((env, i) => {
    if (!isRecord(env) || !isRecord(env['valueFrom'])) return;
    const valueFrom = env['valueFrom'];
    const found =
      ref('ConfigMap', 'env.configMapKeyRef', valueFrom['configMapKeyRef'], 'name') ??
      ref('Secret', 'env.secretKeyRef', valueFrom['secretKeyRef'], 'name');
    if (found !== undefined) out.push(Object.freeze({ ...found, path: `${at}.env[${label(env, 'name', i)}]`, containers }));
  });
  list(container['envFrom']).forEach((envFrom, i) => {
    if (!isRecord(envFrom)) return;
    const path = `${at}.envFrom[${i}]`;
    for (const found of [
      ref('ConfigMap', 'envFrom.configMapRef', envFrom['configMapRef'], 'name'),
      ref('Secret', 'envFrom.secretRef', envFrom['secretRef'], 'name'),
    ]) {
      if (found !== undefined) out.push(Object.freeze({ ...found, path, containers }));
    }
  });
  return out;
}

/** Which containers mount each volume, across every container list, in pod-spec order. */
function mountsByVolume(podSpec: Readonly<Record<string, unknown>>): Map<string, string[]> {
  const mounts = new Map<string, string[]>();
  for (const listName of CONTAINER_LISTS) {
    list(podSpec[listName]).forEach((container, index) => {
      if (!isRecord(container)) return;
      const containerName = label(container, 'name', index);
      for (const mount of list(container['volumeMounts'])) {
        const volume = isRecord(mount) ? nonEmptyString(mount['name']) : undefined;
        if (volume === undefined) continue;
        const names = mounts.get(volume) ?? [];
        if (!names.includes(containerName)) names.push(containerName);
        mounts.set(volume, names);
      }
    });
  }
  return mounts;
}

function volumeReferences(volume: unknown, index: number, mounts: Map<string, string[]>): Reference[] {
  if (!isRecord(volume)) return [];
  const volumeName = label(volume, 'name', index);
  const containers = Object.freeze([...(mounts.get(volumeName) ?? [])]);
  const at = `volumes[${volumeName}]`;
  const out: Reference[] = [];
  const add = (found: Found | undefined, path: string): void => {
    if (found !== undefined) out.push(Object.freeze({ ...found, path, containers }));
  };
  add(ref('ConfigMap', 'volume.configMap', volume['configMap'], 'name'), at);
  add(ref('Secret', 'volume.secret', volume['secret'], 'secretName'), at);
  const projected = volume['projected'];
  if (isRecord(projected)) {
    list(projected['sources']).forEach((source, i) => {
      if (!isRecord(source)) return;
      const path = `${at}.projected.sources[${i}]`;
      add(ref('ConfigMap', 'volume.projected.configMap', source['configMap'], 'name'), path);
      add(ref('Secret', 'volume.projected.secret', source['secret'], 'name'), path);
    });
  }
  const csi = volume['csi'];
  if (isRecord(csi) && isRecord(csi['volumeAttributes'])) {
    const name = nonEmptyString(csi['volumeAttributes']['secretProviderClass']);
    if (name !== undefined) {
      add({ kind: 'SecretProviderClass', name, field: 'volume.csi.secretProviderClass', optional: false }, at);
    }
  }
  return out;
}

/**
 * Every ConfigMap, Secret and SecretProviderClass a pod spec uses, in a
 * stable order: containers, initContainers, ephemeralContainers (each one's
 * `env`, then `envFrom`), then `volumes` (projected sources in order).
 * `imagePullSecrets` are not references: a changed pull secret does not change
 * what runs. A volume counts even when no container mounts it, because the
 * kubelet sets up every volume of the pod (its `containers` is then empty).
 * Malformed or absent fields are skipped: validating pod specs is the API
 * server's job, not ours.
 */
export function findReferences(podSpec: unknown): Reference[] {
  if (!isRecord(podSpec)) return [];
  const out: Reference[] = [];
  for (const listName of CONTAINER_LISTS) {
    list(podSpec[listName]).forEach((container, index) => {
      out.push(...containerReferences(listName, container, index));
    });
  }
  const mounts = mountsByVolume(podSpec);
  list(podSpec['volumes']).forEach((volume, index) => {
    out.push(...volumeReferences(volume, index, mounts));
  });
  return out;
}
