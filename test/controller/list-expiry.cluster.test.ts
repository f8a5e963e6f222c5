/**
 * A paged LIST cut short: the continue token expires between pages and the API server answers 410
 * Expired with an inconsistent-continuation token in its Status. The controller must relist from
 * the start (not follow that token: the objects of the pages it already read would keep their old
 * state), so it becomes ready with every object cached and a rotation made between the pages
 * restarts its workload.
 *
 * The 410 is the API server's own: the watch cache is off (a paged list is then read from etcd, as
 * with a cache that cannot serve the token), a loopback proxy holds the second page of Secrets while
 * the test rotates a Secret of the first page and compacts etcd past the token's revision, then
 * forwards the request unchanged. A compaction alone (`--etcd-compaction-interval`) would land
 * between two pages only by luck.
 *
 * The API server's WatchList feature is off, so the controller's streaming list (the default) meets the
 * real refusal (422) and falls back to the paged lists this file is about.
 */
import assert from 'node:assert/strict';
import type { KubeList } from '../cluster/api.ts';
import { create, useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { startApiProxy, type HeldAnswer } from './support/api-proxy.ts';
import { startControllerProcess } from './support/process.ts';
import { COLLECTIONS, eventSummary, eventsFor, read, rotateSecret, secret, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';

const fixture = useCluster({ watchCache: false, watchList: false });

const FILLERS = 9;
const PAGE_SIZE = 2;

/** Compacts etcd at its current revision (its gRPC gateway), so that every older revision is gone. */
async function compactEtcd(etcdUrl: string): Promise<number> {
  const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${etcdUrl}${path}`, { method: 'POST', body: JSON.stringify(body) });
    assert.equal(response.status, 200, `etcd ${path}: ${await response.clone().text()}`);
    return await response.json() as Record<string, unknown>;
  };
  const range = await post('/v3/kv/range', { key: Buffer.from('/').toString('base64') });
  const revision = Number((range['header'] as { revision?: string } | undefined)?.revision);
  assert.ok(revision > 0, 'etcd told its revision');
  await post('/v3/kv/compaction', { revision: String(revision), physical: true });
  return revision;
}

fixture.test('a LIST whose continue token expires between pages is restarted from scratch: every object cached, a rotation between the pages restarts', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  // `a-db` sorts first, so it is on the first page, read before the token expires.
  await create(api, COLLECTIONS.Secret(namespace), secret('a-db', 'one'));
  for (let index = 0; index < FILLERS; index++) await create(api, COLLECTIONS.Secret(namespace), secret(`filler-${index}`, 'x'));
  await create(api, COLLECTIONS.Deployment(namespace), workload('Deployment', 'app', { replicas: 2, uses: { secret: 'a-db' } }));
  await waitForDeploymentRollout(api, namespace, 'app');

  // A first run records the digest the workload runs with.
  const first = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  let recorded: string;
  try {
    await first.ready();
    recorded = await waitFor('the first-sight record', async () => (await read(api, `${COLLECTIONS.Deployment(namespace)}/app`)).metadata?.annotations?.['driftless.dev/restarted-for']);
  } finally {
    await first.stop();
  }
  const podsBefore = uids(await waitForReadyPods(api, namespace, 'app', 2));

  const secrets = `/api/v1/namespaces/${namespace}/secrets`;
  const proxy = await startApiProxy(cluster, {
    matches: (method, url) => method === 'GET' && url.pathname === secrets && url.searchParams.has('continue') && !url.searchParams.has('watch'),
    async meanwhile() {
      await rotateSecret(api, namespace, 'a-db', 'two');
      await compactEtcd(cluster.etcdUrl);
    },
  });
  const controller = await startControllerProcess(cluster, { kubeconfig: proxy.kubeconfig, args: [`--namespaces=${namespace}`, `--list-page-size=${PAGE_SIZE}`] });
  try {
    let held: HeldAnswer | Error | undefined;
    proxy.held.then((value) => {
      held = value;
    }, (error: unknown) => {
      held = error instanceof Error ? error : new Error(String(error));
    });
    const answer = await waitFor('the held second page answered', () => held, { timeoutMs: 60_000 }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\nproxied:\n${proxy.requests.join('\n')}\ncontroller:\n${controller.lines.slice(-30).map((line) => JSON.stringify(line)).join('\n')}`, { cause: error });
    });
    if (answer instanceof Error) throw answer;
    assert.equal(answer.status, 410, `the second page after the compaction: ${answer.body}`);
    const status = JSON.parse(answer.body) as { reason?: string; message?: string; metadata?: { continue?: string } };
    assert.equal(status.reason, 'Expired');
    assert.match(status.message ?? '', /continue parameter is too old/);
    assert.ok((status.metadata?.continue ?? '') !== '', 'the Status offers an inconsistent continuation, which must not be taken');

    await controller.ready();
    // Every config of the namespace is in the cache: nothing of the cut-short list is lost.
    const live = async (): Promise<number> => {
      const configMaps = await api.request<KubeList>('GET', COLLECTIONS.ConfigMap(namespace));
      const all = await api.request<KubeList>('GET', COLLECTIONS.Secret(namespace));
      return configMaps.items.length + all.items.length;
    };
    const started = await controller.waitForLog('started', (line) => line.msg === 'started');
    const metrics = await (await fetch(`http://${String(started['http'])}/metrics`)).text();
    const cached = Number(/^driftless_cache_objects\{kind="configs"\} (\d+)$/m.exec(metrics)?.[1]);
    assert.equal(cached, await live(), 'every ConfigMap and Secret of the namespace is cached');
    assert.ok(cached >= FILLERS + 1);

    // The rotation made between the pages restarts the workload, once.
    await waitForEvent(api, namespace, 'app', 'RestartFinished', 90_000);
    await waitFor('every old pod replaced', async () => {
      const pods = uids(await waitForReadyPods(api, namespace, 'app', 2));
      return pods.every((uid) => !podsBefore.includes(uid)) ? pods : undefined;
    }, { timeoutMs: 60_000 });
    assert.deepEqual((await eventsFor(api, namespace, 'app')).map(eventSummary).sort(), ['Normal RestartFinished x1', 'Normal RestartStarted x1']);
    const now = (await read(api, `${COLLECTIONS.Deployment(namespace)}/app`)).metadata?.annotations?.['driftless.dev/restarted-for'];
    assert.notEqual(now, recorded, 'the rotated digest is recorded');
    // How: the reflector of Secrets took the 410 for what it is and listed again from the start.
    await controller.waitForLog('the relist after the 410', (line) => line.msg === 'a paged list was cut short: its continue token expired (410); listing again from the first page' && line['reflector'] === `secrets in ${namespace}`);
    // Paged because the API server refused the streaming list, as one with WatchList off does.
    await controller.waitForLog('the refused streaming list', (line) => line.msg === 'the API server does not stream lists (sendInitialEvents); listing in pages' && line['reflector'] === `secrets in ${namespace}` && line['status'] === 422);
  } finally {
    await controller.stop();
    await proxy.close();
  }
}, { timeout: 240_000 });
