/**
 * Clusters shared out across replicas on Kubernetes Leases in the hub
 * (issue 22 §3), as Argo CD shards its application controller by cluster, but
 * with ownership proven by a Lease rather than inferred from a replica count:
 *
 * - **Members.** Each replica holds a member Lease of its own
 *   (`<id>-member-<hash of identity>`), renewed as a leader Lease is. A replica
 *   counts another as alive while it has seen that Lease's record change
 *   within its lease duration, on its own monotonic clock (the same rule as
 *   leader.ts, so clock skew between replicas does not matter).
 * - **Assignment.** Every replica computes the same owner for each cluster
 *   from the live members (assign.ts).
 * - **Ownership.** A replica campaigns for the cluster Lease
 *   (`<id>-cluster-<hash of server>`) of each cluster assigned to it, with a
 *   LeaderElector of its own: that elector is the cluster pipeline's write
 *   fence, so a replica writes to a cluster only while it can prove it holds
 *   that cluster's Lease, and a frozen replica's writes fail its fence before
 *   anyone else can take over. A cluster assigned elsewhere is handed over: its
 *   pipeline drains, then the Lease is released, so the new owner takes it at
 *   once. A replica killed or frozen stops renewing both kinds of Lease; the
 *   others drop it from the members and take its clusters after one lease
 *   duration.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { sleep, type Clock } from '../clock.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Fence } from '../kube/fence.ts';
import { LeaderElector, leaseRecord } from '../leader.ts';
import { assignClusters, type Assignable } from './assign.ts';

/** Where the Leases live and how they are timed (the flags of the leader election). */
export interface ShardOptions {
  readonly namespace: string;
  /** The prefix of every Lease name (`--leader-election-id`). */
  readonly id: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/** What the coordinator tells the hub about each cluster. */
export interface ShardCallbacks {
  /** This replica holds the cluster's Lease: start its pipeline, every write fenced by `fence`. */
  acquired(key: string, fence: Fence): void;
  /** The Lease was lost (not renewed in time, or taken): stop the pipeline at once; its writes already fail. */
  lost(key: string): void;
  /** The cluster is now assigned to another replica: stop the pipeline; the Lease is released once this resolves. */
  handOver(key: string): Promise<void>;
}

/** A short, stable, name-safe hash (Lease names are DNS subdomains). */
function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

/** The name of the Lease that owns the cluster `key`. */
export function clusterLeaseName(id: string, key: string): string {
  return `${id}-cluster-${shortHash(key)}`;
}

/** The name of the member Lease of replica `identity`. */
export function memberLeaseName(id: string, identity: string): string {
  return `${id}-member-${shortHash(identity)}`;
}

interface LeaseObject {
  readonly metadata?: { readonly name?: string };
  readonly spec?: { readonly holderIdentity?: string; readonly renewTime?: string; readonly leaseDurationSeconds?: number };
}

/** One cluster this replica campaigns for, holds, or is handing over. */
interface Campaign {
  readonly elector: LeaderElector;
  held: boolean;
  handingOver: boolean;
}

/** Runs membership, assignment and one Lease campaign per assigned cluster. */
export class ShardCoordinator {
  readonly #client: KubeClient;
  readonly #options: ShardOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #stopping = new AbortController();
  /** This replica's member Lease: a new elector after each loss (an elector is single-use). */
  #member: LeaderElector | undefined;
  /** Every Lease of ours (members and clusters) as last seen, and since when (monotonic). */
  readonly #seen = new Map<string, { record: string; holder: string; durationMs: number; at: number }>();
  readonly #campaigns = new Map<string, Campaign>();
  #clusters: readonly Assignable[] = [];
  #members: readonly string[] = [];
  #loop: Promise<void> | undefined;

  constructor(client: KubeClient, options: ShardOptions, clock: Clock, log: Logger) {
    this.#client = client;
    this.#options = options;
    this.#clock = clock;
    this.#log = log.child({ shardIdentity: options.identity });
  }

  /** The clusters to share out (from the cluster Secrets); takes effect at the next round. */
  setClusters(clusters: readonly Assignable[]): void {
    this.#clusters = clusters;
  }

  /** The live members at the last round, sorted. */
  get members(): readonly string[] {
    return this.#members;
  }

