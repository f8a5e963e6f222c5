/**
 * The watch table: what each reflector lists and watches, how it reduces an
 * object to a summary, and which workload keys a change enqueues — the
 * declarative part of the wiring, as controller-runtime's builder says it
 * with `For`/`Owns`/`Watches`. A handler updates the cache (and the few
 * indexes that live beside it) and returns keys; it never reconciles, and
 * the queue is reached only through the keys it returns.
 */
import type { HashKey } from '../../core/index.ts';
import type { ClusterView } from '../cache/cluster-view.ts';
import { workloadKey } from '../cache/cluster-view.ts';
import { reduceAppProject, reduceApplication, reduceConfig, reducePod, reduceProviderPodStatus, reduceReplicaSet, reduceWorkload, type TrackingOptions } from '../cache/reduce.ts';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import { OTHER_RESOURCES, WORKLOAD_RESOURCES, type ResourceSpec } from '../kube/resources.ts';
import type { ConfigSummary, WorkloadKindName } from '../model.ts';
import { isRestartRecord, recordSelector, reduceRecord } from '../record/record.ts';
import type { RecordCache } from '../record/store.ts';
import type { SkewSampler } from './skew-sampler.ts';
import { deploysTo, type HubScope } from '../hub/destinations.ts';

/** Helm keeps every release in a Secret of this type: large, numerous, and never mounted by a workload. */
export const HELM_RELEASE_FIELD_SELECTOR = 'type!=helm.sh/release.v1';

/** One row of the table: one reflector. */
export interface Watch<S> {
  readonly resource: ResourceSpec;
  /** Undefined: every namespace (or a cluster-scoped resource). */
  readonly namespace: string | undefined;
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
  /** An optional feature's watch: without the permission the reflector turns itself off (kube/reflector.ts). */
  readonly offWhenForbidden?: boolean;
  /**
   * Read through the hub's client, not the pipeline's (`PipelineDeps.hub`): Argo CD's Applications and
   * AppProjects whenever Argo CD runs elsewhere than the pipeline's cluster — in hub mode for every cluster
   * (ADR 0019), and with `--argocd-kubeconfig` (the spoke option, ADR 0025) — and the restart records in hub
   * mode only. Unmarked rows, and every row without a hub, use the pipeline's own cluster.
   */
  readonly home?: boolean;
  /** The reflector's `reduce`: a summary that keeps nothing of the raw object. */
  reduce(raw: unknown, previous: S | undefined): S | undefined;
  /** Updates the cache for one change; returns the workload keys to enqueue. */
  keys(previous: S | undefined, next: S | undefined): Iterable<string>;
}

/**
 * The cluster a pipeline serves as the hub's Argo CD names it. Argo CD's Applications and AppProjects are read
 * from the hub, keeping only the Applications whose destination is this cluster (by `server`, else by `name`,
 * as Argo CD resolves a destination). Where the restart records live is the one difference between the two
 * users of a hub:
 * - hub mode (`--argocd-clusters`, ADR 0019): `id` is set; the records live in the hub, labelled with it;
 * - the spoke option (`--argocd-kubeconfig`, ADR 0025): `id` is undefined; the records stay in the pipeline's
 *   own cluster, unlabelled, exactly as without a hub (the controller runs there and owns nothing in the hub).
 */
/** A row of any summary type, as the reflectors hold them. */
export type AnyWatch = Watch<unknown>;

/** What the handlers update and read: the cache and the indexes beside it. */
export interface WatchTargets {
  readonly view: ClusterView;
  /** The restart records' cache (controller/record/). */
  readonly recordCache: RecordCache;
  /** Namespace labels for `--namespace-selector`, read by the scope. */
  readonly namespaceLabels: Map<string, Readonly<Record<string, string>>>;
  /** Fresh writes are samples of the API server's clock (ADR 0007). */
  readonly skew: SkewSampler;
  /** Whether a workload has a restart in progress: a pod event matters only to one. Handlers only ask; they never write. */
  readonly restarts: { isRestarting(key: string): boolean };
  readonly clock: Clock;
  readonly hashKey: HashKey | undefined;
}

