import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { expectedSeconds, longestFirst, UNKNOWN_CLUSTER_FILE_SECONDS, UNKNOWN_UNIT_FILE_SECONDS } from './schedule.ts';

test('longestFirst starts the slowest expected files first, ties by path; unknown cluster files count as slow, unknown unit files as quick', () => {
  const table = { 'test/a.cluster.test.ts': 90, 'test/b.test.ts': 30, 'test/c.test.ts': 30 };
  const files = ['test/z.test.ts', 'test/c.test.ts', 'test/new.cluster.test.ts', 'test/b.test.ts', 'test/a.cluster.test.ts'];
  assert.deepEqual(longestFirst(files, table), [
    'test/a.cluster.test.ts', 'test/new.cluster.test.ts', 'test/b.test.ts', 'test/c.test.ts', 'test/z.test.ts',
  ]);
  assert.equal(expectedSeconds('test/new.cluster.test.ts', table), UNKNOWN_CLUSTER_FILE_SECONDS);
  assert.equal(expectedSeconds('test/z.test.ts', table), UNKNOWN_UNIT_FILE_SECONDS);
  assert.deepEqual(files.slice(), ['test/z.test.ts', 'test/c.test.ts', 'test/new.cluster.test.ts', 'test/b.test.ts', 'test/a.cluster.test.ts']);
});

test('the committed table names only test files that exist, each with whole seconds above 0', () => {
  const root = join(import.meta.dirname, '..', '..');
  const table = JSON.parse(readFileSync(join(import.meta.dirname, 'file-seconds.json'), 'utf8')) as Record<string, unknown>;
  assert.ok(Object.keys(table).length > 100);
  for (const [file, seconds] of Object.entries(table)) {
    assert.ok(file.startsWith('test/') && file.endsWith('.test.ts') && existsSync(join(root, file)), `${file}: no such test file`);
    assert.ok(Number.isInteger(seconds) && (seconds as number) > 0, `${file}: ${String(seconds)}`);
  }
});
