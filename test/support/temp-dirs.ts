/**
 * A check that a test run leaves nothing of its own in the system temp dir.
 * Scratch directories of the cluster tests belong under the cluster's state
 * directory (removed at stop, swept after a killed run: cluster/state-dirs.ts),
 * never directly in os.tmpdir(), where nothing removes them: each run of the
 * git strategy's Argo CD tests used to leave two `driftless-wb-*` directories.
 *
 * The check compares the names present after the run with those present
 * before it, for the prefixes below only: other test files of a concurrent run
 * have their own scratch directories there for a while, and must not fail it.
 * No test of this checkout makes such a name any more; an older checkout's
 * tests running alongside in the same temp dir still can, and then fail it.
 */
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';

/** What tests once left behind in the temp dir: a name starting with one of these is never left by a run. */
export const NEVER_LEFT_PREFIXES: readonly string[] = Object.freeze(['driftless-wb-']);

/** The names in `dir` (the OS temp dir) that start with one of `prefixes`. */
export async function namesWithPrefix(prefixes: readonly string[] = NEVER_LEFT_PREFIXES, dir: string = tmpdir()): Promise<Set<string>> {
  const names = await readdir(dir).catch(() => []);
  return new Set(names.filter((name) => prefixes.some((prefix) => name.startsWith(prefix))));
}

/** A run left directories in the temp dir. */
export class LeftInTempDirError extends Error {
  override readonly name = 'LeftInTempDirError';
  readonly left: readonly string[];

  constructor(dir: string, left: readonly string[]) {
    super(`the run left ${left.length} director${left.length === 1 ? 'y' : 'ies'} in ${dir}: ${left.join(', ')} (make scratch directories under the cluster's stateDir, or remove them)`);
    this.left = left;
  }
}

/**
 * Throws LeftInTempDirError naming the entries of `dir` with one of `prefixes`
 * that were not there `before` (a `namesWithPrefix` of the same arguments).
 */
export async function assertNothingLeftInTempDir(before: ReadonlySet<string>, prefixes: readonly string[] = NEVER_LEFT_PREFIXES, dir: string = tmpdir()): Promise<void> {
  const left = [...(await namesWithPrefix(prefixes, dir))].filter((name) => !before.has(name)).sort();
  if (left.length > 0) throw new LeftInTempDirError(dir, left);
}
