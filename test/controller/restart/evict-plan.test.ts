import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidMaxUnavailableError, desiredPods, planEvictions, resolveMaxUnavailable, restartWarnings } from '../../../controller/restart/evict-plan.ts';
import type { EvictionPlan } from '../../../controller/restart/evict-plan.ts';
import type { PodSummary, UpdateStrategy, WorkloadKindName, WorkloadStatus, WorkloadSummary } from '../../../controller/model.ts';

/** T, a whole second; pods are "stale" (created an hour before), "fresh" (a minute after) or at a given time. */
const T = Date.UTC(2026, 0, 1, 12, 0, 0);
const NOW = T + 10 * 60_000;
const STALE = T - 3_600_000;
const FRESH = T + 60_000;

interface WorkloadOptions {
  readonly replicas?: number | undefined;
  readonly minReadySeconds?: number;
  readonly strategy?: Partial<UpdateStrategy>;
  readonly status?: Partial<WorkloadStatus>;
  readonly generation?: number;
  readonly paused?: boolean;
  readonly usesVolumeClaims?: boolean;
}

const DEFAULT_STRATEGY: Record<WorkloadKindName, string> = {
  Deployment: 'RollingUpdate',
  StatefulSet: 'RollingUpdate',
  DaemonSet: 'RollingUpdate',
  CronJob: '',
  Rollout: 'canary',
  DeploymentConfig: 'Rolling',
};

/** A workload whose status says it is settled (no rollout in progress), unless the options say otherwise. */
function workload(kind: WorkloadKindName, options: WorkloadOptions = {}): WorkloadSummary {
  const generation = options.generation ?? 4;
  const replicas = 'replicas' in options ? options.replicas : kind === 'DaemonSet' || kind === 'CronJob' ? undefined : 3;
  const settled = kind === 'DaemonSet' ? (options.status?.desiredNumberScheduled ?? 3) : (replicas ?? 1);
  const status: WorkloadStatus = {
    observedGeneration: generation,
    replicas: kind === 'DaemonSet' ? undefined : settled,
    updatedReplicas: kind === 'DaemonSet' ? undefined : settled,
    readyReplicas: settled,
    availableReplicas: settled,
    currentRevision: kind === 'StatefulSet' ? 'web-1' : undefined,
    updateRevision: kind === 'StatefulSet' ? 'web-1' : undefined,
    desiredNumberScheduled: kind === 'DaemonSet' ? settled : undefined,
    updatedNumberScheduled: kind === 'DaemonSet' ? settled : undefined,
    numberAvailable: kind === 'DaemonSet' ? settled : undefined,
    restartedAt: undefined,
    ...options.status,
  };
  return Object.freeze({
    namespace: 'prod',
    name: 'web',
    kind,
    apiVersion: kind === 'Rollout' ? 'argoproj.io/v1alpha1' : 'apps/v1',
    uid: `uid-${kind}`,
    resourceVersion: '100',
    generation,
    policyManifest: { apiVersion: 'apps/v1', kind, group: 'apps', name: 'web', namespace: 'prod', object: {} } as unknown as WorkloadSummary['policyManifest'],
    references: [],
    stamped: false,
    configHash: undefined,
    tracking: undefined,
    annotations: {},
    templateRestartedAt: undefined,
    replicas,
    minReadySeconds: options.minReadySeconds ?? 0,
    strategy: { type: DEFAULT_STRATEGY[kind], maxUnavailable: undefined, partition: undefined, ...options.strategy },
    restartAt: undefined,
    workloadRef: undefined,
    paused: options.paused ?? false,
    usesVolumeClaims: options.usesVolumeClaims ?? false,
    status,
  });
}

interface PodOptions {
  /** Creation time (epoch ms); default STALE. */
  readonly created?: number;
  /** Epoch ms since Ready; `null` for not Ready; default long before NOW. */
  readonly ready?: number | null;
  readonly deleting?: boolean;
  readonly phase?: string;
}

/** A pod of the workload `web`. */
function pod(name: string, options: PodOptions = {}): PodSummary {
  const created = options.created ?? STALE;
  return Object.freeze({
    namespace: 'prod',
    name,
    uid: `uid-${name}`,
    owner: { kind: 'ReplicaSet', name: 'web-abc', uid: 'uid-rs' },
    createdAt: created,
    deleting: options.deleting ?? false,
    phase: options.phase ?? 'Running',
    readySince: options.ready === null ? undefined : (options.ready ?? created + 5_000),
    nodeName: 'node-1',
  });
}

/** `count` pods `web-0…`, all with the same options. */
function podsOf(count: number, options: PodOptions = {}, prefix = 'web'): PodSummary[] {
  return Array.from({ length: count }, (_, i) => pod(`${prefix}-${i}`, options));
}

function plan(w: WorkloadSummary, pods: readonly PodSummary[], clock: { restartAt?: number; now?: number } = {}): EvictionPlan {
  return planEvictions({ workload: w, pods, restartAt: clock.restartAt ?? T, now: clock.now ?? NOW });
}

