/**
 * State lives in etcd, not in the API server: after kube-apiserver restarts, a
 * watch started from the last resourceVersion a client saw carries on with the
 * next change, with no relist. This cluster serves watches from etcd
 * (`watchCache: false`); watch-cache-restart.test.ts covers the cached default.
 */
import assert from 'node:assert/strict';
import { create, useCluster } from './testing.ts';
import { MERGE_PATCH, configMapData, nextEvent, watchConfigMap } from './watch-events.ts';

const fixture = useCluster({ watchCache: false });

fixture.test('a watch resumes from a resourceVersion after the apiserver restarts', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  const path = `/api/v1/namespaces/${namespace}/configmaps`;
  const watchFrom = (resourceVersion: string, abort: AbortController) => watchConfigMap(admin, path, 'watched', resourceVersion, abort);
  const configMap = await create(admin, path, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'watched' }, data: { v: '1' } });

  // Before the restart: a watch from the creation's resourceVersion sees the first change.
  const firstAbort = new AbortController();
  const firstChange = nextEvent(watchFrom(configMap.metadata?.resourceVersion ?? '', firstAbort), firstAbort, (e) => e.type === 'MODIFIED');
  await admin.request('PATCH', `${path}/watched`, { data: { v: '2' } }, MERGE_PATCH);
  const seen = await firstChange;
  assert.equal(configMapData(seen).v, '2');
  const lastSeen = seen.object.metadata?.resourceVersion ?? '';

  await cluster.restartApiServer();

  // After it: resume from the last resourceVersion seen; the next change arrives on that watch.
  const resumedAbort = new AbortController();
  const resumedChange = nextEvent(watchFrom(lastSeen, resumedAbort), resumedAbort, (e) => e.type !== 'BOOKMARK');
  const written = await admin.request('PATCH', `${path}/watched`, { data: { v: '3' } }, MERGE_PATCH);
  const event = await resumedChange;
  assert.equal(event.type, 'MODIFIED', JSON.stringify(event.object));
  assert.equal(event.object.metadata?.resourceVersion, written.metadata?.resourceVersion);
  assert.equal(configMapData(event).v, '3');
  assert.ok(BigInt(written.metadata?.resourceVersion ?? '0') > BigInt(lastSeen));
});
