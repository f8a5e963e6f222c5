/**
 * Reducers: raw API objects in, frozen summaries out (controller/model.ts).
 * They run on every list item and watch event, keep no reference into the raw
 * object, and are pure given `now` — the payload of a Secret is digested here
 * and never stored.
 */
import { ANNOTATIONS, BOOKKEEPING, DRIFTLESS_PREFIX, FLEET_ANNOTATIONS, HASH_ANNOTATION, RELOADER_ROLLOUT_STRATEGY, WRITE_BACK_ANNOTATION, configMapEntry, findReferences, getPath, hashEntries, isRecord, podTemplatePath, secretEntry, toManifest, type HashKey, type Manifest } from '../../core/index.ts';
import { readSyncWindows } from '../windows/sync-windows.ts';
import type { ApplicationSourceLike } from '../writeback/source.ts';
import type {
  AppProjectSummary,
  ApplicationSummary,
  ConfigProducer,
  ConfigSummary,
  PodSummary,
  ReplicaSetSummary,
  Tracking,
  UpdateStrategy,
  WorkloadKindName,
  WorkloadStatus,
  WorkloadSummary,
} from '../model.ts';

/** How Argo CD tracks what belongs to an Application (argocd-cm `application.resourceTrackingMethod`). */
export interface TrackingOptions {
  readonly method: 'annotation' | 'label' | 'annotation+label';
  /** The label of the `label` method (argocd-cm `application.instanceLabelKey`). */
  readonly label: string;
}

/** Argo CD's tracking annotation. */
export const TRACKING_ID_ANNOTATION = 'argocd.argoproj.io/tracking-id';

/** The annotation cert-manager puts on every Secret it issues (it sets no owner reference by default). */
const CERT_MANAGER_CERTIFICATE = 'cert-manager.io/certificate-name';
/** The label External Secrets puts on the Secrets it creates. */
const ESO_CREATED_BY = 'reconcile.external-secrets.io/created-by';

/** Owners whose Secrets are written by an operator, never by a sync. */
const PRODUCER_OWNERS: readonly { readonly group: string; readonly kind: string }[] = Object.freeze([
  { group: 'external-secrets.io', kind: 'ExternalSecret' },
  { group: 'bitnami.com', kind: 'SealedSecret' },
  { group: 'cert-manager.io', kind: 'Certificate' },
]);

type Raw = Readonly<Record<string, unknown>>;

function record(value: unknown): Raw {
  return isRecord(value) ? value : {};
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function optionalNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** String-valued entries of a map field, copied (never a view of the raw object). */
function stringRecord(value: unknown, keep?: (key: string) => boolean): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(record(value))) {
    if (typeof item === 'string' && (keep === undefined || keep(key))) out[key] = item;
  }
  return Object.freeze(out);
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.lastIndexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}

/**
 * Parses Argo CD's tracking of an object. The annotation's format is
 * `<app>:<group>/<kind>:<namespace>/<name>`; it names the object itself only
 * when those parts match, which tells a synced object from one whose operator
 * copied its source's metadata.
 */
export function readTracking(raw: unknown, type: { readonly apiVersion: string; readonly kind: string }, options: TrackingOptions): Tracking | undefined {
  const metadata = record(record(raw)['metadata']);
  if (options.method !== 'label') {
    const id = str(record(metadata['annotations'])[TRACKING_ID_ANNOTATION]);
    const match = /^([^:]+):([^/:]*)\/([^:]+):([^/]*)\/(.+)$/.exec(id);
    if (match !== null) {
      const [, app, group, kind, namespace, name] = match as unknown as [string, string, string, string, string, string];
      const namesItself = group === groupOf(type.apiVersion) && kind === type.kind
        && namespace === str(metadata['namespace']) && name === str(metadata['name']);
      return Object.freeze({ app, namesItself });
    }
    if (options.method === 'annotation') return undefined;
  }
  const app = optionalString(record(metadata['labels'])[options.label]);
  // A label cannot name an object; Argo CD's label method trusts it as is.
  return app === undefined ? undefined : Object.freeze({ app, namesItself: true });
}

