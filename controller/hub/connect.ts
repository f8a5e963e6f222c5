/**
 * The KubeConfig that reaches a destination cluster the way Argo CD's
 * `Cluster.RawRestConfig` does, for the project's own API client
 * (kube/client.ts). The credentials live only in this in-memory KubeConfig;
 * nothing is written to disk. See ADR 0020.
 */
// From its own module, not the package index, which loads client-node's whole generated API (ADR 0021).
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { Cluster, User } from '@kubernetes/client-node/dist/config_types.js';
import type https from 'node:https';
import { KubeApiError, KubeConfigError, KubeTransportError } from '../kube/errors.ts';
import { loadKubeConfig, type KubeClient } from '../kube/client.ts';
import type { ArgoCluster } from './cluster-secret.ts';
import { ExecCredentialSource } from './exec-credential.ts';

/** The auth provider name that routes a user to this module's exec credential source instead of client-node's ExecAuth. */
const EXEC_PROVIDER = 'driftless-argocd-exec';

/**
 * A KubeConfig whose exec credential is dropped when the server refuses it
 * (kube/client.ts calls `credentialsRejected` on a 401), as client-go
 * re-runs the plugin after a 401.
 */
export class ArgoClusterKubeConfig extends KubeConfig {
  #exec: ExecCredentialSource | undefined;

  /** Sets the exec credential source the `driftless-argocd-exec` user asks. */
  useExec(source: ExecCredentialSource): void {
    this.#exec = source;
    this.addAuthenticator({
      isAuthProvider: (user: User) => (user.authProvider as { name?: unknown } | undefined)?.name === EXEC_PROVIDER,
      applyAuthentication: async (_user: User, opts: https.RequestOptions) => {
        const credential = await source.get();
        if (credential.clientCertificateData !== undefined) {
          opts.cert = credential.clientCertificateData;
          opts.key = credential.clientKeyData;
        }
        if (credential.token !== undefined) {
          // client-node hands every authenticator a headers object (applyAuthorizationHeader).
          const headers = (opts.headers ?? {}) as Record<string, string>;
          headers.Authorization = `Bearer ${credential.token}`;
          opts.headers = headers;
        }
      },
    });
  }

  /** The server answered 401: run the exec plugin again at the next request. */
  credentialsRejected(): void {
    this.#exec?.invalidate();
  }
}

const base64 = (pem: string): string => Buffer.from(pem).toString('base64');

/** How the cluster is named in the kubeconfig, in errors and logs: its name and Secret, never a credential. */
export function clusterLabel(cluster: ArgoCluster): string {
  const secret = cluster.secret === '' ? 'no Secret' : `Secret ${cluster.secret}`;
  return `cluster ${cluster.name === '' ? '(unnamed)' : cluster.name} (${secret}, ${cluster.server})`;
}

function userOf(cluster: ArgoCluster, name: string): User {
  const c = cluster.connection;
  const tls = c.tls;
  return {
    name,
    ...(c.exec === undefined ? {} : { authProvider: { name: EXEC_PROVIDER, config: {} } }),
    ...(c.bearerToken === undefined ? {} : { token: c.bearerToken }),
    // Basic auth only with a username, in client-go (HasBasicAuth) as in client-node.
    ...(c.username === undefined ? {} : { username: c.username, password: c.password ?? '' }),
    ...(tls.certData === undefined || tls.keyData === undefined ? {} : { certData: base64(tls.certData), keyData: base64(tls.keyData) }),
  };
}

/** The in-cluster destination: our own pod's service account, its token replaced by the Secret's credentials when it has some. */
function inClusterKubeConfig(cluster: ArgoCluster, name: string): ArgoClusterKubeConfig {
  // Fails (KubeConfigError) outside a pod, as rest.InClusterConfig does for Argo CD.
  const own = loadKubeConfig({ kubeconfig: [] });
  const ownCluster = own.getCurrentCluster() as Cluster;
  const ownUser = own.getCurrentUser() as User;
  const c = cluster.connection;
  const replaced = c.bearerToken !== undefined || c.username !== undefined || c.password !== undefined;
  const config = new ArgoClusterKubeConfig();
  config.loadFromOptions({
    clusters: [{ ...ownCluster, name, ...(c.proxyUrl === undefined ? {} : { proxyUrl: c.proxyUrl }) }],
    users: [replaced ? userOf(cluster, name) : { ...ownUser, name }],
    contexts: [{ name, cluster: name, user: name }],
    currentContext: name,
  });
  return config;
}

/**
 * A KubeConfig (@kubernetes/client-node) that connects to the cluster as Argo CD does:
 * the server, the CA (or `insecure`), the TLS server name, the proxy, and one
 * way to authenticate — the exec plugin, else a bearer token and/or a client
 * certificate, else basic auth.
 * @throws {KubeConfigError} for the in-cluster address outside a pod.
 */
export function kubeConfigFor(cluster: ArgoCluster, options: { readonly execTimeoutMs?: number } = {}): KubeConfig {
  const name = clusterLabel(cluster);
  if (cluster.connection.inCluster) return inClusterKubeConfig(cluster, name);
  const c = cluster.connection;
  const tls = c.tls;
  const config = new ArgoClusterKubeConfig();
  const entry: Cluster = {
    name,
    server: cluster.server,
    // A plain-http server has no TLS to verify; client-node refuses http without this flag.
    skipTLSVerify: tls.insecure || cluster.server.startsWith('http:'),
    ...(tls.caData === undefined ? {} : { caData: base64(tls.caData) }),
    ...(tls.serverName === undefined ? {} : { tlsServerName: tls.serverName }),
    ...(c.proxyUrl === undefined ? {} : { proxyUrl: c.proxyUrl }),
  };
  config.loadFromOptions({ clusters: [entry], users: [userOf(cluster, name)], contexts: [{ name, cluster: name, user: name }], currentContext: name });
  if (c.exec !== undefined) config.useExec(new ExecCredentialSource(cluster.server, { ...c, exec: c.exec }, { timeoutMs: options.execTimeoutMs }));
  return config;
}

/** A destination cluster could not be reached or refused us; the message names the cluster (never a credential). */
export class ClusterConnectError extends Error {
  override readonly name = 'ClusterConnectError';
}

/** What went wrong, in words that point at the part of the cluster Secret to check. */
function whyNot(error: unknown): string {
  if (error instanceof KubeApiError && error.status === 401) return 'the API server refused the credentials of the cluster Secret (401 Unauthorized): check its bearerToken, client certificate or exec provider';
  if (error instanceof KubeApiError) return `the API server answered ${error.message}`;
  if (error instanceof KubeTransportError) return `${error.message} (check server, tlsClientConfig and proxyUrl)`;
  if (error instanceof KubeConfigError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Asks the cluster for its version with the client `kubeConfigFor` built, so a
 * wrong server, CA or credential is one clear error at connect time.
 * @returns the server's gitVersion.
 * @throws {ClusterConnectError} naming the cluster, with the client's error as cause.
 */
export async function probeCluster(client: KubeClient, cluster: ArgoCluster, signal?: AbortSignal): Promise<string> {
  try {
    // /version needs no RBAC, but an invalid credential is still a 401 there.
    const version = await client.request<{ gitVersion?: unknown }>('GET', '/version', signal === undefined ? {} : { signal });
    return typeof version.gitVersion === 'string' ? version.gitVersion : '';
  } catch (error) {
    throw new ClusterConnectError(`cannot connect to ${clusterLabel(cluster)}: ${whyNot(error)}`, { cause: error });
  }
}
