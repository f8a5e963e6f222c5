/**
 * The lint in `npm test` can fail. The fixture under test/fixtures/lint holds a floating
 * and a misused promise; the normal run ignores that folder, so it is linted here
 * explicitly, with the same oxlint and a config that only extends the repository's (it
 * is not named .oxlintrc.json: a nested config of that name would be picked up by the
 * normal run and un-ignore the folder, since ignorePatterns do not carry over).
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
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

/** Runs oxlint from the repository root; a non-zero exit is a result here, not an error. */
async function lint(args: readonly string[]): Promise<LintRun> {
  try {
    const { stdout } = await run(process.execPath, [oxlint, ...args], { cwd: root });
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
});
