/**
 * The cron schedules of sync windows, as robfig/cron v3 with Argo CD's
 * five-field parser reads and evaluates them, on explicit instants.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CronSyntaxError, parseCron } from '../../../controller/windows/cron.ts';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());
const next = (schedule: string, after: string): string | undefined => iso(parseCron(schedule).next(at(after)));

describe('parseCron', () => {
  it('refuses what Argo CD refuses, with robfig-like messages', () => {
    const refused: [string, RegExp][] = [
      ['', /empty spec string/],
      ['@daily', /does not accept descriptors/],
      ['0 0 * *', /expected exactly 5 fields, found 4/],
      ['0 0 0 * * *', /expected exactly 5 fields, found 6/],
      ['60 * * * *', /end of range \(60\) above maximum \(59\)/],
      ['* 24 * * *', /end of range \(24\) above maximum \(23\)/],
      ['* * 0 * *', /beginning of range \(0\) below minimum \(1\)/],
      ['* * * 13 *', /above maximum \(12\)/],
      ['* * * * 7', /end of range \(7\) above maximum \(6\)/],
      ['*/0 * * * *', /step of range should be a positive number/],
      ['*/-1 * * * *', /negative number \(-1\) not allowed/],
      ['5-1 * * * *', /beginning of range \(5\) beyond end of range \(1\)/],
      ['1-2-3 * * * *', /too many hyphens/],
      ['1/2/3 * * * *', /too many slashes/],
      ['a * * * *', /failed to parse int from a/],
      ['0 0 L * *', /failed to parse int from L/],
      ['0 0 * * 1#2', /failed to parse int from 1#2/],
      ['CRON_TZ=Europe/Berlin 0 9 * * *', /CRON_TZ= prefix is not supported/],
    ];
    for (const [text, message] of refused) {
      assert.throws(() => parseCron(text), (error: unknown) => error instanceof CronSyntaxError && message.test(error.message), text);
    }
  });

  it('accepts names in any case, `?`, `+n`, empty list pieces and white space as Go splits it', () => {
    assert.equal(next('0 0 * JAN mon-FRI', '2026-12-02T00:00:00Z'), '2027-01-01T00:00:00.000Z');
    assert.equal(next('0 0 ? * *', '2026-12-02T00:00:00Z'), '2026-12-03T00:00:00.000Z');
    assert.equal(next('+5 0 * * *', '2026-12-02T00:00:00Z'), '2026-12-02T00:05:00.000Z');
    assert.equal(next(',5, 0\t* * *', '2026-12-02T00:00:00Z'), '2026-12-02T00:05:00.000Z');
  });
});

describe('CronSchedule.next', () => {
  it('is the first firing strictly after the instant', () => {
    assert.equal(next('0 2 * * *', '2026-12-02T01:00:00Z'), '2026-12-02T02:00:00.000Z');
    assert.equal(next('0 2 * * *', '2026-12-02T02:00:00Z'), '2026-12-03T02:00:00.000Z');
    assert.equal(next('0 2 * * *', '2026-12-02T01:59:59.999Z'), '2026-12-02T02:00:00.000Z');
    assert.equal(next('* * * * *', '2026-12-02T01:00:00.500Z'), '2026-12-02T01:01:00.000Z');
  });

  it('runs `n/step` to the maximum, as robfig does', () => {
    const s = parseCron('5/15 * * * *');
    const fired: string[] = [];
    let t = at('2026-12-02T00:00:00Z');
    for (let i = 0; i < 5; i++) {
      t = s.next(t) as number;
      fired.push(new Date(t).toISOString().slice(11, 16));
    }
    assert.deepEqual(fired, ['00:05', '00:20', '00:35', '00:50', '01:05']);
  });

  it('combines day of month and day of week like Vixie cron: either, unless one is a star', () => {
    // 2026-12-04 is a Friday; 2026-12-13 a Sunday.
    assert.equal(next('0 0 13 * 5', '2026-12-02T00:00:00Z'), '2026-12-04T00:00:00.000Z');
    assert.equal(next('0 0 13 * 5', '2026-12-05T00:00:00Z'), '2026-12-11T00:00:00.000Z');
    assert.equal(next('0 0 * * 5', '2026-12-02T00:00:00Z'), '2026-12-04T00:00:00.000Z');
    assert.equal(next('0 0 13 * *', '2026-12-02T00:00:00Z'), '2026-12-13T00:00:00.000Z');
    // `*/1` keeps the star (both must match: the 13th only if it is a Friday); `*/2` drops it (either).
    assert.equal(next('0 0 13 * */1', '2026-12-02T00:00:00Z'), '2026-12-13T00:00:00.000Z');
    assert.equal(next('0 0 */2 * 5', '2026-12-02T00:00:00Z'), '2026-12-03T00:00:00.000Z');
  });

  it('finds a leap day, and gives up after five years as robfig does', () => {
    assert.equal(next('0 0 29 2 *', '2026-12-02T00:00:00Z'), '2028-02-29T00:00:00.000Z');
    assert.equal(next('0 0 30 2 *', '2026-12-02T00:00:00Z'), undefined);
    assert.equal(next('0 0 1 1 *', '2026-12-31T23:59:59.999Z'), '2027-01-01T00:00:00.000Z');
  });
});