/** The table's settings: the flags that decide which rows exist and how they select. */
export type WatchSettings = Pick<ControllerConfig, 'namespaces' | 'resourceLabelSelector' | 'argocdTrackingMethod' | 'argocdTrackingLabel' | 'argocdNamespace' | 'argocdSyncWait' | 'argocdSyncWindows' | 'namespaceSelector'>;

/** Types one row by its summary, then lists it among the others (each row's functions only see its own summaries). */
function row<S>(watch: Watch<S>): AnyWatch {
  return watch;
}

function apiVersionOf(resource: ResourceSpec): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}

/**
 * Every watch, in the order the reflectors are created and started: the restart records, then per watched
 * namespace (one scope in cluster-wide mode) the configs, the workloads, ReplicaSets, pods and the Secrets
 * Store CSI driver's pod statuses, then Argo CD's Applications and AppProjects and the namespaces, each
 * only when a flag needs it.
 */
export function watchTable(settings: WatchSettings, recordNamespace: string, targets: WatchTargets, hub?: HubScope): AnyWatch[] {
  const scopes: (string | undefined)[] = settings.namespaces === undefined ? [undefined] : [...settings.namespaces];
  return [
    recordWatch(recordNamespace, hub?.id, targets),
    ...scopes.flatMap((namespace) => namespaceWatches(settings, namespace, targets)),
    ...argoCdWatches(settings, targets, hub),
    ...(settings.namespaceSelector === undefined ? [] : [namespaceWatch(targets)]),
  ];
}

/**
 * Each workload's bookkeeping is copied to a record of its own, keyed by its UID, in the controller's
 * namespace, so that a Replace=true sync of the workload does not lose a restart (ADR 0007). In hub mode
 * only the records of this pipeline's cluster (ADR 0019).
 */
function recordWatch(namespace: string, cluster: string | undefined, { recordCache }: WatchTargets): AnyWatch {
  return row({
    resource: OTHER_RESOURCES.configMaps,
    namespace,
    labelSelector: recordSelector(cluster),
    offWhenForbidden: true,
    // In hub mode the records live in the hub; with the spoke option (no cluster id) here, as without a hub.
    home: cluster !== undefined,
    reduce: (raw) => reduceRecord(raw, cluster),
    keys: (previous, next) => {
      recordCache.changed(previous, next);
      // A record that arrives after its workload (or changed by hand) is read at the workload's next reconcile.
      const workload = next?.workload ?? previous?.workload;
      return workload === undefined ? [] : [workloadKey(workload.kind, workload.namespace, workload.name)];
    },
  });
}

/** The watches of one namespace (or of all, `undefined`). */
function namespaceWatches(settings: WatchSettings, namespace: string | undefined, targets: WatchTargets): AnyWatch[] {
  const { view, skew, restarts, clock, hashKey } = targets;
  const tracking: TrackingOptions = { method: settings.argocdTrackingMethod, label: settings.argocdTrackingLabel };
  const configs = (['ConfigMap', 'Secret'] as const).map((kind) => row<ConfigSummary>({
    resource: kind === 'ConfigMap' ? OTHER_RESOURCES.configMaps : OTHER_RESOURCES.secrets,
    namespace,
    labelSelector: settings.resourceLabelSelector?.text,
    fieldSelector: kind === 'Secret' ? HELM_RELEASE_FIELD_SELECTOR : undefined,
    // The restart records are the controller's own, never a config a workload could select.
    reduce: (raw, previous) => (kind === 'ConfigMap' && isRestartRecord(raw) ? undefined : reduceConfig(kind, raw, previous, { key: hashKey, tracking, now: clock.now() })),
    keys: (previous, next) => {
      // A content change the watch delivers now: its write time is a fresh sample of the API server's clock.
      if (previous !== undefined && next?.changedAt !== undefined && next.changedAt !== previous.changedAt) skew.observe(next.changedAt);
      return view.configChanged(previous, next);
    },
  }));
  const workloads = (Object.keys(WORKLOAD_RESOURCES) as WorkloadKindName[]).map((kind) => row({
    resource: WORKLOAD_RESOURCES[kind],
    namespace,
    reduce: (raw) => reduceWorkload({ apiVersion: apiVersionOf(WORKLOAD_RESOURCES[kind]), kind }, raw, tracking),
    keys: (previous, next) => view.workloadChanged(previous, next),
  }));
  return [
    ...configs,
    ...workloads,
    row({
      resource: OTHER_RESOURCES.replicaSets,
      namespace,
      reduce: (raw) => reduceReplicaSet(raw),
      keys: (previous, next) => {
        view.replicaSetChanged(previous, next);
        return [];
      },
    }),
    row({
      resource: OTHER_RESOURCES.pods,
      namespace,
      reduce: (raw) => reducePod(raw),
      keys: (previous, next) => {
        const key = view.podChanged(previous, next);
        // A pod the API server just created (old pods of a first list only give larger samples, never a lower bound).
        if (previous === undefined && next !== undefined) skew.observe(next.createdAt);
        // Pod events only matter to a restart in progress: they pace the next eviction.
        return key !== undefined && restarts.isRestarting(key) ? [key] : [];
      },
    }),
    row({
      resource: OTHER_RESOURCES.providerPodStatuses,
      namespace,
      reduce: (raw) => reduceProviderPodStatus(raw, hashKey),
      keys: (previous, next) => view.providerStatusChanged(previous, next, clock.now()),
    }),
  ];
}

