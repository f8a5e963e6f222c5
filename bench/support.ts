/**
 * What every bench prints and paces with: the machine's load beside each figure, a line of output, elapsed
 * seconds, and a bounded fan-out of API calls.
 */
import { loadavg } from 'node:os';

/** The 1, 5 and 15 minute load averages, for the report beside each figure. */
export function load(): string {
  return loadavg().map((value) => value.toFixed(2)).join(' ');
}

/** One line of the report. */
export function log(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** Seconds since `fromMs` (a `performance.now()` reading). */
export const seconds = (fromMs: number): number => (performance.now() - fromMs) / 1000;

/** Runs `task(i)` for i in [0, count) with at most `parallel` in flight. */
export async function bounded(count: number, parallel: number, task: (index: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, worker));
}
