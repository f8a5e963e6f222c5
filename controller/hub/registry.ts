/**
 * The hub's clusters as they run: one running pipeline per destination,
 * started when its cluster appears, stopped when it goes, and stopped then
 * started again when its connection or scope changes (destinations.ts
 * `sameDestination`). Changes of one cluster are applied one after the other
 * (a chain per server), so two pipelines never run for one cluster at once:
 * the old one is stopped — its writes fenced off, drained, its watches and
 * client closed — before the new one starts. Clusters are independent: a
 * cluster that is slow to stop or never syncs holds up no other.
 *
 * `owns` filters the destinations this replica runs: every one, or under
 * `--leader-elect` those whose Lease it holds (ownership.ts, ADR 0023). A
 * cluster handed over to another replica is `release`d: stopped as at
 * shutdown, its reconciles finishing while the Lease still fences them.
 */
import type { Logger } from 'pino';
import type { Destination } from './destinations.ts';

/** A cluster's pipeline as the registry runs it. */
export interface RunningCluster {
  /** 1 for `driftless_cluster_up`: every first list completed, no list or watch failing, none silent past its bound. */
  up(): boolean;
  /** Why it is not up, in words naming no credential (the down Event, ADR 0027); undefined while up. */
  whyDown(): string | undefined;
  /**
   * Stops the cluster's pipeline; never throws. `removed` (the cluster left, or reconnects): not one more write
   * there, in flight or not, then the drain. Otherwise (the process stops): the reconciles in flight finish
   * first, as a single cluster's do. Then the watches stop and the client closes.
   */
  stop(removed: boolean): Promise<void>;
}

/** What the registry needs. */
export interface RegistryDeps {
  /** Starts a destination's pipeline (connects, starts its watches); throws when it cannot even connect. */
  start(destination: Destination): RunningCluster;
  /** Whether two destinations of one server can share a pipeline. */
  same(a: Destination, b: Destination): boolean;
  /** This replica's clusters (default: all). */
  owns?(destination: Destination): boolean;
  /**
   * A cluster's name is gone: its cluster left, or was renamed (its metric series go, ADR 0027). Not called
   * when it reconnects under the same name, nor while another running cluster has the name.
   */
  forget?(name: string): Promise<void>;
  readonly log: Logger;
}

/** Why a pipeline stops with its reconciles let finish (otherwise: fenced off first, the cluster removed or reconnecting). */
type Graceful = 'shutdown' | 'handed over';

interface Entry {
  destination: Destination;
  running: RunningCluster | undefined;
  /** Why it could not be started, when it could not. */
  failed: string | undefined;
}

/** The running clusters, by server URL. */
export class ClusterRegistry {
  readonly #deps: RegistryDeps;
  readonly #entries = new Map<string, Entry>();
  /** Per server, the last change applied or being applied. */
  readonly #chains = new Map<string, Promise<void>>();
  #closed = false;

  constructor(deps: RegistryDeps) {
    this.#deps = deps;
  }

  /** Brings the running clusters to `desired`; resolves once every change is applied. */
  update(desired: ReadonlyMap<string, Destination>): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const owns = (destination: Destination): boolean => this.#deps.owns?.(destination) ?? true;
    const servers = new Set([...this.#entries.keys(), ...desired.keys()]);
    const changes: Promise<void>[] = [];
    for (const server of servers) {
      const wanted = desired.get(server);
      changes.push(this.#apply(server, wanted !== undefined && owns(wanted) ? wanted : undefined));
    }
    return Promise.all(changes).then(() => undefined);
  }

  /** Queues one server's change after its previous one. */
  #apply(server: string, wanted: Destination | undefined, graceful?: Graceful, why?: string): Promise<void> {
    const next = (this.#chains.get(server) ?? Promise.resolve()).then(() => this.#change(server, wanted, graceful, why));
    this.#chains.set(server, next);
    return next;
  }

  async #change(server: string, given: Destination | undefined, graceful?: Graceful, why?: string): Promise<void> {
    // Ownership is asked again when the change runs: a Lease lost while this change waited behind another
    // must not start a pipeline (its fence would already be gone).
    const wanted = given !== undefined && (this.#deps.owns?.(given) ?? true) ? given : undefined;
    const entry = this.#entries.get(server);
    if (entry !== undefined && wanted !== undefined && this.#deps.same(entry.destination, wanted)) {
      entry.destination = wanted;
      return;
    }
    if (entry !== undefined) await this.#stop(server, entry, wanted, graceful, why);
    if (wanted !== undefined && !this.#closed) this.#start(server, wanted);
  }

  /** Stops a running entry; its cluster's series go once no other entry carries its name (and not at shutdown). */
  async #stop(server: string, entry: Entry, wanted: Destination | undefined, graceful: Graceful | undefined, why: string | undefined): Promise<void> {
    this.#entries.delete(server);
    const { name } = entry.destination;
    this.#deps.log.info({ cluster: name, server, why: why ?? graceful ?? (wanted === undefined ? 'removed' : 'connection or scope changed') }, 'stopping cluster');
    await entry.running?.stop(graceful === undefined);
    this.#deps.log.info({ cluster: name, server }, 'stopped cluster');
    if (graceful !== 'shutdown' && wanted?.name !== name && ![...this.#entries.values()].some((other) => other.destination.name === name)) await this.#deps.forget?.(name);
  }

  #start(server: string, wanted: Destination): void {
    let running: RunningCluster | undefined;
    let failed: string | undefined;
    try {
      running = this.#deps.start(wanted);
      this.#deps.log.info({ cluster: wanted.name, server, namespaces: wanted.namespaces ?? 'all' }, 'started cluster');
    } catch (error) {
      // A connection that cannot even be built (a bad CA, an exec plugin missing): this cluster is down, visibly.
      failed = error instanceof Error ? error.message : String(error);
      this.#deps.log.warn({ cluster: wanted.name, server, err: error }, 'cannot connect to cluster');
    }
    this.#entries.set(server, { destination: wanted, running, failed });
  }

  /** Each running cluster by name, and whether it is up (for `driftless_cluster_up`). */
  states(): { readonly name: string; readonly server: string; readonly up: boolean }[] {
    return [...this.#entries.values()].map((entry) => ({ name: entry.destination.name, server: entry.destination.server, up: entry.running?.up() ?? false }));
  }

  /** Each cluster's destination and why it is down (undefined: up), for the down Events (outage.ts). */
  health(): { readonly destination: Destination; readonly whyDown: string | undefined }[] {
    return [...this.#entries.values()].map((entry) => ({
      destination: entry.destination,
      whyDown: entry.running === undefined ? 'its connection could not be built from the cluster Secret (the controller\'s log says why)' : entry.running.whyDown(),
    }));
  }

  /** The destination of a server, while it runs (tests, logs). */
  has(server: string): boolean {
    return this.#entries.has(server);
  }

  /**
   * Stops one server's pipeline; resolves once stopped. `owns` must already say no, so that no later update
   * starts it again. Handed over: as at shutdown, its reconciles finish while the Lease still fences them. The
   * Lease lost: its fence already fails every write; the pipeline stops as a removed cluster's does (and a
   * Lease won again starts a new one, with the new fence).
   */
  stopServer(server: string, why: 'handed over' | 'lease lost'): Promise<void> {
    return this.#apply(server, undefined, why === 'handed over' ? why : undefined, why);
  }

  /** Stops every cluster (after the changes in flight); no cluster is started afterwards. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#chains.values());
    await Promise.all([...this.#entries.keys()].map((server) => this.#apply(server, undefined, 'shutdown')));
  }
}
