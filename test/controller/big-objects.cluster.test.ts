/**
 * Big configs restart exactly as small ones: a Deployment mounting a Secret of the largest size the
 * API server accepts (1 MiB of data: core validation's MaxSecretSize, 1,048,576 bytes; one byte more
 * is refused with 422) and a Deployment taking a ConfigMap of 5,000 keys by envFrom are each rotated
 * (one key changed) next to a Deployment with a small Secret; each gets one RestartStarted, one
 * RestartFinished, every old pod evicted once and replaced, and a new digest recorded.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import type { KubeObject } from '../cluster/api.ts';
import { create, useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { startControllerProcess } from './support/process.ts';
import { COLLECTIONS, eventSummary, eventsFor, read, storedSecretValue, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';

const fixture = useCluster();

/** Core validation's MaxSecretSize: the sum of a Secret's (or a ConfigMap's) value lengths may not exceed it. */
const MAX_DATA_BYTES = 1024 * 1024;
const CONFIG_MAP_KEYS = 5000;
const REPLICAS = 2;

/** A value of exactly `size` bytes that carries the leak canary, so the leak check at stop covers it. */
function bigValue(size: number, last: string): Buffer {
  const value = Buffer.alloc(size, 'x');
  value.write(storedSecretValue('big'), 0);
  value.write(last, size - 1);
  return value;
}

function bigSecret(name: string, size: number): KubeObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name }, data: { blob: bigValue(size, 'a').toString('base64') } };
}

function manyKeys(name: string): KubeObject {
  const data: Record<string, string> = {};
  for (let index = 0; index < CONFIG_MAP_KEYS; index++) data[`key-${String(index).padStart(4, '0')}`] = `value-${index}`.padEnd(100, '.');
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data };
}

/** A Deployment whose pods mount the Secret as a volume. */
function mountingSecret(name: string, secret: string): KubeObject {
  const deployment = workload('Deployment', name, { replicas: REPLICAS, uses: {} });
  const template = (deployment.spec as { template: { spec: Record<string, unknown> } }).template.spec;
  template['volumes'] = [{ name: 'secret', secret: { secretName: secret } }];
  (template['containers'] as Record<string, unknown>[])[0] = { ...(template['containers'] as Record<string, unknown>[])[0], volumeMounts: [{ name: 'secret', mountPath: '/etc/secret' }] };
  return deployment;
}

/** A Deployment whose pods take every key of the ConfigMap as environment variables. */
function envFromConfigMap(name: string, configMap: string): KubeObject {
  const deployment = workload('Deployment', name, { replicas: REPLICAS, uses: {} });
  const template = (deployment.spec as { template: { spec: Record<string, unknown> } }).template.spec;
  (template['containers'] as Record<string, unknown>[])[0] = { ...(template['containers'] as Record<string, unknown>[])[0], envFrom: [{ configMapRef: { name: configMap } }] };
  return deployment;
}

/** VmRSS and VmHWM of a process: figures for the report, never asserted. */
async function memoryOf(pid: number): Promise<string> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const field = (name: string): string => new RegExp(`${name}:\\s*(\\d+ kB)`).exec(status)?.[1] ?? 'unknown';
  return `VmRSS ${field('VmRSS')}, VmHWM ${field('VmHWM')}`;
}

const restartedFor = async (api: Parameters<typeof read>[0], namespace: string, name: string): Promise<string | undefined> =>
  (await read(api, `${COLLECTIONS.Deployment(namespace)}/${name}`)).metadata?.annotations?.['driftless.dev/restarted-for'];

