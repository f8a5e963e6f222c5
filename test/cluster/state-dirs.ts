/**
 * Cluster state directories in the system temp dir. Each records the pid of
 * the process that owns it, so a later start can remove the directories of runs
 * that were killed before they could clean up (SIGKILL, OOM, a power cut).
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from '../support/build-lock.ts';

const prefix = 'driftless-cluster-';
const ownerFile = 'owner.pid';

/** Creates a fresh state directory owned by this process. */
export async function createStateDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await writeFile(join(dir, ownerFile), String(process.pid));
  return dir;
}

/**
 * Removes state directories whose owner process is gone. Directories without
 * an owner file are left alone: they may be in the middle of being created.
 */
export async function removeAbandonedStateDirs(): Promise<void> {
  for (const name of await readdir(tmpdir())) {
    if (!name.startsWith(prefix)) continue;
    const dir = join(tmpdir(), name);
    const owner = Number(await readFile(join(dir, ownerFile), 'utf8').catch(() => ''));
    if (Number.isInteger(owner) && owner > 0 && !isAlive(owner)) await rm(dir, { recursive: true, force: true });
  }
}
