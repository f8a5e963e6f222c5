/**
 * The one place that talks HTTP to the API server. `@kubernetes/client-node`
 * loads the kubeconfig (or the in-cluster service account) and authenticates;
 * this adapter sends raw JSON requests and reads watch streams through one
 * long-lived undici dispatcher.
 *
 * Why not client-node's typed APIs and informers: every typed call builds a
 * new undici Agent (a new TLS connection per request), lists are not paged,
 * the typed deserializer copies every Secret's data into model objects, and
 * the informer stops for good on a non-410 error (see ADR 0007). Raw JSON
 * keeps a Secret's payload alive only until the reducer has digested it.
 */
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { HttpMethod, RequestContext } from '@kubernetes/client-node/dist/gen/http/http.js';
import { StringDecoder } from 'node:string_decoder';
import { getGlobalDispatcher, type Dispatcher } from 'undici';
import { KubeApiError, KubeConfigError, KubeTransportError, type StatusDetails } from './errors.ts';
import { FencedError, type Fence } from './fence.ts';
import { describeCredentialError, describeKubeConfigLoadError } from './kubeconfig-errors.ts';

/** A limiter every request waits on before it is sent (the client-side QPS). */
export interface RequestLimiter {
  take(signal?: AbortSignal): Promise<void>;
}

/** Options of one request. */
export interface RequestOptions {
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** A JSON-serialisable body. */
  readonly body?: unknown;
  /** The body's media type; required with a PATCH (an implicit one is how patches go wrong). */
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  /**
   * A write's fence (kube/fence.ts): checked after the rate limiter's wait, immediately before the request is
   * sent, and its signal aborts the request; a fenced request that is refused or aborted throws FencedError.
   */
  readonly fence?: Fence;
  /** Overrides the client's request deadline for this request (ms). */
  readonly timeoutMs?: number;
  /** Told the size of the response body in bytes (lists size their next page by it). */
  readonly onResponseBytes?: (bytes: number) => void;
}

/** A response line stream of a watch, ended by the server, an error, or `signal`. */
export interface WatchStream {
  readonly lines: AsyncIterable<string>;
}

/** Where requests go and who we are. */
export interface KubeClient {
  /** The API server URL, for logs. */
  readonly server: string;
  /** Sends a request and decodes the JSON answer; throws KubeApiError (status ≥ 400) or KubeTransportError. */
  request<T = unknown>(method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', path: string, options?: RequestOptions): Promise<T>;
  /** Opens a watch (`?watch=1` is added) and yields its lines as they arrive. */
  watch(path: string, query: Readonly<Record<string, string | number | boolean | undefined>>, signal: AbortSignal): Promise<WatchStream>;
  /** Closes the connection pool. */
  close(): Promise<void>;
}

/** How to find the cluster. */
export interface KubeAccess {
  /** Kubeconfig paths, merged in order as kubectl does (the first file's current context wins); `[]` means in-cluster. */
  readonly kubeconfig: readonly string[];
}

/**
 * A kubeconfig read from files that reads them again when the server refuses its credentials (a 401): a token
 * in a mounted Secret's kubeconfig rotated under a running controller is taken up at the next request, as the
 * in-cluster service account's token file is. The client keeps its connection (server, CA) as it was made, so a
 * changed server needs a restart; a read that fails keeps the kubeconfig as it was.
 */
class KubeConfigFiles extends KubeConfig implements CredentialsRejectedHook {
  readonly #files: readonly string[];

  constructor(files: readonly string[]) {
    super();
    this.#files = files;
  }

  /** Reads the files (the first file's current context wins), as kubectl merges them; `reading` hears each file's name first. */
  read(reading?: (file: string) => void): void {
    for (const [index, file] of this.#files.entries()) {
      reading?.(file);
      if (index === 0) {
        this.loadFromFile(file);
      } else {
        const more = new KubeConfig();
        more.loadFromFile(file);
        this.mergeConfig(more, true);
      }
    }
  }