/** What a plan says, in one comparable line. */
function describePlan(p: EvictionPlan): string {
  if (p.action === 'evict') return `evict ${p.pods.map((x) => x.name).join(',')} budget ${p.budget}`;
  return p.action;
}

/**
 * The planner's invariants, checked on every case: evicted pods are stale,
 * live, distinct and within the budget, and a plan never makes more pods
 * unavailable than the budget allows, unless they already were.
 */
function assertInvariants(w: WorkloadSummary, pods: readonly PodSummary[], p: EvictionPlan, clock: { restartAt: number; now: number }): void {
  if (p.action === 'wait' || p.action === 'skip') {
    assert.ok(p.reason.length > 0);
    return;
  }
  if (p.action === 'done') {
    assert.ok(pods.every((x) => x.deleting || x.createdAt >= clock.restartAt || x.phase === 'Succeeded' || x.phase === 'Failed'));
    return;
  }
  assert.ok(p.pods.length > 0 && p.pods.length <= p.budget, 'at most budget pods per plan');
  assert.equal(new Set(p.pods.map((x) => x.name)).size, p.pods.length, 'no pod twice');
  for (const victim of p.pods) {
    assert.ok(pods.includes(victim), 'evicts only the workload\'s own pods');
    assert.ok(!victim.deleting, 'never evicts a pod being deleted');
    assert.ok(victim.createdAt < clock.restartAt, 'never evicts a pod created at or after T');
  }
  const desired = desiredPods(w);
  if (desired > 1) {
    const availableNow = (x: PodSummary) => !x.deleting && x.readySince !== undefined && clock.now - x.readySince >= w.minReadySeconds * 1000;
    const live = pods.filter((x) => !x.deleting);
    const unavailableBefore = Math.max(desired, live.length) - live.filter(availableNow).length;
    const unavailableAfter = unavailableBefore + p.pods.filter(availableNow).length;
    assert.ok(unavailableAfter <= Math.max(p.budget, unavailableBefore), `unavailable after the plan (${unavailableAfter}) within budget ${p.budget}`);
  }
}

interface Case {
  readonly name: string;
  readonly workload: WorkloadSummary;
  readonly pods: readonly PodSummary[];
  /** `done`, `wait`, `skip`, or `evict a,b budget n`. */
  readonly expect: string;
  readonly reason?: RegExp;
  readonly restartAt?: number;
  readonly now?: number;
}

function runCases(cases: readonly Case[]): void {
  for (const c of cases) {
    it(c.name, () => {
      const clock = { restartAt: c.restartAt ?? T, now: c.now ?? NOW };
      const p = plan(c.workload, c.pods, clock);
      assert.equal(describePlan(p), c.expect);
      if (c.reason !== undefined) {
        assert.ok(p.action === 'wait' || p.action === 'skip', 'a reason is expected');
        assert.match(p.reason, c.reason);
      }
      assertInvariants(c.workload, c.pods, p, clock);
      assert.ok(Object.isFrozen(p));
    });
  }
}

describe('planEvictions: staleness and done', () => {
  runCases([
    { name: 'every pod created after T: done', workload: workload('Deployment'), pods: podsOf(3, { created: FRESH }), expect: 'done' },
    { name: 'a pod created exactly at T is current: done', workload: workload('Deployment'), pods: podsOf(3, { created: T }), expect: 'done' },
    { name: 'a pod created one second before T is stale', workload: workload('Deployment'), pods: [pod('web-a', { created: T - 1000 }), ...podsOf(2, { created: FRESH })], expect: 'evict web-a budget 1' },
    { name: 'no pods and 0 desired: done', workload: workload('Deployment', { replicas: 0 }), pods: [], expect: 'done' },
    { name: 'no pods at all (nothing to replace): done', workload: workload('Deployment'), pods: [], expect: 'done' },
    { name: 'a stale pod already being deleted is not stale: done', workload: workload('Deployment'), pods: [pod('web-a', { deleting: true }), ...podsOf(3, { created: FRESH })], expect: 'done' },
    { name: 'a stale pod in phase Failed (kubelet-evicted) is not stale: done', workload: workload('Deployment'), pods: [pod('web-a', { phase: 'Failed', ready: null }), ...podsOf(3, { created: FRESH })], expect: 'done' },
    { name: 'a stale pod in phase Succeeded is not stale: done', workload: workload('Deployment'), pods: [pod('web-a', { phase: 'Succeeded', ready: null }), ...podsOf(3, { created: FRESH })], expect: 'done' },
    { name: 'a pending update does not matter once nothing is stale: done', workload: workload('StatefulSet', { strategy: { type: 'OnDelete' }, status: { updateRevision: 'web-2', updatedReplicas: 0 } }), pods: podsOf(3, { created: FRESH }), expect: 'done' },
    { name: 'a restart time ahead of the clock: wait', workload: workload('Deployment'), pods: podsOf(3), restartAt: NOW + 5000, expect: 'wait', reason: /5s ahead/ },
  ]);
});

