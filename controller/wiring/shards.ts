/**
 * Hub mode under `--leader-elect` (ADR 0023): no one leader for the process,
 * but a Lease per cluster, shared out across the replicas (hub/shards.ts), on
 * the flags of the leader election. The Leases have a client of their own,
 * outside `--kube-qps`, as the election's has: a renewal never queues behind a
 * relist.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import { ShardCoordinator } from '../hub/shards.ts';
import { leaseBasics, type ElectionSettings } from './election.ts';

/** The coordinator, the deadline of a write its fences allow, and its client to close last. */
export interface Shards {
  readonly coordinator: ShardCoordinator;
  /** Over before another replica can take a cluster's Lease, as a leader's write is. */
  readonly writeTimeoutMs: number;
  close(): Promise<void>;
}

/** Creates the coordinator (not started). */
export function createShards(kubeConfig: KubeConfig, config: ElectionSettings, deps: {
  readonly clock: Clock;
  readonly log: Logger;
  readonly identity: string;
  readonly defaultLeaseNamespace: string;
}): Shards {
  const lease = leaseBasics(kubeConfig, config, deps);
  const coordinator = new ShardCoordinator(lease.client, { ...lease.timing, id: config.leaderElectionId }, deps.clock, deps.log);
  return {
    coordinator,
    writeTimeoutMs: lease.writeTimeoutMs,
    close: () => lease.client.close(),
  };
}
