import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertNothingLeftInTempDir, LeftInTempDirError, namesWithPrefix, NEVER_LEFT_PREFIXES } from './temp-dirs.ts';

test('a run that leaves a driftless-wb-* directory fails the check, naming it; one that was there before, or another prefix, does not', async () => {
  // A private stand-in for the temp dir: the real one is shared with concurrent runs.
  const dir = await mkdtemp(join(tmpdir(), 'driftless-temp-dirs-test-'));
  try {
    await mkdir(join(dir, 'driftless-wb-before'));
    const before = await namesWithPrefix(NEVER_LEFT_PREFIXES, dir);
    assert.deepEqual([...before], ['driftless-wb-before']);
    await mkdir(join(dir, 'driftless-cluster-abc'));
    await assertNothingLeftInTempDir(before, NEVER_LEFT_PREFIXES, dir);

    await mkdir(join(dir, 'driftless-wb-x1'));
    await mkdir(join(dir, 'driftless-wb-a2'));
    await assert.rejects(assertNothingLeftInTempDir(before, NEVER_LEFT_PREFIXES, dir), (error: unknown) => {
      assert.ok(error instanceof LeftInTempDirError);
      assert.deepEqual(error.left, ['driftless-wb-a2', 'driftless-wb-x1']);
      assert.match(error.message, /left 2 directories in .*: driftless-wb-a2, driftless-wb-x1 \(make scratch directories under the cluster's stateDir/);
      return true;
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