describe('planEvictions: a rollout already in progress', () => {
  runCases([
    { name: 'Deployment: observedGeneration behind generation', workload: workload('Deployment', { generation: 5, status: { observedGeneration: 4 } }), pods: podsOf(3), expect: 'wait', reason: /observed generation 4 of 5/ },
    { name: 'StatefulSet: observedGeneration behind generation', workload: workload('StatefulSet', { generation: 5, status: { observedGeneration: 4 } }), pods: podsOf(3), expect: 'wait', reason: /generation 4 of 5/ },
    { name: 'DaemonSet: observedGeneration behind generation', workload: workload('DaemonSet', { generation: 2, status: { observedGeneration: 1 } }), pods: podsOf(3), expect: 'wait' },
    { name: 'an unknown observedGeneration does not block', workload: workload('Deployment', { status: { observedGeneration: undefined } }), pods: podsOf(3), expect: 'evict web-0 budget 1' },
    { name: 'Deployment: 1 of 3 replicas updated', workload: workload('Deployment', { status: { updatedReplicas: 1 } }), pods: podsOf(3), expect: 'wait', reason: /1 of 3 replicas updated/ },
    { name: 'Deployment: updatedReplicas absent (omitempty 0)', workload: workload('Deployment', { status: { updatedReplicas: undefined } }), pods: podsOf(3), expect: 'wait', reason: /0 of 3 replicas updated/ },
    { name: 'Deployment: surge replicas in the status', workload: workload('Deployment', { status: { replicas: 4, updatedReplicas: 4 } }), pods: podsOf(4), expect: 'wait', reason: /4 replicas for 3 desired/ },
    { name: 'Deployment: more pods than desired although the status is settled', workload: workload('Deployment'), pods: podsOf(4), expect: 'wait', reason: /4 pods for 3 desired/ },
    { name: 'Deployment: scaled to 0 with stale pods left', workload: workload('Deployment', { replicas: 0, status: { replicas: 2, updatedReplicas: 2 } }), pods: podsOf(2), expect: 'wait', reason: /2 replicas for 0 desired/ },
    { name: 'Rollout: a canary update in progress', workload: workload('Rollout', { status: { updatedReplicas: 1 } }), pods: podsOf(3), expect: 'wait', reason: /1 of 3/ },
    { name: 'DeploymentConfig: a rollout in progress', workload: workload('DeploymentConfig', { status: { updatedReplicas: 2 } }), pods: podsOf(3), expect: 'wait', reason: /2 of 3/ },
    { name: 'StatefulSet RollingUpdate with revisions apart (partition unset)', workload: workload('StatefulSet', { status: { updateRevision: 'web-2', updatedReplicas: 1 } }), pods: podsOf(3), expect: 'wait', reason: /rolling update is in progress: 1 of 3/ },
    { name: 'StatefulSet RollingUpdate with revisions apart (partition 0)', workload: workload('StatefulSet', { strategy: { partition: 0 }, status: { updateRevision: 'web-2', updatedReplicas: 2 } }), pods: podsOf(3), expect: 'wait', reason: /2 of 3/ },
    { name: 'DaemonSet RollingUpdate with 2 of 3 updated', workload: workload('DaemonSet', { status: { updatedNumberScheduled: 2 } }), pods: podsOf(3), expect: 'wait', reason: /rolling update is in progress: 2 of 3/ },
    { name: 'DaemonSet RollingUpdate with updatedNumberScheduled absent', workload: workload('DaemonSet', { status: { updatedNumberScheduled: undefined } }), pods: podsOf(3), expect: 'wait', reason: /0 of 3/ },
  ]);
});

describe('planEvictions: a paused Deployment is restarted', () => {
  runCases([
    { name: 'paused with a template change pending (no new ReplicaSet, 0 updated)', workload: workload('Deployment', { paused: true, status: { updatedReplicas: 0 } }), pods: podsOf(3), expect: 'evict web-0 budget 1' },
    {
      name: 'paused mid-rollout with a surge pod: the extra pod is not spare capacity',
      workload: workload('Deployment', { replicas: 4, paused: true, status: { replicas: 5, updatedReplicas: 1 } }),
      pods: [...podsOf(4), pod('web-new', { created: FRESH, ready: null })],
      expect: 'wait',
      reason: /4 of 4 pods available, at most 1/,
    },
    {
      name: 'paused mid-rollout with every pod available',
      workload: workload('Deployment', { replicas: 4, paused: true, status: { replicas: 5, updatedReplicas: 1 } }),
      pods: [...podsOf(4), pod('web-new', { created: FRESH })],
      expect: 'evict web-0 budget 1',
    },
    { name: 'paused still waits for the generation to be observed', workload: workload('Deployment', { paused: true, generation: 3, status: { observedGeneration: 2 } }), pods: podsOf(3), expect: 'wait' },
  ]);
});

