/**
 * A real HTTP receiver on loopback for the notification tests: records every
 * request and answers each from a script of statuses (the last repeats), or
 * holds answers until released.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as received. */
export interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A loopback receiver. */
export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  readonly requests: Received[];
  /** Resolves once `count` requests have arrived; rejects after `deadlineMs` of real time. */
  waitFor(count: number, deadlineMs?: number): Promise<void>;
  /** Answers held requests, and answers later ones at once again. */
  release(): void;
  close(): Promise<void>;
}

/** Starts a receiver. `statuses`: the status of the 1st, 2nd, … request; the last repeats. `hold`: answer only after release(). */
export async function startReceiver(options: { statuses?: readonly number[]; hold?: boolean; headers?: Record<string, string> } = {}): Promise<Receiver> {
  const statuses = options.statuses ?? [200];
  const requests: Received[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  let held: (() => void)[] | undefined = options.hold === true ? [] : undefined;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const status = statuses[Math.min(requests.length, statuses.length - 1)] ?? 200;
      requests.push({ method: request.method ?? '', path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      const answer = (): void => {
        response.writeHead(status, { 'content-type': 'text/plain', ...(status >= 300 && status < 400 ? { location: '/elsewhere' } : {}), ...options.headers });
        response.end(status < 300 ? 'ok' : 'no');
      };
      if (held === undefined) answer();
      else held.push(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    waitFor(count, deadlineMs = 5000) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`expected ${count} requests within ${deadlineMs} ms, got ${requests.length}`)), deadlineMs);
        waiters.push({ count, resolve: () => { clearTimeout(deadline); resolve(); } });
      });
    },
    release() {
      const pending = held ?? [];
      held = undefined;
      for (const answer of pending) answer();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
