/**
 * The lint in `npm test` can fail. The fixture under test/fixtures/lint holds a floating
 * and a misused promise; the normal run ignores that folder, so it is linted here
 * explicitly, with the same oxlint and a config that only extends the repository's (it
 * is not named .oxlintrc.json: a nested config of that name would be picked up by the
 * normal run and un-ignore the folder, since ignorePatterns do not carry over).
 * The layer rules (no-restricted-imports per folder) and the size rules (max-lines-per-function,
 * complexity) are checked on scratch trees.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
// Its script would start whatever `node` is on PATH; this is the pinned one running the tests.
const oxlint = join(root, 'node_modules', 'oxlint', 'bin', 'oxlint');
const fixtureConfig = 'test/fixtures/lint/extends-root.oxlintrc.json';
const fixture = 'test/fixtures/lint/promises.ts';

interface LintRun {
  readonly code: number;
  readonly stdout: string;
}

/** Runs oxlint (from the repository root unless `cwd` is given); a non-zero exit is a result here, not an error. */
async function lint(args: readonly string[], cwd = root): Promise<LintRun> {
  try {
    const { stdout } = await run(process.execPath, [oxlint, ...args], { cwd });
    return { code: 0, stdout };
  } catch (error: unknown) {
    const failed = error as { code?: unknown; stdout?: unknown };
    if (typeof failed.code !== 'number' || typeof failed.stdout !== 'string') throw error;
    return { code: failed.code, stdout: failed.stdout };
  }
}

describe('lint', () => {
  it('fails on a floating promise and on an async callback where a void one is expected', async () => {
    const result = await lint(['-c', fixtureConfig, '--format', 'json', fixture]);
    assert.notEqual(result.code, 0, result.stdout);
    const report = JSON.parse(result.stdout) as { diagnostics: { code: string; filename: string }[] };
    const codes = report.diagnostics.map((d) => d.code).sort();
    assert.deepEqual(codes, ['typescript(no-floating-promises)', 'typescript(no-misused-promises)'], result.stdout);
    assert.ok(report.diagnostics.every((d) => d.filename === fixture), result.stdout);
  });

  it('lints the fixture with the repository config and nothing else', async () => {
    const config = JSON.parse(await readFile(join(root, fixtureConfig), 'utf8')) as unknown;
    assert.deepEqual(config, { extends: ['../../../.oxlintrc.json'] });
  });

  it('leaves the fixture out of the normal run', async () => {
    const result = await lint(['--debug=files', 'test']);
    assert.equal(result.code, 0, result.stdout);
    assert.match(result.stdout, /^test\/lint\.test\.ts$/m, 'the listing names the files it would lint');
    assert.doesNotMatch(result.stdout, /fixtures\/lint/);
  });

  it('enforces the layers: each folder rule fires on a violation, and allowed imports pass', async () => {
    const files: Record<string, string> = {
      'core/index.ts': 'export const x = 1;\n',
      'core/inner.ts': 'export const y = 1;\n',
      'core/ok.ts': "import { x } from './index.ts';\nimport { y } from './inner.ts';\nexport const a = x + y;\n",
      'core/bad.ts': "import { y } from '../cli/flags.ts';\nexport const a = y;\n",
      'cli/flags.ts': 'export const y = 1;\n',
      'cli/ok.ts': "import { x } from '../core/index.ts';\nimport { y } from './flags.ts';\nexport const a = x + y;\n",
      'cli/bad.ts': "import { y } from '../plugin/inner.ts';\nexport const a = y;\n",
      'cli/bad-core.ts': "import { y } from '../core/inner.ts';\nexport const a = y;\n",
      'plugin/inner.ts': 'export const y = 1;\n',
      'plugin/ok.ts': "import { x } from '../core/index.ts';\nimport { y } from '../cli/flags.ts';\nexport const a = x + y;\n",
      'plugin/bad.ts': "import { y } from '../controller/inner.ts';\nexport const a = y;\n",
      'plugin/server/bad-core.ts': "import { y } from '../../core/inner.ts';\nexport const a = y;\n",
      'controller/inner.ts': 'export const y = 1;\n',
      'controller/ok.ts': "import { x } from '../core/index.ts';\nimport { y } from '../cli/flags.ts';\nexport const a = x + y;\n",
      'controller/explain/bad.ts': "export const a = (await import('../../plugin/inner.ts')).y;\n",
      'test/bad-core.ts': "import { y } from '../core/inner.ts';\nexport const a = y;\n",
    };
    const expected = Object.keys(files).filter((file) => file.includes('/bad')).map((file) => `${file} eslint(no-restricted-imports)`);
    await assertFlagged(files, expected);
  });

  it('limits a function to 80 lines (blank and comment lines not counted) and to a complexity of 20', async () => {
    // Each rule gets a function just over its limit and one at it; only the former may be flagged.
    const files: Record<string, string> = {
      'controller/long.ts': counted(81),
      // 80 counted lines, with a blank and a comment line after each statement that must not count.
      'controller/long-ok.ts': counted(80, '\n  // a comment\n'),
      'controller/complex.ts': branches(20),
      'controller/complex-ok.ts': branches(19),
    };
    await assertFlagged(files, ['controller/complex.ts eslint(complexity)', 'controller/long.ts eslint(max-lines-per-function)']);
  });
});

/**
 * Lints `files` in a scratch tree laid out like the repository, with the repository's config copied
 * verbatim (the violations must not live in the real folders, where the normal run would fail on them),
 * and checks that exactly `expected` (`file code` pairs) are flagged.
 */
async function assertFlagged(files: Readonly<Record<string, string>>, expected: readonly string[]): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'driftless-lint-'));
  try {
    await copyFile(join(root, '.oxlintrc.json'), join(scratch, '.oxlintrc.json'));
    await symlink(join(root, 'node_modules'), join(scratch, 'node_modules'));
    for (const [file, text] of Object.entries(files)) {
      await mkdir(dirname(join(scratch, file)), { recursive: true });
      await writeFile(join(scratch, file), text);
    }
    const folders = [...new Set(Object.keys(files).map((file) => file.split('/')[0] as string))].sort();
    const result = await lint(['--format', 'json', ...folders], scratch);
    assert.notEqual(result.code, 0, result.stdout);
    const report = JSON.parse(result.stdout) as { diagnostics: { code: string; filename: string }[] };
    const flagged = report.diagnostics.map((d) => `${d.filename} ${d.code}`).sort();
    assert.deepEqual(flagged, [...expected].sort(), result.stdout);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** A function of `total` lines of code (its first and last line count too), `filler` after each statement. */
function counted(total: number, filler = ''): string {
  return `export function f(): number {\n  let n = 0;\n${filler}${`  n += 1;\n${filler}`.repeat(total - 4)}  return n;\n}\n`;
}

/** A function with `count` if statements: a complexity of `count` + 1. */
function branches(count: number): string {
  const ifs = Array.from({ length: count }, (_, i) => `  if (x === ${i}) return ${i};\n`).join('');
  return `export function f(x: number): number {\n${ifs}  return -1;\n}\n`;
}
