/**
 * Raw API objects and reduced summaries for the controller's unit tests: a
 * workload is built as the API server would send it (list items carry no
 * apiVersion/kind) and reduced by the real reducer, so tests exercise the
 * same summaries the controller decides on.
 */
import { HASH_ANNOTATION } from '../../../core/index.ts';
import { TRACKING_ID_ANNOTATION, reduceWorkload, type TrackingOptions } from '../../../controller/cache/reduce.ts';
import type { ConfigSummary, WorkloadKindName, WorkloadSummary } from '../../../controller/model.ts';

/** Argo CD's default tracking in recent versions. */
export const ANNOTATION_TRACKING: TrackingOptions = Object.freeze({ method: 'annotation', label: 'app.kubernetes.io/instance' });

/** The API version of each workload kind. */
export const API_VERSIONS: Readonly<Record<WorkloadKindName, string>> = Object.freeze({
  Deployment: 'apps/v1',
  StatefulSet: 'apps/v1',
  DaemonSet: 'apps/v1',
  CronJob: 'batch/v1',
  Rollout: 'argoproj.io/v1alpha1',
  DeploymentConfig: 'apps.openshift.io/v1',
});

/** Argo CD's tracking id of an object. */
export function trackingId(app: string, groupKind: string, namespace: string, name: string): string {
  return `${app}:${groupKind}:${namespace}/${name}`;
}

/** What a test workload looks like. */
export interface WorkloadShape {
  readonly namespace?: string;
  readonly secrets?: readonly string[];
  readonly configMaps?: readonly string[];
  readonly annotations?: Readonly<Record<string, string>>;
  readonly templateAnnotations?: Readonly<Record<string, string>>;
  /** Puts `driftless.dev/config-hash` on the template. */
  readonly stamped?: boolean;
  /** The Application tracking the workload (annotation method, naming itself). */
  readonly app?: string;
  readonly uid?: string;
  readonly spec?: Readonly<Record<string, unknown>>;
}

/** A pod spec referencing Secrets by env and ConfigMaps by volume. */
export function podSpec(shape: WorkloadShape): Record<string, unknown> {
  const volumes = (shape.configMaps ?? []).map((name) => ({ name: `cm-${name}`, configMap: { name } }));
  return {
    containers: [{
      name: 'app',
      image: 'app:1',
      env: (shape.secrets ?? []).map((name) => ({ name: `S_${name.toUpperCase().replaceAll('-', '_')}`, valueFrom: { secretKeyRef: { name, key: 'password' } } })),
      volumeMounts: volumes.map((volume) => ({ name: volume.name, mountPath: `/etc/${volume.name}` })),
    }],
    volumes,
  };
}

/** A raw workload of `kind`, as a list item (no apiVersion/kind). */
export function rawWorkload(kind: WorkloadKindName, name: string, shape: WorkloadShape = {}): Record<string, unknown> {
  const namespace = shape.namespace ?? 'prod';
  const annotations: Record<string, string> = { ...shape.annotations };
  if (shape.app !== undefined) annotations[TRACKING_ID_ANNOTATION] = trackingId(shape.app, `${groupOf(API_VERSIONS[kind])}/${kind}`, namespace, name);
  const template = {
    metadata: { labels: { app: name }, annotations: { ...shape.templateAnnotations, ...(shape.stamped === true ? { [HASH_ANNOTATION]: 'v1:stamp' } : {}) } },
    spec: podSpec(shape),
  };
  const spec = kind === 'CronJob' ? { schedule: '* * * * *', jobTemplate: { spec: { template } } } : { replicas: 2, template };
  return {
    metadata: { name, namespace, uid: shape.uid ?? `uid-${name}`, resourceVersion: '1', generation: 1, annotations },
    spec: { ...spec, ...shape.spec },
  };
}

/** A reduced workload. */
export function workload(kind: WorkloadKindName, name: string, shape: WorkloadShape = {}): WorkloadSummary {
  return reduceWorkload({ apiVersion: API_VERSIONS[kind], kind }, rawWorkload(kind, name, shape), ANNOTATION_TRACKING);
}

/** A config summary, hand-made (the reducer has its own tests). */
export function config(kind: ConfigSummary['kind'], name: string, overrides: Partial<ConfigSummary> = {}): ConfigSummary {
  return Object.freeze({
    kind,
    namespace: 'prod',
    name,
    uid: `uid-${kind}-${name}`,
    resourceVersion: '1',
    annotations: {},
    tracking: undefined,
    producer: undefined,
    digest: `v1:${name}`,
    seenAt: 0,
    ...overrides,
  });
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.lastIndexOf('/');
  return slash === -1 ? '' : apiVersion.slice(0, slash);
}
