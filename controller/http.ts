/**
 * The controller's one HTTP server: `/healthz` (every watch alive), `/readyz`
 * (every first list done) and `/metrics` (Prometheus text). Nothing else is
 * exposed. Handlers read O(1) state only. Plain `node:http`: three fixed GET
 * routes need no framework, and express cost ~150 modules and ~20 MB of the
 * idle controller's RSS (ADR 0021).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

/** What the endpoints report. */
export interface HealthSources {
  /** `undefined` when healthy, else why not (a watch dead or silent past its bound). */
  unhealthy(): string | undefined;
  /** True once every first list has completed. */
  ready(): boolean;
}

/** `host:port`, `:port` (all interfaces) or `port`. */
export function parseListenAddress(text: string): { host: string | undefined; port: number } {
  const colon = text.lastIndexOf(':');
  const host = colon === -1 ? undefined : text.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(colon === -1 ? text : text.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`${JSON.stringify(text)} is not host:port`);
  return { host: host === '' ? undefined : host, port };
}

const TEXT = 'text/plain; charset=utf-8';

function send(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

/** Answers one request: GET (or HEAD) of the three paths, the query ignored; 404 for anything else. */
function handle(request: IncomingMessage, response: ServerResponse, sources: HealthSources, registry: Registry): void {
  const path = (request.url ?? '/').split('?', 1)[0];
  const read = request.method === 'GET' || request.method === 'HEAD';
  if (read && path === '/healthz') {
    const problem = sources.unhealthy();
    send(response, problem === undefined ? 200 : 503, TEXT, problem === undefined ? 'ok\n' : `${problem}\n`);
  } else if (read && path === '/readyz') {
    const ready = sources.ready();
    send(response, ready ? 200 : 503, TEXT, ready ? 'ok\n' : 'caches not synced yet\n');
  } else if (read && path === '/metrics') {
    registry.metrics().then(
      (text) => send(response, 200, registry.contentType, text),
      // A collector that throws: say so without the details (they could name anything).
      () => send(response, 500, TEXT, 'metrics collection failed\n'),
    );
  } else {
    send(response, 404, TEXT, 'not found\n');
  }
}

/** Starts the server; resolves once it listens, with the bound address. */
export async function startHttpServer(address: string, sources: HealthSources, registry: Registry): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const app = createServer((request, response) => handle(request, response, sources, registry));
  const { host, port } = parseListenAddress(address);
  const server = await new Promise<Server>((resolve, reject) => {
    const listening = host === undefined ? app.listen(port) : app.listen(port, host);
    listening.once('listening', () => resolve(listening));
    listening.once('error', reject);
  });
  const bound = server.address();
  return {
    server,
    port: typeof bound === 'object' && bound !== null ? bound.port : port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
