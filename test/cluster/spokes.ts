/**
 * Hub and spokes: Argo CD in one test cluster (the hub) deploying into others
 * (the spokes), each spoke registered exactly as `argocd cluster add` registers
 * a cluster (Argo CD v3.6, cmd/argocd/commands/cluster.go and
 * util/clusterauth/clusterauth.go):
 *
 * - in the spoke: ServiceAccount `argocd-manager` in `kube-system`, ClusterRole
 *   `argocd-manager-role` (every verb on every resource and non-resource URL),
 *   ClusterRoleBinding `argocd-manager-role-binding`, and the long-lived token
 *   Secret `argocd-manager-long-lived-token` (type
 *   `kubernetes.io/service-account-token`, filled by the token controller);
 *   `tokenRequest: true` mints a TokenRequest token instead (newer Argo CD
 *   releases can opt in to one);
 * - in the hub's `argocd` namespace: the cluster Secret `cluster-<host>-<fnv32a(server)>`
 *   labelled `argocd.argoproj.io/secret-type: cluster`, annotated
 *   `managed-by: argocd.argoproj.io`, with `name`, `server` and `config`
 *   (`{"bearerToken": …, "tlsClientConfig": {"insecure": false, "caData": base64(CA PEM)}}`).
 *
 * So Argo CD's application controller reaches each spoke as the ServiceAccount,
 * over TLS verified against the spoke's CA: its writes show in the spoke's audit
 * log as `system:serviceaccount:kube-system:argocd-manager`.
 *
 * `startHubAndSpokes` starts the hub (with Argo CD) and the spokes side by side
 * and registers the spokes; `useSpokes` in testing.ts is the node:test fixture.
 */
import type { ApiClient, KubeObject } from './api.ts';
import { argoCdNamespace, startArgoCD, type Application, type ArgoCD, type ArgoCdOptions } from './argocd.ts';
import { serviceAccountUser } from './audit.ts';
import { ensureArgoCdBinaries, ensureClusterBinaries } from './build.ts';
import { startCluster, type Cluster, type ClusterOptions } from './harness.ts';
import { waitFor } from '../support/wait.ts';

/** The names `argocd cluster add` gives what it creates in the cluster it adds. */
export const argoCdManager = Object.freeze({
  namespace: 'kube-system',
  serviceAccount: 'argocd-manager',
  clusterRole: 'argocd-manager-role',
  clusterRoleBinding: 'argocd-manager-role-binding',
  tokenSecret: 'argocd-manager-long-lived-token',
});

/** The username Argo CD acts as in a registered spoke (audit log, RBAC). */
export const argoCdManagerUser = serviceAccountUser(argoCdManager.namespace, argoCdManager.serviceAccount);

/** The label that makes a Secret in Argo CD's namespace a cluster. */
export const clusterSecretTypeLabel = 'argocd.argoproj.io/secret-type';

/** The cluster config of a cluster Secret, as Argo CD marshals its `ClusterConfig` (the fields used here). */
export interface ClusterConfig {
  readonly bearerToken?: string;
  readonly username?: string;
  readonly password?: string;
  readonly tlsClientConfig?: {
    readonly insecure: boolean;
    readonly serverName?: string;
    /** base64 of PEM, as Go marshals a []byte. */
    readonly caData?: string;
    readonly certData?: string;
    readonly keyData?: string;
  };
}