  /** The clusters whose Lease this replica holds now, sorted. */
  get held(): string[] {
    return [...this.#campaigns].filter(([, campaign]) => campaign.held && campaign.elector.isLeader).map(([key]) => key).sort();
  }

  /** Starts membership and the rounds. */
  start(callbacks: ShardCallbacks): void {
    if (this.#loop !== undefined) return;
    this.#joinMembers();
    this.#loop = this.#run(callbacks);
  }

  /** Campaigns for the member Lease; after a loss (an API outage past the renew deadline), again. */
  #joinMembers(): void {
    if (this.#stopping.signal.aborted) return;
    const member = new LeaderElector(this.#client, { ...this.#options, name: memberLeaseName(this.#options.id, this.#options.identity) }, this.#clock, this.#log);
    this.#member = member;
    member.start({
      onStartedLeading: () => undefined,
      onStoppedLeading: () => {
        this.#log.warn('lost the member Lease; joining again');
        void member.stop().then(() => this.#joinMembers());
      },
    });
  }

  /** Hands every cluster over (pipelines stopped, Leases released), then leaves the members. */
  async stop(callbacks: ShardCallbacks): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
    await Promise.all([...this.#campaigns.keys()].map((key) => this.#handOver(key, callbacks)));
    await this.#member?.stop();
  }

  async #run(callbacks: ShardCallbacks): Promise<void> {
    const stopping = this.#stopping.signal;
    while (!stopping.aborted) {
      try {
        await this.#round(callbacks, stopping);
      } catch (error) {
        if (!stopping.aborted) this.#log.warn({ err: error }, 'could not read the member Leases; trying again');
      }
      await sleep(this.#clock, this.#options.retryPeriodMs, stopping);
    }
  }

  /** One round: who is alive, who owns what, and the campaigns to start or hand over. */
  async #round(callbacks: ShardCallbacks, signal: AbortSignal): Promise<void> {
    this.#members = await this.#liveMembers(signal);
    if (signal.aborted) return;
    // Until our own member Lease is held we claim nothing: the others cannot count us yet.
    const assignment = this.#members.includes(this.#options.identity) ? assignClusters(this.#clusters, this.#members) : new Map<string, string>();
    for (const [key, owner] of assignment) {
      if (owner === this.#options.identity && !this.#campaigns.has(key)) this.#campaign(key, callbacks);
    }
    for (const [key, campaign] of this.#campaigns) {
      if (assignment.get(key) !== this.#options.identity && !campaign.handingOver) void this.#handOver(key, callbacks);
    }
  }

  async #liveMembers(signal: AbortSignal): Promise<string[]> {
    const list = await this.#client.request<{ items?: LeaseObject[] }>('GET', `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#options.namespace)}/leases`, { signal });
    const now = this.#clock.monotonic();
    const members = `${this.#options.id}-member-`;
    const alive = new Set<string>();
    for (const lease of list.items ?? []) {
      const name = lease.metadata?.name ?? '';
      if (!name.startsWith(`${this.#options.id}-`)) continue;
      const record = leaseRecord(lease.spec);
      const seen = this.#seen.get(name);
      // Watched from round to round, so that a campaign can take an expired cluster Lease at once (see #campaign).
      if (seen?.record !== record) this.#seen.set(name, { record, holder: lease.spec?.holderIdentity ?? '', durationMs: (lease.spec?.leaseDurationSeconds ?? 0) * 1000, at: now });
      const current = this.#seen.get(name);
      if (name.startsWith(members) && current !== undefined && current.holder !== '' && now < current.at + current.durationMs) alive.add(current.holder);
    }
    return [...alive].sort();
  }

  #campaign(key: string, callbacks: ShardCallbacks): void {
    const name = clusterLeaseName(this.#options.id, key);
    // What the rounds saw of the Lease: a dead owner's Lease expired one lease duration after its last renewal
    // as we saw it, not one lease duration after this elector's first look. The cluster moves within one.
    const seen = this.#seen.get(name);
    const observed = seen === undefined ? undefined : { record: seen.record, at: seen.at };
    const elector = new LeaderElector(this.#client, { ...this.#options, name, ...(observed === undefined ? {} : { observed }) }, this.#clock, this.#log.child({ cluster: key }));
    const campaign: Campaign = { elector, held: false, handingOver: false };
    this.#campaigns.set(key, campaign);
    elector.start({
      onStartedLeading: () => {
        // Won just as the cluster was assigned elsewhere: the hand-over releases the Lease; nothing starts.
        if (campaign.handingOver) return;
        campaign.held = true;
        this.#log.info({ cluster: key }, 'holds the cluster\'s Lease: managing it');
        callbacks.acquired(key, elector);
      },
      onStoppedLeading: () => {
        campaign.held = false;
        this.#campaigns.delete(key);
        this.#log.warn({ cluster: key }, 'lost the cluster\'s Lease: stopped managing it');
        callbacks.lost(key);
      },
    });
  }

  /** Stops the pipeline first, then releases the Lease, so that the next owner starts from our last write. */
  async #handOver(key: string, callbacks: ShardCallbacks): Promise<void> {
    const campaign = this.#campaigns.get(key);
    if (campaign === undefined || campaign.handingOver) return;
    campaign.handingOver = true;
    try {
      if (campaign.held) await callbacks.handOver(key);
    } finally {
      await campaign.elector.stop();
      this.#campaigns.delete(key);
      if (campaign.held) this.#log.info({ cluster: key }, 'handed the cluster over: released its Lease');
    }
  }
}
