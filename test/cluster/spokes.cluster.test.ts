/**
 * The hub-and-spokes harness: the real Argo CD in a hub deploys into two spoke
 * clusters registered as `argocd cluster add` registers them (cluster Secrets
 * with a ServiceAccount bearer token and the spoke's CA), one Application by
 * destination `server` and one by destination `name`. What lands where is read
 * from each cluster, and who wrote it from each spoke's audit log.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { stringify } from 'yaml';
import type { ApiClient, KubeObject } from './api.ts';
import { argoCdNamespace } from './argocd.ts';
import { describeAudit, WRITE_VERBS } from './audit.ts';
import { argoCdManagerUser, clusterSecretTypeLabel, createSpokeApplication, type Spoke } from './spokes.ts';
import { listPods, podIsReady, podTemplate, useSpokes } from './testing.ts';

const fixture = useSpokes({ spoke: { auditLog: true } });

/** A Deployment and the ConfigMap it reads, both named `name`, as a directory of manifests. */
function workloadFiles(dir: string, name: string): Record<string, string> {
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { greeting: `hello from ${name}` } };
  const template = podTemplate({ app: name });
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: name } },
      template: { ...template, spec: { ...template.spec, volumes: [{ name: 'config', configMap: { name } }] } },
    },
  };
  return { [`${dir}/configmap.yaml`]: stringify(configMap), [`${dir}/deployment.yaml`]: stringify(deployment) };
}

async function status(client: ApiClient, path: string): Promise<number> {
  return (await client.send('GET', path)).status;
}

function paths(namespace: string, name: string): { deployment: string; configMap: string } {
  return {
    deployment: `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`,
    configMap: `/api/v1/namespaces/${namespace}/configmaps/${name}`,
  };
}

/** The writes to an object itself (no subresource) in a spoke's audit log. */
async function writesTo(spoke: Spoke, namespace: string, resource: string, name: string): Promise<readonly { user: string; verb: string }[]> {
  const events = await spoke.cluster.audit({ namespace, resource, name, subresource: '', verbs: WRITE_VERBS });
  assert.ok(events.length > 0, `${spoke.name}: no write to ${resource} ${namespace}/${name} in the audit log`);
  assert.ok(
    events.every((event) => event.user.username === argoCdManagerUser),
    `${spoke.name}: every write to ${resource} ${namespace}/${name} is Argo CD's, as ${argoCdManagerUser}:\n${describeAudit(events)}`,
  );
  return events.map((event) => ({ user: event.user.username, verb: event.verb }));
}

fixture.test('Argo CD in the hub deploys into each spoke, by server and by name, as the spoke’s argocd-manager', async ({ hub, argocd, spokes, namespace }) => {
  const [spokeA, spokeB] = spokes;
  assert.ok(spokeA && spokeB, 'two spokes');
  const nameA = 'web-a';
  const nameB = 'web-b';
  const repo = await argocd.createRepo(namespace);
  const revision = await repo.commit({ ...workloadFiles('a', nameA), ...workloadFiles('b', nameB) }, 'a workload for each spoke');
  const source = (path: string): Record<string, unknown> => ({ source: { repoURL: repo.url, targetRevision: repo.branch, path } });
  await createSpokeApplication(argocd, `${namespace}-a`, { spoke: spokeA, namespace, by: 'server' }, source('a'));
  await createSpokeApplication(argocd, `${namespace}-b`, { spoke: spokeB, namespace, by: 'name' }, source('b'));
  await argocd.sync(`${namespace}-a`);
  await argocd.sync(`${namespace}-b`);
  // Healthy means the Deployment rolled out: the spoke's own scheduler and kwok made its pods Ready.
  await argocd.waitForSyncedAndHealthy(`${namespace}-a`, revision);
  await argocd.waitForSyncedAndHealthy(`${namespace}-b`, revision);

  for (const [spoke, name, other] of [[spokeA, nameA, spokeB], [spokeB, nameB, spokeA]] as const) {
    const { deployment, configMap } = paths(namespace, name);
    assert.equal(await status(spoke.cluster.admin, deployment), 200, `${spoke.name} has Deployment ${name}`);
    assert.equal(await status(spoke.cluster.admin, configMap), 200, `${spoke.name} has ConfigMap ${name}`);
    const pods = await listPods(spoke.cluster.admin, namespace, `app=${name}`);
    assert.equal(pods.length, 2, `${spoke.name} runs the two pods of ${name}`);
    assert.ok(pods.every(podIsReady), `${spoke.name}: the pods of ${name} are Ready`);
    assert.equal(await status(other.cluster.admin, deployment), 404, `${other.name} has no Deployment ${name}`);
    assert.equal(await status(hub.admin, deployment), 404, `the hub has no Deployment ${name}`);
    assert.equal(await status(hub.admin, configMap), 404, `the hub has no ConfigMap ${name}`);
    // The application controller reached the spoke with the ServiceAccount's token, not as an admin.
    const deploymentWrites = await writesTo(spoke, namespace, 'deployments', name);
    const configMapWrites = await writesTo(spoke, namespace, 'configmaps', name);
    assert.ok([...deploymentWrites, ...configMapWrites].some((write) => write.verb === 'create'), `${spoke.name}: Argo CD created the objects`);
  }
});

fixture.test('each spoke is a cluster Secret in the hub, as argocd cluster add writes it', async ({ hub, spokes }) => {
  const secrets = await hub.admin.request<{ items: (KubeObject & { data?: Record<string, string> })[] }>(
    'GET',
    `/api/v1/namespaces/${argoCdNamespace}/secrets?labelSelector=${encodeURIComponent(`${clusterSecretTypeLabel}=cluster`)}`,
  );
  assert.equal(secrets.items.length, spokes.length);
  for (const spoke of spokes) {
    const secret = secrets.items.find((item) => item.metadata?.name === spoke.secretName);
    assert.ok(secret, `the cluster Secret of ${spoke.name}`);
    const field = (key: string): string => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
    assert.equal(field('name'), spoke.name);
    assert.equal(field('server'), spoke.server);
    assert.match(spoke.server, /^https:\/\/127\.0\.0\.1:\d+$/);
    // The spoke's certificate file starts with its serving certificate (the self-signed CA follows):
    // Argo CD checks the server's name against it, as it would a real cluster's (`insecure: false`).
    const serving = new X509Certificate(spoke.cluster.ca);
    assert.ok(serving.subjectAltName?.split(', ').includes('IP Address:127.0.0.1'), `SANs: ${serving.subjectAltName}`);
    assert.equal(serving.checkIP('127.0.0.1'), '127.0.0.1');
    // Only the config's shape is compared: its token is a credential and must not reach an assertion message.
    const config = JSON.parse(field('config')) as { bearerToken?: unknown; tlsClientConfig?: { insecure?: unknown; caData?: unknown } };
    assert.deepEqual(Object.keys(config).sort(), ['bearerToken', 'tlsClientConfig']);
    assert.equal(typeof config.bearerToken, 'string');
    assert.equal(config.tlsClientConfig?.insecure, false);
    assert.ok(
      Buffer.from(String(config.tlsClientConfig?.caData), 'base64').toString('utf8') === spoke.cluster.ca,
      'caData is base64 of the spoke’s CA PEM',
    );
  }
});