/** What a cluster Secret holds, before encoding. */
export interface ClusterSecretSpec {
  /** The Argo CD cluster name: what `destination.name` refers to. */
  readonly name: string;
  /** The API server URL: what `destination.server` refers to. */
  readonly server: string;
  readonly config: ClusterConfig;
  /** `namespaces` (comma-separated in the Secret): the cluster is namespace-scoped. */
  readonly namespaces?: readonly string[];
  readonly clusterResources?: boolean;
  readonly project?: string;
  readonly shard?: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** A spoke registered in the hub's Argo CD. */
export interface Spoke {
  /** Its Argo CD cluster name (`destination.name`). */
  readonly name: string;
  /** `https://127.0.0.1:<port>` (`destination.server`). */
  readonly server: string;
  /** The spoke cluster itself (admin client, audit log, logs). */
  readonly cluster: Cluster;
  /** The cluster Secret's name in the hub's `argocd` namespace. */
  readonly secretName: string;
  /** Who Argo CD is in the spoke: `system:serviceaccount:kube-system:argocd-manager`. */
  readonly user: string;
}

/** Options of `registerSpoke`. */
export interface RegisterSpokeOptions {
  /** The Argo CD cluster name (default: the server URL, as Argo CD names a cluster without one). */
  readonly name?: string;
  /**
   * A TokenRequest token (of `tokenExpirationSeconds`, default 1 h) instead of the long-lived token
   * Secret `argocd cluster add` creates by default.
   */
  readonly tokenRequest?: boolean;
  readonly tokenExpirationSeconds?: number;
  /** Extra fields of the cluster Secret (`namespaces`, `project`, `shard`, labels…). */
  readonly secret?: Omit<ClusterSecretSpec, 'name' | 'server' | 'config'>;
}

/**
 * FNV-1a, 32 bits, over the UTF-8 bytes of `text`: the hash of Argo CD's
 * `URIToSecretName` (Go's hash/fnv New32a).
 */
export function fnv1a32(text: string): number {
  let hash = 0x81_1c_9d_c5;
  for (const byte of Buffer.from(text, 'utf8')) hash = Math.imul(hash ^ byte, 0x01_00_01_93) >>> 0;
  return hash;
}

/**
 * The name Argo CD gives a cluster Secret (util/db/secrets.go `URIToSecretName("cluster", server)`):
 * `cluster-<host without port, lower case>-<fnv1a32(server)>`; an IPv6 host's colons become dashes.
 */
export function clusterSecretName(server: string): string {
  const host = new URL(server).hostname.toLowerCase();
  const plain = host.startsWith('[') ? host.slice(1, -1).replaceAll(':', '-') : host;
  return `cluster-${plain}-${fnv1a32(server)}`;
}

/** The cluster Secret Argo CD's `clusterToSecret` writes for `spec`, in `argocd`. Pure. */
export function clusterSecret(spec: ClusterSecretSpec): KubeObject {
  const data: Record<string, string> = {
    server: spec.server.replace(/\/+$/, ''),
    name: spec.name,
    config: JSON.stringify(spec.config),
  };
  if (spec.namespaces !== undefined && spec.namespaces.length > 0) data['namespaces'] = spec.namespaces.join(',');
  if (spec.shard !== undefined) data['shard'] = String(spec.shard);
  if (spec.clusterResources === true) data['clusterResources'] = 'true';
  if (spec.project !== undefined) data['project'] = spec.project;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: clusterSecretName(spec.server),
      namespace: argoCdNamespace,
      labels: { ...spec.labels, [clusterSecretTypeLabel]: 'cluster' },
      annotations: { ...spec.annotations, 'managed-by': 'argocd.argoproj.io' },
    },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')])),
  };
}

/**
 * Creates or replaces the cluster Secret for `spec` in the hub's `argocd` namespace (a rotated
 * token, changed namespaces: Argo CD's informer picks the change up).
 * @returns the Secret's name.
 */
export async function writeClusterSecret(hub: Cluster, spec: ClusterSecretSpec): Promise<string> {
  const secret = clusterSecret(spec);
  const name = secret.metadata?.name ?? '';
  const path = `/api/v1/namespaces/${argoCdNamespace}/secrets`;
  const created = await hub.admin.send('POST', path, secret);
  if (created.status === 409) await hub.admin.request('PUT', `${path}/${name}`, secret);
  else if (created.status >= 300) throw new Error(`creating the cluster Secret ${name} answered ${created.status}`);
  return name;
}

/** POST that accepts "already exists", as `argocd cluster add` upserts. */
async function ensureObject(client: ApiClient, collection: string, object: KubeObject): Promise<void> {
  const response = await client.send('POST', collection, object);
  if (response.status >= 300 && response.status !== 409) {
    throw new Error(`creating ${object.kind} ${object.metadata?.name} answered ${response.status}`);
  }
}

