/**
 * The data the write-back takes and gives: what the restart path submits,
 * what it gets back, and what `explain` can ask about.
 */
import type { OutOfBandKind } from '../../core/index.ts';
import type { CredentialsRefusal } from './credentials.ts';
import type { WriteBackErrorKind } from './errors.ts';
import type { ApplicationLike, SourceRefusalReason } from './source.ts';

/** A config's keyed digest to write: hash v1 of its own entry, with the controller's key. */
export interface ConfigDigest {
  readonly kind: OutOfBandKind;
  readonly namespace: string;
  readonly name: string;
  /** `v1:` and 64 lowercase hex digits. */
  readonly digest: string;
}

/** A workload the change is for: named in the commit message only. */
export interface WorkloadRef {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** One submission: an Application's changed configs and the workloads that use them. */
export interface WriteBackRequest {
  readonly application: ApplicationLike;
  readonly configs: readonly ConfigDigest[];
  readonly workloads: readonly WorkloadRef[];
  /** Epoch ms the controller first saw the change (for the change→commit latency); absent: not measured. */
  readonly changeSeenAt?: number;
}

/**
 * What one batch came to, for metrics (`observe` of the engine's deps): a commit pushed, with the latency
 * of every change it carries, or a failure by kind (once per git run, or per directory whose file failed).
 */
export type WriteBackObservation = (
  | { readonly outcome: 'committed'; readonly sha: string; readonly changeToCommitMs: readonly number[] }
  | { readonly outcome: 'failed'; readonly kind: WriteBackErrorKind }
) & {
  /** The cluster the batch's workloads run in (`forCluster`'s id); none for the implicit cluster. */
  readonly cluster?: string;
};

/** Where a submission went. */
export interface WriteBackPlace {
  /** Repository URL without user-info. */
  readonly repo: string;
  /** The branch pushed to (the default branch resolved). */
  readonly branch: string;
  /** The directory of the file, relative to the repository root. */
  readonly path: string;
}

/**
 * The outcome of one submission:
 * - `committed`: a commit holding the digests was pushed (possibly shared with other submissions of the batch;
 *   when a later submission in the same batch gave the same config another digest, the commit holds the later one);
 * - `unchanged`: the file already held every digest; nothing was committed;
 * - `refused`: the Application cannot be written for (a non-Git source, ambiguous, bad credentials Secret…), or the request holds something the file could not (`invalid-request`);
 * - `failed`: git failed; `error` says how (`auth`, `rejected`, …).
 */
export type WriteBackResult =
  | ({ readonly status: 'committed'; readonly sha: string; readonly attempts: number; readonly at: number } & WriteBackPlace)
  | ({ readonly status: 'unchanged'; readonly at: number } & WriteBackPlace)
  | { readonly status: 'refused'; readonly reason: SourceRefusalReason | CredentialsRefusal['refused'] | 'invalid-request'; readonly message: string; readonly at: number }
  | { readonly status: 'failed'; readonly error: { readonly kind: WriteBackErrorKind; readonly message: string }; readonly at: number };

/** What `explain` shows for one Application: the latest submission and where it stands. */
export interface WriteBackStatus {
  /** Hub mode (ADR 0026): the id of the cluster whose workloads submitted it; absent for the controller's own cluster. */
  readonly cluster?: string;
  readonly application: { readonly namespace: string; readonly name: string };
  /** `pending` (in a batch window or waiting for the repository), `running`, or the result's status. */
  readonly state: 'pending' | 'running' | WriteBackResult['status'];
  readonly repo: string;
  /** The write branch; `''` while the default branch is not resolved yet. */
  readonly branch: string;
  readonly configs: readonly ConfigDigest[];
  readonly submittedAt: number;
  /** The result, once there is one. */
  readonly result: WriteBackResult | undefined;
}