/**
 * Argo CD's Applications, to hold a restart its pending sync performs anyway (ADR 0011), and to find their
 * AppProject's sync windows (issue 15 §8). Optional twice over: without the CRD the reflector sees an empty
 * collection, without the permission it turns itself off. AppProjects live in Argo CD's namespace only,
 * whatever namespace their Applications are in; only their syncWindows are kept. Same least privilege as
 * the Applications: list/watch there. With a hub (hub mode, or the spoke option) both are read from the hub,
 * and only the Applications that deploy to this pipeline's cluster are kept.
 */
function argoCdWatches(settings: WatchSettings, { view }: WatchTargets, hub: HubScope | undefined): AnyWatch[] {
  const watches: AnyWatch[] = [];
  const home = hub === undefined ? {} : { home: true };
  if (settings.argocdSyncWait.ms > 0 || settings.argocdSyncWindows) {
    watches.push(row({
      resource: OTHER_RESOURCES.applications,
      namespace: settings.argocdNamespace,
      offWhenForbidden: true,
      ...home,
      reduce: (raw) => {
        const app = reduceApplication(raw, settings.argocdNamespace);
        return hub === undefined || deploysTo(app.destination, hub) ? app : undefined;
      },
      keys: (previous, next) => view.applicationChanged(previous, next),
    }));
  }
  if (settings.argocdSyncWindows) {
    watches.push(row({
      resource: OTHER_RESOURCES.appProjects,
      namespace: settings.argocdNamespace,
      offWhenForbidden: true,
      ...home,
      reduce: (raw) => reduceAppProject(raw),
      keys: (previous, next) => view.projectChanged(previous, next),
    }));
  }
  return watches;
}

/** A namespace's labels, for `--namespace-selector`. */
interface NamespaceSummary {
  readonly name: string;
  readonly resourceVersion: string;
  readonly labels: Readonly<Record<string, string>>;
}

function reduceNamespace(raw: unknown): NamespaceSummary {
  const metadata = (raw as { metadata?: { name?: string; labels?: Record<string, string>; resourceVersion?: string } }).metadata ?? {};
  return Object.freeze({ name: metadata.name ?? '', resourceVersion: metadata.resourceVersion ?? '', labels: Object.freeze({ ...metadata.labels }) });
}

/** A namespace whose labels change may come into scope or leave it: every workload in it is looked at. */
function namespaceWatch({ view, namespaceLabels }: WatchTargets): AnyWatch {
  return row<NamespaceSummary>({
    resource: OTHER_RESOURCES.namespaces,
    namespace: undefined,
    reduce: reduceNamespace,
    keys: (previous, next) => {
      const name = (next ?? previous)?.name ?? '';
      if (next === undefined) namespaceLabels.delete(name);
      else namespaceLabels.set(name, next.labels);
      return view.workloadKeysIn(name);
    },
  });
}