function readProducer(metadata: Raw): ConfigProducer | undefined {
  for (const owner of Array.isArray(metadata['ownerReferences']) ? metadata['ownerReferences'] : []) {
    const ref = record(owner);
    const known = PRODUCER_OWNERS.find((p) => p.kind === ref['kind'] && p.group === groupOf(str(ref['apiVersion'])));
    if (known !== undefined) return Object.freeze({ kind: known.kind, name: str(ref['name']) });
  }
  const certificate = optionalString(record(metadata['annotations'])[CERT_MANAGER_CERTIFICATE]);
  if (certificate !== undefined) return Object.freeze({ kind: 'Certificate', name: certificate });
  if (optionalString(record(metadata['labels'])[ESO_CREATED_BY]) !== undefined) return Object.freeze({ kind: 'ExternalSecret', name: '' });
  return undefined;
}

/** What a config reducer needs besides the object. */
export interface ConfigReduceContext {
  readonly key: HashKey | undefined;
  readonly tracking: TrackingOptions;
  readonly now: number;
}

/**
 * Reduces a ConfigMap or Secret: identity, the policy annotations, tracking,
 * producer, and the keyed hash v1 of its single entry. `seenAt` carries over
 * while the digest is unchanged, so a metadata-only update changes nothing.
 */
export function reduceConfig(kind: 'ConfigMap' | 'Secret', raw: unknown, previous: ConfigSummary | undefined, context: ConfigReduceContext): ConfigSummary {
  const object = record(raw);
  const metadata = record(object['metadata']);
  const namespace = str(metadata['namespace']);
  const resourceVersion = str(metadata['resourceVersion']);
  let digest: string;
  try {
    // List items carry no apiVersion/kind; the reflector knows them.
    const manifest = toManifest({ ...object, apiVersion: 'v1', kind }, { defaultNamespace: namespace });
    digest = hashEntries([kind === 'ConfigMap' ? configMapEntry(manifest) : secretEntry(manifest)], context.key);
  } catch {
    // The API server stores only valid objects, so this is unreachable in practice; a
    // per-version digest still makes every later change count as a change.
    digest = `unreadable:${resourceVersion}`;
  }
  return Object.freeze({
    kind,
    namespace,
    name: str(metadata['name']),
    uid: str(metadata['uid']),
    resourceVersion,
    annotations: stringRecord(metadata['annotations'], (key) => key === ANNOTATIONS.ignore || key === ANNOTATIONS.match),
    tracking: readTracking(raw, { apiVersion: 'v1', kind }, context.tracking),
    producer: readProducer(metadata),
    digest,
    seenAt: previous !== undefined && previous.digest === digest ? previous.seenAt : context.now,
    changedAt: previous !== undefined && previous.digest === digest ? previous.changedAt : dataWriteTime(metadata['managedFields']),
  });
}

/** The payload fields of a ConfigMap or Secret in a managedFields `fieldsV1` (stringData is written into data). */
const DATA_FIELDS = ['f:data', 'f:binaryData', 'f:stringData'];

/**
 * The API server's time of the last write of a config's payload: the newest `time` among the
 * managedFields entries that own a payload field (each entry's time moves when its manager changes a
 * field it owns), or of any entry when none says so; `undefined` without managedFields.
 */
export function dataWriteTime(managedFields: unknown): number | undefined {
  if (!Array.isArray(managedFields)) return undefined;
  let data: number | undefined;
  let any: number | undefined;
  for (const entry of managedFields as unknown[]) {
    const fields = record(entry);
    const time = Date.parse(str(fields['time']));
    if (!Number.isFinite(time)) continue;
    any = Math.max(any ?? time, time);
    const owned = record(fields['fieldsV1']);
    if (DATA_FIELDS.some((field) => Object.hasOwn(owned, field))) data = Math.max(data ?? time, time);
  }
  return data ?? any;
}

/** A SecretProviderClassPodStatus, reduced: which class, which pod, and the versions it mounted. */
export interface ProviderPodStatusSummary {
  readonly namespace: string;
  readonly name: string;
  readonly resourceVersion: string;
  readonly className: string;
  readonly podName: string;
  /** Keyed digest of the mounted objects' ids and versions. */
  readonly versions: string;
}

