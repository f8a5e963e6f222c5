/**
 * Which of Argo CD's clusters this replica runs, and what fences its writes
 * there (ADR 0023):
 *
 * - **One leader** (no `--leader-elect`, or a single replica's election):
 *   every cluster, every write fenced by the process-wide election; the
 *   leader says what concerns the hub as a whole.
 * - **Shared out on Leases** (`--leader-elect` in hub mode): a cluster runs
 *   here only while this replica holds its Lease (shards.ts), and that Lease's
 *   elector is its pipeline's fence. Losing it closes the fence at once and
 *   stops the pipeline; a hand-over stops the pipeline first (its reconciles
 *   finish while the Lease still fences them) and releases the Lease after.
 *   What concerns the hub as a whole (a refused cluster Secret) is said by the
 *   first live member in identity order: every replica computes the same one.
 */
import type { Fence } from '../kube/fence.ts';
import type { Destination } from './destinations.ts';
import type { ShardCoordinator } from './shards.ts';

/** What the hub does when the clusters this replica owns change. */
export interface OwnershipHooks {
  /** The owned set changed (a Lease won or lost): bring the running clusters to it. */
  changed(): void;
  /**
   * Stops a cluster's pipeline (`owns` already says no): before its Lease is released (handed over), or at once
   * (the Lease lost: its fence fails already, and a Lease won again must not find the old pipeline running).
   */
  stop(server: string, why: 'handed over' | 'lease lost'): Promise<void>;
}

/** The clusters this replica runs. */
export interface ClusterOwnership {
  /** Whether this replica runs the cluster now. */
  owns(server: string): boolean;
  /** The fence of every write to a cluster this replica runs. */
  fenceOf(server: string): Fence;
  /** Whether this replica says what concerns the hub as a whole, and reports `driftless_leader` 1. */
  hubDuties(): boolean;
  /** The clusters Argo CD has now, at each of the hub's syncs. */
  setClusters(destinations: readonly Destination[]): void;
  start(hooks: OwnershipHooks): void;
  /** Gives every cluster up (each pipeline stopped, then its Lease released); resolves then. */
  stop(): Promise<void>;
}

/** Every cluster, fenced by the one election (or unfenced without one). */
export function ownedByTheLeader(election: { readonly fence: Fence; readonly isLeader: () => boolean }): ClusterOwnership {
  return {
    owns: () => true,
    fenceOf: () => election.fence,
    hubDuties: election.isLeader,
    setClusters: () => undefined,
    start: () => undefined,
    stop: () => Promise.resolve(),
  };
}

/** The clusters whose Lease this replica holds, each fenced by its Lease. */
export function sharedOnLeases(coordinator: ShardCoordinator, identity: string): ClusterOwnership {
  const held = new Map<string, Fence>();
  let hooks: OwnershipHooks | undefined;
  const callbacks = {
    acquired(server: string, fence: Fence): void {
      held.set(server, fence);
      hooks?.changed();
    },
    lost(server: string): void {
      // The fence already fails every write; the pipeline stops as a removed cluster's.
      held.delete(server);
      void hooks?.stop(server, 'lease lost');
    },
    async handOver(server: string): Promise<void> {
      held.delete(server);
      await hooks?.stop(server, 'handed over');
    },
  };
  return {
    owns: (server) => held.has(server),
    fenceOf(server) {
      const fence = held.get(server);
      if (fence === undefined) throw new Error(`the cluster ${server} is not held by this replica`);
      return fence;
    },
    hubDuties: () => coordinator.members[0] === identity,
    setClusters(destinations) {
      coordinator.setClusters(destinations.map((d) => ({ key: d.server, shard: d.cluster.shard })));
    },
    start(given) {
      hooks = given;
      coordinator.start(callbacks);
    },
    stop: () => coordinator.stop(callbacks),
  };
}
