/**
 * Admission as data (controller/fleet/admission.ts): whether a restart may
 * start, in order halt, breaker, cooldown, slots, rate, with the Events it
 * calls for; and a start token is spent only on a start that happens.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventMessage } from '../../controller/events.ts';
import { admitStart, FLEET_OFF, type AdmissionInput } from '../../controller/fleet/admission.ts';
import { FLEET_ANNOTATIONS } from '../../core/index.ts';
import type { BreakerState } from '../../controller/fleet/safety.ts';
import { workload } from './support/summaries.ts';

const NOW = Date.parse('2026-01-01T00:10:00Z');
const CLOSED: BreakerState = { open: false };

/** A start that every check admits, with a limiter that counts its tokens. */
function input(overrides: Partial<AdmissionInput> = {}): { input: AdmissionInput; taken: () => number } {
  let taken = 0;
  return {
    input: {
      workload: workload('Deployment', 'app'),
      changed: [{ kind: 'Secret', name: 'db' }],
      lastRestartAt: undefined,
      halt: undefined,
      now: NOW,
      fleet: { ...FLEET_OFF, minRestartIntervalMs: 60_000 },
      breaker: () => CLOSED,
      holdsSlot: false,
      acting: 0,
      maxConcurrentRestarts: 1,
      checkIntervalMs: 500,
      limiter: { tryTake: () => { taken++; return true; }, retryAfterMs: 1000 },
      ...overrides,
    },
    taken: () => taken,
  };
}

test('a start every check admits takes one token', () => {
  const { input: given, taken } = input();
  assert.deepEqual(admitStart(given), { start: true, events: [] });
  assert.equal(taken(), 1);
});

test('a halted workload is not started, and the breaker is not read for it', () => {
  const { input: given, taken } = input({ halt: { at: NOW - 1000, reason: 'replacement pod app-1 not Ready' }, breaker: () => assert.fail('the breaker scans every workload: not for a halted one') });
  const admission = admitStart(given);
  assert.equal(admission.start, false);
  assert.equal(admission.start === false && admission.requeueAfterMs, undefined, 'looked at again at the next change');
  assert.deepEqual(admission.events.map((e) => [e.type, e.reason]), [['Warning', 'RestartHalted']]);
  assert.match(eventMessage(admission.events[0]!), new RegExp(`halted \\(replacement pod app-1 not Ready\\); remove the annotation ${FLEET_ANNOTATIONS.restartHalted}`));
  assert.equal(taken(), 0);
});

test('an open breaker defers every start to the next check', () => {
  const { input: given, taken } = input({ breaker: () => ({ open: true, since: NOW, halts: 3 }) });
  const admission = admitStart(given);
  assert.deepEqual({ ...admission, events: admission.events.map((e) => e.reason) }, { start: false, requeueAfterMs: 500, events: ['RestartPaused'], deferred: 'breaker' });
  assert.equal(taken(), 0);
});

test('a restart within the minimum interval is deferred to its end with a Warning; a pause period with a Normal Event', () => {
  const interval = admitStart(input({ lastRestartAt: NOW - 20_000 }).input);
  assert.equal(interval.start === false && interval.requeueAfterMs, 40_000);
  assert.equal(interval.start === false && interval.deferred, 'min-restart-interval');
  assert.deepEqual(interval.events.map((e) => [e.type, e.reason]), [['Warning', 'RestartDeferred']]);
  const pause = admitStart(input({ lastRestartAt: NOW - 20_000, fleet: { ...FLEET_OFF, pausePeriodMs: 120_000 } }).input);
  assert.equal(pause.start === false && pause.deferred, 'pause-period');
  assert.deepEqual(pause.events.map((e) => [e.type, e.reason]), [['Normal', 'RestartDeferred']]);
});

test('a malformed pause period is a Warning, and the start goes on', () => {
  const admission = admitStart(input({ workload: workload('Deployment', 'app', { annotations: { [FLEET_ANNOTATIONS.pausePeriod]: 'soon' } }) }).input);
  assert.equal(admission.start, true);
  assert.deepEqual(admission.events.map((e) => [e.type, e.reason]), [['Warning', 'RestartWarning']]);
});

test('no free slot: looked at again at the next check, no token taken; a restart already in progress keeps its slot', () => {
  const { input: given, taken } = input({ acting: 1 });
  const full = admitStart(given);
  assert.equal(full.start, false);
  assert.equal(full.start === false && full.requeueAfterMs, 500);
  assert.equal(full.start === false && full.deferred, undefined, 'a full cap is not a deferral the metric counts');
  assert.equal(taken(), 0);
  assert.equal(admitStart(input({ acting: 1, holdsSlot: true }).input).start, true);
});

test('no token: looked at again when the next one accrues', () => {
  const admission = admitStart(input({ limiter: { tryTake: () => false, retryAfterMs: 1000 } }).input);
  assert.equal(admission.start === false && admission.requeueAfterMs, 1000);
  assert.equal(admission.start === false && admission.deferred, 'rate');
});