describe('planEvictions: pending update revisions are skipped', () => {
  runCases([
    { name: 'StatefulSet OnDelete with a pending revision', workload: workload('StatefulSet', { strategy: { type: 'OnDelete' }, status: { updateRevision: 'web-2', updatedReplicas: 1 } }), pods: podsOf(3), expect: 'skip', reason: /OnDelete.*1 of 3 pods updated|1 of 3 pods updated.*OnDelete/ },
    { name: 'StatefulSet OnDelete with updatedReplicas absent', workload: workload('StatefulSet', { strategy: { type: 'OnDelete' }, status: { updateRevision: 'web-2', updatedReplicas: undefined } }), pods: podsOf(3), expect: 'skip', reason: /0 of 3/ },
    { name: 'StatefulSet OnDelete whose currentRevision lags but every pod is updated (OnDelete never advances it)', workload: workload('StatefulSet', { strategy: { type: 'OnDelete' }, status: { updateRevision: 'web-2', updatedReplicas: 3 } }), pods: podsOf(3), expect: 'evict web-2 budget 1' },
    { name: 'StatefulSet OnDelete with equal revisions', workload: workload('StatefulSet', { strategy: { type: 'OnDelete' } }), pods: podsOf(3), expect: 'evict web-2 budget 1' },
    { name: 'StatefulSet with partition 2 and a staged revision', workload: workload('StatefulSet', { strategy: { partition: 2 }, status: { updateRevision: 'web-2', updatedReplicas: 1 } }), pods: podsOf(3), expect: 'skip', reason: /partition 2 \(1 of 3 pods updated\)/ },
    { name: 'StatefulSet with partition 2 and equal revisions', workload: workload('StatefulSet', { strategy: { partition: 2 } }), pods: podsOf(3), expect: 'evict web-2 budget 1' },
    { name: 'DaemonSet OnDelete with a pending update', workload: workload('DaemonSet', { strategy: { type: 'OnDelete' }, status: { updatedNumberScheduled: 2 } }), pods: podsOf(3), expect: 'skip', reason: /DaemonSet.*2 of 3 pods updated/ },
    { name: 'DaemonSet OnDelete with every pod updated', workload: workload('DaemonSet', { strategy: { type: 'OnDelete' } }), pods: podsOf(3), expect: 'evict web-0 budget 1' },
    { name: 'CronJob is never evicted', workload: workload('CronJob'), pods: podsOf(1), expect: 'skip', reason: /CronJob/ },
    { name: 'a maxUnavailable that is no percentage', workload: workload('Deployment', { strategy: { maxUnavailable: '25' } }), pods: podsOf(3), expect: 'skip', reason: /neither a count nor a percentage/ },
  ]);
  it('a skip reason never quotes a revision name', () => {
    const p = plan(workload('StatefulSet', { strategy: { type: 'OnDelete' }, status: { currentRevision: 'web-5d8f', updateRevision: 'web-77aa', updatedReplicas: 0 } }), podsOf(3));
    assert.equal(p.action, 'skip');
    assert.ok(p.action === 'skip' && !p.reason.includes('web-'));
  });
});

