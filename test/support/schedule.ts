/**
 * The order `npm test` starts its test files in. The runner keeps `concurrency` files going at once and starts
 * the next file in line whenever one ends, so the order decides how long the run takes: with the slowest
 * files first (longest processing time first, LPT), the last minutes are short unit files filling the gaps
 * instead of one 2-minute cluster file running alone after everything else. The expected seconds are a
 * committed table (`file-seconds.json`, from a CI run's file-time table); order never changes a verdict.
 */

/** Seconds expected for a file that the table does not know yet: a new cluster file goes early, as if slow. */
export const UNKNOWN_CLUSTER_FILE_SECONDS = 60;
/** Seconds expected for a unit file that the table does not know: most take well under a second. */
export const UNKNOWN_UNIT_FILE_SECONDS = 1;

/** Seconds a file is expected to take: the table's figure, or a guess by its kind. */
export function expectedSeconds(file: string, table: Readonly<Record<string, number>>): number {
  const known = table[file];
  if (known !== undefined) return known;
  return file.endsWith('.cluster.test.ts') ? UNKNOWN_CLUSTER_FILE_SECONDS : UNKNOWN_UNIT_FILE_SECONDS;
}

/** `files` slowest expected first, ties by path, so the order is a pure function of the list and the table. */
export function longestFirst(files: readonly string[], table: Readonly<Record<string, number>>): string[] {
  return [...files].sort((a, b) => expectedSeconds(b, table) - expectedSeconds(a, table) || a.localeCompare(b));
}
