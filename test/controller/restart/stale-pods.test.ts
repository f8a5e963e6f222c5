/**
 * The one definition of a stale pod that the reconciler, the eviction planner,
 * the health gate and `explain --live` share: live (not being deleted, not
 * Succeeded/Failed) and created strictly before T.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PodSummary } from '../../../controller/model.ts';
import { isLivePod, isStalePod, isTerminalPod } from '../../../controller/restart/stale-pods.ts';

const T = Date.UTC(2026, 0, 1, 12, 0, 0);

function pod(fields: Partial<PodSummary> = {}): PodSummary {
  return { namespace: 'prod', name: 'web-0', uid: 'uid-0', owner: undefined, createdAt: T - 60_000, deleting: false, phase: 'Running', readySince: T - 50_000, nodeName: 'n', ...fields };
}

test('isStalePod: a running pod created before T is stale; one created at T or later is not', () => {
  assert.equal(isStalePod(pod(), T), true);
  assert.equal(isStalePod(pod({ createdAt: T - 1 }), T), true, 'strictly before T');
  assert.equal(isStalePod(pod({ createdAt: T }), T), false, 'created at T: a replacement');
  assert.equal(isStalePod(pod({ createdAt: T + 1000 }), T), false);
});

test('isStalePod: a pod from before T that is being deleted, or has exited, is not stale', () => {
  assert.equal(isStalePod(pod({ deleting: true }), T), false, 'already going');
  assert.equal(isStalePod(pod({ phase: 'Succeeded' }), T), false);
  assert.equal(isStalePod(pod({ phase: 'Failed' }), T), false, 'e.g. evicted by the kubelet');
  assert.equal(isStalePod(pod({ phase: 'Pending', readySince: undefined }), T), true, 'a pod not yet running still runs the old config once it starts');
  assert.equal(isStalePod(pod({ phase: 'Unknown' }), T), true, 'only Succeeded and Failed are terminal');
});

test('isLivePod and isTerminalPod: the parts isStalePod is made of', () => {
  assert.equal(isLivePod(pod()), true);
  assert.equal(isLivePod(pod({ deleting: true })), false);
  assert.equal(isLivePod(pod({ phase: 'Failed' })), false);
  assert.equal(isTerminalPod(pod({ phase: 'Succeeded' })), true);
  assert.equal(isTerminalPod(pod({ deleting: true })), false, 'being deleted is not a phase');
});
