/**
 * Errors of the API adapter, classified here once so that the reconciler and
 * the watch loop decide on a status code, never on a message.
 */

/** The API server answered with a status ≥ 400. The message is the server's `Status` message, which never carries a Secret value we sent (we send none). */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  readonly status: number;
  /** The `Status.reason`, e.g. `NotFound`, `Conflict`, `TooManyRequests`, `Expired`. */
  readonly reason: string;
  readonly method: string;
  readonly path: string;

  constructor(method: string, path: string, status: number, reason: string, message: string, options?: ErrorOptions) {
    super(`${method} ${path}: ${status} ${reason}${message === '' ? '' : `: ${message}`}`, options);
    this.status = status;
    this.reason = reason;
    this.method = method;
    this.path = path;
  }
}

/** The request never got an answer: connection refused or reset, TLS failure, or aborted. */
export class KubeTransportError extends Error {
  override readonly name = 'KubeTransportError';
  readonly method: string;
  readonly path: string;

  constructor(method: string, path: string, options?: ErrorOptions) {
    const cause = options?.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(`${method} ${path}: no answer from the API server${cause}`, options);
    this.method = method;
    this.path = path;
  }
}

/** The kubeconfig or in-cluster configuration is unusable. */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

/** 410 Gone / Expired: the resourceVersion (or a list's continue token) is too old; relist. */
export function isGone(error: unknown): boolean {
  return error instanceof KubeApiError && error.status === 410;
}

/** 404: the object (or the whole API) does not exist. */
export function isNotFound(error: unknown): boolean {
  return error instanceof KubeApiError && error.status === 404;
}

/** 409: a conflict (an apply conflict, or an optimistic-concurrency failure). */
export function isConflict(error: unknown): boolean {
  return error instanceof KubeApiError && error.status === 409;
}

/** 429: a PodDisruptionBudget refuses the eviction now, or the API server sheds load. */
export function isTooManyRequests(error: unknown): boolean {
  return error instanceof KubeApiError && error.status === 429;
}

/** 401/403: our identity or its RBAC does not allow the call; retrying will not help until someone changes it. */
export function isForbidden(error: unknown): boolean {
  return error instanceof KubeApiError && (error.status === 401 || error.status === 403);
}
