/**
 * With the watch cache (the default, as in real clusters), a restarted API
 * server only holds events from its start on: a watch from an older
 * resourceVersion answers 410 Expired, and the client must relist, then watch
 * from the list's resourceVersion. Driftless's controller has to survive this.
 */
import assert from 'node:assert/strict';
import type { KubeList } from './api.ts';
import { create, useCluster } from './testing.ts';
import { MERGE_PATCH, configMapData, nextEvent, watchConfigMap } from './watch-events.ts';

const fixture = useCluster();

fixture.test('after an apiserver restart an old resourceVersion is 410 Expired and a relist resumes', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  const path = `/api/v1/namespaces/${namespace}/configmaps`;
  const watchFrom = (resourceVersion: string, abort: AbortController) => watchConfigMap(admin, path, 'watched', resourceVersion, abort);
  const configMap = await create(admin, path, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'watched' }, data: { v: '1' } });
  const lastSeen = configMap.metadata?.resourceVersion ?? '';
  // Two unrelated writes move etcd's revision past what the client saw, so the
  // restarted server's cache starts strictly after it (whatever else writes at start-up).
  await create(admin, path, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other-1' } });
  await create(admin, path, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other-2' } });

  await cluster.restartApiServer();

  const staleAbort = new AbortController();
  const stale = await nextEvent(watchFrom(lastSeen, staleAbort), staleAbort, () => true);
  assert.equal(stale.type, 'ERROR');
  assert.equal(stale.object['code'], 410);
  assert.equal(stale.object['reason'], 'Expired');

  // What an informer does next: list, then watch from the list's resourceVersion.
  const list = await admin.request<KubeList>('GET', `${path}?fieldSelector=metadata.name%3Dwatched`);
  assert.equal(list.items.length, 1);
  const resumedAbort = new AbortController();
  const resumed = nextEvent(watchFrom(list.metadata.resourceVersion, resumedAbort), resumedAbort, (e) => e.type !== 'BOOKMARK');
  await admin.request('PATCH', `${path}/watched`, { data: { v: '2' } }, MERGE_PATCH);
  const event = await resumed;
  assert.equal(event.type, 'MODIFIED');
  assert.equal(configMapData(event).v, '2');
});
