/**
 * Delivers notifications without ever holding up a restart: `notify` only
 * puts the notification in a bounded queue and returns; one sender posts
 * them in order, retrying with exponential backoff.
 *
 * - A full queue drops its oldest notification, with a log line: the newest
 *   says most about the fleet now, and memory stays bounded if the receiver
 *   is down for hours.
 * - Retried: network errors, timeouts, 408, 429 (after its Retry-After, capped)
 *   and 5xx. Not retried: other 4xx (a wrong URL stays wrong) and redirects,
 *   which are never followed (a webhook that redirects usually has a wrong
 *   token, and following would send the body somewhere unvetted).
 * - Logs name the sink and the URL's origin, never its path or query, which
 *   hold the token; a fetch error is logged by its code, never as the raw error.
 */
import type { Logger } from 'pino';
import type { Clock, Timer } from '../clock.ts';
import { renderNotification, type Notification, type NotifySink } from './message.ts';
import type { WebhookUrl } from './url.ts';

/** How the notifier sends. */
export interface NotifierOptions {
  readonly sink: NotifySink;
  readonly url: WebhookUrl;
  readonly additionalInfo: string | undefined;
  /** Notifications waiting at most (default 100). */
  readonly queueSize?: number;
  /** Attempts per notification, the first included (default 5). */
  readonly maxAttempts?: number;
  /** The wait before the second attempt; doubled each time (default 1 s). */
  readonly backoffBaseMs?: number;
  /** The longest wait between attempts, Retry-After included (default 60 s). */
  readonly backoffMaxMs?: number;
  /** One attempt's time limit (default 10 s). */
  readonly timeoutMs?: number;
}

/** What the notifier uses from its surroundings. */
export interface NotifierDeps {
  readonly clock: Clock;
  readonly log: Logger;
  /** Defaults to the global fetch. */
  readonly fetch?: typeof fetch;
}

/** The outcome of one attempt. */
type Attempt = { readonly ok: true } | { readonly ok: false; readonly retry: boolean; readonly why: string; readonly retryAfterMs?: number };

/** Sends notifications to one webhook, asynchronously and in order. */
export class Notifier {
  readonly #options: Required<Omit<NotifierOptions, 'additionalInfo'>> & { readonly additionalInfo: string | undefined };
  readonly #deps: NotifierDeps;
  readonly #queue: Notification[] = [];
  #sending = false;
  #closed = false;
  #backoff: { timer: Timer; wake: () => void } | undefined;
  #inFlight: AbortController | undefined;
  #idleWaiters: (() => void)[] = [];

