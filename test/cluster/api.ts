/**
 * A deliberately small Kubernetes REST client on node:https: JSON requests,
 * any patch content type, and watch streams. The harness and the cluster tests
 * need exactly this; a test that wants a real client library can use the
 * kubeconfig instead.
 */
import { Agent, request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { createInterface } from 'node:readline';

/** Where the API server is and who we are to it. */
export interface ApiCredentials {
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** PEM bundle that signs the server's certificate. */
  readonly ca: string;
  /** Bearer token. */
  readonly token: string;
}

/** The API server answered with a status >= 400. */
export class ApiError extends Error {
  readonly status: number;
  /** The decoded body: a `Status` object for most errors. */
  readonly body: unknown;

  constructor(method: string, path: string, status: number, body: unknown, options?: ErrorOptions) {
    const message =
      typeof body === 'object' && body !== null && 'message' in body ? String(body.message) : JSON.stringify(body);
    super(`${method} ${path} answered ${status}: ${message}`, options);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

/** A response whatever its status, for callers that assert on the status itself. */
export interface ApiResponse<T = unknown> {
  readonly status: number;
  readonly body: T;
}

/** Options of one request. */
export interface RequestOptions {
  /** Defaults to `application/json`; use e.g. `application/merge-patch+json` for PATCH. */
  readonly contentType?: string;
  readonly signal?: AbortSignal;
}

/** One event of a watch stream. */
export interface WatchEvent<T = KubeObject> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: T;
}

/** The fields every Kubernetes object has that the harness and tests read. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string }[];
    deletionTimestamp?: string;
    [key: string]: unknown;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A list response. */
export interface KubeList<T = KubeObject> {
  readonly metadata: { readonly resourceVersion: string };
  readonly items: T[];
}

/** A client bound to one server and one identity. */
export interface ApiClient {
  readonly credentials: ApiCredentials;
  /** Sends a request and resolves with the decoded body. @throws {ApiError} on status >= 400. */
  request<T = KubeObject>(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<T>;
  /** Sends a request and resolves with status and body, whatever the status. */
  send<T = unknown>(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<ApiResponse<T>>;
  /**
   * Opens a watch (`path` is the collection, query parameters may be appended)
   * and yields its events until the server ends the stream or `signal` aborts.
   * @throws {ApiError} when the server refuses the watch (e.g. 410 Gone).
   */
  watch<T = KubeObject>(path: string, signal?: AbortSignal): AsyncGenerator<WatchEvent<T>>;
  /** Closes pooled connections. */
  close(): void;
}

function decode(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Creates a client; it keeps connections alive until `close()`. */
export function createApiClient(credentials: ApiCredentials): ApiClient {
  const agent = new Agent({ keepAlive: true, ca: credentials.ca });

  const open = (method: string, path: string, body: unknown, options: RequestOptions): Promise<IncomingMessage> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      const req = httpsRequest(new URL(path, credentials.server), {
        method,
        agent,
        signal: options.signal,
        headers: {
          authorization: `Bearer ${credentials.token}`,
          accept: 'application/json',
          ...(payload === undefined
            ? {}
            : { 'content-type': options.contentType ?? 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
      });
      req.on('response', resolve);
      req.on('error', reject);
      req.end(payload);
    });

  const send = async <T>(method: string, path: string, body?: unknown, options: RequestOptions = {}) => {
    const response = await open(method, path, body, options);
    const chunks: Buffer[] = [];
    for await (const chunk of response) chunks.push(chunk as Buffer);
    return { status: response.statusCode ?? 0, body: decode(Buffer.concat(chunks).toString()) as T };
  };

  return {
    credentials,
    send,
    async request<T>(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<T> {
      const response = await send<T>(method, path, body, options);
      if (response.status >= 400) throw new ApiError(method, path, response.status, response.body);
      return response.body;
    },
    async *watch<T>(path: string, signal?: AbortSignal): AsyncGenerator<WatchEvent<T>> {
      const separator = path.includes('?') ? '&' : '?';
      const response = await open('GET', `${path}${separator}watch=true`, undefined, signal ? { signal } : {});
      if ((response.statusCode ?? 0) >= 400) {
        const chunks: Buffer[] = [];
        for await (const chunk of response) chunks.push(chunk as Buffer);
        throw new ApiError('WATCH', path, response.statusCode ?? 0, decode(Buffer.concat(chunks).toString()));
      }
      // The server sends one JSON event per line.
      const lines = createInterface({ input: response, crlfDelay: Infinity });
      try {
        for await (const line of lines) {
          if (line.trim() !== '') yield JSON.parse(line) as WatchEvent<T>;
        }
      } catch (error) {
        // An abort or a server restart ends the stream; the caller decides what that means.
        if (!(signal?.aborted || (error instanceof Error && 'code' in error && error.code === 'ECONNRESET'))) throw error;
      } finally {
        lines.close();
        response.destroy();
      }
    },
    close: () => agent.destroy(),
  };
}
