/**
 * The controller's one HTTP server: `/healthz` (every watch alive), `/readyz`
 * (every first list done) and `/metrics` (Prometheus text). Nothing else is
 * exposed. Handlers read O(1) state only.
 */
import type { Server } from 'node:http';
import express from 'express';
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

/** Starts the server; resolves once it listens, with the bound address. */
export async function startHttpServer(address: string, sources: HealthSources, registry: Registry): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_request, response) => {
    const problem = sources.unhealthy();
    response.status(problem === undefined ? 200 : 503).type('text/plain').send(problem === undefined ? 'ok\n' : `${problem}\n`);
  });
  app.get('/readyz', (_request, response) => {
    const ready = sources.ready();
    response.status(ready ? 200 : 503).type('text/plain').send(ready ? 'ok\n' : 'caches not synced yet\n');
  });
  app.get('/metrics', (_request, response, next) => {
    registry.metrics().then((text) => {
      response.status(200).type(registry.contentType).send(text);
    }, next);
  });
  app.use((_request, response) => {
    response.status(404).type('text/plain').send('not found\n');
  });
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
