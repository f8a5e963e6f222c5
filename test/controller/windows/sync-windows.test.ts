/**
 * Sync window evaluation as Argo CD's CanSync, on explicit instants (the
 * fake clock is the argument): matching, open interval ends, deny wins,
 * allow windows that are all closed, windows over midnight, time zones and
 * both DST edges, and when a held restart may go ahead.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileWindow, evaluateWindows, isActive, matchingWindows, readSyncWindows, untilOpen } from '../../../controller/windows/sync-windows.ts';
import type { CompiledWindow, SyncWindowSpec, WindowApplication } from '../../../controller/windows/sync-windows.ts';
import { loadWindowZone } from '../../../controller/windows/time-zone.ts';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

function window(fields: Partial<SyncWindowSpec>, index = 0): CompiledWindow {
  return compileWindow({
    kind: 'deny',
    schedule: '0 22 * * *',
    duration: '1h',
    applications: ['*'],
    namespaces: [],
    clusters: [],
    manualSync: false,
    timeZone: '',
    andOperator: false,
    ...fields,
  }, index);
}

function active(w: CompiledWindow, instant: string): boolean {
  assert.ok(w.valid, 'a valid window');
  return isActive(w, at(instant));
}

const app: WindowApplication = { name: 'shop-api', destination: { server: 'https://kubernetes.default.svc', name: 'in-cluster', namespace: 'shop' } };

describe('matchingWindows (Argo CD Matches)', () => {
  const matches = (fields: Partial<SyncWindowSpec>, a: WindowApplication = app): boolean => matchingWindows([window(fields)], a).length === 1;

  it('matches by application, cluster name or server, or namespace glob; any one list by default', () => {
    assert.ok(matches({ applications: ['shop-*'] }));
    assert.ok(!matches({ applications: ['shop'] }));
    assert.ok(matches({ applications: [], clusters: ['in-*'] }));
    assert.ok(matches({ applications: [], clusters: ['https://*.svc'] }), '`*` crosses `/`: gobwas without separators');
    assert.ok(matches({ applications: [], namespaces: ['sh?p'] }));
    assert.ok(matches({ applications: ['other'], namespaces: ['shop'] }), 'OR: the namespace is enough');
    assert.ok(matches({ applications: [], namespaces: ['{dev,shop}'] }));
    assert.ok(matches({ applications: [], namespaces: ['[!d]hop'] }));
    assert.ok(!matches({ applications: [] }), 'a window with no list matches nothing');
    assert.ok(!matches({ applications: ['[shop'] }), 'a pattern that does not compile matches nothing');
  });

  it('with andOperator, every list that is set must match', () => {
    assert.ok(matches({ andOperator: true, applications: ['shop-*'], namespaces: ['shop'] }));
    assert.ok(!matches({ andOperator: true, applications: ['shop-*'], namespaces: ['dev'] }));
    assert.ok(!matches({ andOperator: true, applications: ['other'], namespaces: ['shop'] }));
    assert.ok(matches({ andOperator: true, applications: ['shop-*'], clusters: ['in-cluster'] }));
    assert.ok(!matches({ andOperator: true, applications: ['shop-*'], clusters: ['remote'] }));
    assert.ok(matches({ andOperator: true, applications: [], namespaces: ['shop'] }));
  });
});

describe('isActive (Argo CD SyncWindow.active)', () => {
  it('is open at both ends: not at the firing, not at firing + duration', () => {
    const w = window({ schedule: '0 9 * * *', duration: '1h' });
    assert.ok(!active(w, '2026-12-02T08:59:59Z'));
    assert.ok(!active(w, '2026-12-02T09:00:00Z'));
    assert.ok(active(w, '2026-12-02T09:00:00.001Z'));
    assert.ok(active(w, '2026-12-02T09:59:59.999Z'));
    assert.ok(!active(w, '2026-12-02T10:00:00Z'));
  });

  it('spans midnight', () => {
    const w = window({ schedule: '0 22 * * *', duration: '4h' });
    assert.ok(active(w, '2026-12-02T23:30:00Z'));
    assert.ok(active(w, '2026-12-03T01:59:00Z'));
    assert.ok(!active(w, '2026-12-03T02:00:00Z'));
    assert.ok(!active(w, '2026-12-03T21:59:00Z'));
  });

  it('takes Go durations, a negative one never being active', () => {
    assert.ok(active(window({ schedule: '0 9 * * *', duration: '1h30m' }), '2026-12-02T10:29:00Z'));
    assert.ok(!active(window({ schedule: '0 9 * * *', duration: '1h30m' }), '2026-12-02T10:31:00Z'));
    assert.ok(!active(window({ schedule: '0 9 * * *', duration: '-1h' }), '2026-12-02T09:30:00Z'));
  });

  it('shifts the clock by the zone offset at the instant: winter and summer, and a half-hour zone', () => {
    const berlin = window({ schedule: '0 9 * * *', duration: '1h', timeZone: 'Europe/Berlin' });
    assert.ok(active(berlin, '2026-12-02T08:30:00Z'), '09:30 CET');
    assert.ok(!active(berlin, '2026-12-02T09:30:00Z'), '10:30 CET');
    assert.ok(active(berlin, '2027-07-01T07:30:00Z'), '09:30 CEST');
    assert.ok(!active(berlin, '2027-07-01T08:30:00Z'), '10:30 CEST');
    const kolkata = window({ schedule: '0 9 * * *', duration: '1h', timeZone: 'Asia/Kolkata' });
    assert.ok(active(kolkata, '2026-12-02T03:45:00Z'), '09:15 IST');
    assert.ok(!active(kolkata, '2026-12-02T03:15:00Z'), '08:45 IST');
  });

  it('falls back to UTC for an unknown zone, or a known one in the wrong case, as Go LoadLocation fails on them', () => {
    assert.equal(loadWindowZone('Mars/Olympus').fellBackToUtc, true);
    assert.equal(loadWindowZone('europe/berlin').fellBackToUtc, true);
    assert.equal(loadWindowZone('Europe/Berlin').fellBackToUtc, false);
    assert.equal(loadWindowZone('').fellBackToUtc, false);
    assert.ok(active(window({ schedule: '0 9 * * *', duration: '1h', timeZone: 'Mars/Olympus' }), '2026-12-02T09:30:00Z'));
  });

  it('is always active for a schedule that never fires (robfig returns the zero time): Argo CD\'s quirk', () => {
    assert.ok(active(window({ schedule: '0 0 30 2 *', duration: '1m' }), '2026-12-02T12:00:00Z'));
  });
});

describe('evaluateWindows (Argo CD CanSync, automatic)', () => {
  const deny = window({ kind: 'deny', schedule: '0 9 * * *', duration: '2h' }, 0);
  const allow = window({ kind: 'allow', schedule: '0 10 * * *', duration: '2h' }, 1);

  it('allows with no matching window, and with only deny windows that are closed', () => {
    assert.deepEqual(evaluateWindows([], at('2026-12-02T09:30:00Z')), { allowed: true, reason: 'no-matching-window', windows: [] });
    assert.equal(evaluateWindows([deny], at('2026-12-02T12:00:00Z')).reason, 'no-window-active');
    assert.equal(evaluateWindows([deny], at('2026-12-02T12:00:00Z')).allowed, true);
  });

  it('deny wins over an active allow', () => {
    const v = evaluateWindows([deny, allow], at('2026-12-02T10:30:00Z'));
    assert.deepEqual(v, { allowed: false, reason: 'deny-window-active', windows: [0] });
  });

  it('an active allow lets it through; allow windows present but all closed hold it', () => {
    assert.equal(evaluateWindows([deny, allow], at('2026-12-02T11:30:00Z')).reason, 'allow-window-active');
    assert.deepEqual(evaluateWindows([deny, allow], at('2026-12-02T13:00:00Z')), { allowed: false, reason: 'outside-allow-windows', windows: [1] });
  });

  it('manualSync lets only a manual sync through, and only when every deciding window has it', () => {
    const manualDeny = window({ kind: 'deny', schedule: '0 9 * * *', duration: '2h', manualSync: true }, 0);
    assert.equal(evaluateWindows([manualDeny], at('2026-12-02T09:30:00Z')).allowed, false);
    assert.equal(evaluateWindows([manualDeny], at('2026-12-02T09:30:00Z'), true).allowed, true);
    assert.equal(evaluateWindows([manualDeny, deny], at('2026-12-02T09:30:00Z'), true).allowed, false);
  });

  it('a window whose schedule or duration does not parse holds it, naming the window', () => {
    const broken = window({ schedule: '0 25 * * *' }, 3);
    const v = evaluateWindows([allow, broken], at('2026-12-02T11:00:00Z'));
    assert.equal(v.allowed, false);
    assert.equal(v.reason, 'invalid-window');
    assert.match(v.problem ?? '', /^spec\.syncWindows\[3\]: cannot parse schedule '0 25 \* \* \*': end of range \(25\) above maximum \(23\)/);
    assert.match(evaluateWindows([window({ duration: '1 hour' }, 2)], 0).problem ?? '', /spec\.syncWindows\[2\]: cannot parse duration '1 hour'/);
    assert.equal(untilOpen([broken], at('2026-12-02T11:00:00Z')).opensAt, undefined);
  });

  it('a kind other than allow or deny changes nothing', () => {
    assert.equal(evaluateWindows([window({ kind: 'Deny', schedule: '0 9 * * *', duration: '2h' })], at('2026-12-02T09:30:00Z')).allowed, true);
  });
});

describe('untilOpen: when a held restart may go ahead', () => {
  it('a deny window: when it ends', () => {
    const v = untilOpen([window({ kind: 'deny', schedule: '0 22 * * *', duration: '4h' })], at('2026-12-02T23:00:00Z'));
    assert.equal(v.allowed, false);
    assert.equal(iso(v.opensAt), '2026-12-03T02:00:00.000Z');
  });

  it('outside allow windows: just after the next firing (the interval is open at its start)', () => {
    const v = untilOpen([window({ kind: 'allow', schedule: '0 22 * * 1-5', duration: '2h' })], at('2026-12-05T10:00:00Z'));
    assert.equal(v.reason, 'outside-allow-windows');
    assert.equal(iso(v.opensAt), '2026-12-07T22:00:00.001Z', 'Saturday → Monday night');
  });

  it('overlapping denies: when the last one ends; a deny inside the next allow: after it', () => {
    const denies = [window({ schedule: '0 9 * * *', duration: '2h' }, 0), window({ schedule: '0 10 * * *', duration: '3h' }, 1)];
    assert.equal(iso(untilOpen(denies, at('2026-12-02T09:30:00Z')).opensAt), '2026-12-02T13:00:00.000Z');
    const mixed = [window({ kind: 'allow', schedule: '0 12 * * *', duration: '4h' }, 0), window({ kind: 'deny', schedule: '0 12 * * *', duration: '1h' }, 1)];
    assert.equal(iso(untilOpen(mixed, at('2026-12-02T08:00:00Z')).opensAt), '2026-12-02T13:00:00.000Z');
  });

  it('a yearly allow window is found within the horizon; beyond it, no answer', () => {
    const yearly = [window({ kind: 'allow', schedule: '0 0 1 1 *', duration: '24h' })];
    assert.equal(iso(untilOpen(yearly, at('2026-12-02T00:00:00Z')).opensAt), '2027-01-01T00:00:00.001Z');
    assert.equal(untilOpen(yearly, at('2026-12-02T00:00:00Z'), 7 * 24 * 3600 * 1000).opensAt, undefined);
  });

  it('a window that never fires holds for good', () => {
    assert.equal(untilOpen([window({ schedule: '0 0 30 2 *', duration: '1m' })], at('2026-12-02T00:00:00Z')).opensAt, undefined);
  });

  // Europe/Berlin: 2027-03-28 02:00 CET → 03:00 CEST at 01:00Z; 2027-10-31 03:00 CEST → 02:00 CET at 01:00Z.
  it('spring forward: a deny window that starts in the skipped hour is active from the jump to its end', () => {
    const w = window({ kind: 'deny', schedule: '30 2 * * *', duration: '1h', timeZone: 'Europe/Berlin' });
    assert.ok(!active(w, '2027-03-28T00:59:59Z'), '01:59:59 CET: before the firing');
    assert.ok(active(w, '2027-03-28T01:00:00Z'), '03:00 CEST: the clock jumped past 02:30');
    assert.ok(!active(w, '2027-03-28T01:30:00Z'), '03:30 CEST: 02:30 + 1h');
    assert.equal(iso(untilOpen([w], at('2027-03-28T01:10:00Z')).opensAt), '2027-03-28T01:30:00.000Z');
  });

  it('spring forward: an allow window held before the jump opens at the jump', () => {
    const w = window({ kind: 'allow', schedule: '30 2 * * *', duration: '1h', timeZone: 'Europe/Berlin' });
    assert.equal(iso(untilOpen([w], at('2027-03-28T00:10:00Z')).opensAt), '2027-03-28T01:00:00.000Z');
  });

  it('fall back: a window at 02:30 local is open twice, once per 02:30', () => {
    const w = window({ kind: 'allow', schedule: '30 2 * * *', duration: '30m', timeZone: 'Europe/Berlin' });
    assert.ok(active(w, '2027-10-31T00:45:00Z'), '02:45 CEST');
    assert.ok(!active(w, '2027-10-31T01:10:00Z'), '02:10 CET, the second time round');
    assert.ok(active(w, '2027-10-31T01:45:00Z'), '02:45 CET');
    assert.equal(iso(untilOpen([w], at('2027-10-31T00:10:00Z')).opensAt), '2027-10-31T00:30:00.001Z');
    assert.equal(iso(untilOpen([w], at('2027-10-31T01:05:00Z')).opensAt), '2027-10-31T01:30:00.001Z');
  });

  it('a deny window over the fall-back hour ends by the wall clock after the jump back', () => {
    // Denied 01:00–04:00 local; at 02:30 CEST (00:30Z) the clock still has 1.5 h of CEST and then one extra hour.
    const w = window({ kind: 'deny', schedule: '0 1 * * *', duration: '3h', timeZone: 'Europe/Berlin' });
    assert.equal(iso(untilOpen([w], at('2027-10-31T00:30:00Z')).opensAt), '2027-10-31T03:00:00.000Z');
  });
});

describe('readSyncWindows', () => {
  it('reads an AppProject\'s windows and keeps a mistyped one as invalid, naming the field', () => {
    const project = {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AppProject',
      spec: {
        syncWindows: [
          { kind: 'deny', schedule: '0 22 * * *', duration: '8h', namespaces: ['shop'], timeZone: 'Europe/Berlin', manualSync: true },
          { kind: 'allow', schedule: 0, duration: '1h', applications: 'shop-api' },
        ],
      },
    };
    const { windows, problems } = readSyncWindows(project);
    assert.deepEqual(problems, ['spec.syncWindows[1].schedule must be a string', 'spec.syncWindows[1].applications must be a list of strings']);
    assert.equal(windows[0]?.valid, true);
    assert.equal(windows[0]?.spec.manualSync, true);
    assert.equal(windows[1]?.valid, false);
    assert.deepEqual(readSyncWindows({ spec: {} }), { windows: [], problems: [] });
  });
});
