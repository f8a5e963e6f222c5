/**
 * A `node --test` reporter that prints, once the run ends, how long each test file took (its process, from
 * spawn to exit: cluster start and hooks included) and the slowest top-level tests, so the files that eat
 * the CI budget are visible in every run. It is a second reporter next to the default one, whose summary
 * lines (`ℹ tests 1303`, `ℹ pass …`) CI reads to tell a run that ran no test:
 *
 *   node --test --test-reporter=spec --test-reporter-destination=stdout \
 *     --test-reporter=./test/support/file-times.ts --test-reporter-destination=stdout "test/**\/*.test.ts"
 *
 * Output is deterministic given the durations: slowest first, ties by path.
 */
import { relative, resolve } from 'node:path';
import type { TestEvent } from 'node:test/reporters';

/** One test file's process as the runner saw it. */
export interface FileTime {
  /** Path relative to the working directory, as the runner names the file. */
  readonly file: string;
  /** Spawn to exit of the file's process, in ms. */
  readonly durationMs: number;
  readonly passed: boolean;
  /** Tests (not suites) the file ran, from its own summary; undefined when the process died before one (then `outsideMs` is all of it). */
  readonly tests: number | undefined;
  /**
   * The part of `durationMs` outside the file's top-level tests, which run one after another: process start,
   * imports and the file's `after` hooks (a cluster's stop). A file-level `before` hook (a cluster's start)
   * runs inside the first top-level test, and counts there.
   */
  readonly outsideMs: number;
}

/** One top-level test or suite of a file. */
export interface TestTime {
  readonly file: string;
  readonly name: string;
  readonly durationMs: number;
}

/** What the reporter gathered over a run. */
export interface RunTimes {
  readonly files: readonly FileTime[];
  readonly tests: readonly TestTime[];
}

/** How many of the slowest top-level tests the table lists. */
const SLOWEST_TESTS = 15;

const seconds = (ms: number): string => (ms / 1000).toFixed(1);

/** The table printed at the end of a run (pure, for the unit test). */
export function formatTimes(times: RunTimes, wallMs: number): string {
  const bySlowest = <T extends { readonly durationMs: number }>(key: (item: T) => string) =>
    (a: T, b: T): number => b.durationMs - a.durationMs || key(a).localeCompare(key(b));
  const files = [...times.files].sort(bySlowest((item) => item.file));
  const tests = [...times.tests].sort(bySlowest((item) => `${item.file}\u0000${item.name}`)).slice(0, SLOWEST_TESTS);
  const total = files.reduce((sum, item) => sum + item.durationMs, 0);
  const width = Math.max(4, ...files.map((item) => item.file.length));
  const lines = [
    '',
    `file times (${files.length} files, ${seconds(total)} s in files, ${seconds(wallMs)} s wall; slowest first;`,
    '"outside": seconds outside the top-level tests (process start, imports, after hooks; a before hook counts in the first test))',
    `${'s'.padStart(8)}  ${'share'.padStart(6)}  ${'outside'.padStart(7)}  ${'tests'.padStart(5)}  ${'file'.padEnd(width)}`,
  ];
  for (const item of files) {
    const share = total === 0 ? 0 : (100 * item.durationMs) / total;
    const count = item.tests === undefined ? '?' : String(item.tests);
    const mark = item.passed ? '' : '  FAILED';
    const cells = [seconds(item.durationMs).padStart(8), `${share.toFixed(1)}%`.padStart(6), seconds(item.outsideMs).padStart(7), count.padStart(5)];
    lines.push(`${cells.join('  ')}  ${item.file}${mark}`);
  }
  if (tests.length > 0) {
    lines.push('', `slowest ${tests.length} top-level tests and suites`);
    for (const item of tests) lines.push(`${seconds(item.durationMs).padStart(8)}  ${item.file}  ${item.name}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Gathers file and top-level test times from the runner's events. With `--test-isolation=process` (the
 * default) the runner wraps each file's process in a test at nesting 0 named for the file's path: its
 * `test:complete` carries the process's duration. The file's own top-level tests are at nesting 0 too, but
 * their `file` is where `test()` was called (test/cluster/testing.ts for every `fixture.test`), so they are
 * attributed by order: the runner passes on each file's `test:pass`/`test:fail` events and then its
 * `test:summary` (which names the file) as one block, even with `--test-concurrency` above 1 (it holds back
 * the blocks of files that are not first in line). `test:complete` events are not held back, so they are
 * used only for the files themselves.
 */
export function collectTimes(cwd: string): { readonly add: (event: TestEvent) => void; readonly times: () => RunTimes } {
  const processes = new Map<string, { readonly durationMs: number; readonly passed: boolean }>();
  const blocks = new Map<string, { readonly tests: number; readonly top: readonly { name: string; durationMs: number }[] }>();
  let pending: { name: string; durationMs: number }[] = [];
  const isFile = (file: string | undefined, name: string): file is string => file !== undefined && resolve(cwd, name) === file;
  return {
    add(event) {
      if (event.type === 'test:summary') {
        // The run's own summary, at the end, names no file.
        if (event.data.file !== undefined) blocks.set(event.data.file, { tests: event.data.counts.tests, top: pending });
        pending = [];
      } else if (event.type === 'test:complete' && event.data.nesting === 0 && isFile(event.data.file, event.data.name)) {
        processes.set(event.data.file, { durationMs: event.data.details.duration_ms, passed: event.data.details.passed });
      } else if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0) {
        if (!isFile(event.data.file, event.data.name)) pending.push({ name: event.data.name, durationMs: event.data.details.duration_ms });
      }
    },
    times() {
      const files: FileTime[] = [];
      const tests: TestTime[] = [];
      for (const [file, { durationMs, passed }] of processes) {
        const path = relative(cwd, file);
        const block = blocks.get(file);
        const top = block?.top ?? [];
        for (const item of top) tests.push({ file: path, ...item });
        const inTests = top.reduce((sum, item) => sum + item.durationMs, 0);
        files.push({ file: path, durationMs, passed, tests: block?.tests, outsideMs: Math.max(0, durationMs - inTests) });
      }
      return { files, tests };
    },
  };
}

/** The reporter: consumes every event, yields the table once the run is over. */
export default async function* fileTimes(source: AsyncIterable<TestEvent>): AsyncGenerator<string, void> {
  const started = Date.now();
  const collector = collectTimes(process.cwd());
  for await (const event of source) collector.add(event);
  yield formatTimes(collector.times(), Date.now() - started);
}
