/**
 * The controller's cache: the reduced summaries of every watched kind, merged
 * across reflectors (one per namespace in namespaced mode), and the indexes
 * reconciling needs — config → dependent workloads, owner → pods — kept up to
 * date by the change handlers. Handlers here only update maps and return the
 * workload keys to enqueue; nothing here does I/O.
 */
import type { ConfigKind } from '../../core/index.ts';
import { namedMatch, readWorkloadPolicy, CONFIG_KINDS } from '../../core/index.ts';
import type { ConfigLookup } from '../decide.ts';
import type { AppProjectSummary, ApplicationSummary, ConfigSummary, PodSummary, ReplicaSetSummary, WorkloadKindName, WorkloadSummary } from '../model.ts';
import type { ProviderPodStatusSummary } from './reduce.ts';

/** `Kind/namespace/name`: the workqueue key of a workload. */
export function workloadKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/** Splits a workload key. */
export function parseWorkloadKey(key: string): { kind: WorkloadKindName; namespace: string; name: string } {
  const first = key.indexOf('/');
  const second = key.indexOf('/', first + 1);
  return { kind: key.slice(0, first) as WorkloadKindName, namespace: key.slice(first + 1, second), name: key.slice(second + 1) };
}

function add<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set === undefined) map.set(key, new Set([value]));
  else set.add(value);
}

function remove<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set === undefined) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}

/** The content of a SecretProviderClass in one namespace, as its pod statuses last reported it. */
interface ProviderClassState {
  readonly versions: string;
  readonly seenAt: number;
  /** The resourceVersion of the pod status that reported these versions. */
  readonly reportedIn: string;
}

/**
 * True when resourceVersion `a` is newer than `b`. Kubernetes calls resourceVersions opaque; every API
 * server backed by etcd writes its revision there, and that order is the only way to tell which of two
 * pod statuses listed at start was written last. Unparsable versions count as newer (the old behaviour).
 */
