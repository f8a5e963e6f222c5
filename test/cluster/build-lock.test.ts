/**
 * The build lock makes a second builder wait for a live holder and take over
 * from a dead one.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import { acquireLock } from '../support/build-lock.ts';

test('a second acquirer waits until the live holder releases', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-lock-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const lockFile = join(dir, '.k8s.lock');
  const releaseFirst = await acquireLock(lockFile, () => assert.fail('the lock was free'));
  assert.equal(await readFile(lockFile, 'utf8'), String(process.pid));

  const waitedFor: number[] = [];
  let secondHasIt = false;
  const second = acquireLock(lockFile, (holder) => waitedFor.push(holder)).then((release) => {
    secondHasIt = true;
    return release;
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(secondHasIt, false, 'must wait while the holder lives');
  assert.deepEqual(waitedFor, [process.pid]);

  await releaseFirst();
  const releaseSecond = await second;
  assert.equal(secondHasIt, true);
  await releaseSecond();
});

test('a lock whose holder died is taken over at once', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'driftless-lock-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const lockFile = join(dir, '.k8s.lock');
  const deadPid = spawnSync('true').pid;
  assert.ok(deadPid);
  await writeFile(lockFile, String(deadPid));
  const release = await acquireLock(lockFile, () => assert.fail('must not wait for a dead holder'));
  assert.equal(await readFile(lockFile, 'utf8'), String(process.pid));
  await release();
});
