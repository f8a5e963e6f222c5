/**
 * A check that a test file leaves none of its scratch directories in the
 * system temp dir. Scratch of the cluster tests belongs under the cluster's
 * state directory (removed at stop, swept after a killed run:
 * cluster/state-dirs.ts) or under a directory the test removes; made directly
 * in os.tmpdir(), nothing removes it: the git strategy's Argo CD tests left two
 * `driftless-wb-*` directories (the controllers' --write-back-work-dir) per run.
 *
 * The helpers that hand a directory to a process note it here
 * (`noteScratchDir`); the cluster fixtures' teardown fails when one that sits
 * directly in the temp dir is still there. Only this process's own notes are
 * checked, never the temp dir's listing: tests of other checkouts running
 * alongside have their own directories there, and must not fail this run.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, resolve } from 'node:path';

/** The directories noted so far that sit directly in the temp dir. */
const noted = new Set<string>();

/** Notes `dir`, handed to a process as its scratch, when it sits directly in `temp` (the OS temp dir). */
export function noteScratchDir(dir: string | undefined, temp: string = tmpdir()): void {
  if (dir === undefined) return;
  const absolute = resolve(dir);
  if (dirname(absolute) === resolve(temp)) noted.add(absolute);
}

/** A test file left scratch directories in the temp dir. */
export class LeftInTempDirError extends Error {
  override readonly name = 'LeftInTempDirError';
  readonly left: readonly string[];

  constructor(left: readonly string[]) {
    super(`the tests left ${left.length} director${left.length === 1 ? 'y' : 'ies'} in the temp dir: ${left.map((dir) => basename(dir)).join(', ')} (make scratch directories under the cluster's stateDir, or remove them)`);
    this.left = left;
  }
}

/** Throws LeftInTempDirError naming the noted directories that still exist; forgets every note either way. */
export function assertScratchDirsRemoved(): void {
  const left = [...noted].filter((dir) => existsSync(dir)).sort();
  noted.clear();
  if (left.length > 0) throw new LeftInTempDirError(left);
}
