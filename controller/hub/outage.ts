/**
 * When a hub says that a cluster is down, and that it is back (ADR 0027):
 * from what each sample of the running clusters shows (up, or why not), a
 * cluster down for longer than a grace is one outage — one Warning Event
 * `ClusterUnreachable`, however long it lasts — and its end, once the
 * cluster has stayed up for the grace too, one Normal Event
 * `ClusterReachable`: an API server coming back answers 429 and 403 for a
 * while, and its first answer must not end the outage only for the next to
 * start another. A blip shorter than the grace says nothing; a cluster
 * removed while down says nothing more (it is gone). A cluster that
 * reconnects (new credentials) is out of the samples while its old pipeline
 * stops: its outage is kept through that gap, so a rotation during an outage
 * neither warns twice nor loses the Normal at its end. Pure: the state is
 * passed in and returned, the time is the caller's monotonic clock; hub.ts
 * samples, decides with this, and writes the Events.
 */

/** One running cluster as a sample sees it. */
export interface ClusterSample {
  /** The registry's key: the server URL. */
  readonly server: string;
  /** Argo CD's name of the cluster. */
  readonly name: string;
  /** Why it is not up, in words naming no credential; undefined while up. */
  readonly whyDown: string | undefined;
}

/** A cluster seen down, and whether its Warning was said. */
export interface Outage {
  /** Monotonic ms of the first sample that saw it down. */
  readonly since: number;
  readonly warned: boolean;
  /** Monotonic ms of the first of the samples in a row that saw it up again; undefined while down. */
  readonly upSince?: number;
  /** Monotonic ms of the first sample it was missing from (a reconnect, or a removal); undefined while sampled. */
  readonly missingSince?: number;
}

/** An outage missing from the samples this long is of a cluster that was removed: forgotten, without a word. */
export const FORGET_MISSING_MS = 60_000;

/** What to say about one cluster. */
export type OutageNotice =
  | { readonly kind: 'down'; readonly server: string; readonly name: string; readonly why: string; readonly forMs: number }
  | { readonly kind: 'back'; readonly server: string; readonly name: string; readonly downForMs: number };

/** The next state, and what to say now. */
export interface OutageDecision {
  readonly outages: ReadonlyMap<string, Outage>;
  readonly notices: readonly OutageNotice[];
}

/**
 * Decides from the outages so far and one sample of every running cluster (by server) taken at `now`
 * (monotonic ms): a cluster down for at least `graceMs` is warned about once; an outage ends once the cluster
 * has been seen up for `graceMs` without a break, said as back when it was warned about; an outage missing
 * from the samples for `FORGET_MISSING_MS` is forgotten without a word.
 */
export function decideOutages(outages: ReadonlyMap<string, Outage>, samples: readonly ClusterSample[], now: number, graceMs: number): OutageDecision {
  const next = new Map<string, Outage>();
  const notices: OutageNotice[] = [];
  for (const sample of samples) {
    const outage = outages.get(sample.server);
    if (sample.whyDown === undefined) {
      if (outage === undefined) continue;
      const upSince = outage.upSince ?? now;
      if (now - upSince < graceMs) next.set(sample.server, { since: outage.since, warned: outage.warned, upSince });
      else if (outage.warned) notices.push({ kind: 'back', server: sample.server, name: sample.name, downForMs: upSince - outage.since });
      continue;
    }
    const since = outage?.since ?? now;
    const due = outage?.warned !== true && now - since >= graceMs;
    if (due) notices.push({ kind: 'down', server: sample.server, name: sample.name, why: sample.whyDown, forMs: now - since });
    next.set(sample.server, { since, warned: outage?.warned === true || due });
  }
  const sampled = new Set(samples.map((s) => s.server));
  for (const [server, outage] of outages) {
    if (sampled.has(server)) continue;
    const missingSince = outage.missingSince ?? now;
    if (now - missingSince < FORGET_MISSING_MS) next.set(server, { ...outage, missingSince });
  }
  return { outages: next, notices };
}

/** A server URL as an Event may show it: scheme, host, port and path; never userinfo, a query or a fragment. */
export function displayServer(server: string): string {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return 'an unparsable server URL';
  }
  return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
}

/** A duration as a person reads it: `42s`, `3m12s`, `2h5m`. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60}s`;
  return `${Math.floor(minutes / 60)}h${minutes % 60}m`;
}

/** The Event's reasons. */
export const CLUSTER_UNREACHABLE_REASON = 'ClusterUnreachable';
export const CLUSTER_REACHABLE_REASON = 'ClusterReachable';

/** The Event a notice becomes: its type, reason and message (names the cluster and its server, never a credential). */
export function outageEvent(notice: OutageNotice): { readonly type: 'Warning' | 'Normal'; readonly reason: string; readonly message: string } {
  const cluster = `Cluster ${notice.name} (${displayServer(notice.server)})`;
  if (notice.kind === 'down') {
    return {
      type: 'Warning',
      reason: CLUSTER_UNREACHABLE_REASON,
      message: `${cluster} has been down for Driftless for ${formatDuration(notice.forMs)}: ${notice.why}. Its restarts wait until it is back; the other clusters go on.`,
    };
  }
  return { type: 'Normal', reason: CLUSTER_REACHABLE_REASON, message: `${cluster} is back after ${formatDuration(notice.downForMs)}: its watches are listed again and its restarts resume.` };
}
