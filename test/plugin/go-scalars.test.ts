/**
 * resolveGoPlain's shortcuts (a first character no null, boolean or number
 * starts with; a short decimal; a word starting with one of the hint letters)
 * must give what the full classification gives. Go itself judges the
 * classification (go-oracle.test.ts); this holds the shortcuts to it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UNREPRESENTABLE, classifyGoPlain, resolveGoPlain } from '../../plugin/yaml/go-scalars.ts';

const WORDS = ['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON', 'n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF', 'null', 'Null', 'NULL'];

describe('resolveGoPlain', () => {
  it('agrees with classifyGoPlain on words, near-words, numbers and strings', () => {
    const inputs = [
      ...WORDS,
      ...WORDS.map((w) => `${w}x`),
      ...WORDS.map((w) => w.slice(0, -1)),
      'yES', 'tRUE', 'nULL', 'oN', 'fAlse', 'falsey', 'nulls', 'onion', 'offset', 'name', 'type', 'targetPort', 'namespace', 'n0', 'o_o', 'tt',
      '', '~', '0', '7', '007', '0o17', '0x1F', '1_000', '-1', '+.5', '.5', '1e3', 'e5', '.inf', '9007199254740993', 'abc', 'ABC', 'http://x', '/etc',
    ];
    for (const input of inputs) {
      const expected = classifyGoPlain(input)[1];
      const actual = resolveGoPlain(input);
      assert.ok(actual === expected || (actual === UNREPRESENTABLE && expected === UNREPRESENTABLE), `${JSON.stringify(input)}: ${String(actual)} vs ${String(expected)}`);
    }
  });
});
