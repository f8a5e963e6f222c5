/**
 * The test step of `npm test`: every `test/**\/*.test.ts`, each file in its own process as `node --test` runs
 * them, `--concurrency` files at a time (default 2), slowest expected first (`support/schedule.ts`), so the
 * suite fits CI's budget on a 2-core machine. It prints what `node --test --test-reporter=spec` prints (CI reads
 * its closing `ℹ tests …` / `ℹ pass …` lines), then the per-file time table of `support/file-times.ts`.
 * `node --test` itself cannot do this: it sorts the files by name whatever order it is given.
 *
 *   node test/suite.ts [--concurrency N] [FILE|GLOB ...]
 */
import { globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import type { TestEvent } from 'node:test/reporters';
import { collectTimes, formatTimes } from './support/file-times.ts';
import { longestFirst } from './support/schedule.ts';

const USAGE = 'Usage: node test/suite.ts [--concurrency N] [FILE|GLOB ...]   (default: 2 files at once, every test/**/*.test.ts)\n';

/** What the command line asked for. */
interface SuiteOptions {
  readonly concurrency: number;
  readonly patterns: readonly string[];
}

/** The command line, read once; a bad one is an error naming the argument. */
function parseArgs(argv: readonly string[]): SuiteOptions {
  let concurrency = 2;
  const patterns: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index] as string;
    if (arg === '--concurrency') {
      const value = argv[index + 1];
      index += 1;
      if (value === undefined || !/^[1-9][0-9]*$/.test(value)) {
        throw new Error(`--concurrency needs a whole number of files above 0, got ${JSON.stringify(value ?? '')}`);
      }
      concurrency = Number(value);
    } else if (arg.startsWith('-')) {
      throw new Error(`unknown option ${JSON.stringify(arg)}`);
    } else {
      patterns.push(arg);
    }
  }
  return Object.freeze({ concurrency, patterns: Object.freeze(patterns.length > 0 ? patterns : ['test/**/*.test.ts']) });
}

/** The files the patterns name, relative to the repository root, each once. */
function testFiles(root: string, patterns: readonly string[]): string[] {
  const files = new Set<string>();
  for (const pattern of patterns) {
    const found = globSync(pattern, { cwd: root });
    if (found.length === 0) throw new Error(`no test file matches ${JSON.stringify(pattern)}`);
    for (const file of found) files.add(file);
  }
  return [...files];
}

async function main(argv: readonly string[]): Promise<number> {
  const root = join(import.meta.dirname, '..');
  let options: SuiteOptions;
  let files: string[];
  try {
    options = parseArgs(argv);
    const table = JSON.parse(readFileSync(join(import.meta.dirname, 'support', 'file-seconds.json'), 'utf8')) as Record<string, number>;
    files = longestFirst(testFiles(root, options.patterns), table);
  } catch (error) {
    process.stderr.write(`suite: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }

  const started = Date.now();
  const collector = collectTimes(root);
  // The run's own summary (the one that names no file) says whether anything failed, todo tests aside.
  let success = false;
  const stream = run({ files: files.map((file) => join(root, file)), concurrency: options.concurrency, cwd: root });
  // The stream emits every event by its type as well as yielding it: the spec reporter reads the stream, the
  // time table listens beside it.
  for (const type of ['test:summary', 'test:complete', 'test:pass', 'test:fail'] as const) {
    stream.on(type, (data: unknown) => {
      const event = { type, data } as TestEvent;
      if (event.type === 'test:summary' && event.data.file === undefined) success = event.data.success;
      collector.add(event);
    });
  }
  for await (const chunk of stream.compose(spec)) process.stdout.write(chunk);
  process.stdout.write(formatTimes(collector.times(), Date.now() - started));
  return success ? 0 : 1;
}

process.exitCode = await main(process.argv.slice(2));
