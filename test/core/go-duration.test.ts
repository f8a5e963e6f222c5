import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseGoDuration } from '../../core/index.ts';

describe('parseGoDuration', () => {
  it('parses what Go parses', () => {
    const cases: [string, number][] = [['90s', 90_000], ['2m', 120_000], ['1m30s', 90_000], ['1.5h', 5_400_000], ['300ms', 300], ['0', 0], ['.5s', 500], ['1h2m3s4ms', 3_723_004]];
    for (const [text, ms] of cases) assert.equal(parseGoDuration(text), ms, text);
  });

  it('rejects what Go rejects, and signs', () => {
    for (const text of ['', '90', 's', '1d', '1m 30s', '-5s', '+5s', '5S', '1.s.']) assert.equal(parseGoDuration(text), undefined, text);
  });
});
