/**
 * Errors of the API adapter, classified here once so that the reconciler and
 * the watch loop decide on a status code, never on a message.
 */

/** A `Status`'s details: which object the failure is about (`kind` is the resource, e.g. `pods`, `poddisruptionbudgets`). */
export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
}

/** The API server answered with a status ≥ 400. The message is the server's `Status` message, which never carries a Secret value we sent (we send none). */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  readonly status: number;
  /** The `Status.reason`, e.g. `NotFound`, `Conflict`, `TooManyRequests`, `Expired`. */
  readonly reason: string;
  readonly method: string;
  readonly path: string;
  /** The `Status.details`, when the server gave them. */
  readonly details: StatusDetails | undefined;
  /** The `Status.message` alone. */
  readonly statusMessage: string;

  constructor(method: string, path: string, status: number, reason: string, message: string, options?: ErrorOptions & { readonly details?: StatusDetails }) {
    super(`${method} ${path}: ${status} ${reason}${message === '' ? '' : `: ${message}`}`, options);
    this.status = status;
    this.reason = reason;
    this.method = method;
    this.path = path;
    this.details = options?.details;
    this.statusMessage = message;
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

/**
 * 400/422 on a request with options the server does not know: a streaming list (`sendInitialEvents`) asked of an API
 * server whose WatchList feature is off, or older than 1.27, which refuses `resourceVersionMatch` on a watch.
 */
export function isRefusedOptions(error: unknown): boolean {
  return error instanceof KubeApiError && (error.status === 400 || error.status === 422);
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

/**
 * A 409 from the Eviction API that means the pod is already gone or replaced: the UID precondition failed
 * (the storage layer says "Precondition failed: UID in precondition …" about the pod). The other 409s of an
 * eviction — a conflict on the PodDisruptionBudget's status (details name a `poddisruptionbudgets` object of
 * group `policy`) or on the pod's own update — are transient: retry, never "gone".
 */
export function isEvictionPreconditionFailed(error: unknown): boolean {
  if (!(error instanceof KubeApiError) || error.status !== 409) return false;
  const kind = error.details?.kind ?? '';
  if (error.details?.group === 'policy' || kind.startsWith('poddisruptionbudget')) return false;
  return /precondition/i.test(error.statusMessage) && /\bUID\b/.test(error.statusMessage);
}

/** 403 or 422 on a write: an admission webhook, a policy or validation refused it; retrying unchanged will not help. */
export function isRejectedWrite(error: unknown): boolean {
  return error instanceof KubeApiError && (error.status === 403 || error.status === 422);
}

/** System error codes a failed connection carries, in words. */
const TRANSPORT_WORDS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  UND_ERR_SOCKET: 'connection reset',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name not resolved',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no answer in time',
  UND_ERR_BODY_TIMEOUT: 'no answer in time',
};

/** The first system error code (`ECONNREFUSED`, `CERT_HAS_EXPIRED`, …) along an error's causes; never a message. */
function errorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,63}$/.test(code)) return code;
    if (current.name === 'TimeoutError') return 'TimeoutError';
  }
  return undefined;
}

/**
 * What a failed request met, in words derived from data only — a status code and its reason, a system error
 * code — never from an error's message (which may hold a URL, a header or a server's prose): safe for an
 * Event about a cluster (ADR 0027). E.g. `the API server answered 403 Forbidden`, `connection refused`,
 * `TLS verification failed (CERT_HAS_EXPIRED)`.
 */
export function failureWords(error: unknown): string {
  if (error instanceof KubeApiError) return `the API server answered ${error.status}${/^[A-Za-z]{1,64}$/.test(error.reason) ? ` ${error.reason}` : ''}`;
  if (error instanceof KubeConfigError) return 'its credentials could not be obtained (the controller\'s log says why)';
  const code = errorCode(error);
  if (code === undefined) return 'no answer from the API server';
  if (code === 'TimeoutError') return 'no answer within the request deadline';
  const words = TRANSPORT_WORDS[code];
  if (words !== undefined) return words;
  if (/CERT|TLS|SSL|SIGNATURE|ISSUER/.test(code)) return `TLS verification failed (${code})`;
  return `no answer from the API server (${code})`;
}
