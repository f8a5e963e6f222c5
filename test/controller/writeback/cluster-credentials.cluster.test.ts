/**
 * The write-back's credentials as Argo CD stores them: repository Secrets
 * created in the real test cluster's API server (stringData in, base64 data
 * out), listed by their Argo CD label, chosen by `selectCredentials`, and
 * used for a real push to the loopback Git server. The restart path will do
 * the same read through the controller's client; this pins what it reads.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before } from 'node:test';
import type { KubeList } from '../../cluster/api.ts';
import { useCluster } from '../../cluster/testing.ts';
import { formatOutOfBandFile } from '../../../core/index.ts';
import { systemClock } from '../../../controller/clock.ts';
import { knownHostsOf, SECRET_TYPE_LABEL, selectCredentials, type SecretLike } from '../../../controller/writeback/credentials.ts';
import { createWriteBack, WRITE_BACK_DEFAULTS } from '../../../controller/writeback/engine.ts';
import { createPlayground, startGitHttpServer, type GitHttpServer, type GitPlayground } from './git-server.ts';

const fixture = useCluster();
const PASSWORD = `canary-${randomUUID()}`;
let playground: GitPlayground;
let server: GitHttpServer;

before(async () => {
  playground = await createPlayground();
  server = await startGitHttpServer(playground, 'writer', PASSWORD);
});
after(async () => {
  await server.close();
  await playground.dispose();
});

fixture.test('repository Secrets read from the API server give the push its credentials; the write Secret wins', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  await playground.createRepo('from-cluster', 'main', { 'apps/web/deploy.yaml': 'x\n' });
  const url = server.url('from-cluster');
  const create = (name: string, type: string, stringData: Record<string, string>) =>
    api.request('POST', `/api/v1/namespaces/${namespace}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, labels: { [SECRET_TYPE_LABEL]: type } },
      stringData,
    });
  await create('read', 'repository', { type: 'git', url, username: 'reader', password: 'not-allowed-to-push' });
  await create('write', 'repo-write-creds', { type: 'git', url: url.slice(0, url.lastIndexOf('/')), username: 'writer', password: PASSWORD });
  await create('unrelated', 'cluster', { name: 'x', server: 'https://x' });
  await api.request('POST', `/api/v1/namespaces/${namespace}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-ssh-known-hosts-cm' },
    data: { ssh_known_hosts: 'git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n' },
  });

  const selector = encodeURIComponent(`${SECRET_TYPE_LABEL} in (repository,repository-write,repo-creds,repo-write-creds)`);
  const secrets = (await api.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/secrets?labelSelector=${selector}`)).items as unknown as SecretLike[];
  assert.deepEqual(secrets.map((s) => s.metadata.name).sort(), ['read', 'write']);
  // What the API server returns holds base64 data only: the decoding path is the one exercised.
  assert.ok(secrets.every((s) => s.stringData === undefined && s.data !== undefined));
  const knownHosts = knownHostsOf(await api.request<{ data?: Record<string, string> }>('GET', `/api/v1/namespaces/${namespace}/configmaps/argocd-ssh-known-hosts-cm`));
  assert.match(knownHosts ?? '', /^git\.example\.com ssh-ed25519 /);

  const wb = createWriteBack(
    { ...WRITE_BACK_DEFAULTS, workDir: path.join(playground.root, 'work'), batchWindowMs: 0 },
    { clock: systemClock(), credentialsFor: async (repoURL) => selectCredentials(repoURL, secrets), knownHosts: async () => knownHosts },
  );
  const digest = `v1:${createHash('sha256').update(namespace).digest('hex')}`;
  const config = { kind: 'Secret' as const, namespace, name: 'db', digest };
  const result = await wb.submit({
    application: { metadata: { name: 'web', namespace }, spec: { source: { repoURL: url, path: 'apps/web', targetRevision: 'main', plugin: { name: 'driftless-v1' } } } },
    configs: [config],
    workloads: [{ kind: 'Deployment', namespace, name: 'web' }],
  });
  await wb.close();
  assert.equal(result.status, 'committed', JSON.stringify(result));
  assert.ok(!JSON.stringify(result).includes(PASSWORD));
  assert.equal(await playground.show('from-cluster', 'main', 'apps/web/.driftless/out-of-band'), formatOutOfBandFile([config]));
});
