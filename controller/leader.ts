/**
 * Leader election on a coordination.k8s.io/v1 Lease, client-go's algorithm
 * (tools/leaderelection): a candidate takes the Lease when it is free or its
 * holder has not renewed it for `leaseDuration` — measured on the local clock
 * from when this candidate last saw the record change, so clock skew between
 * replicas does not matter — and updates it with optimistic concurrency
 * (resourceVersion), so two candidates can never both win. The leader renews
 * every `retryPeriod`; one that cannot renew within `renewDeadline` stops
 * leading before any other candidate may take over (renewDeadline <
 * leaseDuration). On shutdown the leader releases the Lease, so a standby
 * takes over at once instead of after the lease duration.
 *
 * Standbys keep their caches warm; only the leader reconciles. Because every
 * decision is level-triggered from the API server (ADR 0007), a change made
 * during a failover is acted on once, by the new leader.
 */
import type { Logger } from 'pino';
import { sleep, type Clock } from './clock.ts';
import type { KubeClient } from './kube/client.ts';
import { isConflict, isNotFound } from './kube/errors.ts';

/** Where the Lease is and how it is timed. */
export interface LeaderElectionOptions {
  readonly namespace: string;
  readonly name: string;
  /** This replica's identity (pod name, else host name plus a random suffix). */
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** `metav1.MicroTime`: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

/** Runs the election; `onStartedLeading` / `onStoppedLeading` are called at most once each. */
export class LeaderElector {
  readonly #client: KubeClient;
  readonly #options: LeaderElectionOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #stopping = new AbortController();
  #leader = false;
  #observed: { record: string; at: number } | undefined;
  #loop: Promise<void> | undefined;

  constructor(client: KubeClient, options: LeaderElectionOptions, clock: Clock, log: Logger) {
    this.#client = client;
    this.#options = options;
    this.#clock = clock;
    this.#log = log.child({ lease: `${options.namespace}/${options.name}`, identity: options.identity });
  }

  /** True while this replica holds the Lease. */
  get isLeader(): boolean {
    return this.#leader;
  }

  /** Starts campaigning. */
  start(callbacks: { onStartedLeading(): void; onStoppedLeading(): void }): void {
    this.#loop ??= this.#run(callbacks).catch((error: unknown) => {
      this.#log.fatal({ err: error }, 'leader election loop crashed');
      if (this.#leader) {
        this.#leader = false;
        callbacks.onStoppedLeading();
      }
    });
  }

  /** Stops campaigning and, when leading, releases the Lease. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
  }

  get #path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#options.namespace)}/leases`;
  }

  #sleep(ms: number): Promise<void> {
    return sleep(this.#clock, ms, this.#stopping.signal);
  }

  /**
   * Every Lease request gives up after half the renew deadline: a hung connection must not keep a leader
   * believing it still leads past the deadline (the renew loop checks the deadline between attempts).
   */
  #attemptSignal(): AbortSignal {
    return AbortSignal.timeout(Math.max(500, Math.floor(this.#options.renewDeadlineMs / 2)));
  }

  /** client-go's jitter: up to +20% on the retry period, so candidates do not move in lockstep. */
  #retryDelay(): number {
    return this.#options.retryPeriodMs * (1 + Math.random() * 0.2);
  }

  async #run(callbacks: { onStartedLeading(): void; onStoppedLeading(): void }): Promise<void> {
    const signal = this.#stopping.signal;
    while (!signal.aborted && !(await this.#tryAcquireOrRenew())) await this.#sleep(this.#retryDelay());
    if (signal.aborted) return;
    this.#leader = true;
    this.#log.info('became the leader');
    callbacks.onStartedLeading();
    let lastRenew = this.#clock.now();
    while (!signal.aborted) {
      await this.#sleep(this.#options.retryPeriodMs);
      if (signal.aborted) break;
      if (await this.#tryAcquireOrRenew()) {
        lastRenew = this.#clock.now();
      } else if (this.#clock.now() - lastRenew >= this.#options.renewDeadlineMs) {
        this.#leader = false;
        this.#log.error('could not renew the Lease within the renew deadline: no longer the leader');
        callbacks.onStoppedLeading();
        return;
      }
    }
    await this.#release();
    this.#leader = false;
  }

  /** One attempt; true when this replica holds the Lease afterwards. */
  async #tryAcquireOrRenew(): Promise<boolean> {
    const now = this.#clock.now();
    const { identity, name, namespace } = this.#options;
    const leaseDurationSeconds = Math.ceil(this.#options.leaseDurationMs / 1000);
    let current: Lease;
    try {
      current = await this.#client.request<Lease>('GET', `${this.#path}/${encodeURIComponent(name)}`, { signal: this.#attemptSignal() });
    } catch (error) {
      if (!isNotFound(error)) {
        this.#log.warn({ err: error }, 'could not read the Lease');
        return false;
      }
      try {
        await this.#client.request('POST', this.#path, {
          signal: this.#attemptSignal(),
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
          },
        });
        this.#observed = { record: `${identity}\0${microTime(now)}`, at: now };
        return true;
      } catch (createError) {
        if (!isConflict(createError)) this.#log.warn({ err: createError }, 'could not create the Lease');
        return false;
      }
    }
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = `${holder}\0${spec.renewTime ?? ''}`;
    if (this.#observed?.record !== record) this.#observed = { record, at: now };
    const observedAt = this.#observed.at;
    const theirDuration = (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    if (holder !== '' && holder !== identity && now < observedAt + theirDuration) return false;
    const ours = holder === identity;
    const next: Lease = {
      ...current,
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds,
        acquireTime: ours && spec.acquireTime !== undefined ? spec.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (ours ? 0 : 1),
      },
    };
    try {
      // PUT with the resourceVersion we read: of two candidates racing, exactly one succeeds.
      await this.#client.request('PUT', `${this.#path}/${encodeURIComponent(name)}`, { body: next, signal: this.#attemptSignal() });
      this.#observed = { record: `${identity}\0${next.spec?.renewTime ?? ''}`, at: now };
      return true;
    } catch (error) {
      if (!isConflict(error)) this.#log.warn({ err: error }, 'could not update the Lease');
      return false;
    }
  }

  /** Gives the Lease up (client-go's ReleaseOnCancel): empty holder, one-second duration. */
  async #release(): Promise<void> {
    try {
      const current = await this.#client.request<Lease>('GET', `${this.#path}/${encodeURIComponent(this.#options.name)}`);
      if (current.spec?.holderIdentity !== this.#options.identity) return;
      const now = this.#clock.now();
      await this.#client.request('PUT', `${this.#path}/${encodeURIComponent(this.#options.name)}`, {
        body: { ...current, spec: { ...current.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(now) } },
      });
      this.#log.info('released the Lease');
    } catch (error) {
      this.#log.warn({ err: error }, 'could not release the Lease; a standby takes over after the lease duration');
    }
  }
}
