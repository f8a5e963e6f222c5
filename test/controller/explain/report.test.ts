/**
 * The live report's blockers, from a snapshot built in memory (the cluster
 * test drives the same code through the CLI): a Rollout's restart that the
 * controller holds for the Rollout's own update after a sync is reported,
 * by the rule the reconciler applies (`rolloutUpdateWait`), and only while
 * that rule holds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatDigestMap, formatTime } from '../../../controller/bookkeeping.ts';
import { ClusterView, workloadKey } from '../../../controller/cache/cluster-view.ts';
import type { LiveSnapshot } from '../../../controller/explain/collect.ts';
import { formatLiveTable } from '../../../controller/explain/format.ts';
import { buildLiveReport, type LiveRestart, type ReportOptions } from '../../../controller/explain/report.ts';
import type { ApplicationSummary, WorkloadStatus, WorkloadSummary } from '../../../controller/model.ts';
import { formatWriteBackRecord } from '../../../controller/writeback/record.ts';
import { BOOKKEEPING, WRITE_BACK_ANNOTATION } from '../../../core/index.ts';
import { config, workload } from '../support/summaries.ts';

/** T, a whole second; the snapshot is made 5 s after it. */
const T = Date.UTC(2026, 0, 1, 12, 0, 0);
const WAIT_MS = 60_000;

const OPTIONS: ReportOptions = { mode: 'annotated', restartStrategy: 'evict', argocdSyncWaitMs: WAIT_MS, keyed: true, target: { type: 'workload', kind: 'Rollout', name: 'web' } };

const UPDATING: Partial<WorkloadStatus> = { observedGeneration: 1, replicas: 3, updatedReplicas: 1 };
const SETTLED: Partial<WorkloadStatus> = { observedGeneration: 1, replicas: 2, updatedReplicas: 2 };

function application(fields: Partial<ApplicationSummary> = {}): ApplicationSummary {
  return { namespace: 'argocd', name: 'shop', resourceVersion: '1', trackingIds: ['shop', 'argocd_shop'], operationRunning: false, refreshRequested: false, automated: true, outOfSync: [], project: 'default', destination: { server: 'https://kubernetes.default.svc', name: '', namespace: 'shop' }, writeBackSource: { metadata: { name: 'shop', namespace: 'argocd' } }, ...fields };
}

/** Rollout `web` (tracked by `shop`, restart at T recorded, spec.restartAt not written), two pods from before T. */
function snapshot(shape: { status: Partial<WorkloadStatus>; app?: ApplicationSummary | undefined; now?: number; restartAt?: string }): LiveSnapshot {
  const view = new ClusterView();
  const secret = config('Secret', 'db', { digest: 'v1:aaaaaaaaaaaaaaaa' });
  view.configChanged(undefined, secret);
  const base = workload('Rollout', 'web', {
    app: 'shop',
    secrets: ['db'],
    annotations: { 'reloader.stakater.com/auto': 'true', [BOOKKEEPING.restartAt]: formatTime(T), [BOOKKEEPING.restartedFor]: formatDigestMap({ 'Secret/db': secret.digest }) },
    spec: { replicas: 2, ...(shape.restartAt === undefined ? {} : { restartAt: shape.restartAt }) },
  });
  const rollout: WorkloadSummary = { ...base, status: { ...base.status, ...shape.status } };
  view.workloadChanged(undefined, rollout);
  view.replicaSetChanged(undefined, { namespace: 'prod', name: 'web-abc', uid: 'uid-rs', owner: { kind: 'Rollout', name: 'web', uid: rollout.uid } });
  for (const name of ['web-abc-1', 'web-abc-2']) {
    view.podChanged(undefined, { namespace: 'prod', name, uid: `uid-${name}`, owner: { kind: 'ReplicaSet', name: 'web-abc', uid: 'uid-rs' }, createdAt: T - 3_600_000, deleting: false, phase: 'Running', readySince: T - 3_590_000, nodeName: 'n' });
  }
  const app = 'app' in shape ? shape.app : application();
  if (app !== undefined) view.applicationChanged(undefined, app);
  return { namespace: 'prod', view, podLabels: new Map(), budgets: [], workloadKeys: [workloadKey('Rollout', 'prod', 'web')], warnings: [], now: shape.now ?? T + 5000 };
}

function restartOf(given: LiveSnapshot, options: ReportOptions = OPTIONS): LiveRestart {
  const restart = buildLiveReport(given, options).workloads[0]?.restart;
  assert.ok(restart !== undefined);
  return restart;
}

const kinds = (restart: LiveRestart): (string | null)[][] => restart.blockedBy.map((b) => [b.kind, b.name]);