describe('planEvictions: budget from maxUnavailable', () => {
  runCases([
    { name: 'Deployment default 25% of 10 rounds down to 2', workload: workload('Deployment', { replicas: 10 }), pods: podsOf(10), expect: 'evict web-0,web-1 budget 2' },
    { name: 'Deployment default 25% of 3 rounds down to 0, budget 1', workload: workload('Deployment'), pods: podsOf(3), expect: 'evict web-0 budget 1' },
    { name: 'Deployment default 25% of 8 is 2', workload: workload('Deployment', { replicas: 8 }), pods: podsOf(8), expect: 'evict web-0,web-1 budget 2' },
    { name: 'Deployment maxUnavailable 3', workload: workload('Deployment', { replicas: 10, strategy: { maxUnavailable: 3 } }), pods: podsOf(10), expect: 'evict web-0,web-1,web-2 budget 3' },
    { name: 'Deployment maxUnavailable 0 (surge only) still evicts one', workload: workload('Deployment', { replicas: 10, strategy: { maxUnavailable: 0 } }), pods: podsOf(10), expect: 'evict web-0 budget 1' },
    { name: 'Deployment maxUnavailable 50% of 5 rounds down to 2', workload: workload('Deployment', { replicas: 5, strategy: { maxUnavailable: '50%' } }), pods: podsOf(5), expect: 'evict web-0,web-1 budget 2' },
    { name: 'Deployment maxUnavailable above desired is clamped', workload: workload('Deployment', { replicas: 2, strategy: { maxUnavailable: 5 } }), pods: podsOf(2), expect: 'evict web-0,web-1 budget 2' },
    { name: 'Deployment Recreate goes one at a time', workload: workload('Deployment', { replicas: 10, strategy: { type: 'Recreate' } }), pods: podsOf(10), expect: 'evict web-0 budget 1' },
    { name: 'DaemonSet maxUnavailable 50% of 5 rounds up to 3', workload: workload('DaemonSet', { status: { desiredNumberScheduled: 5 }, strategy: { maxUnavailable: '50%' } }), pods: podsOf(5), expect: 'evict web-0,web-1,web-2 budget 3' },
    { name: 'DaemonSet default 1', workload: workload('DaemonSet', { status: { desiredNumberScheduled: 5 } }), pods: podsOf(5), expect: 'evict web-0 budget 1' },
    { name: 'DaemonSet maxUnavailable 2', workload: workload('DaemonSet', { status: { desiredNumberScheduled: 5 }, strategy: { maxUnavailable: 2 } }), pods: podsOf(5), expect: 'evict web-0,web-1 budget 2' },
    { name: 'Rollout default 25% of 8', workload: workload('Rollout', { replicas: 8 }), pods: podsOf(8), expect: 'evict web-0,web-1 budget 2' },
    { name: 'Rollout blueGreen default 25% of 8 (Argo Rollouts defaults both)', workload: workload('Rollout', { replicas: 8, strategy: { type: 'blueGreen' } }), pods: podsOf(8), expect: 'evict web-0,web-1 budget 2' },
    { name: 'DeploymentConfig default 25% of 12 (ties by name, as text)', workload: workload('DeploymentConfig', { replicas: 12 }), pods: podsOf(12), expect: 'evict web-0,web-1,web-10 budget 3' },
    { name: 'StatefulSet ignores maxUnavailable: one at a time', workload: workload('StatefulSet', { replicas: 10, strategy: { maxUnavailable: 5 } }), pods: podsOf(10), expect: 'evict web-9 budget 1' },
    { name: 'Deployment replicas unset means 1', workload: workload('Deployment', { replicas: undefined }), pods: podsOf(1), expect: 'evict web-0 budget 1' },
  ]);
});

describe('planEvictions: availability and minReadySeconds', () => {
  runCases([
    { name: 'a replacement Ready for less than minReadySeconds is not available yet', workload: workload('Deployment', { minReadySeconds: 30 }), pods: [...podsOf(2), pod('web-new', { created: FRESH, ready: NOW - 10_000 })], expect: 'wait', reason: /2 of 3 pods available, at most 1 may be unavailable/ },
    { name: 'a replacement Ready for exactly minReadySeconds is available', workload: workload('Deployment', { minReadySeconds: 30 }), pods: [...podsOf(2), pod('web-new', { created: FRESH, ready: NOW - 30_000 })], expect: 'evict web-0 budget 1' },
    { name: 'minReadySeconds 0: Ready this very moment counts', workload: workload('Deployment'), pods: [...podsOf(2), pod('web-new', { created: FRESH, ready: NOW })], expect: 'evict web-0 budget 1' },
    { name: 'a replacement not Ready yet', workload: workload('Deployment'), pods: [...podsOf(2), pod('web-new', { created: FRESH, ready: null })], expect: 'wait', reason: /2 of 3 pods available/ },
    { name: 'a stale pod Ready but younger than minReadySeconds serves traffic: not evicted, and it blocks', workload: workload('Deployment', { minReadySeconds: 60 }), pods: [...podsOf(2), pod('web-young', { created: STALE, ready: NOW - 1000 })], expect: 'wait' },
    { name: 'a stale pod that is not Ready costs nothing and goes first', workload: workload('Deployment', { replicas: 4 }), pods: [...podsOf(3), pod('web-crash', { created: T - 1000, ready: null })], expect: 'evict web-crash budget 1' },
    { name: 'a not-Ready stale pod plus one available within budget 2', workload: workload('Deployment', { replicas: 4, strategy: { maxUnavailable: 2 } }), pods: [...podsOf(3), pod('web-crash', { created: T - 1000, ready: null })], expect: 'evict web-crash,web-0 budget 2' },
    { name: 'not-Ready stale pods are capped at the budget per plan', workload: workload('Deployment', { replicas: 4 }), pods: [pod('web-d', { created: STALE + 3000, ready: null }), pod('web-c', { created: STALE + 2000, ready: null }), pod('web-b', { created: STALE + 1000, ready: null }), pod('web-a', { created: STALE + 4000, ready: null })], expect: 'evict web-b budget 1' },
    { name: 'a Pending stale pod goes first', workload: workload('DaemonSet'), pods: [...podsOf(2), pod('web-p', { phase: 'Pending', ready: null, created: T - 2000 })], expect: 'evict web-p budget 1' },
    { name: 'an unavailable fresh pod and budget 2: one more', workload: workload('Deployment', { replicas: 8 }), pods: [...podsOf(7), pod('web-new', { created: FRESH, ready: null })], expect: 'evict web-0 budget 2' },
  ]);
});

