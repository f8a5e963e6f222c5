/**
 * `nextStep`, the restart path as data: the step each strategy takes from T,
 * the shared rules ahead of them (sync wait, health gate, breaker), in their
 * order. The reconciler executes these steps and `explain --live` shows them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatTime } from '../../../controller/bookkeeping.ts';
import { reduceApplication } from '../../../controller/cache/reduce.ts';
import type { PodSummary, WorkloadKindName, WorkloadSummary } from '../../../controller/model.ts';
import { nextStep, type RestartInput, type RestartStep } from '../../../controller/restart/step.ts';
import { workload as reduced } from '../support/summaries.ts';

const T = Date.parse('2026-01-01T00:00:10Z');
const NOW = T + 60_000;

function workload(kind: WorkloadKindName, overrides: Partial<WorkloadSummary> = {}): WorkloadSummary {
  const base = reduced(kind, 'web', { spec: { replicas: 2 }, app: 'shop' });
  return { ...base, replicas: 2, status: { ...base.status, observedGeneration: base.generation, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 }, ...overrides };
}

/** `ready`: epoch ms since Ready, `null` for not Ready; default a second after creation. */
function pod(name: string, createdAt: number, ready: number | null = createdAt + 1000, deleting = false): PodSummary {
  return { namespace: 'prod', name, uid: `uid-${name}`, owner: { kind: 'ReplicaSet', name: 'web-1', uid: 'rs' }, createdAt, deleting, phase: 'Running', readySince: ready ?? undefined, nodeName: 'n' };
}

const OLD = [pod('web-a', T - 3_600_000), pod('web-b', T - 3_500_000)];

function input(overrides: Partial<RestartInput> = {}): RestartInput {
  return { workload: workload('Deployment'), pods: OLD, restartAt: T, strategy: 'evict', now: NOW, acting: false, app: undefined, syncWaitMs: 0, healthGateTimeoutMs: 0, breakerOpen: () => false, ...overrides };
}

const kindOf = (step: RestartStep): string => (step.kind === 'wait' ? `wait:${step.cause}` : step.kind === 'halt' ? `halt:${step.cause}` : step.kind);

test('evict: T ahead waits until T; then the planner\'s evictions; a pod from before T still being deleted keeps it open; then done', () => {
  assert.deepEqual(nextStep(input({ now: T - 1500 })), { kind: 'wait', cause: 'restart-time', reason: 'the restart time is 2s ahead of the clock', until: T });
  const evict = nextStep(input());
  assert.equal(evict.kind, 'evict');
  assert.deepEqual(evict.kind === 'evict' ? evict.pods.map((p) => p.name) : [], ['web-a']);
  const replaced = [pod('web-a', T - 3_600_000, null, true), pod('web-b', T - 3_500_000, null, true), pod('web-c', T + 1000), pod('web-d', T + 2000)];
  assert.equal(kindOf(nextStep(input({ pods: replaced }))), 'wait:replacements');
  assert.deepEqual(nextStep(input({ pods: [pod('web-c', T + 1000), pod('web-d', T + 2000)] })), { kind: 'done' });
});

test('evict: the planner\'s waits keep their cause, and a pending OnDelete revision halts (RestartSkipped)', () => {
  const rolling = workload('Deployment', { status: { ...workload('Deployment').status, updatedReplicas: 1 } });
  assert.equal(kindOf(nextStep(input({ workload: rolling }))), 'wait:rollout-in-progress');
  const unavailable = [pod('web-a', T - 3_600_000), pod('web-c', T + 1000, null)];
  assert.equal(kindOf(nextStep(input({ workload: workload('Deployment', { strategy: { type: 'RollingUpdate', maxUnavailable: 1, partition: undefined } }), pods: unavailable }))), 'wait:availability');
  const onDelete = workload('StatefulSet', { strategy: { type: 'OnDelete', maxUnavailable: undefined, partition: undefined }, status: { ...workload('StatefulSet').status, currentRevision: 'a', updateRevision: 'b', updatedReplicas: 0 } });
  assert.equal(kindOf(nextStep(input({ workload: onDelete }))), 'halt:pending-revision');
});

