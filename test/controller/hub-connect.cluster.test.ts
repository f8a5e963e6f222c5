/**
 * Argo CD cluster Secrets, made the way `argocd cluster add` makes them (a
 * ServiceAccount's bearer token and the CA), stored in and read back from the
 * real API server, connected with `kubeConfigFor` through the controller's own
 * client: a token with the CA, a client certificate, `insecure`, `serverName`,
 * a proxy, and an exec credential plugin (a real script). A wrong token is a
 * clear error that names the cluster and not the token. And a kubeconfig file
 * (`--kubeconfig`, `--argocd-kubeconfig`) whose token is rotated is read again.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { Counter } from 'prom-client';
import { useCluster } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import type { Cluster } from '../cluster/harness.ts';
import { systemClock } from '../../controller/clock.ts';
import { readClusterSecret, type ArgoCluster } from '../../controller/hub/cluster-secret.ts';
import { ClusterConnectError, kubeConfigFor, probeCluster } from '../../controller/hub/connect.ts';
import { KubeApiError, KubeTransportError } from '../../controller/kube/errors.ts';
import { loadKubeConfig, type KubeClient } from '../../controller/kube/client.ts';
import { connectCluster } from '../../controller/wiring/cluster-client.ts';

const fixture = useCluster({ clientCertificates: true });
const b64 = (text: string): string => Buffer.from(text).toString('base64');
const V1 = 'client.authentication.k8s.io/v1';

/** Stores a cluster Secret in `namespace` (playing Argo CD's) and reads it back as the API returns it. */
async function storedCluster(cluster: Cluster, namespace: string, name: string, data: Record<string, string>): Promise<ArgoCluster> {
  await cluster.admin.request('POST', `/api/v1/namespaces/${namespace}/secrets`, {
    apiVersion: 'v1', kind: 'Secret',
    metadata: { name, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
    type: 'Opaque',
    stringData: data,
  });
  const raw = await cluster.admin.request('GET', `/api/v1/namespaces/${namespace}/secrets/${name}`);
  const result = readClusterSecret(raw);
  assert.equal(result.kind, 'cluster', JSON.stringify(result.kind === 'refused' ? result : ''));
  return result.cluster;
}

function clientOf(argo: ArgoCluster): KubeClient {
  const apiRequests = new Counter({ name: 'hub_test_api_requests', help: 'test', labelNames: ['verb', 'code'] as const, registers: [] });
  return connectCluster(kubeConfigFor(argo), { kubeQps: 50, kubeBurst: 100, kubeRequestTimeout: { ms: 10_000, text: '10s' } }, { clock: systemClock(), apiRequests });
}

/** Lists namespaces through the connection: proof that it reached the server as someone allowed to. */
async function namespaceNames(argo: ArgoCluster): Promise<string[]> {
  const client = clientOf(argo);
  try {
    assert.match(await probeCluster(client, argo), /^v1\./);
    const list = await client.request<{ items: { metadata: { name: string } }[] }>('GET', '/api/v1/namespaces');
    return list.items.map((item) => item.metadata.name);
  } finally {
    await client.close();
  }
}

/** `argocd cluster add`: a ServiceAccount bound to cluster-admin, its token and the server's CA. */
async function managerToken(cluster: Cluster, namespace: string): Promise<string> {
  await cluster.createServiceAccount(namespace, 'argocd-manager');
  return cluster.tokenFor(namespace, 'argocd-manager');
}

fixture.test('a bearer token with the CA, as `argocd cluster add` stores it', async ({ cluster, namespace }) => {
  const token = await managerToken(cluster, namespace);
  const argo = await storedCluster(cluster, namespace, 'cluster-token', {
    name: 'prod', server: `${cluster.server}/`, namespaces: namespace,
    config: JSON.stringify({ bearerToken: token, tlsClientConfig: { insecure: false, caData: b64(cluster.ca) } }),
  });
  assert.equal(argo.server, cluster.server);
  assert.deepEqual(argo.namespaces, [namespace]);
  assert.ok((await namespaceNames(argo)).includes(namespace));
});

fixture.test('a client certificate (certData and keyData)', async ({ cluster, namespace }) => {
  const { certPem, keyPem } = cluster.clientCertFor('argocd-cert-user', ['system:masters']);
  const argo = await storedCluster(cluster, namespace, 'cluster-cert', {
    name: 'cert', server: cluster.server,
    config: JSON.stringify({ tlsClientConfig: { caData: b64(cluster.ca), certData: b64(certPem), keyData: b64(keyPem) } }),
  });
  assert.ok((await namespaceNames(argo)).includes(namespace));
});

fixture.test('insecure: true connects without the CA; neither CA nor insecure is a TLS error naming the cluster', async ({ cluster, namespace }) => {
  const token = await managerToken(cluster, namespace);
  const insecure = await storedCluster(cluster, namespace, 'cluster-insecure', {
    name: 'insecure', server: cluster.server, config: JSON.stringify({ bearerToken: token, tlsClientConfig: { insecure: true } }),
  });
  assert.ok((await namespaceNames(insecure)).includes(namespace));
  const unverified = await storedCluster(cluster, namespace, 'cluster-no-ca', { name: 'no-ca', server: cluster.server, config: JSON.stringify({ bearerToken: token }) });
  const error = await namespaceNames(unverified).then(() => undefined, (caught: unknown) => caught);
  assert.ok(error instanceof ClusterConnectError, String(error));
  assert.ok(error.cause instanceof KubeTransportError);
  assert.match(error.message, /cannot connect to cluster no-ca \(Secret cluster-no-ca, https:\/\/127\.0\.0\.1:\d+\).*certificate/);
  assert.doesNotMatch(error.message, new RegExp(token));
});

fixture.test('serverName is the name the serving certificate is checked against', async ({ cluster, namespace }) => {
  const token = await managerToken(cluster, namespace);
  // kube-apiserver's self-signed serving certificate names kubernetes.default among its SANs.
  const named = await storedCluster(cluster, namespace, 'cluster-sni', {
    name: 'sni', server: cluster.server,
    config: JSON.stringify({ bearerToken: token, tlsClientConfig: { caData: b64(cluster.ca), serverName: 'kubernetes.default' } }),
  });
  assert.ok((await namespaceNames(named)).includes(namespace));
  const wrong = await storedCluster(cluster, namespace, 'cluster-sni-wrong', {
    name: 'sni-wrong', server: cluster.server,
    config: JSON.stringify({ bearerToken: token, tlsClientConfig: { caData: b64(cluster.ca), serverName: 'not-the-server.example' } }),
  });
  await assert.rejects(namespaceNames(wrong), (error: unknown) => error instanceof ClusterConnectError && /not-the-server\.example/.test(error.message));
});

fixture.test('a wrong token is a 401 error that names the cluster and not the token', async ({ cluster, namespace }) => {
  const token = `wrong-${(await managerToken(cluster, namespace)).slice(-16)}`;
  const argo = await storedCluster(cluster, namespace, 'cluster-wrong', {
    name: 'wrong', server: cluster.server, config: JSON.stringify({ bearerToken: token, tlsClientConfig: { caData: b64(cluster.ca) } }),
  });
  const error = await namespaceNames(argo).then(() => undefined, (caught: unknown) => caught);
  assert.ok(error instanceof ClusterConnectError, String(error));
  assert.ok(error.cause instanceof KubeApiError && error.cause.status === 401);
  assert.match(error.message, /^cannot connect to cluster wrong \(Secret cluster-wrong, https:\/\/127\.0\.0\.1:\d+\): the API server refused the credentials/);
  assert.doesNotMatch(`${error.message} ${String(error.cause)}`, new RegExp(token));
});

/** An HTTP CONNECT proxy that counts the tunnels it opened. */
async function startProxy(): Promise<{ server: Server; url: string; tunnels: () => number }> {
  let tunnels = 0;
  const server = createServer();
  server.on('connect', (request, socket, head) => {
    tunnels++;
    const [host, port] = (request.url ?? '').split(':');
    const upstream = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tunnels: () => tunnels };
}

fixture.test('proxyUrl: every connection goes through the proxy', async ({ cluster, namespace }) => {
  const token = await managerToken(cluster, namespace);
  const proxy = await startProxy();
  try {
    const argo = await storedCluster(cluster, namespace, 'cluster-proxy', {
      name: 'proxied', server: cluster.server, config: JSON.stringify({ bearerToken: token, proxyUrl: proxy.url, tlsClientConfig: { caData: b64(cluster.ca) } }),
    });
    assert.ok((await namespaceNames(argo)).includes(namespace));
    assert.ok(proxy.tunnels() >= 1, `tunnels: ${proxy.tunnels()}`);
  } finally {
    proxy.server.closeAllConnections();
    await new Promise((resolve) => proxy.server.close(resolve));
  }
});

/** A real exec credential plugin: prints an ExecCredential with the token of run N from `tokens.json`. */
async function execPlugin(cluster: Cluster, namespace: string, tokens: readonly string[]): Promise<{ command: string; runs: () => Promise<number> }> {
  const dir = cluster.stateDir;
  const tokensFile = join(dir, `${namespace}-tokens.json`);
  const runsFile = join(dir, `${namespace}-runs`);
  await writeFile(tokensFile, JSON.stringify(tokens), { mode: 0o600 });
  const command = join(dir, `${namespace}-get-token`);
  await writeFile(command, `#!${process.execPath}
const fs = require('node:fs');
const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);
if (info.spec.interactive !== false || info.spec.cluster.server !== process.env.EXPECT_SERVER) process.exit(2);
fs.appendFileSync(${JSON.stringify(runsFile)}, 'x');
const run = fs.readFileSync(${JSON.stringify(runsFile)}, 'utf8').length;
const tokens = JSON.parse(fs.readFileSync(${JSON.stringify(tokensFile)}, 'utf8'));
process.stdout.write(JSON.stringify({ apiVersion: '${V1}', kind: 'ExecCredential', status: { token: tokens[Math.min(run, tokens.length) - 1] } }));
`);
  await chmod(command, 0o755);
  return { command, runs: async () => (await readFile(runsFile, 'utf8').catch(() => '')).length };
}

fixture.test('an exec provider: a real plugin script, run again after a 401', async ({ cluster, namespace }) => {
  const token = await managerToken(cluster, namespace);
  // The first run hands out a token the server refuses: the client's 401 makes it run the plugin again.
  const plugin = await execPlugin(cluster, namespace, ['not-a-valid-token', token]);
  const argo = await storedCluster(cluster, namespace, 'cluster-exec', {
    name: 'exec', server: cluster.server,
    config: JSON.stringify({
      bearerToken: 'ignored-with-exec',
      execProviderConfig: { command: plugin.command, args: ['get-token'], env: { EXPECT_SERVER: cluster.server }, apiVersion: V1, provideClusterInfo: true },
      tlsClientConfig: { caData: b64(cluster.ca) },
    }),
  });
  assert.ok((await namespaceNames(argo)).includes(namespace));
  assert.equal(await plugin.runs(), 2);
});

fixture.test('a kubeconfig file whose token is rotated under a running client (--kubeconfig, --argocd-kubeconfig): read again at the 401', async ({ cluster, namespace, t }) => {
  const file = join(await mkdtemp(join(tmpdir(), 'driftless-kubeconfig-')), 'kubeconfig');
  t.after(() => rm(dirname(file), { recursive: true, force: true }));
  await cluster.createServiceAccount(namespace, 'first');
  await cluster.createServiceAccount(namespace, 'second');
  await writeFile(file, await cluster.kubeconfigFor(namespace, 'first'));
  const apiRequests = new Counter({ name: 'kubeconfig_test_api_requests', help: 'test', labelNames: ['verb', 'code'] as const, registers: [] });
  const client = connectCluster(loadKubeConfig({ kubeconfig: [file] }), { kubeQps: 50, kubeBurst: 100, kubeRequestTimeout: { ms: 10_000, text: '10s' } }, { clock: systemClock(), apiRequests });
  const whoAmI = async (): Promise<string> => (await client.request<{ status: { userInfo: { username: string } } }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  })).status.userInfo.username;
  try {
    assert.equal(await whoAmI(), `system:serviceaccount:${namespace}:first`);
    // The file is rewritten (a mounted Secret updated) and the old identity removed: its token now gets a 401.
    await writeFile(file, await cluster.kubeconfigFor(namespace, 'second'));
    await cluster.admin.request('DELETE', `/api/v1/namespaces/${namespace}/serviceaccounts/first`);
    // The API server may take its cached authentication of the old token for a few seconds more (10 s at most).
    await waitFor('a request as the new identity, no restart', async () => (await whoAmI()) === `system:serviceaccount:${namespace}:second`, { timeoutMs: 30_000 });
  } finally {
    await client.close();
  }
});
