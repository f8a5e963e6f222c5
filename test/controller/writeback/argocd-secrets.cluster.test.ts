/**
 * The write-back's credentials read the way the controller reads them: through the controller's own
 * Kubernetes client, authenticated as a ServiceAccount bound to exactly the shipped write-back Role
 * (manifests/controller/write-back/role.yaml) in the namespace playing Argo CD's, against the real API
 * server — and then a real push to the loopback Git server with them. Without the Role the read is a
 * 403 that names the namespace and never a credential.
 */
import assert from 'node:assert/strict';
import { randomUUID, createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../cluster/api.ts';
import { create, useCluster } from '../../cluster/testing.ts';
import type { Cluster } from '../../cluster/harness.ts';
import { formatOutOfBandFile } from '../../../core/index.ts';
import { systemClock } from '../../../controller/clock.ts';
import { createKubeClient, loadKubeConfig, type KubeClient } from '../../../controller/kube/client.ts';
import { argoCdSecrets } from '../../../controller/writeback/argocd-secrets.ts';
import { SECRET_TYPE_LABEL } from '../../../controller/writeback/credentials.ts';
import { createWriteBack, WRITE_BACK_DEFAULTS } from '../../../controller/writeback/engine.ts';
import { CredentialsReadError } from '../../../controller/writeback/errors.ts';
import { createPlayground, startGitHttpServer, type GitHttpServer, type GitPlayground } from './git-server.ts';

const fixture = useCluster();
const PASSWORD = `canary-${randomUUID()}`;
const ROLE_FILE = path.join(import.meta.dirname, '..', '..', '..', 'manifests', 'controller', 'write-back', 'role.yaml');
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

/** A controller client authenticated as `account` in `namespace` (created here). */
async function clientAs(cluster: Cluster, namespace: string, account: string): Promise<KubeClient> {
  await create(cluster.admin, `/api/v1/namespaces/${namespace}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account } });
  const file = path.join(cluster.stateDir, `kubeconfig-${namespace}-${account}`);
  await writeFile(file, await cluster.kubeconfigFor(namespace, account), { mode: 0o600 });
  return createKubeClient(loadKubeConfig({ kubeconfig: [file] }), { take: () => Promise.resolve() }, undefined, { requestTimeoutMs: 10_000 });
}

/** The shipped Role and RoleBinding, in `namespace`, bound to `account` there. */
async function installShippedRole(cluster: Cluster, namespace: string, account: string): Promise<void> {
  const documents = parseAllDocuments(await readFile(ROLE_FILE, 'utf8')).map((d) => d.toJS() as KubeObject & { subjects?: { namespace: string; name: string }[] });
  for (const object of documents) {
    object.metadata = { ...object.metadata, namespace };
    for (const subject of object.subjects ?? []) Object.assign(subject, { namespace, name: account });
    await create(cluster.admin, `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/${object.kind === 'Role' ? 'roles' : 'rolebindings'}`, object);
  }
}

fixture.test('as the shipped Role: the repository Secret and known hosts are read on demand and the push succeeds; without it a 403 naming no secret', async ({ cluster, namespace }) => {
  await playground.createRepo('as-role', 'main', { 'apps/web/deploy.yaml': 'x\n' });
  const url = server.url('as-role');
  const secret = (name: string, labels: Record<string, string>, stringData: Record<string, string>) =>
    create(cluster.admin, `/api/v1/namespaces/${namespace}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name, labels }, stringData });
  await secret('write', { [SECRET_TYPE_LABEL]: 'repo-write-creds' }, { type: 'git', url: url.slice(0, url.lastIndexOf('/')), username: 'writer', password: PASSWORD });
  await secret('named', {}, { url, username: 'writer', password: PASSWORD });
  await secret('gpg-signing', {}, { gpgSigningKey: '-----BEGIN PGP PRIVATE KEY BLOCK-----\n' });
  await secret('both-signing', {}, { gpgSigningKey: 'k', sshSigningKey: 'k' });
  await create(cluster.admin, `/api/v1/namespaces/${namespace}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-ssh-known-hosts-cm' },
    data: { ssh_known_hosts: 'git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n' },
  });
  await installShippedRole(cluster, namespace, 'writer-account');
  const client = await clientAs(cluster, namespace, 'writer-account');
  const stranger = await clientAs(cluster, namespace, 'no-role');
  try {
    const options = { namespace, credentialsSecret: undefined, signingSecret: undefined, timeoutMs: 5_000 };
    const deps = argoCdSecrets(client, options);
    const chosen = await deps.credentialsFor(url, 'default');
    assert.ok('kind' in chosen && chosen.kind === 'https' && chosen.from === 'repo-write-creds Secret write', JSON.stringify({ ...chosen, password: undefined }));
    assert.match((await deps.knownHosts()) ?? '', /^git\.example\.com ssh-ed25519 /);
    assert.equal(await deps.signingKey?.(), undefined, 'unsigned without --write-back-signing-secret');
    const byName = await argoCdSecrets(client, { ...options, credentialsSecret: 'named' }).credentialsFor(url, 'default');
    assert.ok('kind' in byName && byName.kind === 'https' && byName.from === 'Secret named');
    const missing = await argoCdSecrets(client, { ...options, credentialsSecret: 'absent' }).credentialsFor(url, 'default');
    assert.deepEqual(missing, { refused: 'incomplete-credentials', message: `the Secret absent (--write-back-credentials-secret) does not exist in namespace ${namespace}` });
    await assert.rejects(argoCdSecrets(client, { ...options, signingSecret: 'named' }).signingKey?.() ?? Promise.resolve(), (error: unknown) => error instanceof CredentialsReadError && /has neither sshSigningKey nor gpgSigningKey/.test(error.message));
    await assert.rejects(argoCdSecrets(client, { ...options, signingSecret: 'both-signing' }).signingKey?.() ?? Promise.resolve(), (error: unknown) => error instanceof CredentialsReadError && /has both sshSigningKey and gpgSigningKey: give one/.test(error.message));
    assert.deepEqual(await argoCdSecrets(client, { ...options, signingSecret: 'gpg-signing' }).signingKey?.(), { format: 'openpgp', key: '-----BEGIN PGP PRIVATE KEY BLOCK-----\n' });

    // The engine, with these dependencies, pushes to the real Git server.
    const wb = createWriteBack({ ...WRITE_BACK_DEFAULTS, workDir: path.join(playground.root, 'work-as-role'), batchWindowMs: 0 }, { clock: systemClock(), ...deps });
    const config = { kind: 'Secret' as const, namespace, name: 'db', digest: `v1:${createHash('sha256').update(namespace).digest('hex')}` };
    const result = await wb.submit({
      application: { metadata: { name: 'web', namespace }, spec: { source: { repoURL: url, path: 'apps/web', targetRevision: 'main', plugin: { name: 'driftless-v1' } } } },
      configs: [config],
      workloads: [{ kind: 'Deployment', namespace, name: 'web' }],
    });
    await wb.close();
    assert.equal(result.status, 'committed', JSON.stringify(result));
    assert.equal(await playground.show('as-role', 'main', 'apps/web/.driftless/out-of-band'), formatOutOfBandFile([config]));

    // Without the Role: the engine's result says why, naming the namespace and the status, never the password.
    const refused = createWriteBack({ ...WRITE_BACK_DEFAULTS, workDir: path.join(playground.root, 'work-no-role'), batchWindowMs: 0 }, { clock: systemClock(), ...argoCdSecrets(stranger, options) });
    const failed = await refused.submit({
      application: { metadata: { name: 'web', namespace }, spec: { source: { repoURL: url, path: 'apps/web', targetRevision: 'main', plugin: { name: 'driftless-v1' } } } },
      configs: [{ ...config, digest: `v1:${'0'.repeat(64)}` }],
      workloads: [{ kind: 'Deployment', namespace, name: 'web' }],
    });
    await refused.close();
    assert.equal(failed.status, 'failed');
    assert.ok(failed.status === 'failed');
    assert.equal(failed.error.message, `write-back to ${url}: reading the credentials failed (listing Argo CD's repository Secrets in namespace ${namespace} failed: 403 Forbidden)`);
    assert.ok(!JSON.stringify([chosen, byName, result, failed].map((r) => ('password' in r ? { ...r, password: undefined } : r))).includes(PASSWORD));
  } finally {
    await client.close();
    await stranger.close();
  }
});