describe('planEvictions: pods being deleted', () => {
  runCases([
    { name: 'a deleting pod whose replacement is not Ready uses the budget', workload: workload('Deployment', { replicas: 4 }), pods: [pod('web-old', { deleting: true }), ...podsOf(3), pod('web-new', { created: FRESH, ready: null })], expect: 'wait' },
    { name: 'a deleting pod whose replacement is available: the next one, never the deleting one', workload: workload('Deployment', { replicas: 4 }), pods: [pod('web-old', { deleting: true, created: STALE - 1000 }), ...podsOf(3), pod('web-new', { created: FRESH })], expect: 'evict web-0 budget 1' },
    { name: 'budget 2 with one deleting and its replacement not Ready: one more', workload: workload('Deployment', { replicas: 4, strategy: { maxUnavailable: 2 } }), pods: [pod('web-old', { deleting: true }), ...podsOf(3), pod('web-new', { created: FRESH, ready: null })], expect: 'evict web-0 budget 2' },
    { name: 'budget 2 with two replacements not Ready: wait', workload: workload('Deployment', { replicas: 4, strategy: { maxUnavailable: 2 } }), pods: [pod('web-o1', { deleting: true }), pod('web-o2', { deleting: true }), ...podsOf(2), pod('web-n1', { created: FRESH, ready: null }), pod('web-n2', { created: FRESH, ready: null })], expect: 'wait' },
    { name: 'a deleting pod not replaced yet: fewer pods than desired', workload: workload('Deployment'), pods: [pod('web-old', { deleting: true }), ...podsOf(2)], expect: 'wait', reason: /2 of 3 pods exist: replacement not available yet/ },
    { name: 'DaemonSet: a deleting pod not replaced yet', workload: workload('DaemonSet'), pods: [pod('web-old', { deleting: true }), ...podsOf(2)], expect: 'wait', reason: /2 of 3 pods exist/ },
    { name: 'StatefulSet: an evicted member not yet replaced', workload: workload('StatefulSet'), pods: [pod('web-2', { deleting: true }), ...podsOf(2)], expect: 'wait', reason: /2 of 3 pods exist/ },
    { name: 'StatefulSet: any terminating pod blocks, even beyond the desired ordinals', workload: workload('StatefulSet'), pods: [pod('web-3', { deleting: true }), ...podsOf(3)], expect: 'wait', reason: /1 pod terminating/ },
    { name: 'StatefulSet: two terminating pods', workload: workload('StatefulSet'), pods: [pod('web-3', { deleting: true }), pod('web-4', { deleting: true }), ...podsOf(3)], expect: 'wait', reason: /2 pods terminating/ },
  ]);
});

describe('planEvictions: order', () => {
  runCases([
    { name: 'Deployment: oldest first', workload: workload('Deployment', { replicas: 4, strategy: { maxUnavailable: 2 } }), pods: [pod('web-a', { created: STALE + 3000 }), pod('web-b', { created: STALE + 1000 }), pod('web-c', { created: STALE + 2000 }), pod('web-d', { created: STALE })], expect: 'evict web-d,web-b budget 2' },
    { name: 'Deployment: ties by name', workload: workload('Deployment', { replicas: 4, strategy: { maxUnavailable: 2 } }), pods: [pod('web-z'), pod('web-m'), pod('web-b'), pod('web-q')], expect: 'evict web-b,web-m budget 2' },
    { name: 'Deployment: not Ready first even when younger', workload: workload('Deployment', { replicas: 4, strategy: { maxUnavailable: 2 } }), pods: [pod('web-a', { created: STALE }), pod('web-b', { created: STALE + 1000 }), pod('web-c', { created: STALE + 2000 }), pod('web-z', { created: T - 1000, ready: null })], expect: 'evict web-z,web-a budget 2' },
    { name: 'DaemonSet: oldest first', workload: workload('DaemonSet'), pods: [pod('web-x', { created: STALE + 5000 }), pod('web-y', { created: STALE }), pod('web-z', { created: STALE + 1000 })], expect: 'evict web-y budget 1' },
    { name: 'StatefulSet: highest ordinal first, by number not by text', workload: workload('StatefulSet', { replicas: 12 }), pods: podsOf(12), expect: 'evict web-11 budget 1' },
    { name: 'StatefulSet: the highest stale ordinal when higher ones are fresh', workload: workload('StatefulSet'), pods: [pod('web-0'), pod('web-1'), pod('web-2', { created: FRESH })], expect: 'evict web-1 budget 1' },
    { name: 'StatefulSet: a not-Ready stale member goes first', workload: workload('StatefulSet'), pods: [pod('web-0', { ready: null }), pod('web-1'), pod('web-2')], expect: 'evict web-0 budget 1' },
    { name: 'StatefulSet: a not-Ready fresh member blocks', workload: workload('StatefulSet'), pods: [pod('web-0'), pod('web-1'), pod('web-2', { created: FRESH, ready: null })], expect: 'wait', reason: /2 of 3 pods available/ },
    { name: 'StatefulSet: a Ready member younger than minReadySeconds blocks', workload: workload('StatefulSet', { minReadySeconds: 60 }), pods: [pod('web-0'), pod('web-1'), pod('web-2', { ready: NOW - 1000 })], expect: 'wait' },
    { name: 'StatefulSet: a missing ordinal blocks', workload: workload('StatefulSet'), pods: [pod('web-0'), pod('web-1')], expect: 'wait', reason: /2 of 3 pods exist/ },
    { name: 'StatefulSet: more pods than desired (scale-down) blocks', workload: workload('StatefulSet'), pods: podsOf(4), expect: 'wait', reason: /4 pods for 3 desired/ },
  ]);

  it('the plan does not depend on the order of the input pods', () => {
    const w = workload('Deployment', { replicas: 8 });
    const pods = [pod('web-c', { created: STALE + 1 }), pod('web-a', { created: STALE + 2 }), pod('web-b', { created: STALE + 1 }), ...podsOf(5, { created: FRESH }, 'new')];
    const expected = describePlan(plan(w, pods));
    assert.equal(expected, 'evict web-b,web-c budget 2');
    assert.equal(describePlan(plan(w, [...pods].reverse())), expected);
  });
});

