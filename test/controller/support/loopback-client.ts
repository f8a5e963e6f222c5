/**
 * The controller's API client (controller/kube/client.ts) pointed at a plain HTTP server of the test's own on
 * loopback: for unit tests of how the adapter reads answers a real API server would not give on demand.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeClient, type KubeClient } from '../../../controller/kube/client.ts';

/** Starts `server` on a free loopback port and returns a client of it, with no credentials and no rate limit. */
export async function loopbackClient(server: Server, options?: Parameters<typeof createKubeClient>[3]): Promise<KubeClient> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'local', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'nobody' }],
    contexts: [{ name: 'local', cluster: 'local', user: 'nobody' }],
    currentContext: 'local',
  });
  return createKubeClient(config, { take: () => Promise.resolve() }, undefined, options);
}
