/**
 * A plain-HTTP proxy on loopback in front of the real API server: it forwards every request as it
 * came (the client's own token included) and streams every answer back, watches too. A test can
 * make it hold one matching request until the test has acted on the cluster (a write, a compaction
 * of etcd), so that what the API server then answers is its real answer to a real situation.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { parse, stringify } from 'yaml';
import type { Cluster } from '../../cluster/harness.ts';

/** The answer the API server gave to the held request. */
export interface HeldAnswer {
  readonly status: number;
  readonly body: string;
}

/** A running proxy. */
export interface ApiProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** The admin kubeconfig (YAML), pointed at the proxy. */
  readonly kubeconfig: string;
  /** Resolves with the API server's answer to the held request, once it was forwarded. */
  readonly held: Promise<HeldAnswer>;
  /** `METHOD url status` of every request forwarded so far, for a failing test to print. */
  readonly requests: readonly string[];
  close(): Promise<void>;
}

/** Which request to hold (the first that matches, once) and what to do before forwarding it. */
export interface HoldRule {
  matches(method: string, url: URL): boolean;
  /** Runs while the request waits; the request is forwarded when it resolves. */
  meanwhile(): Promise<void>;
}

/** Starts a proxy to the cluster's API server. */
export async function startApiProxy(cluster: Cluster, hold: HoldRule): Promise<ApiProxy> {
  const upstream = new URL(cluster.server);
  let holding = false;
  const requests: string[] = [];
  let settle: { resolve(answer: HeldAnswer): void; reject(error: unknown): void } | undefined;
  const held = new Promise<HeldAnswer>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // The test awaits it; a rejection before that must not count as unhandled.
  held.catch(() => {});

  const forward = (incoming: IncomingMessage, response: ServerResponse, onAnswer?: (answer: HeldAnswer) => void): Promise<void> => new Promise((resolve) => {
    const headers = { ...incoming.headers, host: upstream.host };
    const upstreamRequest = httpsRequest({ host: upstream.hostname, port: upstream.port, path: incoming.url, method: incoming.method, headers, ca: cluster.ca }, (answer) => {
      requests.push(`${incoming.method ?? ''} ${incoming.url ?? ''} ${answer.statusCode ?? 0}`);
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      if (onAnswer === undefined) {
        answer.pipe(response);
      } else {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          onAnswer({ status: answer.statusCode ?? 0, body: body.toString('utf8') });
          response.end(body);
        });
      }
      answer.on('end', () => resolve());
      answer.on('error', () => resolve());
    });
    upstreamRequest.on('error', (error) => {
      if (!response.headersSent) response.writeHead(502);
      response.end();
      settle?.reject(error);
      resolve();
    });
    // A client that goes away (a watch it stops) ends the upstream request too.
    response.on('close', () => upstreamRequest.destroy());
    incoming.pipe(upstreamRequest);
  });

  const server: Server = createServer((incoming, response) => {
    const url = new URL(incoming.url ?? '/', 'http://proxy');
    if (!holding && hold.matches(incoming.method ?? 'GET', url)) {
      holding = true;
      hold.meanwhile().then(
        () => forward(incoming, response, (answer) => settle?.resolve(answer)),
        (error: unknown) => {
          settle?.reject(error);
          response.writeHead(502);
          response.end();
        },
      );
      return;
    }
    void forward(incoming, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = parse(cluster.kubeconfig) as { clusters: { cluster: Record<string, unknown> }[] };
  // client-node refuses an http:// server unless TLS verification is off: there is no TLS to verify.
  for (const entry of config.clusters) entry.cluster = { server: url, 'insecure-skip-tls-verify': true };
  return {
    url,
    kubeconfig: stringify(config),
    held,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