/**
 * Plays the StatefulSet controller against successive plans: an evicted pod
 * terminates, then comes back under the same name, not Ready, then Ready, then
 * past minReadySeconds. Returns every plan on the way.
 */
function simulateStatefulSet(replicas: number, minReadySeconds: number): string[] {
  const w = workload('StatefulSet', { replicas, minReadySeconds });
  let pods = podsOf(replicas);
  let now = NOW;
  const trail: string[] = [];
  for (let step = 0; step < 10 * replicas; step++) {
    const p = plan(w, pods, { now });
    trail.push(describePlan(p));
    assertInvariants(w, pods, p, { restartAt: T, now });
    if (p.action === 'done') return trail;
    if (p.action !== 'evict') throw new Error(`unexpected ${p.action}`);
    const [victim] = p.pods;
    assert.ok(victim !== undefined);
    const name = victim.name;
    // Once the last stale pod is on its way out nothing stale is left: done.
    const blocked = pods.some((x) => x.name !== name && x.createdAt < T) ? 'wait' : 'done';
    pods = pods.map((x) => (x.name === name ? { ...x, deleting: true } : x));
    assert.equal(describePlan(plan(w, pods, { now })), blocked, 'the terminating pod blocks');
    assert.equal(describePlan(plan(w, pods.filter((x) => x.name !== name), { now })), blocked, 'the missing ordinal blocks');
    now += 10_000;
    pods = pods.map((x) => (x.name === name ? pod(name, { created: now, ready: null }) : x));
    assert.equal(describePlan(plan(w, pods, { now })), blocked, 'the not-Ready replacement blocks');
    now += 5_000;
    pods = pods.map((x) => (x.name === name ? pod(name, { created: now - 5_000, ready: now }) : x));
    if (minReadySeconds > 0) assert.equal(describePlan(plan(w, pods, { now })), blocked, 'minReadySeconds not elapsed');
    now += minReadySeconds * 1000;
  }
  throw new Error('no progress');
}

describe('planEvictions: StatefulSet across successive plans', () => {
  it('replaces 2, then 1, then 0, one at a time, then is done', () => {
    assert.deepEqual(simulateStatefulSet(3, 0), ['evict web-2 budget 1', 'evict web-1 budget 1', 'evict web-0 budget 1', 'done']);
  });
  it('waits out minReadySeconds between members', () => {
    assert.deepEqual(simulateStatefulSet(3, 30), ['evict web-2 budget 1', 'evict web-1 budget 1', 'evict web-0 budget 1', 'done']);
  });
  it('a single member', () => {
    assert.deepEqual(simulateStatefulSet(1, 0), ['evict web-0 budget 1', 'done']);
  });
});

describe('planEvictions: a Deployment across successive plans', () => {
  it('replaces every stale pod with at most the budget unavailable, never evicting a pod twice', () => {
    const w = workload('Deployment', { replicas: 8 });
    let pods = podsOf(8);
    let now = NOW;
    const evicted: string[] = [];
    for (let step = 0; step < 40; step++) {
      const p = plan(w, pods, { now });
      assertInvariants(w, pods, p, { restartAt: T, now });
      if (p.action === 'done') break;
      if (p.action === 'evict') {
        const names = new Set(p.pods.map((x) => x.name));
        evicted.push(...names);
        // The ReplicaSet creates a replacement at once; the old pod terminates slowly.
        pods = [...pods.map((x) => (names.has(x.name) ? { ...x, deleting: true } : x)), ...p.pods.map((x) => pod(`${x.name}-r`, { created: now, ready: null }))];
      } else {
        assert.equal(p.action, 'wait');
        // Time passes: replacements become Ready, terminating pods go.
        now += 10_000;
        pods = pods.filter((x) => !x.deleting).map((x) => (x.readySince === undefined ? { ...x, readySince: now } : x));
      }
    }
    assert.deepEqual([...evicted].sort(), podsOf(8).map((x) => x.name).sort());
    assert.equal(new Set(evicted).size, 8, 'no pod evicted twice');
    assert.equal(describePlan(plan(w, pods, { now })), 'done');
  });
});