/**
 * Creates in `spoke` what `argocd cluster add` creates there: the `argocd-manager` ServiceAccount, its
 * cluster-wide role and binding, and a token — by default from the long-lived token Secret, waited for
 * until the token controller has filled it.
 * @returns the bearer token (a credential: never log it).
 */
export async function installClusterManager(spoke: Cluster, options: RegisterSpokeOptions = {}): Promise<string> {
  const { namespace, serviceAccount, clusterRole, clusterRoleBinding, tokenSecret } = argoCdManager;
  const admin = spoke.admin;
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  await ensureObject(admin, `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: serviceAccount, namespace },
  });
  await ensureObject(admin, `${rbac}/clusterroles`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: clusterRole },
    rules: [
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
      { nonResourceURLs: ['*'], verbs: ['*'] },
    ],
  });
  await ensureObject(admin, `${rbac}/clusterrolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: clusterRoleBinding },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
    subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
  });
  if (options.tokenRequest === true) return spoke.tokenFor(namespace, serviceAccount, options.tokenExpirationSeconds ?? 3600);
  await ensureObject(admin, `/api/v1/namespaces/${namespace}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: tokenSecret, namespace, annotations: { 'kubernetes.io/service-account.name': serviceAccount } },
    type: 'kubernetes.io/service-account-token',
  });
  const encoded = await waitFor(`the token controller to fill ${namespace}/${tokenSecret}`, async () => {
    const secret = await admin.request<KubeObject & { data?: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${namespace}/secrets/${tokenSecret}`,
    );
    return secret.data?.['token'];
  }, { timeoutMs: 60_000 });
  return Buffer.from(encoded, 'base64').toString('utf8');
}

/**
 * Registers `spoke` in the hub's Argo CD as `argocd cluster add` does: `installClusterManager` in the
 * spoke, then the cluster Secret in the hub with the token and the spoke's CA. Argo CD's controller
 * must already run in the hub (or start later); the Secret is all it reads.
 */
export async function registerSpoke(hub: Cluster, spoke: Cluster, options: RegisterSpokeOptions = {}): Promise<Spoke> {
  const bearerToken = await installClusterManager(spoke, options);
  const name = options.name ?? spoke.server;
  const secretName = await writeClusterSecret(hub, {
    ...options.secret,
    name,
    server: spoke.server,
    config: { bearerToken, tlsClientConfig: { insecure: false, caData: Buffer.from(spoke.ca).toString('base64') } },
  });
  return { name, server: spoke.server, cluster: spoke, secretName, user: argoCdManagerUser };
}

/** Removes a spoke's cluster Secret from the hub (Argo CD forgets the cluster; the spoke keeps its objects). */
export async function unregisterSpoke(hub: Cluster, spoke: Spoke): Promise<void> {
  await hub.admin.send('DELETE', `/api/v1/namespaces/${argoCdNamespace}/secrets/${spoke.secretName}`);
}

/** An Application destination in `spoke`, by its server URL or by its Argo CD cluster name. */
export function spokeDestination(spoke: Spoke, namespace: string, by: 'server' | 'name' = 'server'): Record<string, string> {
  return by === 'server' ? { server: spoke.server, namespace } : { name: spoke.name, namespace };
}

/**
 * Creates an Application in the hub whose destination is `namespace` in `spoke` (see
 * `spokeDestination`); `spec` adds the source, sync policy and anything else.
 */
export function createSpokeApplication(
  argocd: ArgoCD,
  name: string,
  target: { readonly spoke: Spoke; readonly namespace: string; readonly by?: 'server' | 'name' },
  spec: Readonly<Record<string, unknown>>,
): Promise<Application> {
  return argocd.createApplication(name, { ...spec, destination: spokeDestination(target.spoke, target.namespace, target.by) });
}

/** Options of `startHubAndSpokes`. */
export interface HubAndSpokesOptions {
  /** The hub's cluster options. */
  readonly hub?: ClusterOptions;
  /** Every spoke's cluster options (e.g. `auditLog: true`). */
  readonly spoke?: ClusterOptions;
  /** The spokes' Argo CD cluster names, one spoke each (default `spoke-a`, `spoke-b`). */
  readonly spokeNames?: readonly string[];
  readonly argocd?: ArgoCdOptions;
  /** Registration options for every spoke (the name comes from `spokeNames`). */
  readonly register?: Omit<RegisterSpokeOptions, 'name'>;
  /**
   * Start the control planes side by side (default true); false starts them one after the other
   * (for measurements).
   */
  readonly parallel?: boolean;
}