function newerVersion(a: string, b: string): boolean {
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return true;
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** Summaries and indexes; see the module comment. */
export class ClusterView {
  readonly #configs = new Map<string, ConfigSummary>();
  readonly #configNames = new Map<string, Set<string>>();
  readonly #workloads = new Map<string, WorkloadSummary>();
  /** `namespace/Kind/name` of a config → workload keys whose template references it. */
  readonly #dependents = new Map<string, Set<string>>();
  /** namespace → workload keys with a named Reloader pattern (they may select unreferenced configs). */
  readonly #namedPatterns = new Map<string, Set<string>>();
  /** `namespace/Deployment/name` → keys of Rollouts whose workloadRef borrows it. */
  readonly #borrowers = new Map<string, Set<string>>();
  readonly #pods = new Map<string, PodSummary>();
  readonly #podsByOwner = new Map<string, Set<string>>();
  readonly #replicaSets = new Map<string, ReplicaSetSummary>();
  /** Owner UID → UIDs of its ReplicaSets (podsOf runs on every reconcile of a restarting workload). */
  readonly #replicaSetsByOwner = new Map<string, Set<string>>();
  readonly #providerStatuses = new Map<string, ProviderPodStatusSummary>();
  readonly #providerClasses = new Map<string, ProviderClassState>();
  /** Argo CD Applications by every tracking id that names them. */
  readonly #applications = new Map<string, ApplicationSummary>();
  /** Tracking app id → keys of the workloads it tracks (an Application change enqueues them). */
  readonly #byApp = new Map<string, Set<string>>();
  /** Argo CD AppProjects (their sync windows) by name: they live in the Argo CD namespace only. */
  readonly #projects = new Map<string, AppProjectSummary>();

  // ---- configs -------------------------------------------------------------

  /** Stores a ConfigMap/Secret change; returns the workloads to enqueue (only when the content changed). */
  configChanged(previous: ConfigSummary | undefined, next: ConfigSummary | undefined): string[] {
    const any = (next ?? previous) as ConfigSummary;
    const key = `${any.namespace}/${any.kind}/${any.name}`;
    if (next === undefined) {
      this.#configs.delete(key);
      remove(this.#configNames, `${any.namespace}/${any.kind}`, any.name);
    } else {
      this.#configs.set(key, next);
      add(this.#configNames, `${next.namespace}/${next.kind}`, next.name);
    }
    // Content, not events: a metadata-only update leaves the digest, and so every decision, as it was —
    // except the policy annotations (ignore/match) and the tracking, which can change the selection.
    const same = previous !== undefined && next !== undefined && previous.digest === next.digest
      && JSON.stringify(previous.annotations) === JSON.stringify(next.annotations)
      && previous.tracking?.app === next.tracking?.app && previous.tracking?.namesItself === next.tracking?.namesItself
      && previous.producer?.kind === next.producer?.kind;
    return same ? [] : this.dependentsOf(any.namespace, any.kind, any.name);
  }

  /** Workload keys that reference the config or may select it by a named pattern. */
  dependentsOf(namespace: string, kind: ConfigKind, name: string): string[] {
    const keys = new Set(this.#dependents.get(`${namespace}/${kind}/${name}`) ?? []);
    for (const key of this.#namedPatterns.get(namespace) ?? []) {
      const workload = this.#workloads.get(key);
      if (workload !== undefined && safeNamedMatch(workload, kind, name)) keys.add(key);
    }
    // A Rollout borrowing a Deployment's template depends on what the Deployment references.
    const borrowers: string[] = [];
    for (const key of keys) {
      const { kind: workloadKind, namespace: ns, name: workloadName } = parseWorkloadKey(key);
      if (workloadKind === 'Deployment') borrowers.push(...(this.#borrowers.get(`${ns}/Deployment/${workloadName}`) ?? []));
    }
    for (const borrower of borrowers) keys.add(borrower);
    return [...keys].sort();
  }

  /** A lookup of the configs of one namespace, for `selectConfigs`. */
  configLookup(namespace: string): ConfigLookup {
    return {
      get: (kind, name) => kind === 'SecretProviderClass' ? this.#providerClassSummary(namespace, name) : this.#configs.get(`${namespace}/${kind}/${name}`),
      names: (kind) => kind === 'SecretProviderClass'
        ? [...this.#providerClasses.keys()].filter((k) => k.startsWith(`${namespace}/`)).map((k) => k.slice(namespace.length + 1))
        : this.#configNames.get(`${namespace}/${kind}`) ?? [],
    };
  }

  /** Number of cached ConfigMaps and Secrets. */
  get configCount(): number {
    return this.#configs.size;
  }

  // ---- SecretProviderClass rotation -----------------------------------------

  /**
   * Stores a SecretProviderClassPodStatus change. The class's content in a
   * namespace is the object versions the most recent differing pod status
   * reported: the driver updates each pod's status as it rotates, so the set
   * converges on the new versions and a rotation is one change, not one per pod.
   */
  providerStatusChanged(previous: ProviderPodStatusSummary | undefined, next: ProviderPodStatusSummary | undefined, now: number): string[] {
    const any = (next ?? previous) as ProviderPodStatusSummary;
    const statusKey = `${any.namespace}/${any.name}`;
    if (next === undefined) {
      this.#providerStatuses.delete(statusKey);
      return [];
    }
    this.#providerStatuses.set(statusKey, next);
    if (next.className === '') return [];
    const classKey = `${next.namespace}/${next.className}`;
    const state = this.#providerClasses.get(classKey);
    if (state !== undefined && state.versions === next.versions) return [];
    if (state !== undefined && previous !== undefined && previous.versions === next.versions) return [];
    // A status first seen (at start, in list order) that reports versions older than the class's must not
    // move the class back: only a status written after the one that set the state may change it.
    if (state !== undefined && previous === undefined && !newerVersion(next.resourceVersion, state.reportedIn)) return [];
    this.#providerClasses.set(classKey, { versions: next.versions, seenAt: now, reportedIn: next.resourceVersion });
    return this.dependentsOf(next.namespace, 'SecretProviderClass', next.className);
  }

  #providerClassSummary(namespace: string, name: string): ConfigSummary | undefined {
    const state = this.#providerClasses.get(`${namespace}/${name}`);
    if (state === undefined) return undefined;
    return Object.freeze({
      kind: 'SecretProviderClass',
      namespace,
      name,
      uid: '',
      resourceVersion: '',
      annotations: Object.freeze({}),
      tracking: undefined,
      producer: undefined,
      digest: state.versions,
      seenAt: state.seenAt,
    });
  }

  // ---- workloads -----------------------------------------------------------

  /** Stores a workload change, re-indexes its references; returns the keys to enqueue. */
  workloadChanged(previous: WorkloadSummary | undefined, next: WorkloadSummary | undefined): string[] {
    const any = (next ?? previous) as WorkloadSummary;
    const key = workloadKey(any.kind, any.namespace, any.name);
    if (previous !== undefined) {
      for (const reference of previous.references) remove(this.#dependents, `${previous.namespace}/${reference.kind}/${reference.name}`, key);
      remove(this.#namedPatterns, previous.namespace, key);
      if (previous.workloadRef !== undefined) remove(this.#borrowers, `${previous.namespace}/${previous.workloadRef.kind}/${previous.workloadRef.name}`, key);
      if (previous.tracking !== undefined) remove(this.#byApp, previous.tracking.app, key);
    }
    if (next === undefined) {
      this.#workloads.delete(key);
    } else {
      this.#workloads.set(key, next);
      for (const reference of next.references) add(this.#dependents, `${next.namespace}/${reference.kind}/${reference.name}`, key);
      if (hasNamedPatterns(next)) add(this.#namedPatterns, next.namespace, key);
      if (next.workloadRef !== undefined) add(this.#borrowers, `${next.namespace}/${next.workloadRef.kind}/${next.workloadRef.name}`, key);
      if (next.tracking !== undefined) add(this.#byApp, next.tracking.app, key);
    }
    const keys = [key];
    if (any.kind === 'Deployment') keys.push(...(this.#borrowers.get(`${any.namespace}/Deployment/${any.name}`) ?? []));
    return keys;
  }

  workload(key: string): WorkloadSummary | undefined {
    return this.#workloads.get(key);
  }

  /** Every workload key, sorted (for a full resync). */
  workloadKeys(): string[] {
    return [...this.#workloads.keys()].sort();
  }

  /** Keys of workloads in a namespace (a namespace's labels changed). */
  workloadKeysIn(namespace: string): string[] {
    return this.workloadKeys().filter((key) => parseWorkloadKey(key).namespace === namespace);
  }

  get workloadCount(): number {
    return this.#workloads.size;
  }

  // ---- Argo CD Applications -------------------------------------------------

  /**
   * Stores an Application change; returns the workloads it tracks when what
   * the sync-wait rule reads changed (status churn such as reconciledAt does not).
   */
  applicationChanged(previous: ApplicationSummary | undefined, next: ApplicationSummary | undefined): string[] {
    for (const id of previous?.trackingIds ?? []) this.#applications.delete(id);
    for (const id of next?.trackingIds ?? []) this.#applications.set(id, next as ApplicationSummary);
    const same = previous !== undefined && next !== undefined && previous.operationRunning === next.operationRunning
      && previous.refreshRequested === next.refreshRequested && previous.automated === next.automated
      && previous.outOfSync.join('\n') === next.outOfSync.join('\n')
      && previous.project === next.project && JSON.stringify(previous.destination) === JSON.stringify(next.destination);
    if (same) return [];
    const keys = new Set<string>();
    for (const id of [...(previous?.trackingIds ?? []), ...(next?.trackingIds ?? [])]) for (const key of this.#byApp.get(id) ?? []) keys.add(key);
    return [...keys].sort();
  }

  /**
   * Stores an AppProject change; returns the workloads of its Applications when
   * its sync windows changed (a held restart may go ahead, or must now wait).
   */
  projectChanged(previous: AppProjectSummary | undefined, next: AppProjectSummary | undefined): string[] {
    const name = (next ?? previous)?.name ?? '';
    if (next === undefined) this.#projects.delete(name);
    else this.#projects.set(name, next);
    const windowsOf = (p: AppProjectSummary | undefined): string => JSON.stringify([p?.windows.map((w) => w.spec), p?.problems]);
    if (previous !== undefined && next !== undefined && windowsOf(previous) === windowsOf(next)) return [];
    const keys = new Set<string>();
    for (const [id, app] of this.#applications) {
      if (app.project === name) for (const key of this.#byApp.get(id) ?? []) keys.add(key);
    }
    return [...keys].sort();
  }

  /** The AppProject of an Application, when watched. */
  projectOf(app: Pick<ApplicationSummary, 'project'>): AppProjectSummary | undefined {
    return this.#projects.get(app.project);
  }

  /** The Application a tracking id names (`<app>` or `<namespace>_<app>`), when watched. */
  application(trackingApp: string): ApplicationSummary | undefined {
    return this.#applications.get(trackingApp);
  }

  /** The watched Application that tracks the workload; `undefined` for an untracked workload or an unwatched app. */
  applicationOf(workload: Pick<WorkloadSummary, 'tracking'>): ApplicationSummary | undefined {
    return workload.tracking === undefined ? undefined : this.#applications.get(workload.tracking.app);
  }

  // ---- pods ----------------------------------------------------------------

  /** Stores a pod change; returns the key of the workload it belongs to, if known. */
  podChanged(previous: PodSummary | undefined, next: PodSummary | undefined): string | undefined {
    const any = (next ?? previous) as PodSummary;
    const key = `${any.namespace}/${any.name}`;
    if (previous?.owner !== undefined) remove(this.#podsByOwner, previous.owner.uid, key);
    if (next === undefined) this.#pods.delete(key);
    else {
      this.#pods.set(key, next);
      if (next.owner !== undefined) add(this.#podsByOwner, next.owner.uid, key);
    }
    return this.#ownerWorkloadKey(any);
  }

  /** Stores a ReplicaSet change (pods of Deployments are owned through them). */
  replicaSetChanged(previous: ReplicaSetSummary | undefined, next: ReplicaSetSummary | undefined): void {
    const any = (next ?? previous) as ReplicaSetSummary;
    if (previous?.owner !== undefined) remove(this.#replicaSetsByOwner, previous.owner.uid, previous.uid);
    if (next === undefined) {
      this.#replicaSets.delete(any.uid);
    } else {
      this.#replicaSets.set(next.uid, next);
      if (next.owner !== undefined) add(this.#replicaSetsByOwner, next.owner.uid, next.uid);
    }
  }

  #ownerWorkloadKey(pod: PodSummary): string | undefined {
    const owner = pod.owner;
    if (owner === undefined) return undefined;
    switch (owner.kind) {
      case 'StatefulSet':
      case 'DaemonSet':
        return workloadKey(owner.kind, pod.namespace, owner.name);
      case 'ReplicaSet': {
        const parent = this.#replicaSets.get(owner.uid)?.owner;
        return parent === undefined ? undefined : workloadKey(parent.kind, pod.namespace, parent.name);
      }
      case 'ReplicationController': {
        // OpenShift: <deploymentconfig>-<version>.
        const match = /^(.+)-\d+$/.exec(owner.name);
        return match?.[1] === undefined ? undefined : workloadKey('DeploymentConfig', pod.namespace, match[1]);
      }
      default:
        return undefined;
    }
  }

  /** The pods a workload owns (directly, or through its ReplicaSets / ReplicationControllers). */
  podsOf(workload: WorkloadSummary): PodSummary[] {
    const owners: string[] = [];
    if (workload.kind === 'Deployment' || workload.kind === 'Rollout') {
      // Both own their pods through ReplicaSets.
      owners.push(...(this.#replicaSetsByOwner.get(workload.uid) ?? []));
    } else if (workload.kind === 'DeploymentConfig') {
      const pods = [...this.#pods.values()].filter((pod) => pod.namespace === workload.namespace && pod.owner?.kind === 'ReplicationController'
        && pod.owner.name.startsWith(`${workload.name}-`) && /^\d+$/.test(pod.owner.name.slice(workload.name.length + 1)));
      return pods.sort((a, b) => (a.name < b.name ? -1 : 1));
    } else {
      owners.push(workload.uid);
    }
    const pods: PodSummary[] = [];
    for (const owner of owners) {
      for (const key of this.#podsByOwner.get(owner) ?? []) {
        const pod = this.#pods.get(key);
        if (pod !== undefined) pods.push(pod);
      }
    }
    return pods.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get podCount(): number {
    return this.#pods.size;
  }
}

function hasNamedPatterns(workload: WorkloadSummary): boolean {
  try {
    const policy = readWorkloadPolicy(workload.policyManifest);
    return CONFIG_KINDS.some((kind) => policy.kinds[kind].named.length > 0);
  } catch {
    // A bad regex: the reconcile reports it; index as named so a later fix is seen.
    return true;
  }
}

function safeNamedMatch(workload: WorkloadSummary, kind: ConfigKind, name: string): boolean {
  try {
    return namedMatch(readWorkloadPolicy(workload.policyManifest), kind, name) !== undefined;
  } catch {
    return false;
  }
}
