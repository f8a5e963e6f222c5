/**
 * The work directories a killed controller left behind (its clone and credential files: SIGKILL and the
 * OOM killer skip every `finally`) are removed at the next start, and only those (real files).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sweepWorkDir, workDirPrefix } from '../../../controller/writeback/git-run.ts';

describe('sweepWorkDir', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'driftless-sweep-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('removes the directories of dead processes and of an earlier process with our pid; keeps live ones, ours and anything else', async () => {
    const own = { pid: 1, tag: 'aaaa0001' };
    const names = {
      dead: `${workDirPrefix({ pid: 4242, tag: '0badc0de' })}x1Y2z3`,
      earlierSamePid: `${workDirPrefix({ pid: 1, tag: 'bbbb0002' })}Q9w8e7`,
      ours: `${workDirPrefix(own)}r5t6y7`,
      live: `${workDirPrefix({ pid: 77, tag: 'cccc0003' })}u1i2o3`,
      unrelated: 'someone-elses',
      oldFormat: 'wb-AbC123',
    };
    for (const name of Object.values(names)) {
      await mkdir(path.join(root, name, 'auth'), { recursive: true });
      await writeFile(path.join(root, name, 'auth', 'password'), 'pa55-canary', { mode: 0o600 });
    }
    const removed = await sweepWorkDir(root, own, (pid) => pid === 77);
    assert.deepEqual(removed.sort(), [names.dead, names.earlierSamePid].sort());
    assert.deepEqual((await readdir(root)).sort(), [names.live, names.oldFormat, names.ours, names.unrelated].sort());
  });

  it('a work directory that does not exist yet: nothing to do', async () => {
    assert.deepEqual(await sweepWorkDir(path.join(root, 'absent'), { pid: 1, tag: 'aaaa0001' }, () => false), []);
  });
});