/** A hub running Argo CD with registered spokes. */
export interface HubAndSpokes {
  readonly hub: Cluster;
  readonly argocd: ArgoCD;
  /** In the order of `spokeNames`. */
  readonly spokes: readonly Spoke[];
  /** Every cluster's and Argo CD's log tails, for a failing test. */
  logs(lines?: number): Promise<string>;
  /** Stops Argo CD, then every cluster. Idempotent. */
  stop(): Promise<void>;
}

/** Starts the hub and then Argo CD on it; stops the hub when Argo CD fails to start. */
async function startHub(options: HubAndSpokesOptions): Promise<{ hub: Cluster; argocd: ArgoCD }> {
  const hub = await startCluster(options.hub);
  try {
    return { hub, argocd: await startArgoCD(hub, options.argocd) };
  } catch (error) {
    await hub.stop();
    throw error;
  }
}

/** The hub with Argo CD and the spoke clusters, started side by side or one after the other. */
async function startControlPlanes(
  options: HubAndSpokesOptions,
  count: number,
  started: { hub?: Cluster; argocd?: ArgoCD; spokes: Cluster[] },
): Promise<void> {
  const startSpoke = async (): Promise<void> => {
    started.spokes.push(await startCluster(options.spoke));
  };
  const startHubInto = async (): Promise<void> => {
    Object.assign(started, await startHub(options));
  };
  if (options.parallel ?? true) {
    // allSettled, not all: every start must have ended before the caller stops what did start.
    const settled = await Promise.allSettled([startHubInto(), ...Array.from({ length: count }, startSpoke)]);
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    return;
  }
  await startHubInto();
  for (let index = 0; index < count; index++) await startSpoke();
}

/**
 * Starts a hub with Argo CD and the spokes, by default side by side (their starts mostly wait on
 * API servers and controllers becoming ready), and registers every spoke. On any failure what did
 * start is stopped and the first error is thrown.
 */
export async function startHubAndSpokes(options: HubAndSpokesOptions = {}): Promise<HubAndSpokes> {
  const names = options.spokeNames ?? ['spoke-a', 'spoke-b'];
  // Once, before the starts: concurrent first calls would each hash the modules (and race on a cold cache).
  await ensureClusterBinaries({ rolloutsController: Boolean(options.hub?.rolloutsController || options.spoke?.rolloutsController) });
  await ensureArgoCdBinaries();
  const started: { hub?: Cluster; argocd?: ArgoCD; spokes: Cluster[] } = { spokes: [] };
  const stopAll = async (): Promise<void> => {
    // Argo CD first (it watches every cluster), then the clusters, side by side.
    await started.argocd?.stop();
    const clusters = started.hub === undefined ? started.spokes : [started.hub, ...started.spokes];
    await Promise.all(clusters.map((cluster) => cluster.stop()));
  };
  try {
    await startControlPlanes(options, names.length, started);
    const { hub, argocd } = started;
    if (hub === undefined || argocd === undefined) throw new Error('the hub did not start');
    const spokes = await Promise.all(
      started.spokes.map((cluster, index) => registerSpoke(hub, cluster, { ...options.register, name: names[index] ?? `spoke-${index}` })),
    );
    let stopped: Promise<void> | undefined;
    return {
      hub,
      argocd,
      spokes,
      async logs(lines = 40) {
        const parts = [`===== hub (state in ${hub.stateDir}) =====\n${await hub.logs(lines)}`, `===== Argo CD =====\n${await argocd.logs(lines)}`];
        for (const spoke of spokes) parts.push(`===== ${spoke.name} (state in ${spoke.cluster.stateDir}) =====\n${await spoke.cluster.logs(lines)}`);
        return parts.join('\n');
      },
      stop() {
        stopped ??= stopAll();
        return stopped;
      },
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