  credentialsRejected(): void {
    const fresh = new KubeConfigFiles(this.#files);
    try {
      fresh.read();
    } catch {
      return;
    }
    // Whole: a kubeconfig written anew may name its user and context otherwise (as a ServiceAccount's does).
    this.clusters = fresh.clusters;
    this.users = fresh.users;
    this.contexts = fresh.contexts;
    this.currentContext = fresh.currentContext;
  }
}

/** Loads a kubeconfig or the in-cluster service account, failing fast instead of client-node's silent localhost fallback. */
export function loadKubeConfig(access: KubeAccess): KubeConfig {
  const inCluster = access.kubeconfig.length === 0;
  const config = inCluster ? new KubeConfig() : new KubeConfigFiles(access.kubeconfig);
  let where = 'the in-cluster service account';
  try {
    if (config instanceof KubeConfigFiles) {
      config.read((file) => {
        where = `kubeconfig ${file}`;
      });
    } else {
      config.loadFromCluster();
    }
  } catch (error) {
    const { message, cause } = describeKubeConfigLoadError(error);
    throw new KubeConfigError(`cannot load ${where}: ${message}`, cause === undefined ? undefined : { cause });
  }
  const cluster = config.getCurrentCluster();
  if (cluster === null || cluster.server === '' || (inCluster && cluster.server.includes('undefined'))) {
    throw new KubeConfigError(inCluster
      ? 'not running in a cluster (KUBERNETES_SERVICE_HOST is unset) and no --kubeconfig / KUBECONFIG given'
      : `${access.kubeconfig.join(', ')}: no current cluster`);
  }
  return config;
}

/** Headers are re-derived at most this often, so rotated service-account tokens and exec credentials are picked up. */
const HEADER_TTL_MS = 10_000;

function queryString(query: Readonly<Record<string, string | number | boolean | undefined>> | undefined): string {
  if (query === undefined) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** Reads a `Status` body's reason, message and details without trusting its shape. */
function describeStatus(text: string): { reason: string; message: string; details: StatusDetails | undefined } {
  try {
    const body = JSON.parse(text) as { reason?: unknown; message?: unknown; details?: { name?: unknown; group?: unknown; kind?: unknown } };
    const raw = typeof body.details === 'object' && body.details !== null ? body.details : undefined;
    const stringOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
    return {
      reason: typeof body.reason === 'string' ? body.reason : '',
      message: typeof body.message === 'string' ? body.message : '',
      details: raw === undefined ? undefined : { name: stringOf(raw.name), group: stringOf(raw.group), kind: stringOf(raw.kind) },
    };
  } catch {
    return { reason: '', message: text.slice(0, 200), details: undefined };
  }
}

/** A KubeConfig that caches a credential (an exec plugin's) and can forget it when the server answers 401, as client-go does. */
export interface CredentialsRejectedHook {
  credentialsRejected(): void;
}

/** Options of a client. */
export interface KubeClientOptions {
  /** Every request but a watch gives up after this long (the whole answer, body included); default 30 s. */
  readonly requestTimeoutMs?: number;
  /**
   * The User-Agent of every request. With several replicas sharing one identity in a cluster (Argo CD's
   * cluster Secret in hub mode), it is what tells their requests apart in the API server's audit log.
   */
  readonly userAgent?: string;
}

/** The default deadline of one request: client-go's REST client has none by default, which is how a hung request blocks shutdown. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** A request that got no answer: fenced (closed before or on the wire, or aborted by a lost Lease), else a transport error. */
function sendFailure(method: string, path: string, error: unknown, fence: Fence | undefined): Error {
  if (error instanceof FencedError) return error;
  if (fence?.signal.aborted === true) return new FencedError(`${method} ${path}: aborted: leadership was lost`, { cause: error });
  return new KubeTransportError(method, path, { cause: error });
}

/**
 * `dispatcher` with `fence` checked once more at the instant undici writes the request on its socket
 * (`onRequestStart`, synchronous with the write). Between `request()` and that write a connection may still be
 * made (TCP, TLS): on a starved machine that took seconds, long enough for the Lease to pass to another replica
 * while the first check had passed (test/faults/hub-shards caught an Event written 0.7 s after the hand-over).
 * A closed fence aborts the request before a byte is sent, with the fence's FencedError.
 */
function fencedOnWrite(dispatcher: Dispatcher, fence: Fence, what: string): Dispatcher {
  return dispatcher.compose((dispatch) => (options, handler) => dispatch(options, {
    onRequestStart(controller, context) {
      try {
        fence.check(what);
      } catch (error) {
        controller.abort(error as Error);
        return;
      }
      handler.onRequestStart?.(controller, context);
    },
    onRequestUpgrade: (controller, statusCode, headers, socket) => handler.onRequestUpgrade?.(controller, statusCode, headers, socket),
    onResponseStart: (controller, statusCode, headers, statusMessage) => handler.onResponseStart?.(controller, statusCode, headers, statusMessage),
    onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
    onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
    onResponseError: (controller, error) => handler.onResponseError?.(controller, error),
  }));
}

/**
 * Builds a client for a loaded KubeConfig. Every request first waits on
 * `limiter` (the client-side QPS), so one Secret used by 500 workloads cannot
 * flood the API server, and every request but a watch has a deadline.
 */
export function createKubeClient(config: KubeConfig, limiter: RequestLimiter, observe?: (method: string, status: number) => void, clientOptions: KubeClientOptions = {}): KubeClient {
  const requestTimeoutMs = clientOptions.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new KubeConfigError('the kubeconfig has no current cluster');
  const server = cluster.server.replace(/\/+$/, '');
  const origin = new URL(server).origin;
  const basePath = new URL(server).pathname.replace(/\/+$/, '');
  let dispatcher: Dispatcher | undefined;
  let headers: Record<string, string> | undefined;
  let headersAt = 0;

  async function authHeaders(now: number, force: boolean): Promise<Record<string, string>> {
    if (headers !== undefined && !force && now - headersAt < HEADER_TTL_MS) return headers;
    const context = new RequestContext(server, HttpMethod.GET);
    try {
      await config.applySecurityAuthentication(context);
    } catch (error) {
      throw new KubeConfigError(describeCredentialError(config.getCurrentUser()?.name, error));
    }
    // client-node makes a fresh Agent on every call; keep the first one so connections are reused.
    dispatcher ??= context.getDispatcher() ?? getGlobalDispatcher();
    headers = { ...context.getHeaders() };
    headersAt = now;
    return headers;
  }

  async function send(method: string, path: string, options: RequestOptions, extraQuery = '', signal = options.signal): Promise<Dispatcher.ResponseData> {
    await limiter.take(signal);
    let retriedAuth = false;
    for (;;) {
      const auth = await authHeaders(Date.now(), retriedAuth);
      const requestHeaders: Record<string, string> = { ...auth, accept: 'application/json', ...(clientOptions.userAgent === undefined ? {} : { 'user-agent': clientOptions.userAgent }) };
      let body: string | undefined;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        requestHeaders['content-type'] = options.contentType ?? 'application/json';
      }
      let response: Dispatcher.ResponseData;
      // The fence is checked last, with nothing awaited between it and handing the request to the dispatcher,
      // and again as the request goes on the wire (fencedOnWrite).
      options.fence?.check(`${method} ${path}`);
      const via = options.fence === undefined ? (dispatcher as Dispatcher) : fencedOnWrite(dispatcher as Dispatcher, options.fence, `${method} ${path}`);
      try {
        response = await via.request({
          origin,
          path: `${basePath}${path}${queryString(options.query)}${extraQuery}`,
          method,
          headers: requestHeaders,
          ...(body === undefined ? {} : { body }),
          ...(signal === undefined ? {} : { signal }),
        });
      } catch (error) {
        observe?.(method, 0);
        throw sendFailure(method, path, error, options.fence);
      }
      observe?.(method, response.statusCode);
      // A rotated token: derive the headers once more before giving up.
      if (response.statusCode === 401 && !retriedAuth) {
        await response.body.dump();
        // An exec plugin's credential is kept until it expires; a KubeConfig that can drop it early says so (hub/connect.ts).
        (config as Partial<CredentialsRejectedHook>).credentialsRejected?.();
        retriedAuth = true;
        continue;
      }
      if (response.statusCode >= 400) {
        const text = await response.body.text().catch(() => '');
        const { reason, message, details } = describeStatus(text);
        throw new KubeApiError(method, path, response.statusCode, reason, message, details === undefined ? undefined : { details });
      }
      return response;
    }
  }

  return {
    server,
    async request<T>(method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', path: string, options: RequestOptions = {}): Promise<T> {
      if (method === 'PATCH' && options.contentType === undefined) {
        throw new TypeError(`PATCH ${path} needs an explicit content type`);
      }
      // One deadline over the whole exchange, body included; the fence's signal aborts it too.
      const signal = AbortSignal.any([
        AbortSignal.timeout(options.timeoutMs ?? requestTimeoutMs),
        ...(options.signal === undefined ? [] : [options.signal]),
        ...(options.fence === undefined ? [] : [options.fence.signal]),
      ]);
      const response = await send(method, path, options, '', signal);
      let text: string;
      try {
        text = await response.body.text();
      } catch (error) {
        if (options.fence?.signal.aborted === true) throw new FencedError(`${method} ${path}: aborted: leadership was lost`, { cause: error });
        throw new KubeTransportError(method, path, { cause: error });
      }
      options.onResponseBytes?.(Buffer.byteLength(text));
      return (text === '' ? undefined : JSON.parse(text)) as T;
    },
    async watch(path, query, signal) {
      const response = await send('GET', path, { query, signal }, `${queryString(query) === '' ? '?' : '&'}watch=1`);
      return { lines: splitLines(response.body, signal) };
    },
    async close() {
      if (dispatcher !== undefined && dispatcher !== getGlobalDispatcher()) await dispatcher.close();
    },
  };
}

/**
 * Splits a watch body into lines. Each line is one JSON event, which can be
 * large (a 1 MiB Secret is a line of ~1.4 MB in ~90 chunks of 16 KiB), so each
 * chunk is searched for a newline alone and the pieces of a line are joined once,
 * at its end: appending to one string and searching it again copies the whole line
 * at every chunk (~60 MB copied and ~70 ms for that Secret, against ~3 ms).
 */
async function* splitLines(body: AsyncIterable<Buffer | string>, signal: AbortSignal): AsyncIterable<string> {
  const pieces: string[] = [];
  // A multi-byte character can straddle two chunks.
  const decoder = new StringDecoder('utf8');
  try {
    for await (const chunk of body) {
      if (signal.aborted) return;
      let text = typeof chunk === 'string' ? chunk : decoder.write(chunk);
      let newline = text.indexOf('\n');
      while (newline !== -1) {
        pieces.push(text.slice(0, newline));
        const line = pieces.join('');
        pieces.length = 0;
        if (line !== '') yield line;
        text = text.slice(newline + 1);
        newline = text.indexOf('\n');
      }
      if (text !== '') pieces.push(text);
    }
  } catch (error) {
    if (signal.aborted) return;
    throw error;
  }
  pieces.push(decoder.end());
  const rest = pieces.join('');
  if (rest !== '') yield rest;
}
