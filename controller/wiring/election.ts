/**
 * Leader election (ADR 0008), a process-wide part: the Lease, its own client,
 * and the fence every write of every pipeline consults. Without
 * `--leader-elect` there is no election and writes are unfenced.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config.ts';
import { createKubeClient, type KubeClient } from '../kube/client.ts';
import { unfenced, type Fence } from '../kube/fence.ts';
import { LeaderElector } from '../leader.ts';

/** The election's settings. */
export type ElectionSettings = Pick<ControllerConfig, 'leaderElect' | 'leaderElectionNamespace' | 'leaderElectionId' | 'leaseDuration' | 'renewDeadline' | 'retryPeriod' | 'kubeRequestTimeout'>;

/** A running election, or none. */
export interface Election {
  /** Undefined without `--leader-elect`. */
  readonly elector: LeaderElector | undefined;
  /** What every write consults: the elector, or a fence that never closes. */
  readonly fence: Fence;
  /** The deadline of a fenced write: it is over before a standby can take the Lease. */
  readonly writeTimeoutMs: number;
  /** True while this replica may write: the Lease holder, or the only replica. */
  readonly isLeader: () => boolean;
  /** Closes the Lease's client (after `elector.stop()`). */
  close(): Promise<void>;
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
    return { elector: undefined, fence: unfenced(), writeTimeoutMs: requestTimeoutMs, isLeader: () => true, close: async () => undefined };
  }
  // The Lease has a client of its own, outside --kube-qps: a renewal must never queue behind a relist.
  const client: KubeClient = createKubeClient(kubeConfig, { take: () => Promise.resolve() }, undefined, { requestTimeoutMs });
  const elector = new LeaderElector(client, {
    namespace: config.leaderElectionNamespace ?? deps.defaultLeaseNamespace,
    name: config.leaderElectionId,
    identity: deps.identity,
    leaseDurationMs: config.leaseDuration.ms,
    renewDeadlineMs: config.renewDeadline.ms,
    retryPeriodMs: config.retryPeriod.ms,
  }, deps.clock, deps.log);
  return {
    elector,
    // Every write is fenced by the election (ADR 0008), and over before a standby can take the Lease.
    fence: elector,
    writeTimeoutMs: Math.min(requestTimeoutMs, config.leaseDuration.ms - config.renewDeadline.ms),
    isLeader: () => elector.isLeader,
    close: () => client.close(),
  };
}
