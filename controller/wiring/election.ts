/**
 * Leader election (ADR 0008), a process-wide part: the Lease, its own client,
 * and the fence every write of every pipeline consults. Without
 * `--leader-elect` there is no election and writes are unfenced.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import { createKubeClient, type KubeClient } from '../kube/client.ts';
import { unfenced, type Fence } from '../kube/fence.ts';
import { LeaderElector } from '../leader.ts';
import { userAgentOf } from './cluster-client.ts';

/** The election's settings. */
export type ElectionSettings = Pick<ControllerConfig, 'leaderElect' | 'leaderElectionNamespace' | 'leaderElectionId' | 'leaseDuration' | 'renewDeadline' | 'retryPeriod' | 'kubeRequestTimeout'>;

/** The election, or none. */
export interface Election {
  /** What every write consults: the elector, or a fence that never closes. */
  readonly fence: Fence;
  /** The deadline of a fenced write: it is over before a standby can take the Lease. */
  readonly writeTimeoutMs: number;
  /** True while this replica may write: the Lease holder, or the only replica. */
  readonly isLeader: () => boolean;
  /** Starts the election; resolves once this replica leads (at once without one). `onLost` is called at most once. */
  lead(onLost: () => void): Promise<void>;
  /** Releases the Lease (at stop, after the reconciles in flight), so the next leader starts from our last write. */
  release(): Promise<void>;
  /** Closes the Lease's client (last). */
  close(): Promise<void>;
}

/** Where this replica's Leases live and how they are timed: the flags of the leader election. */
export interface LeaseTiming {
  readonly namespace: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/**
 * What every Lease of this replica is campaigned with (the one leader's, or in hub mode each cluster's): a client
 * of its own, outside --kube-qps, so that a renewal never queues behind a relist; the timing; and the deadline of
 * a fenced write, over before another replica can take the Lease.
 */
export function leaseBasics(kubeConfig: KubeConfig, config: ElectionSettings, deps: { readonly identity: string; readonly defaultLeaseNamespace: string }): { readonly client: KubeClient; readonly timing: LeaseTiming; readonly writeTimeoutMs: number } {
  const requestTimeoutMs = config.kubeRequestTimeout.ms;
  return {
    client: createKubeClient(kubeConfig, { take: () => Promise.resolve() }, undefined, { requestTimeoutMs, userAgent: userAgentOf(deps.identity) }),
    timing: {
      namespace: config.leaderElectionNamespace ?? deps.defaultLeaseNamespace,
      identity: deps.identity,
      leaseDurationMs: config.leaseDuration.ms,
      renewDeadlineMs: config.renewDeadline.ms,
      retryPeriodMs: config.retryPeriod.ms,
    },
    writeTimeoutMs: Math.min(requestTimeoutMs, config.leaseDuration.ms - config.renewDeadline.ms),
  };
}

/** Creates the election (not started) when `--leader-elect` is on. */
export function createElection(kubeConfig: KubeConfig, config: ElectionSettings, deps: {
  readonly clock: Clock;
  readonly log: Logger;
  readonly identity: string;
  /** The Lease's namespace when `--leader-election-namespace` is not given. */
  readonly defaultLeaseNamespace: string;
}): Election {
  const requestTimeoutMs = config.kubeRequestTimeout.ms;
  if (!config.leaderElect) {
    return {
      fence: unfenced(),
      writeTimeoutMs: requestTimeoutMs,
      isLeader: () => true,
      lead: () => Promise.resolve(),
      release: async () => undefined,
      close: async () => undefined,
    };
  }
  const lease = leaseBasics(kubeConfig, config, deps);
  const { client } = lease;
  const elector = new LeaderElector(client, { ...lease.timing, name: config.leaderElectionId }, deps.clock, deps.log);
  return {
    // Every write is fenced by the election (ADR 0008), and over before a standby can take the Lease.
    fence: elector,
    writeTimeoutMs: lease.writeTimeoutMs,
    isLeader: () => elector.isLeader,
    lead: (onLost) => new Promise<void>((resolve) => {
      elector.start({ onStartedLeading: resolve, onStoppedLeading: onLost });
    }),
    release: () => elector.stop(),
    close: () => client.close(),
  };
}