test('template: T ahead waits until T, so the rollout\'s pods (whole-second creation times) are never created before T', () => {
  // Written at T - 0.6 s, a replacement created at T - 0.4 s reads T - 1 s: it would count as stale for good,
  // the restart would never finish, and a Replace=true sync would have the annotation written again.
  assert.deepEqual(nextStep(input({ strategy: 'template', now: T - 600 })), { kind: 'wait', cause: 'restart-time', reason: 'the restart time is 1s ahead of the clock', until: T });
  assert.deepEqual(nextStep(input({ strategy: 'template', now: T })), { kind: 'set-template', restartAt: T });
});

test('restart-at: writes spec.restartAt, waits for status.restartedAt to reach T, then done', () => {
  const rollout = workload('Rollout');
  assert.deepEqual(nextStep(input({ workload: rollout, strategy: 'restart-at' })), { kind: 'set-restart-at', restartAt: T });
  const asked = { ...rollout, restartAt: formatTime(T) };
  assert.equal(kindOf(nextStep(input({ workload: asked, strategy: 'restart-at' }))), 'wait:restarted-at');
  assert.equal(kindOf(nextStep(input({ workload: { ...asked, status: { ...asked.status, restartedAt: formatTime(T - 1000) } }, strategy: 'restart-at' }))), 'wait:restarted-at');
  assert.deepEqual(nextStep(input({ workload: { ...asked, status: { ...asked.status, restartedAt: formatTime(T) } }, strategy: 'restart-at' })), { kind: 'done' });
});

test('template: writes the annotation, waits while pods from before T run, then done', () => {
  assert.deepEqual(nextStep(input({ strategy: 'template' })), { kind: 'set-template', restartAt: T });
  const written = workload('Deployment', { templateRestartedAt: formatTime(T) });
  assert.equal(kindOf(nextStep(input({ strategy: 'template', workload: written }))), 'wait:template-rollout');
  assert.deepEqual(nextStep(input({ strategy: 'template', workload: written, pods: [pod('web-c', T + 1000)] })), { kind: 'done' });
  assert.deepEqual(nextStep(input({ strategy: 'template', pods: [pod('web-c', T + 1000)] })), { kind: 'done' }, 'no pod from before T: the annotation is not (re)written');
});

test('shared rules, in order: the sync wait holds a restart that has not acted, the health gate halts, the breaker pauses', () => {
  const raw = { metadata: { name: 'shop', namespace: 'argocd', resourceVersion: '1', annotations: {} }, spec: { project: 'default' }, operation: { sync: { revision: 'abc' } }, status: { sync: { status: 'Synced' }, resources: [] } };
  const app = reduceApplication(raw, 'argocd');
  const held = nextStep(input({ app, syncWaitMs: 120_000 }));
  assert.deepEqual(held, { kind: 'wait', cause: 'argocd-sync', reason: 'Application shop has a sync operation running', until: T + 120_000, name: 'shop' });
  assert.equal(nextStep(input({ app, syncWaitMs: 30_000 })).kind, 'evict', 'past T + the bound the restart acts');
  const notReady = [pod('web-a', T - 3_600_000), pod('web-c', T + 1000, null)];
  assert.equal(kindOf(nextStep(input({ pods: notReady, healthGateTimeoutMs: 30_000 }))), 'halt:health-gate');
  let asked = 0;
  assert.equal(kindOf(nextStep(input({ breakerOpen: () => (++asked, true) }))), 'wait:breaker');
  assert.equal(asked, 1);
  asked = 0;
  assert.deepEqual(nextStep(input({ pods: [pod('web-c', T + 1000)], breakerOpen: () => (++asked, true) })), { kind: 'done' }, 'a finished restart is not paused');
  assert.equal(asked, 0, 'the breaker is asked only for a restart in progress');
});
