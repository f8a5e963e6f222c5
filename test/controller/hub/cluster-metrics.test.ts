/**
 * The metrics of a cluster's pipeline (ADR 0027): a controller of one cluster shows every series as before
 * hub mode (no `cluster` label); a hub puts Argo CD's cluster name on every series of each pipeline, counters
 * and gauges alike; a cluster that leaves leaves no series behind. Read through the registry's text, as a
 * scrape reads it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClusterView } from '../../../controller/cache/cluster-view.ts';
import { ClockSkew } from '../../../controller/clock-skew.ts';
import type { WorkQueue } from '../../../controller/queue.ts';
import { GaugeSources, clusterMetrics, createProcessMetrics, forgetCluster, type GaugedPipeline } from '../../../controller/wiring/metrics.ts';
import { FakeClock } from '../../support/fake-clock.ts';

/** A pipeline as the gauges read it: a queue of `depth` keys, a breaker open or not. */
function pipeline(depth: number, breakerOpen = false): GaugedPipeline {
  const queue = { depth, oldestWaitMs: () => 0, unfinishedWorkSeconds: () => 0, longestRunningSeconds: () => 0 } as unknown as WorkQueue;
  return { view: new ClusterView(), queue, reconciler: { restartingCount: 0, breakerOpen }, skew: new ClockSkew() };
}

function setUp() {
  const gauges = new GaugeSources(new FakeClock(1_000_000));
  const metrics = createProcessMetrics(gauges);
  const scrape = (): Promise<string> => metrics.controller.registry.metrics();
  return { gauges, metrics, scrape };
}

const started = { kind: 'Deployment', namespace: 'shop', strategy: 'evict' };

test('one cluster: the series carry no cluster label, as before hub mode', async () => {
  const { gauges, metrics, scrape } = setUp();
  const view = clusterMetrics(metrics, undefined);
  gauges.attach(pipeline(3), () => true);
  view.controller.restartsStarted.inc(started);
  view.controller.reconcileSeconds.observe({ result: 'ok' }, 0.002);
  view.fleet.restartsDeferred.inc({ cause: 'rate' });
  view.workqueue.added();
  const text = await scrape();
  assert.ok(!text.includes('cluster='), `no cluster label in:\n${text}`);
  for (const line of [
    'driftless_restarts_started_total{kind="Deployment",namespace="shop",strategy="evict"} 1',
    'driftless_reconcile_duration_seconds_count{result="ok"} 1',
    'driftless_restarts_deferred_total{cause="rate"} 1',
    'driftless_queue_depth 3',
    'driftless_restart_breaker_open 0',
    'driftless_cache_objects{kind="workloads"} 0',
    'driftless_leader 1',
    'workqueue_adds_total{name="workloads"} 1',
    'workqueue_retries_total{name="workloads"} 0',
    'workqueue_depth{name="workloads"} 3',
  ]) assert.ok(text.includes(`${line}\n`), `${line} in:\n${text}`);
});

test('a hub: every series of a pipeline names its cluster; the leader gauge is the process\'s', async () => {
  const { gauges, metrics, scrape } = setUp();
  const a = clusterMetrics(metrics, 'in-cluster');
  const b = clusterMetrics(metrics, 'spoke-b');
  gauges.attach(pipeline(1), () => true, 'in-cluster');
  gauges.attach(pipeline(4, true), () => true, 'spoke-b');
  a.controller.restartsStarted.inc(started);
  b.controller.restartsStarted.inc(started);
  b.controller.restartsStarted.inc(started);
  b.controller.apiRequests.inc({ verb: 'GET', code: '200' });
  b.writeBack.fallbacks.inc({ cause: 'untracked' });
  const text = await scrape();
  for (const line of [
    'driftless_restarts_started_total{kind="Deployment",namespace="shop",strategy="evict",cluster="in-cluster"} 1',
    'driftless_restarts_started_total{kind="Deployment",namespace="shop",strategy="evict",cluster="spoke-b"} 2',
    'driftless_api_requests_total{verb="GET",code="200",cluster="spoke-b"} 1',
    'driftless_writeback_fallbacks_total{cause="untracked",cluster="spoke-b"} 1',
    'driftless_queue_depth{cluster="in-cluster"} 1',
    'driftless_queue_depth{cluster="spoke-b"} 4',
    'driftless_restart_breaker_open{cluster="in-cluster"} 0',
    'driftless_restart_breaker_open{cluster="spoke-b"} 1',
    'driftless_cache_objects{kind="pods",cluster="spoke-b"} 0',
    'workqueue_adds_total{name="workloads",cluster="spoke-b"} 0',
    'workqueue_depth{name="workloads",cluster="spoke-b"} 4',
    'driftless_leader 1',
  ]) assert.ok(text.includes(`${line}\n`), `${line} in:\n${text}`);
  // The process's own: the election, and the write-back engine (one for the process, ADR 0027).
  const processWide = /^(driftless_leader|driftless_writeback_commits_total|driftless_writeback_change_to_commit_seconds_\w+|driftless_writeback_push_failures_total)[{ ]/;
  const unlabelled = text.split('\n').filter((line) => line !== '' && !line.startsWith('#') && !processWide.test(line) && !line.includes('cluster='));
  assert.deepEqual(unlabelled, [], 'every per-pipeline series names its cluster');
});

test('a cluster that leaves: its series are removed, the other clusters\' stay', async () => {
  const { gauges, metrics, scrape } = setUp();
  const gone = clusterMetrics(metrics, 'spoke-a');
  const stays = clusterMetrics(metrics, 'spoke-b');
  const goneGauges = pipeline(2);
  gauges.attach(goneGauges, () => true, 'spoke-a');
  gauges.attach(pipeline(1), () => true, 'spoke-b');
  for (const view of [gone, stays]) {
    view.controller.restartsStarted.inc(started);
    view.controller.changeToRestartSeconds.observe({ kind: 'Deployment' }, 1.5);
    view.workqueue.started(10);
  }
  assert.ok((await scrape()).includes('cluster="spoke-a"'));
  gauges.detach(goneGauges);
  await forgetCluster(metrics.controller.registry, 'spoke-a');
  const text = await scrape();
  assert.ok(!text.includes('cluster="spoke-a"'), `no series of the departed cluster in:\n${text}`);
  assert.ok(text.includes('driftless_restarts_started_total{kind="Deployment",namespace="shop",strategy="evict",cluster="spoke-b"} 1\n'));
  assert.ok(text.includes('driftless_change_to_restart_seconds_count{kind="Deployment",cluster="spoke-b"} 1\n'));
  assert.ok(text.includes('workqueue_queue_duration_seconds_count{name="workloads",cluster="spoke-b"} 1\n'));
});
