/**
 * List-then-watch of one collection into a store of reduced summaries — the
 * client-go Reflector, with the lifecycle owned here rather than by
 * client-node's informer (which stops for good on a non-410 error, resolves
 * `start()` even when the list failed, and sends no bookmarks):
 *
 * - with `streamingList`, the list is a streaming one (KEP-3157, client-go's
 *   WatchListClient): a watch with `sendInitialEvents=true` that the API server
 *   answers with every object, one event each, from its watch cache, then a
 *   bookmark marked `k8s.io/initial-events-end` at which the store is whole and
 *   synced, and the same stream goes on as the watch. One request instead of a
 *   page per few hundred KB under the client's rate limit, and one object in
 *   memory at a time. An API server that refuses the options (400/422: the
 *   WatchList feature off, or older than 1.27) is listed in pages from then on;
 *   a stream that ends before its bookmark is followed by one paged list;
 * - otherwise the list is paged (`limit`/`continue`), and each page is reduced and
 *   dropped before the next is fetched, so a namespace of 64 KiB Secrets costs
 *   no more memory than one of 1 KiB Secrets;
 * - 410 Gone (on the watch, or on an expired continue token) → relist; a
 *   paged list cut short twice in a row (the collection takes longer to list
 *   than the server keeps continue tokens) is listed again after a backoff
 *   and unpaged, as client-go's pager falls back to a full list, so it cannot
 *   expire a third time;
 * - any other error, a 404 for an API that is not installed (yet), or a
 *   stream that says nothing for `silenceMs` → backoff, then watch again from
 *   the last resourceVersion; the first error status after failures with no
 *   answer at all or after "not installed" (the API server coming back) backs
 *   off from the base again,
 *   and the reflectors of one API server (one `Reachability`) wake each other
 *   from such a backoff at its first answer;
 * - bookmarks keep the resourceVersion fresh in quiet collections;
 * - a watch that ends at once with nothing in it counts as a failure and is
 *   opened again only after the backoff (client-go's "very short watch"), so
 *   an API server that closes watches cannot be hammered in a tight loop;
 * - relists happen only at the start and after 410, as client-go's; a periodic
 *   relist (`relistMs` > 0, off by default) is an opt-in backstop. Lists carry
 *   no resourceVersion (a consistent read, paged): `resourceVersion=0` would be
 *   served from the watch cache but may be older than what the controller
 *   already acted on, and the cache ignores `limit`, so one list of every
 *   Secret would be held in memory at once (ADR 0008);
 * - `synced` turns true after the first complete list, streamed or paged (or
 *   the first 404 of an absent API: known to be empty), never before.
 *
 * Handlers get (previous, next) summaries and must only enqueue: a handler that
 * throws is logged and the loop goes on.
 */
import type { Logger } from 'pino';
import { sleep, type Clock } from '../clock.ts';
import { stackOf } from '../error-summary.ts';
import type { KubeClient } from './client.ts';
import { KubeApiError, failureWords, isForbidden, isGone, isNotFound, isRefusedOptions } from './errors.ts';

/** What a reflector lists and watches, and how it reduces objects. */
export interface ReflectorSpec<S> {
  /** For logs: `secrets`, `deployments in prod`, … */
  readonly name: string;
  /** The collection path, e.g. `/api/v1/secrets` or `/apis/apps/v1/namespaces/prod/deployments`. */
  readonly path: string;
  readonly labelSelector?: string | undefined;
  readonly fieldSelector?: string | undefined;
  /** Page size of lists. */
  readonly pageSize: number;
  /**
   * List by a streaming watch (`sendInitialEvents`) rather than in pages, where the API server allows it
   * (`--streaming-list`; default false here, so a caller chooses).
   */
  readonly streamingList?: boolean;
  /**
   * Cuts a raw object down to its summary, given the summary it replaces.
   * `undefined` drops the object (out of scope). Must keep no reference into
   * `raw`: the raw object, and with it any Secret payload, dies here.
   */
  reduce(raw: unknown, previous: S | undefined): S | undefined;
  /**
   * An optional feature's watch: a 401/403 on its list is logged once as a
   * Warning and the reflector stops for good (synced, empty, `disabled`)
   * instead of retrying an RBAC nobody granted.
   */
  readonly offWhenForbidden?: boolean;
}

/**
 * Lists aim at pages of about this many bytes: what a page costs in memory while it is parsed and
 * reduced is what the controller's RSS grows to, so pages are sized by bytes, not by a count that
 * means 100 KB for one namespace and 6.5 MB for another.
 */
