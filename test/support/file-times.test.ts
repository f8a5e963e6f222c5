import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { formatTimes } from './file-times.ts';

const reporter = join(import.meta.dirname, 'file-times.ts');
const byText = (a: readonly string[], b: readonly string[]): number => a.join(' ').localeCompare(b.join(' '));

test('formatTimes lists files slowest first (ties by path), with their share, time outside tests, test count and failures', () => {
  const table = formatTimes(
    {
      files: [
        { file: 'test/b.test.ts', durationMs: 1000, passed: true, tests: 3, outsideMs: 400 },
        { file: 'test/a.test.ts', durationMs: 1000, passed: false, tests: undefined, outsideMs: 1000 },
        { file: 'test/slow.cluster.test.ts', durationMs: 8000, passed: true, tests: 2, outsideMs: 500 },
      ],
      tests: [
        { file: 'test/slow.cluster.test.ts', name: 'first', durationMs: 7000 },
        { file: 'test/b.test.ts', name: 'quick', durationMs: 600 },
      ],
    },
    9500,
  );
  const rows = table.split('\n');
  const files = rows.filter((row) => /^\s+\d+\.\d {2}/.test(row) && row.includes('%'));
  assert.deepEqual(files.map((row) => row.trim().split(/\s+/)), [
    ['8.0', '80.0%', '0.5', '2', 'test/slow.cluster.test.ts'],
    ['1.0', '10.0%', '1.0', '?', 'test/a.test.ts', 'FAILED'],
    ['1.0', '10.0%', '0.4', '3', 'test/b.test.ts'],
  ]);
  assert.match(table, /file times \(3 files, 10\.0 s in files, 9\.5 s wall/);
  assert.match(table, /slowest 2 top-level tests and suites\n\s+7\.0 {2}test\/slow\.cluster\.test\.ts {2}first\n\s+0\.6 {2}test\/b\.test\.ts {2}quick\n$/);
});

test('as a second reporter of a real node --test run, it attributes each top-level test to its file and keeps the default summary', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-file-times-'));
  try {
    // Top-level tests declared through a helper module, as test/cluster/testing.ts does: their events name
    // the helper as their file, and the reporter must still put them under the test file.
    await writeFile(join(dir, 'declare.ts'), "import { test } from 'node:test';\nexport const declare = (name: string): void => { test(name, () => {}); };\n");
    await writeFile(join(dir, 'one.test.ts'), "import { declare } from './declare.ts';\ndeclare('alpha');\ndeclare('beta');\n");
    await writeFile(join(dir, 'two.test.ts'), "import { test } from 'node:test';\ntest('gamma', () => {});\n");
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '--test',
        '--test-concurrency=2',
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        `--test-reporter=${reporter}`,
        '--test-reporter-destination=stdout',
        'one.test.ts',
        'two.test.ts',
      ],
      { cwd: dir, env: { ...process.env, NODE_TEST_CONTEXT: undefined }, timeout: 60_000 },
    );
    assert.match(stdout, /^ℹ tests 3$/m, 'the default summary is still printed');
    const fileRows = stdout.split('\n').filter((row) => row.endsWith('.test.ts') && row.includes('%'));
    // Columns after seconds, share and outside: the test count and the file.
    const counted = fileRows.map((row) => row.trim().split(/\s+/).slice(3)).sort(byText);
    assert.deepEqual(counted, [['1', 'two.test.ts'], ['2', 'one.test.ts']]);
    const testRows = stdout.slice(stdout.indexOf('slowest 3 top-level')).split('\n').slice(1, 4);
    assert.deepEqual(testRows.map((row) => row.trim().split(/\s+/).slice(1)).sort(byText), [
      ['one.test.ts', 'alpha'],
      ['one.test.ts', 'beta'],
      ['two.test.ts', 'gamma'],
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
