/**
 * A lock file per artifact, so that two test runs on one machine (two clones,
 * or `npm test` beside `npm run cluster`) do not both spend minutes and two
 * cores building the same binary (the test cluster, kustomize, helm, the Go
 * YAML oracle): the second waits, then finds it in the cache.
 */
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/** Releases a lock taken by `acquireLock`. */
export type ReleaseLock = () => Promise<void>;

/** Whether a process with this pid exists (EPERM: it does, but belongs to someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True if `path` was last modified more than `ageMs` ago (a vanished file counts as old). */
async function isOlderThan(path: string, ageMs: number): Promise<boolean> {
  try {
    return Date.now() - (await stat(path)).mtimeMs > ageMs;
  } catch {
    return true;
  }
}

/**
 * Takes the lock `lockFile` (created exclusively, holding our pid). While a
 * live process holds it, waits and calls `onWait` once; a lock whose holder
 * died is taken over.
 */
export async function acquireLock(lockFile: string, onWait: (holder: number) => void): Promise<ReleaseLock> {
  let reportedWait = false;
  for (;;) {
    try {
      const handle = await open(lockFile, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => unlink(lockFile).catch(() => {});
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(await readFile(lockFile, 'utf8').catch(() => ''));
    const holderDied = Number.isInteger(holder) && holder > 0 ? !isAlive(holder) : await isOlderThan(lockFile, 60_000);
    if (holderDied) {
      // Taken over: the holder was killed mid-build (or before it could write its pid).
      await unlink(lockFile).catch(() => {});
      continue;
    }
    if (!reportedWait) {
      onWait(holder);
      reportedWait = true;
    }
    await sleep(2000);
  }
}
