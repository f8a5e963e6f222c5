/**
 * One-shot collection for `explain --live`: paged GETs of what one namespace's
 * explanation needs, reduced with the controller's own reducers into a
 * ClusterView, as the controller's caches would hold it. Two additions the
 * controller does not cache: pod labels (kept only for this command, to match
 * PodDisruptionBudgets) and the budgets themselves. Secret payloads are
 * digested page by page and never kept.
 */
import type { HashKey } from '../../core/index.ts';
import { ClusterView, workloadKey } from '../cache/cluster-view.ts';
import { reduceAppProject, reduceApplication, reduceConfig, reducePod, reduceProviderPodStatus, reduceReplicaSet, reduceWorkload, type TrackingOptions } from '../cache/reduce.ts';
import type { LabelRequirement } from '../config/label-selector.ts';
import type { KubeClient } from '../kube/client.ts';
import { isForbidden, isNotFound } from '../kube/errors.ts';
import { OTHER_RESOURCES, WORKLOAD_RESOURCES, collectionPath, objectPath, type ResourceSpec } from '../kube/resources.ts';
import type { WorkloadKindName, WorkloadSummary } from '../model.ts';
import { deploysTo, type HubScope } from '../hub/destinations.ts';
import type { LiveTarget } from './args.ts';

/** A PodDisruptionBudget, reduced to what says whether it allows an eviction. */
export interface BudgetSummary {
  readonly name: string;
  /** `undefined`: a null selector, which selects no pod (policy/v1); `[]` selects every pod of the namespace. */
  readonly selector: readonly LabelRequirement[] | undefined;
  readonly minAvailable: string | undefined;
  readonly maxUnavailable: string | undefined;
  readonly disruptionsAllowed: number;
  readonly currentHealthy: number;
  readonly desiredHealthy: number;
  readonly expectedPods: number;
}

/** Everything an explanation reads, taken at one moment. */
export interface LiveSnapshot {
  readonly namespace: string;
  readonly view: ClusterView;
  /** Pod UID → its labels (only this command keeps them). */
  readonly podLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
  readonly budgets: readonly BudgetSummary[];
  /** Keys of the workloads to explain, sorted (empty for a config target). */
  readonly workloadKeys: readonly string[];
  /** What could not be read, in words (never a value). */
  readonly warnings: readonly string[];
  /** Epoch ms when the lists were made. */
  readonly now: number;
}

/** The named workload does not exist. */
export class LiveTargetNotFoundError extends Error {
  override readonly name = 'LiveTargetNotFoundError';
}

/** How to collect. */
export interface CollectOptions {
  readonly namespace: string;
  readonly target: LiveTarget;
  readonly hashKey: HashKey | undefined;
  readonly tracking: TrackingOptions;
  readonly pageSize: number;
  /** The controller's `--resource-label-selector`, as text. */
  readonly configLabelSelector: string | undefined;
  /** The controller's `--argocd-namespace`: where the Applications it watches for the sync wait live. */
  readonly argocdNamespace: string;
  /**
   * The spoke option (`--argocd-kubeconfig`, ADR 0025): Argo CD runs in another cluster, whose client reads
   * the Applications and AppProjects, and only the Applications deploying to `destination` (this cluster) count.
   * Absent: they are read from this cluster, as the controller reads them.
   */
  readonly argocd?: { readonly client: KubeClient; readonly destination: HubScope };
  readonly now: number;
}

/** Helm keeps every release in a Secret of this type; the controller never lists them either. */
const HELM_RELEASE_FIELD_SELECTOR = 'type!=helm.sh/release.v1';

interface ListPage {
  readonly items?: readonly unknown[];
  readonly metadata?: { readonly continue?: string };
}

function apiVersionOf(resource: ResourceSpec): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}

/** Lists a collection page by page; each item is handed to `each` and dropped with its page. */
async function listPaged(client: KubeClient, path: string, query: Readonly<Record<string, string | undefined>>, pageSize: number, each: (item: unknown) => void): Promise<void> {
  let token: string | undefined;
  do {
    const page = await client.request<ListPage>('GET', path, { query: { ...query, limit: pageSize, continue: token } });
    for (const item of page.items ?? []) each(item);
    token = page.metadata?.continue || undefined;
  } while (token !== undefined);
}

