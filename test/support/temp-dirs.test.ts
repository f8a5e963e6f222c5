import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertScratchDirsRemoved, LeftInTempDirError, noteScratchDir } from './temp-dirs.ts';

test('a scratch directory made directly in the temp dir and left there fails the check, naming it; one removed, or nested deeper, does not', async () => {
  // A private stand-in for the temp dir: the real one is shared with concurrent runs.
  const temp = await mkdtemp(join(tmpdir(), 'driftless-temp-dirs-test-'));
  try {
    const removed = join(temp, 'driftless-wb-removed');
    const left = [join(temp, 'driftless-wb-x1'), join(temp, 'driftless-wb-a2')];
    const nested = join(temp, 'driftless-git-root', 'work-ns');
    for (const dir of [removed, ...left, nested]) await mkdir(dir, { recursive: true });
    for (const dir of [removed, ...left, nested, undefined]) noteScratchDir(dir, temp);
    await rm(removed, { recursive: true });

    assert.throws(() => assertScratchDirsRemoved(), (error: unknown) => {
      assert.ok(error instanceof LeftInTempDirError);
      assert.deepEqual(error.left, [...left].sort());
      assert.equal(error.message, 'the tests left 2 directories in the temp dir: driftless-wb-a2, driftless-wb-x1 (make scratch directories under the cluster\'s stateDir, or remove them)');
      return true;
    });
    // The notes are forgotten once checked: the next file starts clean.
    assert.doesNotThrow(() => assertScratchDirsRemoved());
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
});