export const PAGE_TARGET_BYTES = 512 * 1024;

/**
 * The first page's `limit`, before the size of the objects is known: at `--list-page-size` (100) a first
 * page of 64 KiB Secrets is ~9 MB of JSON, parsed whole, and of 1 MiB Secrets ~140 MB, which a
 * heap bounded at 192 MB may not survive. Ten objects cost one request more for small ones (ADR 0021).
 */
export const FIRST_PAGE_LIMIT = 10;

/** A watch that ends sooner than this without an event is a "very short watch" (client-go's bound is 1 s). */
export const SHORT_WATCH_MS = 1000;

/** Timing of the lifecycle. */
export interface ReflectorTiming {
  /** A watch that delivers nothing (not even a bookmark) this long is restarted. */
  readonly silenceMs: number;
  /** Full relist period (the opt-in backstop); 0: never (only at the start and after 410). */
  readonly relistMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
}

/** Optional observers, for metrics. */
export interface ReflectorHooks {
  onList?(): void;
  onWatch?(): void;
}

/** Called for every change of the store, after the store was updated. */
export type ChangeHandler<S> = (key: string, previous: S | undefined, next: S | undefined) => void;

/** Counters for metrics and tests. */
export interface ReflectorStats {
  lists: number;
  watches: number;
  errors: number;
  /** Watches that ended at once with no event (each followed by a backoff). */
  shortWatches: number;
  /** Paged lists cut short by an expired continue token (410). */
  cutShortLists: number;
  /** Lists completed by a stream's `initial-events-end` bookmark (a subset of `lists`). */
  streamedLists: number;
}

/** The annotation of the bookmark that ends a streaming list's initial events (`metav1.InitialEventsAnnotationKey`). */
export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** The `namespace/name` key of a raw object. */
export function objectKey(raw: unknown): string {
  const metadata = (raw as { metadata?: { namespace?: unknown; name?: unknown } } | null)?.metadata;
  const namespace = typeof metadata?.namespace === 'string' ? metadata.namespace : '';
  const name = typeof metadata?.name === 'string' ? metadata.name : '';
  return namespace === '' ? name : `${namespace}/${name}`;
}

function isInitialEventsEnd(raw: unknown): boolean {
  const annotations = (raw as { metadata?: { annotations?: Record<string, unknown> } } | null)?.metadata?.annotations;
  return annotations?.[INITIAL_EVENTS_END] === 'true';
}