test('a Rollout still updating after the sync: explain names it and what the restart waits for, within the bound', () => {
  const given = snapshot({ status: UPDATING });
  const restart = restartOf(given);
  assert.equal(restart.strategy, 'restart-at');
  assert.equal(restart.state, 'in-progress');
  assert.deepEqual(restart.stalePods, ['web-abc-1', 'web-abc-2']);
  assert.deepEqual(kinds(restart), [['rollout-in-progress', null]]);
  assert.equal(restart.blockedBy[0]?.reason, 'Rollout web is still updating (an update is in progress: 1 of 3 replicas updated): the controller writes spec.restartAt once the update is done, since the update replaces old pods anyway, at most 55 s more (--argocd-sync-wait)');
  assert.match(formatLiveTable(buildLiveReport(given, OPTIONS)), /^ {2}blocked: Rollout web is still updating \(an update is in progress: 1 of 3 replicas updated\): .* at most 55 s more \(--argocd-sync-wait\)$/m);
  const generation = restartOf(snapshot({ status: { ...SETTLED, observedGeneration: 0 } }));
  assert.match(generation.blockedBy[0]?.reason ?? '', /^Rollout web is still updating \(the Rollouts controller has observed generation 0 of 1\)/);
});

test('a sync still pending holds first: the Application is named, not the Rollout\'s update', () => {
  const restart = restartOf(snapshot({ status: UPDATING, app: application({ operationRunning: true }) }));
  assert.deepEqual(kinds(restart), [['argocd-sync', 'shop']]);
});

test('the Rollout\'s update does not hold once it is done, past T + the bound, without the Application, with the rule off, or once spec.restartAt is written', () => {
  const strategyOnly = [['strategy', null]];
  assert.deepEqual(kinds(restartOf(snapshot({ status: SETTLED }))), strategyOnly, 'the update is done');
  assert.deepEqual(kinds(restartOf(snapshot({ status: UPDATING, now: T + WAIT_MS }))), strategyOnly, 'T + the bound');
  assert.deepEqual(kinds(restartOf(snapshot({ status: UPDATING, app: undefined }))), strategyOnly, 'untracked, or the Application not visible');
  assert.deepEqual(kinds(restartOf(snapshot({ status: UPDATING }), { ...OPTIONS, argocdSyncWaitMs: 0 })), strategyOnly, '--argocd-sync-wait 0');
  assert.deepEqual(kinds(restartOf(snapshot({ status: UPDATING, restartAt: formatTime(T) }))), strategyOnly, 'the restart has acted: the Rollouts controller has it');
});

test('a restart through Git: explain shows the write-back (state, SHA, branch, age) from the workload\'s record, and no pod to evict', () => {
  const given = snapshot({ status: SETTLED });
  const key = workloadKey('Rollout', 'prod', 'web');
  const rollout = given.view.workload(key) as WorkloadSummary;
  const record = formatWriteBackRecord({ restartAt: T, state: 'committed', configs: { 'Secret/db': 'v1:aaaaaaaaaaaaaaaa' }, templateHash: 'v1:old', since: T, at: T + 2000, sha: '0123456789abcdef0123', branch: 'main', repo: 'https://git.example/shop.git' });
  given.view.workloadChanged(rollout, { ...rollout, configHash: 'v1:old', annotations: { ...rollout.annotations, 'driftless.dev/restart-strategy': 'git', [WRITE_BACK_ANNOTATION]: record } });
  const restart = restartOf(given);
  assert.equal(restart.strategy, 'git');
  assert.equal(restart.state, 'in-progress', 'committed, not synced and rolled yet');
  assert.deepEqual(restart.nextEvictions, []);
  assert.deepEqual(restart.writeBack, { state: 'committed', restartAt: formatTime(T), configs: ['Secret/db'], sha: '0123456789abcdef0123', branch: 'main', repo: 'https://git.example/shop.git', error: null, ageSeconds: 3, sinceSeconds: 5 });
  assert.match(formatLiveTable(buildLiveReport(given, OPTIONS)), /^ {2}write-back: committed 0123456789ab on main \(https:\/\/git\.example\/shop\.git\), 3 s ago, for restart-at 2026-01-01T12:00:00Z: Secret db$/m);
  const rolled = given.view.workload(key) as WorkloadSummary;
  given.view.workloadChanged(rolled, { ...rolled, configHash: 'v1:new' });
  assert.equal(restartOf(given).state, 'idle', 'a new render rolled: done');
  // The controller recorded the roll; then a person reverted the commit (or Argo CD rolled back): the hash at submission again.
  const finished = given.view.workload(key) as WorkloadSummary;
  given.view.workloadChanged(finished, { ...finished, configHash: 'v1:old', annotations: { ...finished.annotations, [WRITE_BACK_ANNOTATION]: record.replace('"committed"', '"synced"') } });
  assert.equal(restartOf(given).state, 'idle', 'synced: done, whatever the template shows since');
  assert.match(formatLiveTable(buildLiveReport(given, OPTIONS)), /^ {2}write-back: synced 0123456789ab on main \(https:\/\/git\.example\/shop\.git\) and rolled, 3 s ago, for restart-at 2026-01-01T12:00:00Z: Secret db$/m);
});
