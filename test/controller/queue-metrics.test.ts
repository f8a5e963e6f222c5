/**
 * client-go's workqueue metrics on the WorkQueue, read back from a Prometheus
 * registry as a scrape would, on a fake clock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { FakeClock, settle } from '../support/fake-clock.ts';
import { createWorkqueueMetrics } from '../../controller/metrics.ts';
import { WorkQueue } from '../../controller/queue.ts';

/** The value of one sample in the exposition text, e.g. `workqueue_adds_total{name="w"}`. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  assert.ok(line !== undefined, `no sample ${series} in:\n${text}`);
  return Number(line.slice(series.length + 1));
}

test('adds, retries, depth, queue and work duration, unfinished work and the longest run, under client-go names', async () => {
  const clock = new FakeClock(1_000_000);
  const registry = new Registry();
  const releases = new Map<string, (ok: boolean) => void>();
  // Wired as the controller wires them: the queue is built before its metrics, which read it at scrape time.
  let queue: WorkQueue | undefined;
  // One cluster, as a controller that is no hub reads it: no `cluster` label.
  const one = (read: (q: WorkQueue) => number) => () => [{ cluster: undefined, value: queue === undefined ? 0 : read(queue) }];
  const hooks = createWorkqueueMetrics(registry, 'w', {
    depth: one((q) => q.depth),
    unfinishedWorkSeconds: one((q) => q.unfinishedWorkSeconds()),
    longestRunningSeconds: one((q) => q.longestRunningSeconds()),
  })(undefined);
  const wired = new WorkQueue({
    concurrency: 1,
    clock,
    backoff: { baseMs: 1000, maxMs: 1000 },
    process: (key) => new Promise((resolve, reject) => releases.set(key, (ok) => (ok ? resolve() : reject(new Error('scripted'))))),
    metrics: hooks,
  });
  queue = wired;

  const scrape = async (): Promise<string> => registry.metrics();
  assert.equal(sample(await scrape(), 'workqueue_adds_total{name="w"}'), 0, 'zero-valued before the first add');

  wired.add('a');
  wired.add('b');
  wired.add('a'); // deduplicated: not an add
  assert.equal(sample(await scrape(), 'workqueue_depth{name="w"}'), 2);

  await clock.advanceAsync(3000);
  wired.start();
  await settle();
  await clock.advanceAsync(2000);
  let text = await scrape();
  assert.equal(sample(text, 'workqueue_depth{name="w"}'), 1, 'one running, one waiting');
  assert.equal(sample(text, 'workqueue_unfinished_work_seconds{name="w"}'), 2);
  assert.equal(sample(text, 'workqueue_longest_running_processor_seconds{name="w"}'), 2);

  releases.get('a')?.(false);
  await settle();
  await settle();
  text = await scrape();
  assert.equal(sample(text, 'workqueue_adds_total{name="w"}'), 2);
  assert.equal(sample(text, 'workqueue_retries_total{name="w"}'), 1, 'a failed run is a retry');
  assert.equal(sample(text, 'workqueue_work_duration_seconds_count{name="w"}'), 1);
  assert.equal(sample(text, 'workqueue_work_duration_seconds_sum{name="w"}'), 2);
  // a waited 3 s before its run; b waited 5 s (3 before start, 2 behind a).
  assert.equal(sample(text, 'workqueue_queue_duration_seconds_count{name="w"}'), 2);
  assert.equal(sample(text, 'workqueue_queue_duration_seconds_sum{name="w"}'), 8);
  releases.get('b')?.(true);
  await settle();
  await wired.shutdown();
});
