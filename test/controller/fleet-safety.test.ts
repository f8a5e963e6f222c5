/**
 * The pure decisions of fleet safety: cooldowns from the recorded restart
 * time, the health gate over replacement pods, the breaker over recorded halts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { breakerState, cooldownFor, cooldownRemaining, formatHalt, healthGate, parseHalt, type FleetOptions } from '../../controller/fleet/safety.ts';
import type { PodSummary } from '../../controller/model.ts';
import { FLEET_ANNOTATIONS } from '../../core/index.ts';
import { workload } from './support/summaries.ts';

const OPTIONS: FleetOptions = Object.freeze({ minRestartIntervalMs: 60_000, pausePeriodMs: 0, healthGateTimeoutMs: 300_000, breakerThreshold: 3, breakerWindowMs: 600_000 });

function pod(name: string, createdAt: number, overrides: Partial<PodSummary> = {}): PodSummary {
  return { namespace: 'prod', name, uid: `uid-${name}`, owner: undefined, createdAt, deleting: false, phase: 'Running', readySince: createdAt + 1000, nodeName: 'n', ...overrides };
}

test('cooldownFor: the minimum interval, unless a pause period (annotation before flag) is longer', () => {
  assert.deepEqual(cooldownFor(workload('Deployment', 'a'), OPTIONS), { ms: 60_000, cause: 'min-restart-interval' });
  assert.deepEqual(cooldownFor(workload('Deployment', 'a'), { ...OPTIONS, pausePeriodMs: 120_000 }), { ms: 120_000, cause: 'pause-period' });
  const annotated = workload('StatefulSet', 'b', { annotations: { [FLEET_ANNOTATIONS.pausePeriod]: '5m' } });
  assert.deepEqual(cooldownFor(annotated, { ...OPTIONS, pausePeriodMs: 120_000 }), { ms: 300_000, cause: 'pause-period' });
  // A shorter annotation lowers the global pause period, never the minimum interval.
  const short = workload('Deployment', 'c', { annotations: { [FLEET_ANNOTATIONS.pausePeriod]: '10s' } });
  assert.deepEqual(cooldownFor(short, { ...OPTIONS, pausePeriodMs: 120_000 }), { ms: 60_000, cause: 'min-restart-interval' });
  assert.deepEqual(cooldownFor(workload('Deployment', 'd'), { ...OPTIONS, minRestartIntervalMs: 0 }), { ms: 0, cause: undefined });
});

test('cooldownFor: a malformed pause period is reported and the flag is used', () => {
  const bad = workload('Deployment', 'a', { annotations: { [FLEET_ANNOTATIONS.pausePeriod]: 'five minutes' } });
  const cooldown = cooldownFor(bad, { ...OPTIONS, pausePeriodMs: 90_000 });
  assert.equal(cooldown.ms, 90_000);
  assert.match(cooldown.problem ?? '', /pause-period: "five minutes" is not a duration/);
});

test('cooldownRemaining: counted from the recorded T, zero when never restarted or off', () => {
  assert.equal(cooldownRemaining(undefined, 60_000, 1_000_000), 0);
  assert.equal(cooldownRemaining(1_000_000, 0, 1_000_001), 0);
  assert.equal(cooldownRemaining(1_000_000, 60_000, 1_020_000), 40_000);
  assert.equal(cooldownRemaining(1_000_000, 60_000, 1_060_000), 0);
  // A clock behind the recorded T (another replica's clock) waits at most T + interval.
  assert.equal(cooldownRemaining(1_000_000, 60_000, 990_000), 70_000);
});

test('formatHalt and parseHalt round-trip; anything else present still halts, outside any breaker window', () => {
  const text = formatHalt({ at: 1_700_000_000_000, reason: 'replacement pod a not Ready' });
  assert.equal(text, '{"at":"2023-11-14T22:13:20Z","reason":"replacement pod a not Ready"}');
  assert.deepEqual(parseHalt(text), { at: 1_700_000_000_000, reason: 'replacement pod a not Ready' });
  assert.deepEqual(parseHalt('true'), { at: 0, reason: 'true' });
  assert.deepEqual(parseHalt('{"reason":"by hand"}'), { at: 0, reason: 'by hand' });
  assert.equal(parseHalt(undefined), undefined);
});

test('healthGate: replacements (created at or after T) must be Ready within the timeout of their creation', () => {
  const t = 1_000_000;
  const old = pod('old', t - 50_000);
  assert.deepEqual(healthGate([old, pod('new', t + 1000)], t, t + 10_000, 300_000), { action: 'pass' });
  const unready = pod('new', t + 1000, { readySince: undefined });
  assert.deepEqual(healthGate([old, unready], t, t + 10_000, 300_000), { action: 'wait', pod: 'new' });
  const failed = healthGate([old, unready], t, t + 301_000, 300_000);
  assert.equal(failed.action, 'fail');
  assert.match(failed.action === 'fail' ? failed.reason : '', /^replacement pod new not Ready 300s after its creation \(health gate 300s\)$/);
  // Stale pods, pods being deleted and terminated pods are never judged.
  const judgedNot = [pod('stale', t - 1, { readySince: undefined }), pod('gone', t, { readySince: undefined, deleting: true }), pod('done', t, { readySince: undefined, phase: 'Failed' })];
  assert.deepEqual(healthGate(judgedNot, t, t + 10_000_000, 300_000), { action: 'pass' });
});

test('breakerState: open once the threshold of halts falls within one window, and it stays open while they are recorded', () => {
  const minute = 60_000;
  assert.deepEqual(breakerState([], 3, 10 * minute), { open: false });
  assert.deepEqual(breakerState([1 * minute, 2 * minute], 3, 10 * minute), { open: false });
  // Three halts, but never three within ten minutes.
  assert.deepEqual(breakerState([1 * minute, 9 * minute, 15 * minute], 3, 10 * minute), { open: false });
  assert.deepEqual(breakerState([15 * minute, 1 * minute, 9 * minute, 10 * minute], 3, 10 * minute), { open: true, since: 10 * minute, halts: 3 });
  assert.deepEqual(breakerState([1 * minute, 2 * minute, 3 * minute, 4 * minute], 3, 10 * minute), { open: true, since: 3 * minute, halts: 4 });
  // Hand-written halts (time 0) halt their workload but never trip the breaker.
  assert.deepEqual(breakerState([0, 0, 0], 3, 10 * minute), { open: false });
  assert.deepEqual(breakerState([5 * minute], 1, 10 * minute), { open: true, since: 5 * minute, halts: 1 });
});
