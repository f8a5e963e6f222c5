/**
 * Leader election on a coordination.k8s.io/v1 Lease, client-go's algorithm
 * (tools/leaderelection): a candidate takes the Lease when it is free or its
 * holder has not renewed it for `leaseDuration` — measured on the local
 * monotonic clock from when this candidate last saw the record change, so
 * neither clock skew between replicas nor a wall-clock step matters — and
 * updates it with optimistic concurrency (resourceVersion), so two candidates
 * can never both win.
 *
 * The leader renews every `retryPeriod`. Its leadership is *proven* until
 * `renewDeadline` after the start of its last successful acquire or renew
 * (monotonic clock): a standby can take over no earlier than `leaseDuration`
 * after it saw that renewal, which came later. The whole renew cycle — every
 * GET and PUT, retried every `retryPeriod` — runs under one deadline at that
 * instant (client-go bounds the cycle by the renew deadline too, counted from
 * the cycle's start; counting from the last proof is stricter by one retry
 * period). At the deadline, or as soon as the Lease shows another holder, the
 * elector aborts its `signal` — which every fenced write takes — and calls
 * `onStoppedLeading` once. It is the controller's write Fence (kube/fence.ts):
 * `check()` passes only while leadership is proven, whatever the timers did
 * (a process resumed from SIGSTOP fails the check before its loss timer fires).
 * On shutdown the leader releases the Lease within `retryPeriod`, so a standby
 * takes over at once instead of after the lease duration.
 *
 * Standbys keep their caches warm; only the leader reconciles. Because every
 * decision is level-triggered from the API server (ADR 0007), a change made
 * during a failover is acted on once, by the new leader.
 */
import type { Logger } from 'pino';
import { deadlineSignal, sleep, type Clock, type Timer } from './clock.ts';
import { stackOf } from './error-summary.ts';
import type { KubeClient } from './kube/client.ts';
import { isConflict, isNotFound } from './kube/errors.ts';
import { FencedError, type Fence } from './kube/fence.ts';

/** Where the Lease is and how it is timed. */
export interface LeaderElectionOptions {
  readonly namespace: string;
  readonly name: string;
  /** This replica's identity (pod name, else host name plus a random suffix). */
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /**
   * The Lease's record as the caller already saw it, and when (monotonic): a candidate that has been watching
   * a Lease can take it as soon as it expired, instead of a full lease duration after its own first look.
   */
  readonly observed?: LeaseObservation;
}

/** A Lease record (holder and renew time) and the monotonic instant it was first seen. */
export interface LeaseObservation {
  readonly record: string;
  readonly at: number;
}

