/**
 * The controller's reduced view of the cluster. Every watched object is cut
 * down to one of these summaries the moment it arrives, and the payload is
 * dropped: no cache ever holds a Secret's data, a ConfigMap's data or a pod
 * spec. The summaries are plain frozen data, so the deciding and planning
 * code that reads them is pure and unit-testable without a cluster.
 */
import type { Manifest, PolicyMode, Reference } from '../core/index.ts';
import type { CompiledWindow } from './windows/sync-windows.ts';
import type { ApplicationLike } from './writeback/source.ts';

/** Namespace and name: the identity every cache is keyed by. */
export interface ObjectRef {
  readonly namespace: string;
  readonly name: string;
}

/** The config kinds the controller watches (SecretProviderClass through its pod statuses). */
export type WatchedConfigKind = 'ConfigMap' | 'Secret' | 'SecretProviderClass';

/** Who wrote a Secret that never passes through Git, when an owner or annotation says so. */
export interface ConfigProducer {
  /** `ExternalSecret`, `SealedSecret`, `Certificate`. */
  readonly kind: string;
  readonly name: string;
}

/** Argo CD's tracking of an object (annotation or label, per the configured method). */
export interface Tracking {
  /** The Application, as Argo CD writes it (`<app>` or `<app-namespace>_<app>`). */
  readonly app: string;
  /**
   * True when the tracking names this very object (annotation method: the id's
   * group/kind/namespace/name match). Operators copy metadata from their
   * source objects, so a tracking id naming another object proves nothing.
   */
  readonly namesItself: boolean;
}

/** A ConfigMap, Secret or (through its pod statuses) SecretProviderClass, without its payload. */
export interface ConfigSummary extends ObjectRef {
  readonly kind: WatchedConfigKind;
  readonly uid: string;
  readonly resourceVersion: string;
  /** Only the annotations the policy reads (`reloader.stakater.com/ignore`, `…/match`). */
  readonly annotations: Readonly<Record<string, string>>;
  readonly tracking: Tracking | undefined;
  readonly producer: ConfigProducer | undefined;
  /**
   * The keyed digest of the content: hash v1 of this config's single entry
   * (`hashEntries([entry], key)`), or for a SecretProviderClass the digest of
   * its objects' versions. Equal digests mean equal content.
   */
  readonly digest: string;
  /** Epoch ms when the controller first saw this digest (for content present at start: the start). */
  readonly seenAt: number;
  /**
   * The API server's time (epoch ms, whole seconds, truncated) of the write that brought this content: the
   * newest managedFields `time` of a manager owning the data; `undefined` when the object has no
   * managedFields (ADR 0007: then T falls back to the controller's clock).
   */
  readonly changedAt?: number | undefined;
}

/** The workload kinds the controller knows. */
export type WorkloadKindName = 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'CronJob' | 'Rollout' | 'DeploymentConfig';

/** How a workload is restarted (`driftless.dev/restart-strategy`). */
export type RestartStrategy = 'evict' | 'rollout' | 'none';

/** The rolling-update knobs the eviction pacer reads, resolved to what the kind means by them. */
export interface UpdateStrategy {
  /** `RollingUpdate`, `Recreate` (Deployment), `OnDelete` (StatefulSet, DaemonSet), or the Rollout's `canary`/`blueGreen`. */
  readonly type: string;
  /** `maxUnavailable` as written (int or percent string), `undefined` when unset. */
  readonly maxUnavailable: number | string | undefined;
  /** StatefulSet `rollingUpdate.partition`. */
  readonly partition: number | undefined;
}

/** What the status of a workload says about rollouts in progress. */
export interface WorkloadStatus {
  readonly observedGeneration: number | undefined;
  readonly replicas: number | undefined;
  readonly updatedReplicas: number | undefined;
  readonly readyReplicas: number | undefined;
  readonly availableReplicas: number | undefined;
  /** StatefulSet. */
  readonly currentRevision: string | undefined;
  readonly updateRevision: string | undefined;
  /** DaemonSet. */
  readonly desiredNumberScheduled: number | undefined;
  readonly updatedNumberScheduled: number | undefined;
  readonly numberAvailable: number | undefined;
  /** Rollout `status.restartedAt` (RFC 3339). */
  readonly restartedAt: string | undefined;
}