fixture.test('a 1 MiB Secret and a ConfigMap of 5,000 keys restart exactly as a small Secret does', async ({ cluster, namespace, t }) => {
  const api = cluster.admin;
  // The limit, stated by the API server itself: one byte over 1 MiB of data is refused.
  const refused = await api.send('POST', COLLECTIONS.Secret(namespace), bigSecret('too-big', MAX_DATA_BYTES + 1));
  assert.equal(refused.status, 422, 'one byte over 1 MiB of Secret data is refused');
  assert.match(JSON.stringify(refused.body), /Too long: may not be more than 1048576 bytes/);
  await create(api, COLLECTIONS.Secret(namespace), bigSecret('big', MAX_DATA_BYTES));
  await create(api, COLLECTIONS.ConfigMap(namespace), manyKeys('many'));
  await create(api, COLLECTIONS.Secret(namespace), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'small' }, stringData: { password: storedSecretValue('one') } });
  const names = ['big', 'many', 'small'] as const;
  await create(api, COLLECTIONS.Deployment(namespace), mountingSecret('big', 'big'));
  await create(api, COLLECTIONS.Deployment(namespace), envFromConfigMap('many', 'many'));
  await create(api, COLLECTIONS.Deployment(namespace), mountingSecret('small', 'small'));
  for (const name of names) await waitForDeploymentRollout(api, namespace, name);
  const podsBefore = new Map<string, string[]>();
  for (const name of names) podsBefore.set(name, uids(await waitForReadyPods(api, namespace, name, REPLICAS)));

  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await controller.ready();
    t.diagnostic(`controller memory when ready, the big configs cached: ${await memoryOf(controller.pid)}`);
    const recorded = new Map<string, string>();
    for (const name of names) recorded.set(name, await waitFor(`the first-sight record of ${name}`, () => restartedFor(api, namespace, name)));
    assert.match(recorded.get('big') ?? '', /^\{"Secret\/big":"v1:[0-9a-f]{64}"\}$/);
    assert.match(recorded.get('many') ?? '', /^\{"ConfigMap\/many":"v1:[0-9a-f]{64}"\}$/);

    // One key changed each: the last byte of the 1 MiB value, one of the 5,000 keys, the small password.
    const mark = controller.lines.length;
    await api.request('PATCH', `${COLLECTIONS.Secret(namespace)}/big`, { data: { blob: bigValue(MAX_DATA_BYTES, 'b').toString('base64') } }, { contentType: 'application/merge-patch+json' });
    await api.request('PATCH', `${COLLECTIONS.ConfigMap(namespace)}/many`, { data: { 'key-2500': 'changed' } }, { contentType: 'application/merge-patch+json' });
    await api.request('PATCH', `${COLLECTIONS.Secret(namespace)}/small`, { stringData: { password: storedSecretValue('two') } }, { contentType: 'application/merge-patch+json' });

    for (const name of names) {
      await waitForEvent(api, namespace, name, 'RestartFinished', 90_000);
      const before = podsBefore.get(name) ?? [];
      await waitFor(`every old pod of ${name} replaced`, async () => {
        const pods = uids(await waitForReadyPods(api, namespace, name, REPLICAS));
        return pods.every((uid) => !before.includes(uid)) ? pods : undefined;
      }, { timeoutMs: 60_000 });
    }
    const told = new Map<string, string[]>();
    for (const name of names) told.set(name, (await eventsFor(api, namespace, name)).map(eventSummary).sort());
    assert.deepEqual(told.get('small'), ['Normal RestartFinished x1', 'Normal RestartStarted x1'], 'the small Secret: one restart');
    assert.deepEqual(told.get('big'), told.get('small'), 'the 1 MiB Secret is told exactly what the small one is');
    assert.deepEqual(told.get('many'), told.get('small'), 'the ConfigMap of 5,000 keys is told exactly what the small one is');
    for (const name of names) {
      const evicted = controller.lines.slice(mark).filter((line) => line.msg === 'evicted' && line['workload'] === `Deployment/${namespace}/${name}`);
      assert.equal(evicted.length, REPLICAS, `each old pod of ${name} evicted exactly once`);
      const now = await restartedFor(api, namespace, name);
      assert.notEqual(now, recorded.get(name), `a new digest is recorded for ${name}`);
      assert.match(now ?? '', /"v1:[0-9a-f]{64}"\}$/);
    }
    t.diagnostic(`controller memory after the restarts: ${await memoryOf(controller.pid)}`);
  } finally {
    await controller.stop();
  }
}, { timeout: 240_000 });