describe('resolveMaxUnavailable', () => {
  const cases: { args: [number | string | undefined, number, number | string, boolean?]; expected: number }[] = [
    { args: [undefined, 10, '25%'], expected: 2 },
    { args: ['25%', 10, '25%'], expected: 2 },
    { args: ['25%', 10, '25%', true], expected: 3 },
    { args: ['25%', 3, '25%'], expected: 0 },
    { args: ['25%', 4, '25%'], expected: 1 },
    { args: ['33%', 3, 1], expected: 0 },
    { args: ['33%', 3, 1, true], expected: 1 },
    { args: ['1%', 100, 1], expected: 1 },
    { args: ['1%', 99, 1], expected: 0 },
    { args: ['1%', 99, 1, true], expected: 1 },
    // (value * total) / 100 as Go computes it: 0.29 * 100 would give 28.999… and 0.07 * 100 7.000…1.
    { args: ['29%', 100, 1], expected: 29 },
    { args: ['7%', 100, 1, true], expected: 7 },
    { args: ['100%', 7, 1], expected: 7 },
    { args: ['0%', 7, 1], expected: 0 },
    { args: ['150%', 4, 1], expected: 4 },
    { args: ['10%', 0, 1], expected: 0 },
    { args: [3, 10, '25%'], expected: 3 },
    { args: [0, 10, '25%'], expected: 0 },
    { args: [20, 10, '25%'], expected: 10 },
    { args: [undefined, 5, 1], expected: 1 },
    { args: [undefined, 0, 1], expected: 0 },
  ];
  for (const { args, expected } of cases) {
    it(`${JSON.stringify(args)} → ${expected}`, () => {
      assert.equal(resolveMaxUnavailable(...args), expected);
    });
  }
  for (const bad of ['25', '-1%', '%', ' 25%', '25 %', '2.5%', 'abc', '']) {
    it(`rejects ${JSON.stringify(bad)}`, () => {
      assert.throws(() => resolveMaxUnavailable(bad, 10, '25%'), (error: unknown) => error instanceof InvalidMaxUnavailableError && error.name === 'InvalidMaxUnavailableError');
    });
  }
  for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    it(`rejects ${bad}`, () => {
      assert.throws(() => resolveMaxUnavailable(bad, 10, '25%'), InvalidMaxUnavailableError);
    });
  }
});

describe('restartWarnings', () => {
  const SINGLE = /single replica/;
  const VOLUMES = /Recreate strategy with volume claims/;
  const cases: { name: string; workload: WorkloadSummary; expected: RegExp[] }[] = [
    { name: 'Deployment with one replica', workload: workload('Deployment', { replicas: 1 }), expected: [SINGLE] },
    { name: 'Deployment with replicas unset (1)', workload: workload('Deployment', { replicas: undefined }), expected: [SINGLE] },
    { name: 'Deployment with three replicas', workload: workload('Deployment'), expected: [] },
    { name: 'Deployment scaled to 0', workload: workload('Deployment', { replicas: 0 }), expected: [] },
    { name: 'StatefulSet with one replica', workload: workload('StatefulSet', { replicas: 1 }), expected: [SINGLE] },
    { name: 'Rollout with one replica', workload: workload('Rollout', { replicas: 1 }), expected: [SINGLE] },
    { name: 'DaemonSet on one node: node-local disruption is no warning', workload: workload('DaemonSet', { status: { desiredNumberScheduled: 1 } }), expected: [] },
    { name: 'Recreate with volume claims', workload: workload('Deployment', { strategy: { type: 'Recreate' }, usesVolumeClaims: true }), expected: [VOLUMES] },
    { name: 'DeploymentConfig Recreate with volume claims', workload: workload('DeploymentConfig', { strategy: { type: 'Recreate' }, usesVolumeClaims: true }), expected: [VOLUMES] },
    { name: 'Recreate without volume claims', workload: workload('Deployment', { strategy: { type: 'Recreate' } }), expected: [] },
    { name: 'RollingUpdate with volume claims', workload: workload('Deployment', { usesVolumeClaims: true }), expected: [] },
    { name: 'StatefulSet with volume claims (recreated only once gone)', workload: workload('StatefulSet', { usesVolumeClaims: true }), expected: [] },
    { name: 'one replica, Recreate and volume claims: both, in order', workload: workload('Deployment', { replicas: 1, strategy: { type: 'Recreate' }, usesVolumeClaims: true }), expected: [SINGLE, VOLUMES] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const warnings = restartWarnings(c.workload);
      assert.equal(warnings.length, c.expected.length, warnings.join(' | '));
      c.expected.forEach((pattern, i) => assert.match(warnings[i] ?? '', pattern));
    });
  }
});
