/**
 * The reconciler's memory of restarts (controller/restart/memory.ts): what it keeps for a workload, and that
 * it keeps it only while the restart lasts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PodSummary } from '../../../controller/model.ts';
import { RestartMemory } from '../../../controller/restart/memory.ts';

const WEB = 'Deployment/prod/web';
const API = 'Deployment/prod/api';

function pod(uid: string): PodSummary {
  return { namespace: 'prod', name: `pod-${uid}`, uid, owner: undefined, createdAt: 0, deleting: false, phase: 'Running', readySince: 0, nodeName: 'n' };
}

test('a pod we evicted counts as being deleted for its workload until the restart ends, with no pod event needed', () => {
  const memory = new RestartMemory();
  memory.markInProgress(WEB);
  memory.markEvicted(WEB, 'a', 1_000);
  assert.equal(memory.withEviction(WEB, pod('a'), 2_000).deleting, true, 'evicted: being deleted');
  assert.equal(memory.withEviction(WEB, pod('b'), 2_000).deleting, false, 'another pod is not');
  assert.equal(memory.withEviction(API, pod('a'), 2_000).deleting, false, 'another workload\'s memory is its own');
  assert.equal(memory.finish(WEB), true);
  assert.equal(memory.withEviction(WEB, pod('a'), 3_000).deleting, false, 'forgotten with the restart');
});

test('an evicted pod the watch never shows deleting is forgotten after five minutes', () => {
  const memory = new RestartMemory();
  memory.markEvicted(WEB, 'a', 0);
  assert.equal(memory.withEviction(WEB, pod('a'), 5 * 60_000).deleting, true);
  assert.equal(memory.withEviction(WEB, pod('a'), 5 * 60_000 + 1).deleting, false);
  assert.equal(memory.withEviction(WEB, pod('a'), 1).deleting, false, 'and not remembered again');
});

test('a restart holds no slot while blocked, held by a sync window or going through Git, and counts once however many hold', () => {
  const memory = new RestartMemory();
  for (const key of [WEB, API, 'StatefulSet/prod/db']) memory.markInProgress(key);
  assert.equal(memory.actingCount(), 3);
  memory.markBlocked(WEB, 0);
  assert.equal(memory.actingCount(), 2);
  memory.markThroughGit(WEB, true);
  memory.markWindowHoldAnnounced(WEB, 'w');
  assert.equal(memory.actingCount(), 2, 'blocked, held and through Git: still one restart not acting');
  memory.markThroughGit(API, true);
  assert.equal(memory.actingCount(), 1);
  memory.finish(WEB);
  memory.finish(API);
  assert.equal(memory.actingCount(), 1);
  assert.equal(memory.inProgressCount, 1);
});
