/**
 * Which clusters a hub manages, from what its watches hold (ADR 0019): every
 * cluster Secret the parser (cluster-secret.ts) accepts, keyed by its server
 * URL as Argo CD keys them, plus Argo CD's in-cluster destination unless
 * argocd-cm turns it off. A cluster Secret for the in-cluster server replaces
 * the implicit one (its name, namespaces, clusterResources), and is refused,
 * as Argo CD skips it, when the in-cluster destination is off. Two Secrets for
 * one server: the first by Secret name wins and the others are refused, never
 * merged. Pure.
 */
import { createHash } from 'node:crypto';
import { IN_CLUSTER_SERVER, inClusterDestination, type ArgoCluster, type ClusterSecretResult } from './cluster-secret.ts';

/** A cluster Secret as the hub's watch keeps it: the parser's result and the Secret's identity. */
export interface WatchedClusterSecret {
  readonly result: ClusterSecretResult;
  /** For the Event on a refused Secret, and to say a refusal once per version. */
  readonly uid: string | undefined;
  readonly resourceVersion: string;
}

/** One cluster the hub manages. */
export interface Destination {
  /** The server URL: the registry's key. */
  readonly server: string;
  /** Argo CD's name of the cluster (its server URL when the Secret names none): the `cluster` label. */
  readonly name: string;
  /** A short stable id of the server URL, label-safe: names the cluster's restart records in the hub. */
  readonly id: string;
  /** The namespaces the cluster's pipeline watches (the Secret's `namespaces`); undefined: all. */
  readonly namespaces: readonly string[] | undefined;
  readonly clusterResources: boolean;
  readonly cluster: ArgoCluster;
  /** Reached with the controller's own credentials (Argo CD's in-cluster address), not the Secret's. */
  readonly inCluster: boolean;
  /** The cluster Secret's uid, for the Events about the cluster (ADR 0027); absent: no Secret (the implicit in-cluster one). */
  readonly secretUid?: string | undefined;
}

/** A cluster Secret the hub does not act on, and why. */
export interface Refusal {
  /** The Secret's name (in --argocd-namespace). */
  readonly secret: string;
  readonly uid: string | undefined;
  readonly resourceVersion: string;
  readonly server: string | undefined;
  /** The parser's reason (`aws-auth`, `bad-tls`, …), or `in-cluster-disabled`, `duplicate-server`. */
  readonly reason: string;
  /** Said in the Event and the log; names a field, never a credential. */
  readonly detail: string;
}

/** What the hub should run, and what it refuses. */
export interface DesiredClusters {
  readonly destinations: ReadonlyMap<string, Destination>;
  readonly refused: readonly Refusal[];
}

/** The label-safe id of a server URL: 12 hex digits of its SHA-256 (records of two clusters never collide). */
export function clusterId(server: string): string {
  return createHash('sha256').update(server).digest('hex').slice(0, 12);
}

/** The destination of a parsed cluster (of the Secret of uid `secretUid`). */
export function destinationOf(cluster: ArgoCluster, secretUid?: string): Destination {
  return Object.freeze({
    ...(secretUid === undefined ? {} : { secretUid }),
    server: cluster.server,
    name: cluster.name === '' ? cluster.server : cluster.name,
    id: clusterId(cluster.server),
    namespaces: cluster.namespaces,
    clusterResources: cluster.clusterResources,
    cluster,
    inCluster: cluster.connection.inCluster,
  });
}

/**
 * The clusters to run from the watched cluster Secrets (in any order) and argocd-cm's
 * `cluster.inClusterEnabled` (true unless it says "false").
 */
export function desiredClusters(secrets: Iterable<WatchedClusterSecret>, inClusterEnabled: boolean): DesiredClusters {
  const destinations = new Map<string, Destination>();
  const refused: Refusal[] = [];
  const refuse = (watched: WatchedClusterSecret, secret: string, server: string | undefined, reason: string, detail: string): void => {
    refused.push(Object.freeze({ secret, uid: watched.uid, resourceVersion: watched.resourceVersion, server, reason, detail }));
  };
  const sorted = [...secrets].sort((x, y) => secretName(x.result).localeCompare(secretName(y.result)));
  for (const watched of sorted) {
    const { result } = watched;
    if (result.kind === 'refused') {
      refuse(watched, result.secret, result.server, result.reason, result.detail);
      continue;
    }
    const { cluster } = result;
    if (cluster.server === IN_CLUSTER_SERVER && !inClusterEnabled) {
      refuse(watched, cluster.secret, cluster.server, 'in-cluster-disabled', 'argocd-cm sets cluster.inClusterEnabled: "false"; Argo CD does not deploy there either');
      continue;
    }
    const taken = destinations.get(cluster.server);
    if (taken !== undefined) {
      refuse(watched, cluster.secret, cluster.server, 'duplicate-server', `the cluster Secret ${taken.cluster.secret} registers the same server; the first by name is used`);
      continue;
    }
    destinations.set(cluster.server, destinationOf(cluster, watched.uid));
  }
  if (inClusterEnabled && !destinations.has(IN_CLUSTER_SERVER)) destinations.set(IN_CLUSTER_SERVER, destinationOf(inClusterDestination()));
  return { destinations, refused };
}

function secretName(result: ClusterSecretResult): string {
  return result.kind === 'cluster' ? result.cluster.secret : result.secret;
}

/**
 * Whether a running cluster can stay as it is: the same connection (`sameConnection`, cluster-secret.ts) and
 * the same scope. Anything else and the cluster's pipeline is stopped and started again.
 */
export function sameDestination(a: Destination, b: Destination, sameConnection: (x: ArgoCluster, y: ArgoCluster) => boolean): boolean {
  if (a.server !== b.server || a.name !== b.name || a.inCluster !== b.inCluster || a.clusterResources !== b.clusterResources) return false;
  if ((a.namespaces === undefined) !== (b.namespaces === undefined) || String(a.namespaces) !== String(b.namespaces)) return false;
  return sameConnection(a.cluster, b.cluster);
}

/**
 * A cluster as an Application's destination names it: the pipeline of that cluster keeps only the
 * Applications that deploy there (hub mode, and the spoke option's `--argocd-destination-server/-name`).
 */
export interface HubScope {
  readonly id: string | undefined;
  /** Trailing slashes cut; `''` = none (only `name` matches). */
  readonly server: string;
  /** `''` = none (only `server` matches). */
  readonly name: string;
}

/** Whether an Application's destination is the cluster of `hub`. */
export function deploysTo(destination: { readonly server: string; readonly name: string }, hub: HubScope): boolean {
  const server = destination.server.replace(/\/+$/, '');
  return server !== '' ? server === hub.server : destination.name !== '' && destination.name === hub.name;
}