  constructor(options: NotifierOptions, deps: NotifierDeps) {
    this.#options = {
      queueSize: 100,
      maxAttempts: 5,
      backoffBaseMs: 1000,
      backoffMaxMs: 60_000,
      timeoutMs: 10_000,
      ...options,
    };
    this.#deps = deps;
  }

  /** Notifications waiting, the one being sent included. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Queues a notification and returns at once; never throws. After `close`, drops it. */
  notify(notification: Notification): void {
    if (this.#closed) return;
    if (this.#queue.length >= this.#options.queueSize) {
      // The head is the one being sent while #sending; drop the oldest that is only waiting.
      const index = this.#sending && this.#queue.length > 1 ? 1 : 0;
      const [dropped] = this.#queue.splice(index, 1);
      if (dropped !== undefined) this.#deps.log.warn({ ...this.#where(), ...describe(dropped), queueSize: this.#options.queueSize }, 'notification queue full: dropped the oldest notification');
    }
    this.#queue.push(notification);
    if (!this.#sending) void this.#drain();
  }

  /** Resolves once nothing is queued or being sent. */
  whenIdle(): Promise<void> {
    if (!this.#sending && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Stops: waits up to `graceMs` for what is queued, then abandons the rest
   * (aborting a request in flight, cancelling a backoff) with one log line.
   */
  async close(graceMs: number): Promise<void> {
    this.#closed = true;
    // No grace: abandon now, without a timer (an injected clock might never fire one).
    if (graceMs > 0) {
      let timer: Timer | undefined;
      const graceOver = new Promise<'late'>((resolve) => {
        timer = this.#deps.clock.setTimer(() => resolve('late'), graceMs);
      });
      const outcome = await Promise.race([this.whenIdle().then(() => 'idle' as const), graceOver]);
      timer?.cancel();
      if (outcome === 'idle') return;
    }
    const abandoned = this.#queue.length;
    this.#queue.length = 0;
    this.#inFlight?.abort();
    this.#backoff?.timer.cancel();
    this.#backoff?.wake();
    if (abandoned > 0) this.#deps.log.warn({ ...this.#where(), abandoned }, 'stopping: notifications not delivered');
    await this.whenIdle();
  }

  async #drain(): Promise<void> {
    this.#sending = true;
    try {
      for (let next = this.#queue[0]; next !== undefined; next = this.#queue[0]) {
        await this.#deliver(next);
        // close() may have emptied the queue meanwhile; only remove what is still at the head.
        if (this.#queue[0] === next) this.#queue.shift();
      }
    } finally {
      this.#sending = false;
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }

  async #deliver(notification: Notification): Promise<void> {
    const { maxAttempts, backoffBaseMs, backoffMaxMs } = this.#options;
    const rendered = renderNotification(this.#options.sink, notification, this.#options.additionalInfo);
    for (let attempt = 1; ; attempt++) {
      const result = await this.#attempt(rendered.contentType, rendered.body);
      if (result.ok) {
        this.#deps.log.debug({ ...this.#where(), ...describe(notification), attempt }, 'notification delivered');
        return;
      }
      if (this.#closed && this.#queue[0] !== notification) return;
      if (!result.retry || attempt >= maxAttempts) {
        const why = result.retry ? `gave up after ${attempt} attempts` : 'not retried';
        this.#deps.log.warn({ ...this.#where(), ...describe(notification), attempt, why: result.why }, `notification dropped: ${why}`);
        return;
      }
      const backoff = Math.min(backoffMaxMs, Math.max(backoffBaseMs * 2 ** (attempt - 1), result.retryAfterMs ?? 0));
      this.#deps.log.info({ ...this.#where(), ...describe(notification), attempt, why: result.why, retryInMs: backoff }, 'notification failed; retrying');
      await new Promise<void>((resolve) => {
        const timer = this.#deps.clock.setTimer(resolve, backoff);
        this.#backoff = { timer, wake: resolve };
      });
      this.#backoff = undefined;
      if (this.#closed && this.#queue[0] !== notification) return;
    }
  }

  async #attempt(contentType: string, body: string): Promise<Attempt> {
    const controller = new AbortController();
    this.#inFlight = controller;
    let timedOut = false;
    const timer = this.#deps.clock.setTimer(() => {
      timedOut = true;
      controller.abort();
    }, this.#options.timeoutMs);
    const send = this.#deps.fetch ?? fetch;
    try {
      const response = await send(this.#options.url.reveal(), {
        method: 'POST',
        headers: { 'content-type': contentType, 'user-agent': 'driftless-controller' },
        body,
        redirect: 'manual',
        signal: controller.signal,
      });
      // The receiver's answer is not needed, and an unread body keeps the connection busy.
      await response.body?.cancel().catch(() => undefined);
      if (response.status >= 200 && response.status < 300) return { ok: true };
      if (response.status >= 300 && response.status < 400) return { ok: false, retry: false, why: `HTTP ${response.status} redirect, not followed (often a wrong token in the URL)` };
      const retry = response.status === 408 || response.status === 429 || response.status >= 500;
      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
      return retryAfterMs === undefined ? { ok: false, retry, why: `HTTP ${response.status}` } : { ok: false, retry, why: `HTTP ${response.status}`, retryAfterMs };
    } catch (error) {
      if (timedOut) return { ok: false, retry: true, why: `no answer within ${this.#options.timeoutMs} ms` };
      if (controller.signal.aborted) return { ok: false, retry: false, why: 'abandoned at shutdown' };
      return { ok: false, retry: true, why: errorCode(error) };
    } finally {
      timer.cancel();
      this.#inFlight = undefined;
    }
  }

  #where(): { sink: NotifySink; target: string } {
    return { sink: this.#options.sink, target: this.#options.url.display };
  }
}

/** The fields a log line gives about a notification. */
function describe(notification: Notification): Record<string, string> {
  const { kind, namespace, name } = notification.workload;
  return { notification: notification.event, workload: `${kind}/${namespace}/${name}` };
}

/** Retry-After in seconds (the HTTP-date form is rare for webhooks and ignored). */
function parseRetryAfter(header: string | null): number | undefined {
  if (header === null || !/^\d+$/.test(header.trim())) return undefined;
  return Number(header.trim()) * 1000;
}

/** A fetch failure by its code (ECONNREFUSED, ENOTFOUND, UND_ERR_SOCKET): undici's messages can quote the URL. */
function errorCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : 'error';
}