/** A workload without its pod spec: what deciding, bookkeeping and restarting read. */
export interface WorkloadSummary extends ObjectRef {
  readonly kind: WorkloadKindName;
  /** `apps/v1`, `argoproj.io/v1alpha1`, … (server-side apply needs it). */
  readonly apiVersion: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly generation: number;
  /**
   * A Manifest holding only metadata (name, namespace, annotations) and the pod
   * template's annotations, for `core/`'s `readWorkloadPolicy`.
   */
  readonly policyManifest: Manifest;
  /** Every config reference of the pod template (from `core/`'s findReferences). */
  readonly references: readonly Reference[];
  /** The pod template carries `driftless.dev/config-hash` (the plugin rendered it). */
  readonly stamped: boolean;
  /** Its value: a new one means Argo CD synced a new render (how a Git write-back knows its commit arrived). */
  readonly configHash: string | undefined;
  readonly tracking: Tracking | undefined;
  /** The workload's own `driftless.dev/*` and Reloader strategy annotations, raw. */
  readonly annotations: Readonly<Record<string, string>>;
  /** `driftless.dev/restarted-at` on the pod template (the `rollout` strategy's key). */
  readonly templateRestartedAt: string | undefined;
  /** `spec.replicas` (Deployment, StatefulSet, Rollout); `undefined` for DaemonSet and CronJob. */
  readonly replicas: number | undefined;
  readonly minReadySeconds: number;
  readonly strategy: UpdateStrategy;
  /** Rollout: `spec.restartAt` (RFC 3339). */
  readonly restartAt: string | undefined;
  /** Rollout with `spec.workloadRef`: the Deployment whose template it borrows. */
  readonly workloadRef: { readonly kind: string; readonly name: string } | undefined;
  /** Paused (Deployment `spec.paused`, Rollout `spec.paused`). */
  readonly paused: boolean;
  /** The template has a volume claim template or mounts a PVC (Recreate + ReadWriteOnce warning). */
  readonly usesVolumeClaims: boolean;
  readonly status: WorkloadStatus;
}

/** A pod, cut down to what a paced eviction needs. */
export interface PodSummary extends ObjectRef {
  readonly uid: string;
  /** The controlling owner (`ownerReferences[controller=true]`): ReplicaSet, StatefulSet, DaemonSet, … */
  readonly owner: { readonly kind: string; readonly name: string; readonly uid: string } | undefined;
  /** Epoch ms of `metadata.creationTimestamp` (whole seconds, as the API server writes it). */
  readonly createdAt: number;
  /** Set once the pod is being deleted: it no longer counts, and is never evicted again. */
  readonly deleting: boolean;
  readonly phase: string;
  /** Epoch ms since the Ready condition has been True, `undefined` when not Ready. */
  readonly readySince: number | undefined;
  readonly nodeName: string;
}

/** A ReplicaSet, only to map a Deployment's pods to the Deployment. */
export interface ReplicaSetSummary extends ObjectRef {
  readonly uid: string;
  readonly owner: { readonly kind: string; readonly name: string; readonly uid: string } | undefined;
}

/** Options of the deciding step that come from the configuration. */
export interface DecideOptions {
  readonly mode: PolicyMode;
  readonly defaultStrategy: RestartStrategy;
}

/**
 * An Argo CD Application, cut down to what says a sync is about to roll its
 * workloads (ADR 0011). No manifest, history or condition is kept.
 */
export interface ApplicationSummary extends ObjectRef {
  readonly resourceVersion: string;
  /**
   * How tracking ids name this Application: `<name>` for one in the Argo CD
   * namespace (`--argocd-namespace`), and always `<namespace>_<name>`.
   */
  readonly trackingIds: readonly string[];
  /** `.operation` is set, or `status.operationState.phase` is Running or Terminating: a sync is applying. */
  readonly operationRunning: boolean;
  /** The annotation `argocd.argoproj.io/refresh` is set (a webhook, `argocd app get --refresh`): a comparison is due. */
  readonly refreshRequested: boolean;
  /** `spec.syncPolicy.automated` is present and not `enabled: false`: Argo CD syncs an OutOfSync app by itself. */
  readonly automated: boolean;
  /** `group/Kind/namespace/name` of every resource `status.resources` lists OutOfSync, sorted. */
  readonly outOfSync: readonly string[];
  /** `spec.project` (`default` when empty, as Argo CD reads it): the AppProject whose sync windows hold its restarts. */
  readonly project: string;
  /** `spec.destination`, what a sync window's `clusters` and `namespaces` match (`''` when unset). */
  readonly destination: { readonly server: string; readonly name: string; readonly namespace: string };
  /**
   * What the Git write-back reads (controller/writeback/source.ts): name, namespace, the
   * `driftless.dev/write-back-*` annotations, and of `spec.source`/`spec.sources` only repoURL, path,
   * targetRevision, chart, ref, name and plugin.name.
   */
  readonly writeBackSource: ApplicationLike;
}

/**
 * An Argo CD AppProject, cut down to its `spec.syncWindows` (issue 15 §8):
 * roles, source and destination lists are never kept.
 */
export interface AppProjectSummary extends ObjectRef {
  readonly resourceVersion: string;
  /** Every window, compiled once on arrival (an invalid one kept as such: it holds, as in Argo CD). */
  readonly windows: readonly CompiledWindow[];
  /** What is wrong with the windows as written, naming `spec.syncWindows[i].field`. */
  readonly problems: readonly string[];
}