function resourceVersionOf(raw: unknown): string {
  const version = (raw as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
  return typeof version === 'string' ? version : '';
}

interface ListPage {
  readonly items?: unknown[];
  readonly metadata?: { readonly resourceVersion?: string; readonly continue?: string };
}

/** A streamed list under way: the keys its initial events named, and whether its closing bookmark came. */
interface InitialList {
  readonly seen: Set<string>;
  done: boolean;
}

interface WatchEvent {
  readonly type?: string;
  readonly object?: unknown;
}

/**
 * Shared by the reflectors of one API server: the first of them that gets an answer again wakes the others from a
 * backoff they took after failures with no answer, so a cluster whose API server comes back is whole again at its
 * first answer, not when the last of its reflectors' backoffs (up to `backoffMaxMs`, each on its own phase) ends.
 */
export class Reachability {
  readonly #waiters = new Set<() => void>();

  /** The API server answered. */
  answered(): void {
    for (const wake of this.#waiters) wake();
  }

  /** Sleeps `ms`, or less: until `signal` aborts or the API server answers another reflector. */
  async sleepUntilAnswered(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
    const woken = new AbortController();
    const wake = (): void => woken.abort();
    this.#waiters.add(wake);
    try {
      await sleep(clock, ms, AbortSignal.any([signal, woken.signal]));
    } finally {
      this.#waiters.delete(wake);
    }
  }
}

/** A failed list or watch: no answer at all (the API server down or unreachable), an API not installed, or another error status. */
type FailureKind = 'unanswered' | 'absent' | 'status';

function failureKind(error: unknown, resourceVersion: string): FailureKind {
  if (!(error instanceof KubeApiError)) return 'unanswered';
  return isNotFound(error) && resourceVersion === '' ? 'absent' : 'status';
}

/**
 * The failures in a row after this one. An error status after failures with no answer, or after "not installed", starts a
 * new streak from the base backoff: the server is back (its first seconds answer 429 "storage is (re)initializing" or
 * 403 while its RBAC cache fills), and that must not wait the 30 s an outage or a long-absent API grew the backoff to.
 */
function nextFailures(failures: number, previous: FailureKind | undefined, kind: FailureKind): number {
  return kind === 'status' && (previous === 'unanswered' || previous === 'absent') ? 1 : failures + 1;
}

/** One collection, listed and watched until `stop()`. */
export class Reflector<S> {
  readonly spec: ReflectorSpec<S>;
  readonly stats: ReflectorStats = { lists: 0, watches: 0, errors: 0, shortWatches: 0, cutShortLists: 0, streamedLists: 0 };
  readonly #store = new Map<string, S>();
  readonly #client: KubeClient;
  readonly #timing: ReflectorTiming;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #onChange: ChangeHandler<S>;
  readonly #hooks: ReflectorHooks;
  readonly #reachability: Reachability;
  readonly #stopping = new AbortController();
  #synced = false;
  #absent = false;
  #disabled = false;
  #resourceVersion = '';
  #lastActivity = 0;
  #failing = false;
  /** What the last failed list or watch met (kube/errors.ts `failureWords`), while failing. */
  #failure = '';
  #loop: Promise<void> | undefined;
  /** The next page's `limit`, adapted to the bytes per object seen so far (at most `spec.pageSize`). */
  #pageLimit: number;
  /** The next list is unpaged: paged ones were cut short twice in a row. */
  #unpaged = false;
  /** Lists are streamed: asked for, and not refused by the API server. */
  #streaming: boolean;
  /** The next list is paged: a streamed one ended before its last object. */
  #pagedOnce = false;
  /** While a streamed list's initial events arrive: the keys seen so far. */
  #initial: InitialList | undefined;
  readonly #syncWaiters: (() => void)[] = [];

  constructor(spec: ReflectorSpec<S>, deps: { client: KubeClient; timing: ReflectorTiming; clock: Clock; log: Logger; onChange: ChangeHandler<S>; hooks?: ReflectorHooks; reachability?: Reachability }) {
    this.spec = spec;
    this.#client = deps.client;
    this.#timing = deps.timing;
    this.#clock = deps.clock;
    this.#log = deps.log.child({ reflector: spec.name });
    this.#onChange = deps.onChange;
    this.#hooks = deps.hooks ?? {};
    this.#reachability = deps.reachability ?? new Reachability();
    this.#pageLimit = Math.min(spec.pageSize, FIRST_PAGE_LIMIT);
    this.#streaming = spec.streamingList === true;
  }

  /** The reduced objects by `namespace/name`. */
  get store(): ReadonlyMap<string, S> {
    return this.#store;
  }

  /** True after the first complete list (or after learning that the API is not installed). */
  get synced(): boolean {
    return this.#synced;
  }

  /** True while the API server says the resource does not exist (a CRD not installed). */
  get absent(): boolean {
    return this.#absent;
  }

  /** True once an `offWhenForbidden` watch was refused: it is off until the process restarts. */
  get disabled(): boolean {
    return this.#disabled;
  }

  /** True from a failed list or watch until the API server answers again (a hub's `driftless_cluster_up`). */
  get failing(): boolean {
    return this.#failing;
  }

  /** While failing, what the last failed list or watch met, in words naming no credential (a hub's down Event). */
  get failure(): string | undefined {
    return this.#failing ? this.#failure : undefined;
  }

  /** Epoch ms of the last list page or watch line received (for liveness). */
  get lastActivity(): number {
    return this.#lastActivity;
  }

  /** Starts the loop; idempotent. */
  start(): void {
    this.#loop ??= this.#run().catch((error: unknown) => {
      // #run handles its own errors; reaching here is a bug, and it must be loud.
      this.#log.fatal({ err: error, stack: stackOf(error) }, 'reflector loop crashed');
    });
  }

  /** Resolves once synced, or when stopped. */
  whenSynced(): Promise<void> {
    if (this.#synced || this.#stopping.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.#syncWaiters.push(resolve));
  }

  /** Stops the loop and resolves when it has ended. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#markSynced(false);
    await this.#loop;
  }

  #markSynced(value: boolean): void {
    if (value) this.#synced = true;
    for (const resolve of this.#syncWaiters.splice(0)) resolve();
  }

  #emit(key: string, previous: S | undefined, next: S | undefined): void {
    try {
      this.#onChange(key, previous, next);
    } catch (error) {
      // A bug, not a failure of the cluster: its stack is wanted at every log level.
      this.#log.error({ err: error, stack: stackOf(error), key }, 'change handler threw; the store is updated and the watch goes on');
    }
  }

  #upsert(raw: unknown): void {
    const key = objectKey(raw);
    const previous = this.#store.get(key);
    const next = this.spec.reduce(raw, previous);
    if (next === undefined) {
      if (previous !== undefined) {
        this.#store.delete(key);
        this.#emit(key, previous, undefined);
      }
      return;
    }
    this.#store.set(key, next);
    this.#emit(key, previous, next);
  }

  #remove(raw: unknown): void {
    const key = objectKey(raw);
    const previous = this.#store.get(key);
    if (previous === undefined) return;
    this.#store.delete(key);
    this.#emit(key, previous, undefined);
  }

  async #run(): Promise<void> {
    const signal = this.#stopping.signal;
    let failures = 0;
    let cutShortInARow = 0;
    let listing = false;
    let lastFailure: FailureKind | undefined;
    // Jittered (±10%), so that hundreds of reflectors do not relist in the same second.
    const resyncDelay = (): number => (this.#timing.relistMs > 0 ? this.#timing.relistMs * (0.9 + Math.random() * 0.2) : Infinity);
    let nextResync = this.#clock.now() + resyncDelay();
    while (!signal.aborted) {
      try {
        const listDue = this.#resourceVersion === '' || this.#clock.now() >= nextResync;
        if (listDue && this.#streaming && !this.#pagedOnce) {
          if (await this.#streamList(signal, nextResync)) {
            failures = 0;
            nextResync = this.#clock.now() + resyncDelay();
          }
          continue;
        }
        if (listDue) {
          listing = true;
          await this.#list(signal);
          listing = false;
          cutShortInARow = 0;
          this.#unpaged = false;
          this.#pagedOnce = false;
          nextResync = this.#clock.now() + resyncDelay();
          this.#absent = false;
          this.#markSynced(true);
        }
        const opened = this.#clock.monotonic();
        const received = await this.#watch(signal, nextResync);
        if (received) failures = 0;
        else if (!signal.aborted && this.#clock.monotonic() - opened < SHORT_WATCH_MS) {
          failures++;
          this.stats.shortWatches++;
          this.#log.debug({ attempt: failures }, 'the watch ended at once with no event; watching again after a backoff');
          await sleep(this.#clock, this.#backoff(failures), signal);
        }
      } catch (error) {
        if (signal.aborted) break;
        if (isGone(error)) {
          this.#resourceVersion = '';
          if (listing) await this.#afterCutShortList(++cutShortInARow, signal);
          else this.#log.debug('the watch\'s resourceVersion expired (410); listing again');
          listing = false;
          continue;
        }
        listing = false;
        this.stats.errors++;
        const kind = failureKind(error, this.#resourceVersion);
        failures = nextFailures(failures, lastFailure, kind);
        lastFailure = kind;
        if (!this.#noteFailure(error, kind, failures)) break;
        await this.#backOff(failures, kind !== 'unanswered', signal);
      }
    }
  }

  /**
   * A failed list or watch other than a 410: what it says of the collection (absent, failing, or off for good),
   * logged. False when an optional watch is now off for good and the loop ends.
   */
  #noteFailure(error: unknown, kind: FailureKind, failures: number): boolean {
    if (this.spec.offWhenForbidden === true && isForbidden(error) && this.#resourceVersion === '') {
      this.#log.warn({ err: error }, 'not allowed to list; this optional watch is off until the controller restarts');
      this.#disabled = true;
      this.#failing = false;
      this.#markSynced(true);
      return false;
    }
    if (kind === 'absent') {
      // The API is not installed (yet): an empty collection, checked again after a backoff.
      if (!this.#absent) this.#log.info('the API is not installed; checking again periodically');
      this.#absent = true;
      // The API server answered: an API it does not serve is no failure (an optional CRD absent).
      this.#failing = false;
      for (const [key, previous] of this.#store) {
        this.#store.delete(key);
        this.#emit(key, previous, undefined);
      }
      this.#markSynced(true);
    } else {
      this.#failing = true;
      this.#failure = failureWords(error);
      this.#log.warn({ err: error, attempt: failures }, 'list/watch failed; retrying after a backoff');
    }
    return true;
  }

  /**
   * A streaming list: the objects as a watch's initial events, then the stream goes on as the watch until it ends.
   * True when the list completed (its `initial-events-end` bookmark came). An API server that refuses the options
   * turns streaming off for good; one whose stream ends before the bookmark gets a paged list next. Any other error
   * is the loop's, as a watch's.
   */
  async #streamList(signal: AbortSignal, resyncAt: number): Promise<boolean> {
    this.stats.lists++;
    const initial: InitialList = { seen: new Set(), done: false };
    this.#initial = initial;
    try {
      await this.#watch(signal, resyncAt, true);
    } catch (error) {
      if (initial.done || !isRefusedOptions(error) || signal.aborted) throw error;
      this.#streaming = false;
      this.#log.info({ status: error instanceof KubeApiError ? error.status : undefined }, 'the API server does not stream lists (sendInitialEvents); listing in pages');
      return false;
    } finally {
      this.#initial = undefined;
    }
    if (initial.done) return true;
    if (!signal.aborted) {
      // Its objects came in any order of resourceVersion: no watch can resume from any of them.
      this.#resourceVersion = '';
      this.#pagedOnce = true;
      this.#log.warn('a streamed list ended before its last object; listing in pages once');
    }
    return false;
  }

  /**
   * A paged list was cut short by an expired continue token: the first time it is listed again at once; the
   * second time in a row, paging this collection outlasts the server's continue tokens, so the next list waits
   * a backoff and is unpaged (client-go's pager falls back to a full list the same way), which cannot expire.
   */
  async #afterCutShortList(inARow: number, signal: AbortSignal): Promise<void> {
    this.stats.cutShortLists++;
    if (inARow === 1) {
      this.#log.info('a paged list was cut short: its continue token expired (410); listing again from the first page');
      return;
    }
    this.#unpaged = true;
    this.#log.warn({ attempt: inARow }, 'a paged list was cut short again (410); listing unpaged after a backoff');
    await sleep(this.#clock, this.#backoff(inARow - 1), signal);
  }

  /** The backoff after a failure; after one with no answer it ends early when the API server answers another reflector. */
  #backOff(failures: number, answered: boolean, signal: AbortSignal): Promise<void> {
    if (!answered) return this.#reachability.sleepUntilAnswered(this.#clock, this.#backoff(failures), signal);
    this.#reachability.answered();
    return sleep(this.#clock, this.#backoff(failures), signal);
  }

  /** The delay before the n-th attempt in a row after a failure (or a short watch): base·2^(n−1), capped. */
  #backoff(failures: number): number {
    return Math.min(this.#timing.backoffMaxMs, this.#timing.backoffBaseMs * 2 ** Math.min(failures - 1, 20));
  }

  #query(extra: Record<string, string | number | boolean | undefined>): Record<string, string | number | boolean | undefined> {
    return { labelSelector: this.spec.labelSelector, fieldSelector: this.spec.fieldSelector, ...extra };
  }

  /** A full paged list, reconciled against the store: vanished objects are deleted, changed ones updated. */
  async #list(signal: AbortSignal): Promise<void> {
    this.stats.lists++;
    const seen = new Set<string>();
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      let bytes = 0;
      const limit = this.#unpaged ? undefined : this.#pageLimit;
      const page = await this.#client.request<ListPage>('GET', this.spec.path, {
        query: this.#query({ limit, continue: continueToken }),
        signal,
        onResponseBytes: (size) => {
          bytes = size;
        },
      });
      const count = page.items?.length ?? 0;
      if (count > 0 && bytes > 0) {
        const perObject = bytes / count;
        this.#pageLimit = Math.max(1, Math.min(this.spec.pageSize, Math.floor(PAGE_TARGET_BYTES / perObject)));
      }
      this.#lastActivity = this.#clock.now();
      this.#failing = false;
      this.#reachability.answered();
      for (const raw of page.items ?? []) {
        const key = objectKey(raw);
        seen.add(key);
        if (!this.#unchanged(key, raw)) this.#upsert(raw);
      }
      continueToken = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? '';
    } while (continueToken !== undefined && !signal.aborted);
    this.#removeUnseen(seen);
    this.#resourceVersion = resourceVersion;
    // A list counts once it is whole: an attempt refused (an API not installed, the server unreachable) is not one.
    this.#hooks.onList?.();
  }

  /** Unchanged since we last saw it (a relist): no need to reduce (and digest) it again. */
  #unchanged(key: string, raw: unknown): boolean {
    const previous = this.#store.get(key);
    if (previous === undefined) return false;
    const version = resourceVersionOf(raw);
    const summarised = (previous as { resourceVersion?: unknown }).resourceVersion;
    return version !== '' && summarised === version;
  }

  /** After a whole list, paged or streamed: the objects it did not name are gone. */
  #removeUnseen(seen: ReadonlySet<string>): void {
    for (const [key, previous] of this.#store) {
      if (seen.has(key)) continue;
      this.#store.delete(key);
      this.#emit(key, previous, undefined);
    }
  }

  /** A streamed list's closing bookmark: objects it did not name are gone; the store is whole and synced. */
  #finishInitialList(initial: InitialList): void {
    initial.done = true;
    this.#initial = undefined;
    this.#removeUnseen(initial.seen);
    this.stats.streamedLists++;
    this.#absent = false;
    this.#pagedOnce = false;
    this.#hooks.onList?.();
    this.#markSynced(true);
  }

  /**
   * Watches from the stored resourceVersion (or, `streaming`, from a consistent
   * read of the collection, its objects sent first) until the server closes the
   * stream, the stream goes silent, or the resync is due. Returns whether any
   * event arrived (a healthy watch resets the backoff).
   */
  async #watch(signal: AbortSignal, resyncAt: number, streaming = false): Promise<boolean> {
    this.stats.watches++;
    this.#hooks.onWatch?.();
    const stream = new AbortController();
    const abortStream = (): void => stream.abort();
    signal.addEventListener('abort', abortStream, { once: true });
    let silence = this.#clock.setTimer(() => stream.abort(), this.#timing.silenceMs);
    const untilResync = Math.max(1, Math.ceil((resyncAt - this.#clock.now()) / 1000));
    // The server ends the watch cleanly before both the resync and the silence bound.
    const timeoutSeconds = Math.max(1, Math.min(untilResync, Math.floor(this.#timing.silenceMs / 1000) - 1, 300 + Math.floor(Math.random() * 60)));
    let received = false;
    try {
      // A streaming list names no resourceVersion: "NotOlderThan" nothing is a consistent read (KEP-3157).
      const from = streaming ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' } : { resourceVersion: this.#resourceVersion };
      const { lines } = await this.#client.watch(this.spec.path, this.#query({ ...from, allowWatchBookmarks: true, timeoutSeconds }), stream.signal);
      // An open watch is alive even before its first event (a quiet collection).
      this.#lastActivity = this.#clock.now();
      this.#failing = false;
      this.#reachability.answered();
      for await (const line of lines) {
        silence.cancel();
        silence = this.#clock.setTimer(() => stream.abort(), this.#timing.silenceMs);
        this.#lastActivity = this.#clock.now();
        let event: WatchEvent;
        try {
          event = JSON.parse(line) as WatchEvent;
        } catch (error) {
          throw new Error(`a watch line of ${this.spec.name} is not JSON`, { cause: error });
        }
        received = true;
        this.#apply(event);
      }
      if (stream.signal.aborted && !signal.aborted) this.#log.debug('watch was silent too long; watching again');
    } catch (error) {
      if (stream.signal.aborted && !signal.aborted && !(error instanceof KubeApiError)) {
        this.#log.debug('watch was silent too long; watching again');
        return received;
      }
      throw error;
    } finally {
      silence.cancel();
      signal.removeEventListener('abort', abortStream);
      stream.abort();
    }
    return received;
  }

  #apply(event: WatchEvent): void {
    const initial = this.#initial;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
        if (initial === undefined) this.#upsert(event.object);
        else {
          const key = objectKey(event.object);
          initial.seen.add(key);
          if (!this.#unchanged(key, event.object)) this.#upsert(event.object);
        }
        break;
      case 'DELETED':
        this.#remove(event.object);
        break;
      case 'BOOKMARK':
        break;
      case 'ERROR': {
        const status = event.object as { code?: unknown; reason?: unknown; message?: unknown } | undefined;
        const code = typeof status?.code === 'number' ? status.code : 500;
        throw new KubeApiError('WATCH', this.spec.path, code, typeof status?.reason === 'string' ? status.reason : '', typeof status?.message === 'string' ? status.message : '');
      }
      default:
        throw new Error(`unknown watch event type ${String(event.type)} from ${this.spec.name}`);
    }
    // The initial events come in no order of resourceVersion: only the closing bookmark's is one to watch from.
    if (initial !== undefined && event.type !== 'BOOKMARK') return;
    const version = resourceVersionOf(event.object);
    if (version !== '') this.#resourceVersion = version;
    if (initial !== undefined && isInitialEventsEnd(event.object)) this.#finishInitialList(initial);
  }
}