/** Reduces a SecretProviderClassPodStatus to its class and a digest of its object versions. */
export function reduceProviderPodStatus(raw: unknown, key: HashKey | undefined): ProviderPodStatusSummary {
  const object = record(raw);
  const metadata = record(object['metadata']);
  const status = record(object['status']);
  const objects = (Array.isArray(status['objects']) ? status['objects'] : [])
    .map((item) => ({ id: str(record(item)['id']), version: str(record(item)['version']) }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const className = str(status['secretProviderClassName']);
  return Object.freeze({
    namespace: str(metadata['namespace']),
    name: str(metadata['name']),
    resourceVersion: str(metadata['resourceVersion']),
    className,
    podName: str(status['podName']),
    // Shaped like a hash v1 source entry so that the digest is as keyed as every other.
    versions: hashEntries([{ kind: 'SecretProviderClass', name: className, spec: { objects } }], key),
  });
}

function controllerOwner(metadata: Raw): PodSummary['owner'] {
  for (const owner of Array.isArray(metadata['ownerReferences']) ? metadata['ownerReferences'] : []) {
    const ref = record(owner);
    if (ref['controller'] === true) return Object.freeze({ kind: str(ref['kind']), name: str(ref['name']), uid: str(ref['uid']) });
  }
  return undefined;
}

/** Identity, version and controlling owner: what pods and ReplicaSets share. */
function ownedIdentity(metadata: Raw): { namespace: string; name: string; uid: string; resourceVersion: string; owner: PodSummary['owner'] } {
  return {
    namespace: str(metadata['namespace']),
    name: str(metadata['name']),
    uid: str(metadata['uid']),
    resourceVersion: str(metadata['resourceVersion']),
    owner: controllerOwner(metadata),
  };
}

/** Reduces a pod to what a paced eviction reads. */
export function reducePod(raw: unknown): PodSummary {
  const object = record(raw);
  const metadata = record(object['metadata']);
  const status = record(object['status']);
  const conditions = Array.isArray(status['conditions']) ? status['conditions'] : [];
  const ready = conditions.map(record).find((c) => c['type'] === 'Ready');
  const readySince = ready !== undefined && ready['status'] === 'True'
    ? Date.parse(str(ready['lastTransitionTime'])) || Date.parse(str(metadata['creationTimestamp'])) || 0
    : undefined;
  return Object.freeze({
    ...ownedIdentity(metadata),
    createdAt: Date.parse(str(metadata['creationTimestamp'])) || 0,
    deleting: metadata['deletionTimestamp'] !== undefined && metadata['deletionTimestamp'] !== null,
    phase: str(status['phase']),
    readySince,
    nodeName: str(record(object['spec'])['nodeName']),
  });
}

/** Reduces a ReplicaSet to its owner, to map a Deployment's pods to it. */
export function reduceReplicaSet(raw: unknown): ReplicaSetSummary & { readonly resourceVersion: string } {
  return Object.freeze(ownedIdentity(record(record(raw)['metadata'])));
}

function readStrategy(kind: WorkloadKindName, spec: Raw): UpdateStrategy {
  const int = (value: unknown): number | string | undefined =>
    typeof value === 'number' || (typeof value === 'string' && value !== '') ? value : undefined;
  switch (kind) {
    case 'Deployment': {
      const strategy = record(spec['strategy']);
      return Object.freeze({ type: str(strategy['type']) || 'RollingUpdate', maxUnavailable: int(record(strategy['rollingUpdate'])['maxUnavailable']), partition: undefined });
    }
    case 'StatefulSet':
    case 'DaemonSet': {
      const strategy = record(spec['updateStrategy']);
      const rolling = record(strategy['rollingUpdate']);
      return Object.freeze({ type: str(strategy['type']) || 'RollingUpdate', maxUnavailable: int(rolling['maxUnavailable']), partition: optionalNumber(rolling['partition']) });
    }
    case 'Rollout': {
      const strategy = record(spec['strategy']);
      const type = isRecord(strategy['blueGreen']) ? 'blueGreen' : 'canary';
      return Object.freeze({ type, maxUnavailable: int(record(strategy[type])['maxUnavailable']), partition: undefined });
    }
    default:
      return Object.freeze({ type: '', maxUnavailable: undefined, partition: undefined });
  }
}

function readStatus(status: Raw): WorkloadStatus {
  return Object.freeze({
    // Argo Rollouts writes its observedGeneration as a string ("3").
    observedGeneration: optionalNumber(status['observedGeneration']) ?? (typeof status['observedGeneration'] === 'string' && /^\d+$/.test(status['observedGeneration']) ? Number(status['observedGeneration']) : undefined),
    replicas: optionalNumber(status['replicas']),
    updatedReplicas: optionalNumber(status['updatedReplicas']),
    readyReplicas: optionalNumber(status['readyReplicas']),
    availableReplicas: optionalNumber(status['availableReplicas']),
    currentRevision: optionalString(status['currentRevision']),
    updateRevision: optionalString(status['updateRevision']),
    desiredNumberScheduled: optionalNumber(status['desiredNumberScheduled']),
    updatedNumberScheduled: optionalNumber(status['updatedNumberScheduled']),
    numberAvailable: optionalNumber(status['numberAvailable']),
    restartedAt: optionalString(status['restartedAt']),
  });
}

/** `{a: {b: leaf}}` for the path `['a', 'b']`. */
function nest(path: readonly string[], leaf: unknown): Record<string, unknown> {
  return path.reduceRight<unknown>((inner, step) => ({ [step]: inner }), leaf) as Record<string, unknown>;
}

/** The annotations of a workload the controller itself reads. */
function ownAnnotation(key: string): boolean {
  // Reloader's pause period is read by fleet safety (controller/fleet/safety.ts).
  return key.startsWith(DRIFTLESS_PREFIX) || key === RELOADER_ROLLOUT_STRATEGY || key === FLEET_ANNOTATIONS.pausePeriod;
}

/**
 * Reduces a workload. The pod spec is read once for its references and then
 * dropped; what stays is identity, the annotations the policy and the
 * bookkeeping read, strategy and status.
 */
export function reduceWorkload(type: { readonly apiVersion: string; readonly kind: WorkloadKindName }, raw: unknown, tracking: TrackingOptions): WorkloadSummary {
  const kind = type.kind;
  const object = record(raw);
  const metadata = record(object['metadata']);
  const spec = record(object['spec']);
  // List items carry no apiVersion/kind; the reflector knows them.
  const apiVersion = type.apiVersion;
  const namespace = str(metadata['namespace']);
  const identity = { apiVersion, kind, metadata: { name: str(metadata['name']), namespace } };
  const probe = toManifest(identity, { defaultNamespace: namespace });
  const templatePath = podTemplatePath(probe);
  const template = templatePath === undefined ? undefined : record(getPath(raw, templatePath));
  const templateAnnotations = stringRecord(record(template?.['metadata'])['annotations']);
  const metadataAnnotations = stringRecord(metadata['annotations']);
  // Only what core's readWorkloadPolicy reads: metadata and template annotations.
  const policyObject = {
    ...identity,
    metadata: { ...identity.metadata, annotations: metadataAnnotations },
    ...(templatePath === undefined ? {} : nest(templatePath, { metadata: { annotations: templateAnnotations } })),
  };
  const policyManifest: Manifest = toManifest(policyObject, { defaultNamespace: namespace });
  const podSpec = record(template?.['spec']);
  const volumes = Array.isArray(podSpec['volumes']) ? podSpec['volumes'] : [];
  const workloadRef = record(spec['workloadRef']);
  const replicas = optionalNumber(spec['replicas']);
  return Object.freeze({
    kind,
    apiVersion,
    namespace,
    name: str(metadata['name']),
    uid: str(metadata['uid']),
    resourceVersion: str(metadata['resourceVersion']),
    generation: optionalNumber(metadata['generation']) ?? 0,
    policyManifest,
    references: Object.freeze(template === undefined ? [] : findReferences(template['spec'])),
    stamped: Object.hasOwn(templateAnnotations, HASH_ANNOTATION),
    configHash: optionalString(templateAnnotations[HASH_ANNOTATION]),
    tracking: readTracking(raw, type, tracking),
    annotations: stringRecord(metadata['annotations'], ownAnnotation),
    templateRestartedAt: templateAnnotations[BOOKKEEPING.templateRestartedAt],
    replicas: kind === 'DaemonSet' || kind === 'CronJob' ? undefined : replicas ?? 1,
    minReadySeconds: optionalNumber(spec['minReadySeconds']) ?? 0,
    strategy: readStrategy(kind, spec),
    restartAt: optionalString(spec['restartAt']),
    workloadRef: kind === 'Rollout' && optionalString(workloadRef['name']) !== undefined
      ? Object.freeze({ kind: str(workloadRef['kind']) || 'Deployment', name: str(workloadRef['name']) })
      : undefined,
    paused: spec['paused'] === true,
    usesVolumeClaims: (Array.isArray(spec['volumeClaimTemplates']) && spec['volumeClaimTemplates'].length > 0)
      || volumes.some((volume) => isRecord(record(volume)['persistentVolumeClaim'])),
    status: readStatus(record(object['status'])),
  });
}

/** The annotation Argo CD's webhook and `argocd app get --refresh` set, and its controller removes once refreshed. */
export const ARGOCD_REFRESH_ANNOTATION = 'argocd.argoproj.io/refresh';

/** `group/Kind/namespace/name`: how an Application's resource list and a workload name one object. */
export function applicationResourceKey(group: string, kind: string, namespace: string, name: string): string {
  return `${group}/${kind}/${namespace}/${name}`;
}

/**
 * Reduces an Argo CD Application to whether a sync is about to roll its
 * resources. `argocdNamespace` is the control-plane namespace, whose
 * Applications tracking ids name without a namespace prefix.
 */
export function reduceApplication(raw: unknown, argocdNamespace: string): ApplicationSummary {
  const object = record(raw);
  const metadata = record(object['metadata']);
  const status = record(object['status']);
  const namespace = str(metadata['namespace']);
  const name = str(metadata['name']);
  const phase = str(record(status['operationState'])['phase']);
  const spec = record(object['spec']);
  const automated = record(spec['syncPolicy'])['automated'];
  const destination = record(spec['destination']);
  const outOfSync = (Array.isArray(status['resources']) ? status['resources'] : [])
    .map(record)
    .filter((resource) => resource['status'] === 'OutOfSync')
    .map((resource) => applicationResourceKey(str(resource['group']), str(resource['kind']), str(resource['namespace']), str(resource['name'])))
    .sort();
  return Object.freeze({
    namespace,
    name,
    resourceVersion: str(metadata['resourceVersion']),
    trackingIds: Object.freeze(namespace === argocdNamespace ? [name, `${namespace}_${name}`] : [`${namespace}_${name}`]),
    operationRunning: isRecord(object['operation']) || phase === 'Running' || phase === 'Terminating',
    refreshRequested: optionalString(record(metadata['annotations'])[ARGOCD_REFRESH_ANNOTATION]) !== undefined,
    automated: isRecord(automated) && automated['enabled'] !== false,
    outOfSync: Object.freeze([...new Set(outOfSync)]),
    // Argo CD's Application.Spec.GetProject: an empty project is `default`.
    project: str(spec['project']) || 'default',
    destination: Object.freeze({ server: str(destination['server']), name: str(destination['name']), namespace: str(destination['namespace']) }),
    writeBackSource: Object.freeze({
      metadata: Object.freeze({ name, namespace, annotations: stringRecord(metadata['annotations'], (key) => key.startsWith(WRITE_BACK_ANNOTATION)) }),
      spec: Object.freeze({
        source: isRecord(spec['source']) ? reduceSource(spec['source']) : undefined,
        sources: Array.isArray(spec['sources']) ? Object.freeze(spec['sources'].map((s) => reduceSource(record(s)))) : undefined,
      }),
    }),
  });
}

/** An Application source, cut to what the write-back reads. */
function reduceSource(source: Raw): ApplicationSourceLike {
  const plugin = source['plugin'];
  const out: Record<string, unknown> = {};
  for (const key of ['repoURL', 'path', 'targetRevision', 'chart', 'ref', 'name'] as const) if (typeof source[key] === 'string') out[key] = source[key];
  if (isRecord(plugin)) out['plugin'] = Object.freeze(typeof plugin['name'] === 'string' ? { name: plugin['name'] } : {});
  return Object.freeze(out) as ApplicationSourceLike;
}

/**
 * Reduces an Argo CD AppProject to its sync windows, compiled once here
 * (controller/windows/): everything else of the project is dropped.
 */
export function reduceAppProject(raw: unknown): AppProjectSummary {
  const metadata = record(record(raw)['metadata']);
  const { windows, problems } = readSyncWindows(raw);
  return Object.freeze({
    namespace: str(metadata['namespace']),
    name: str(metadata['name']),
    resourceVersion: str(metadata['resourceVersion']),
    windows,
    problems,
  });
}
