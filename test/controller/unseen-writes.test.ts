/**
 * The reconciler's writes read back (controller/restart/unseen-writes.ts): a
 * real apply is read over the cached copy only while the cache shows the
 * version it was based on; a dry-run apply writes nothing and is read back for
 * good; and only a dry run reports evictions at once, once per T.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { BOOKKEEPING } from '../../core/index.ts';
import { workloadKey } from '../../controller/cache/cluster-view.ts';
import type { OwnFields, Writes } from '../../controller/kube/writes.ts';
import { rememberWrites, shadowWrites } from '../../controller/restart/unseen-writes.ts';
import { workload } from './support/summaries.ts';

const FIELDS: OwnFields = { restartedFor: '{"Secret/db":"v1:b"}', restartAt: '2026-01-01T00:00:01Z', templateRestartedAt: undefined };

/** Writes that keep what they were asked, and write nothing. */
function kept(): { writes: Writes; applied: OwnFields[] } {
  const applied: OwnFields[] = [];
  return {
    applied,
    writes: {
      async applyOwnFields(_workload, fields) {
        applied.push(fields);
      },
      async patchRestartAt() {},
      async evict() {
        return { outcome: 'evicted', message: '' };
      },
    },
  };
}

test('a real apply is read back until the cache shows a later version, and the same apply over the same version is known', async () => {
  const { writes: inner, applied } = kept();
  const writes = rememberWrites(inner, pino({ enabled: false }));
  const cached = { ...workload('Deployment', 'app'), resourceVersion: '7' };
  const key = workloadKey('Deployment', 'prod', 'app');
  assert.equal(writes.readBack(key, cached), cached, 'nothing applied: the cache as it is');
  await writes.applyOwnFields(cached, FIELDS);
  assert.equal(applied.length, 1);
  assert.equal(writes.readBack(key, cached)?.annotations[BOOKKEEPING.restartAt], FIELDS.restartAt);
  assert.equal(writes.appliedOver(cached, FIELDS), true);
  assert.equal(writes.appliedOver(cached, { ...FIELDS, restartAt: undefined }), false);
  const later = { ...cached, resourceVersion: '8' };
  assert.equal(writes.readBack(key, later), later, 'the watch delivered a later version: the cache says it all');
  assert.equal(writes.appliedOver(later, FIELDS), false);
  assert.equal(writes.evictions, 'paced');
  writes.markEvictionsReported(key, 1000);
  assert.equal(writes.evictionsReported(key), undefined);
});

test('a dry-run apply is read back whatever version the cache shows, until the workload is forgotten', async () => {
  const { writes: inner, applied } = kept();
  const writes = shadowWrites(inner);
  const cached = { ...workload('Deployment', 'app'), resourceVersion: '7' };
  const key = workloadKey('Deployment', 'prod', 'app');
  await writes.applyOwnFields(cached, FIELDS);
  assert.equal(applied.length, 1, 'the inner writes say what they would do');
  assert.equal(writes.readBack(key, { ...cached, resourceVersion: '9' })?.annotations[BOOKKEEPING.restartedFor], FIELDS.restartedFor);
  assert.equal(writes.appliedOver(cached, FIELDS), false, 'nothing is applied: only the read-back compares');
  assert.equal(writes.evictions, 'at-once');
  writes.markEvictionsReported(key, 1000);
  assert.equal(writes.evictionsReported(key), 1000);
  writes.forget(key);
  assert.equal(writes.readBack(key, cached), cached);
  assert.equal(writes.evictionsReported(key), undefined);
});