/**
 * Lists, tolerating what an explanation can do without: an API that is not
 * installed (Rollouts, OpenShift) is skipped silently; a list we may not make
 * becomes a warning, so a least-privilege kubeconfig still gets an answer.
 */
async function listTolerant(client: KubeClient, resource: ResourceSpec, namespace: string, pageSize: number, warnings: string[], each: (item: unknown) => void, what: string): Promise<void> {
  try {
    await listPaged(client, collectionPath(resource, namespace), {}, pageSize, each);
  } catch (error) {
    if (resource.optional && isNotFound(error)) return;
    if (isForbidden(error)) {
      warnings.push(`not allowed to list ${resource.plural} in ${namespace}: ${what}`);
      return;
    }
    throw error;
  }
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function intOrString(value: unknown): string | undefined {
  return typeof value === 'number' || (typeof value === 'string' && value !== '') ? String(value) : undefined;
}

function labelsOf(raw: unknown): Readonly<Record<string, string>> {
  const labels = (raw as { metadata?: { labels?: unknown } }).metadata?.labels;
  const out: Record<string, string> = {};
  if (typeof labels === 'object' && labels !== null) for (const [key, value] of Object.entries(labels)) if (typeof value === 'string') out[key] = value;
  return Object.freeze(out);
}

const EXPRESSION_OPERATORS: Readonly<Record<string, LabelRequirement['operator']>> = Object.freeze({ In: 'In', NotIn: 'NotIn', Exists: 'Exists', DoesNotExist: 'DoesNotExist' });

/** A `metav1.LabelSelector` as requirements; `undefined` for a null selector (it selects nothing). */
function readSelector(value: unknown): readonly LabelRequirement[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const selector = value as { matchLabels?: Record<string, unknown>; matchExpressions?: unknown };
  const requirements: LabelRequirement[] = [];
  for (const [key, label] of Object.entries(selector.matchLabels ?? {})) requirements.push({ key, operator: 'Equals', values: [str(label)] });
  for (const expression of Array.isArray(selector.matchExpressions) ? selector.matchExpressions : []) {
    const { key, operator, values } = expression as { key?: unknown; operator?: unknown; values?: unknown };
    const known = EXPRESSION_OPERATORS[str(operator)];
    // The API server validates operators; an unknown one cannot match, as in Kubernetes.
    if (known === undefined) return [{ key: str(key), operator: 'In', values: [] }];
    requirements.push({ key: str(key), operator: known, values: Array.isArray(values) ? values.map(str).sort() : [] });
  }
  return Object.freeze(requirements);
}

/** Reduces a policy/v1 PodDisruptionBudget. */
export function reduceBudget(raw: unknown): BudgetSummary {
  const object = raw as { metadata?: { name?: unknown }; spec?: Record<string, unknown>; status?: Record<string, unknown> };
  const spec = object.spec ?? {};
  const status = object.status ?? {};
  return Object.freeze({
    name: str(object.metadata?.name),
    selector: readSelector(spec['selector']),
    minAvailable: intOrString(spec['minAvailable']),
    maxUnavailable: intOrString(spec['maxUnavailable']),
    disruptionsAllowed: num(status['disruptionsAllowed']),
    currentHealthy: num(status['currentHealthy']),
    desiredHealthy: num(status['desiredHealthy']),
    expectedPods: num(status['expectedPods']),
  });
}

/**
 * Lists and reduces what the target needs: for a workload, that workload (and
 * the Deployment a Rollout borrows); otherwise every workload of the
 * namespace; always the namespace's configs (named patterns select configs
 * nothing references), pods, ReplicaSets and PodDisruptionBudgets.
 * @throws LiveTargetNotFoundError when the named workload does not exist.
 */
export async function collectLive(client: KubeClient, options: CollectOptions): Promise<LiveSnapshot> {
  const { namespace, target, pageSize, now } = options;
  const view = new ClusterView();
  const warnings: string[] = [];
  const addWorkload = (kind: WorkloadKindName, raw: unknown): WorkloadSummary => {
    const summary = reduceWorkload({ apiVersion: apiVersionOf(WORKLOAD_RESOURCES[kind]), kind }, raw, options.tracking);
    view.workloadChanged(undefined, summary);
    return summary;
  };

  let workloadKeys: string[];
  if (target.type === 'workload') {
    const resource = WORKLOAD_RESOURCES[target.kind];
    let raw: unknown;
    try {
      raw = await client.request('GET', objectPath(resource, namespace, target.name));
    } catch (error) {
      if (isNotFound(error)) throw new LiveTargetNotFoundError(`${target.kind} ${namespace}/${target.name} not found`, { cause: error });
      throw error;
    }
    const workload = addWorkload(target.kind, raw);
    if (workload.workloadRef !== undefined && workload.workloadRef.kind === 'Deployment') {
      try {
        addWorkload('Deployment', await client.request('GET', objectPath(WORKLOAD_RESOURCES.Deployment, namespace, workload.workloadRef.name)));
      } catch (error) {
        if (!isNotFound(error)) throw error;
        warnings.push(`the Deployment ${workload.workloadRef.name} its workloadRef names does not exist`);
      }
    }
    workloadKeys = [workloadKey(target.kind, namespace, target.name)];
  } else {
    for (const kind of Object.keys(WORKLOAD_RESOURCES) as WorkloadKindName[]) {
      await listTolerant(client, WORKLOAD_RESOURCES[kind], namespace, pageSize, warnings, (raw) => addWorkload(kind, raw), `its ${kind}s are not explained`);
    }
    workloadKeys = target.type === 'namespace' ? view.workloadKeys() : [];
  }

  for (const kind of ['ConfigMap', 'Secret'] as const) {
    const resource = kind === 'ConfigMap' ? OTHER_RESOURCES.configMaps : OTHER_RESOURCES.secrets;
    // Not tolerant: without the configs every digest and selection would be wrong, not merely incomplete.
    await listPaged(client, collectionPath(resource, namespace), {
      labelSelector: options.configLabelSelector,
      fieldSelector: kind === 'Secret' ? HELM_RELEASE_FIELD_SELECTOR : undefined,
    }, pageSize, (raw) => view.configChanged(undefined, reduceConfig(kind, raw, undefined, { key: options.hashKey, tracking: options.tracking, now })));
  }
  await listTolerant(client, OTHER_RESOURCES.providerPodStatuses, namespace, pageSize, warnings,
    (raw) => view.providerStatusChanged(undefined, reduceProviderPodStatus(raw, options.hashKey), now), 'SecretProviderClass digests are unknown');

  const podLabels = new Map<string, Readonly<Record<string, string>>>();
  const budgets: BudgetSummary[] = [];
  if (target.type !== 'config') {
    // ReplicaSets first: the view maps a Deployment's pods through them.
    await listTolerant(client, OTHER_RESOURCES.replicaSets, namespace, pageSize, warnings, (raw) => view.replicaSetChanged(undefined, reduceReplicaSet(raw)), 'the pods of Deployments are unknown');
    await listTolerant(client, OTHER_RESOURCES.pods, namespace, pageSize, warnings, (raw) => {
      const pod = reducePod(raw);
      view.podChanged(undefined, pod);
      podLabels.set(pod.uid, labelsOf(raw));
    }, 'restarts in progress are unknown');
    const pdbs: ResourceSpec = { group: 'policy', version: 'v1', plural: 'poddisruptionbudgets', optional: false };
    await listTolerant(client, pdbs, namespace, pageSize, warnings, (raw) => budgets.push(reduceBudget(raw)), 'PodDisruptionBudgets are unknown');
    budgets.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    // The Applications tracking these workloads, for the sync wait (ADR 0011); none without Argo CD (no CRD: skipped).
    if (workloadKeys.some((key) => view.workload(key)?.tracking !== undefined)) {
      const argocd = options.argocd?.client ?? client;
      const destination = options.argocd?.destination;
      await listTolerant(argocd, OTHER_RESOURCES.applications, options.argocdNamespace, pageSize, warnings, (raw) => {
        const app = reduceApplication(raw, options.argocdNamespace);
        if (destination === undefined || deploysTo(app.destination, destination)) view.applicationChanged(undefined, app);
      }, 'a restart waiting for an Argo CD sync is not shown');
      // Their AppProjects, for the sync windows that hold a restart (ADR 0016).
      await listTolerant(argocd, OTHER_RESOURCES.appProjects, options.argocdNamespace, pageSize, warnings,
        (raw) => view.projectChanged(undefined, reduceAppProject(raw)), 'a restart held by sync windows is not shown');
    }
  }
  return Object.freeze({ namespace, view, podLabels, budgets: Object.freeze(budgets), workloadKeys: Object.freeze(workloadKeys), warnings: Object.freeze(warnings), now });
}
