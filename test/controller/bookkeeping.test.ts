import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDigestMap, formatTime, parseDigestMap, parseRestartAt, restartTimeFor } from '../../controller/bookkeeping.ts';

test('formatDigestMap is canonical: key order does not change the bytes', () => {
  const a = formatDigestMap({ 'Secret/db': 'v1:aa', 'ConfigMap/app': 'v1:bb' });
  const b = formatDigestMap({ 'ConfigMap/app': 'v1:bb', 'Secret/db': 'v1:aa' });
  assert.equal(a, b);
  assert.equal(a, '{"ConfigMap/app":"v1:bb","Secret/db":"v1:aa"}');
});

test('parseDigestMap round-trips formatDigestMap', () => {
  const map = { 'Secret/db': 'v1:aa', 'ConfigMap/app': 'absent', 'SecretProviderClass/vault': 'v1:cc' };
  assert.deepEqual(parseDigestMap(formatDigestMap(map)), map);
  assert.deepEqual(parseDigestMap('{}'), {});
  assert.ok(Object.isFrozen(parseDigestMap('{"a":"b"}')));
});

test('parseDigestMap gives undefined for absent or garbage values', () => {
  for (const text of [undefined, '', 'not json', '[]', '["a"]', 'null', '"text"', '42', '{"Secret/db":1}', '{"Secret/db":null}', '{"a":"b","c":{}}']) {
    assert.equal(parseDigestMap(text), undefined, String(text));
  }
});

test('restartTimeFor rounds up to the next whole second, and keeps exact seconds', () => {
  assert.equal(restartTimeFor(1_700_000_000_000), 1_700_000_000_000);
  assert.equal(restartTimeFor(1_700_000_000_001), 1_700_000_001_000);
  assert.equal(restartTimeFor(1_700_000_000_999), 1_700_000_001_000);
  assert.equal(restartTimeFor(1_700_000_001_000), 1_700_000_001_000);
  assert.equal(restartTimeFor(0), 0);
});

test('formatTime writes RFC 3339 in whole seconds, and parseRestartAt reads it back', () => {
  assert.equal(formatTime(Date.UTC(2026, 0, 2, 3, 4, 5)), '2026-01-02T03:04:05Z');
  assert.equal(formatTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678)), '2026-01-02T03:04:05Z');
  assert.equal(parseRestartAt('2026-01-02T03:04:05Z'), Date.UTC(2026, 0, 2, 3, 4, 5));
  assert.equal(parseRestartAt(formatTime(restartTimeFor(Date.UTC(2026, 0, 2, 3, 4, 5, 1)))), Date.UTC(2026, 0, 2, 3, 4, 6));
  assert.equal(parseRestartAt(undefined), undefined);
  assert.equal(parseRestartAt('yesterday'), undefined);
});
