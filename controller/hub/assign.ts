/**
 * Which replica owns which cluster: a pure function of the live replicas and
 * the clusters, so every replica computes the same answer from the same
 * Leases without talking to the others (issue 22 §3).
 *
 * - A cluster Secret's `shard` pins it to the replica of that rank (replicas
 *   ordered by identity) when the rank exists, as Argo CD's application
 *   controller honours the field only below its replica count and otherwise
 *   falls back to its distribution function.
 * - The others are spread by rendezvous hashing (highest random weight) with
 *   bounded loads: each cluster goes to the replica of highest weight that
 *   still has room (⌊clusters ÷ replicas⌋, one more for as many replicas as the
 *   division leaves over). Loads therefore differ by at most one (pinned
 *   clusters aside), and a replica joining or leaving moves
 *   few clusters, not the whole fleet as a modulo would (Argo CD's round-robin
 *   reshuffles when rank 0 leaves).
 *
 * Ownership itself is a Lease per cluster (cluster-leases.ts): this function
 * only says which Leases a replica should try to hold.
 */
import { createHash } from 'node:crypto';

/** A cluster as the assignment sees it. */
export interface Assignable {
  /** Stable and unique: the cluster's server URL as Argo CD compares it. */
  readonly key: string;
  /** Argo CD's `shard` field, when set. */
  readonly shard: number | undefined;
}

/** cluster key → owning replica's identity; every cluster has an owner once there is a replica. */
export type Assignment = ReadonlyMap<string, string>;

/** The weight of a (cluster, replica) pair: the first 6 bytes of a SHA-256, a safe integer. */
function weight(cluster: string, replica: string): number {
  return createHash('sha256').update(cluster).update('\0').update(replica).digest().readUIntBE(0, 6);
}

/** Assigns every cluster to one of `replicas` (identities; order does not matter). */
export function assignClusters(clusters: readonly Assignable[], replicas: readonly string[]): Assignment {
  const ranked = [...new Set(replicas)].sort();
  const owners = new Map<string, string>();
  if (ranked.length === 0) return owners;
  const load = new Map<string, number>(ranked.map((replica) => [replica, 0]));
  const free: Assignable[] = [];
  for (const cluster of clusters) {
    const pinned = cluster.shard !== undefined && cluster.shard >= 0 && cluster.shard < ranked.length ? ranked[cluster.shard] : undefined;
    if (pinned === undefined) free.push(cluster);
    else {
      owners.set(cluster.key, pinned);
      load.set(pinned, (load.get(pinned) ?? 0) + 1);
    }
  }
  // The bound: ⌊n ÷ r⌋ each, and one more for only n mod r of them, so that loads differ by at most one.
  const floor = Math.floor(clusters.length / ranked.length);
  let roomAboveFloor = clusters.length % ranked.length - ranked.filter((replica) => (load.get(replica) ?? 0) > floor).length;
  const hasRoom = (replica: string): boolean => {
    const current = load.get(replica) ?? 0;
    return current < floor || (current === floor && roomAboveFloor > 0);
  };
  // Sorted, so that the bounded loads fill up in the same order on every replica.
  for (const cluster of [...free].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
    const byWeight = ranked.map((replica) => ({ replica, weight: weight(cluster.key, replica) })).sort((a, b) => b.weight - a.weight || (a.replica < b.replica ? -1 : 1));
    // Pins may fill replicas past the bound; then the least loaded takes the cluster.
    const owner = byWeight.find(({ replica }) => hasRoom(replica))?.replica
      ?? ranked.reduce((least, replica) => ((load.get(replica) ?? 0) < (load.get(least) ?? 0) ? replica : least));
    const next = (load.get(owner) ?? 0) + 1;
    if (next === floor + 1) roomAboveFloor--;
    owners.set(cluster.key, owner);
    load.set(owner, next);
  }
  return owners;
}

/** The clusters `replica` owns under `assignment`, sorted. */
export function ownedBy(assignment: Assignment, replica: string): string[] {
  return [...assignment].filter(([, owner]) => owner === replica).map(([key]) => key).sort();
}
