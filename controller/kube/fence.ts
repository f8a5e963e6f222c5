/**
 * The fence every controller write passes through (ADR 0008): a write is sent
 * only while this replica can prove it holds the leader Lease, and it is
 * aborted the moment leadership is lost. The write layer (kube/writes.ts)
 * hands its fence to the client, which checks it after the rate limiter's
 * wait, immediately before the request goes on the wire — the reconciler
 * never needs to know.
 *
 * The LeaderElector is the fence of a `--leader-elect` replica; a replica that
 * runs alone uses `unfenced()`.
 */

/** A write was not sent (or was aborted) because this replica cannot prove it leads. */
export class FencedError extends Error {
  override readonly name = 'FencedError';
}

/** What a fenced write consults. */
export interface Fence {
  /** Aborts (for good) when leadership is lost or given up; every fenced request takes it. */
  readonly signal: AbortSignal;
  /**
   * Throws FencedError unless this replica holds the Lease *and* its last
   * successful renewal began less than the renew deadline ago on the monotonic
   * clock. `what` names the write for the error (`POST /api/v1/…/eviction`).
   */
  check(what: string): void;
}

/** The fence of a replica without leader election: always open, never aborted. */
export function unfenced(): Fence {
  return { signal: new AbortController().signal, check: () => undefined };
}