/** The part of a Lease whose change proves its holder alive: the holder and its renew time. */
export function leaseRecord(spec: { readonly holderIdentity?: string; readonly renewTime?: string } | undefined): string {
  return `${spec?.holderIdentity ?? ''}\0${spec?.renewTime ?? ''}`;
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

/** The outcome of one acquire-or-renew attempt. */
type Attempt = 'held' | 'failed' | 'foreign';

/** Runs the election; `onStartedLeading` / `onStoppedLeading` are called at most once each. It is the write Fence. */
export class LeaderElector implements Fence {
  readonly #client: KubeClient;
  readonly #options: LeaderElectionOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #stopping = new AbortController();
  /** Aborted when leadership is lost or given up: the fence's signal. */
  readonly #fence = new AbortController();
  #leader = false;
  /** Monotonic start of the last successful acquire or renew attempt: the proof of leadership. */
  #provenAt = 0;
  #lossTimer: Timer | undefined;
  #callbacks: { onStartedLeading(): void; onStoppedLeading(): void } | undefined;
  /** The Lease record last seen, and when (monotonic), for the expiry of another holder's lease. */
  #observed: LeaseObservation | undefined;
  #loop: Promise<void> | undefined;

  constructor(client: KubeClient, options: LeaderElectionOptions, clock: Clock, log: Logger) {
    this.#client = client;
    this.#options = options;
    this.#clock = clock;
    this.#log = log.child({ lease: `${options.namespace}/${options.name}`, identity: options.identity });
    this.#observed = options.observed;
  }

  /** True while this replica holds the Lease and can prove it (its last renewal began within the renew deadline). */
  get isLeader(): boolean {
    return this.#leader && !this.#fence.signal.aborted && this.#clock.monotonic() - this.#provenAt < this.#options.renewDeadlineMs;
  }

  /** Fence: aborted for good once leadership is lost or given up. */
  get signal(): AbortSignal {
    return this.#fence.signal;
  }

  /** Fence: throws FencedError unless leadership is proven at this instant. */
  check(what: string): void {
    if (this.isLeader) return;
    const since = Math.round(this.#clock.monotonic() - this.#provenAt);
    throw new FencedError(this.#leader
      ? `${what}: not sent: the Lease was last renewed ${since} ms ago, past the renew deadline of ${this.#options.renewDeadlineMs} ms`
      : `${what}: not sent: this replica does not hold the Lease`);
  }

  /** Starts campaigning. */
  start(callbacks: { onStartedLeading(): void; onStoppedLeading(): void }): void {
    this.#callbacks = callbacks;
    this.#loop ??= this.#run(callbacks).catch((error: unknown) => {
      this.#log.fatal({ err: error, stack: stackOf(error) }, 'leader election loop crashed');
      this.#lose('the leader election loop crashed');
    });
  }

  /** Stops campaigning and, when leading, releases the Lease (bounded by the retry period). */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
  }

  get #path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#options.namespace)}/leases`;
  }

  /** client-go's jitter: up to +20% on the retry period, so candidates do not move in lockstep. */
  #retryDelay(): number {
    return this.#options.retryPeriodMs * (1 + Math.random() * 0.2);
  }

  async #run(callbacks: { onStartedLeading(): void; onStoppedLeading(): void }): Promise<void> {
    const stopping = this.#stopping.signal;
    for (;;) {
      if (stopping.aborted) return;
      // An acquire attempt gets the renew deadline too: a hung request must not keep a candidate waiting forever.
      const started = this.#clock.monotonic();
      const deadline = deadlineSignal(this.#clock, this.#options.renewDeadlineMs, stopping);
      const attempt = await this.#tryAcquireOrRenew(deadline.signal).finally(() => deadline.cancel());
      if (attempt === 'held' && !stopping.aborted) {
        this.#proven(started);
        break;
      }
      await sleep(this.#clock, this.#retryDelay(), stopping);
    }
    this.#leader = true;
    this.#log.info('became the leader');
    callbacks.onStartedLeading();
    // One signal for the whole renew cycle: aborted at the deadline (the loss timer), on loss or on stop.
    const cycle = AbortSignal.any([stopping, this.#fence.signal]);
    while (!cycle.aborted) {
      await sleep(this.#clock, this.#options.retryPeriodMs, cycle);
      if (cycle.aborted) break;
      const started = this.#clock.monotonic();
      const attempt = await this.#tryAcquireOrRenew(cycle);
      if (cycle.aborted) break;
      if (attempt === 'held') this.#proven(started);
      else if (attempt === 'foreign') this.#lose('another candidate holds the Lease');
    }
    this.#lossTimer?.cancel();
    if (this.#fence.signal.aborted) return;
    await this.#release();
    this.#leader = false;
    this.#fence.abort(new FencedError('stopped leading: shutting down'));
  }

  /** A successful attempt that began at `startedAt` (monotonic): leadership is proven for the renew deadline from then. */
  #proven(startedAt: number): void {
    this.#provenAt = startedAt;
    this.#lossTimer?.cancel();
    const remaining = startedAt + this.#options.renewDeadlineMs - this.#clock.monotonic();
    this.#lossTimer = this.#clock.setTimer(() => {
      if (this.#clock.monotonic() - this.#provenAt >= this.#options.renewDeadlineMs) this.#lose('could not renew the Lease within the renew deadline');
    }, remaining);
  }

  /** Leadership is over: abort every fenced request, tell the controller once. */
  #lose(why: string): void {
    if (this.#fence.signal.aborted) return;
    const wasLeader = this.#leader;
    this.#leader = false;
    this.#lossTimer?.cancel();
    this.#fence.abort(new FencedError(`lost leadership: ${why}`));
    if (!wasLeader) return;
    this.#log.error({ why }, 'no longer the leader: aborting every write');
    this.#callbacks?.onStoppedLeading();
  }

  /** One attempt, GET then PUT (or POST), both under `signal`. */
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<Attempt> {
    const now = this.#clock.now();
    const { identity, name, namespace } = this.#options;
    const leaseDurationSeconds = Math.ceil(this.#options.leaseDurationMs / 1000);
    let current: Lease;
    try {
      current = await this.#client.request<Lease>('GET', `${this.#path}/${encodeURIComponent(name)}`, { signal });
    } catch (error) {
      if (!isNotFound(error)) {
        if (!signal.aborted) this.#log.warn({ err: error }, 'could not read the Lease');
        return 'failed';
      }
      try {
        await this.#client.request('POST', this.#path, {
          signal,
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
          },
        });
        this.#observed = { record: `${identity}\0${microTime(now)}`, at: this.#clock.monotonic() };
        return 'held';
      } catch (createError) {
        if (!isConflict(createError) && !signal.aborted) this.#log.warn({ err: createError }, 'could not create the Lease');
        return 'failed';
      }
    }
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = leaseRecord(spec);
    // Seen when the answer arrived, not when it was asked for: a slow GET must not age another holder's renewal.
    if (this.#observed?.record !== record) this.#observed = { record, at: this.#clock.monotonic() };
    // A leader that sees another holder has lost, whatever that holder's expiry: someone took the Lease.
    if (this.#leader && holder !== identity) return 'foreign';
    const theirDuration = (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    if (holder !== '' && holder !== identity && this.#clock.monotonic() < this.#observed.at + theirDuration) return 'failed';
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
      await this.#client.request('PUT', `${this.#path}/${encodeURIComponent(name)}`, { body: next, signal });
      this.#observed = { record: `${identity}\0${next.spec?.renewTime ?? ''}`, at: this.#clock.monotonic() };
      return 'held';
    } catch (error) {
      // A 409: the Lease changed between our GET and PUT. Not proof of loss (the next GET tells); retried.
      if (!isConflict(error) && !signal.aborted) this.#log.warn({ err: error }, 'could not update the Lease');
      return 'failed';
    }
  }

  /** Gives the Lease up (client-go's ReleaseOnCancel): empty holder, one-second duration; bounded by the retry period. */
  async #release(): Promise<void> {
    if (!this.isLeader) return;
    const deadline = deadlineSignal(this.#clock, this.#options.retryPeriodMs);
    try {
      const path = `${this.#path}/${encodeURIComponent(this.#options.name)}`;
      const current = await this.#client.request<Lease>('GET', path, { signal: deadline.signal });
      if (current.spec?.holderIdentity !== this.#options.identity) return;
      const now = this.#clock.now();
      await this.#client.request('PUT', path, {
        signal: deadline.signal,
        body: { ...current, spec: { ...current.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(now) } },
      });
      this.#log.info('released the Lease');
    } catch (error) {
      this.#log.warn({ err: error }, 'could not release the Lease; a standby takes over after the lease duration');
    } finally {
      deadline.cancel();
    }
  }
}
