/**
 * What every bench prints and paces with: the machine's load beside each figure, a line of output, elapsed
 * seconds, a bounded fan-out of API calls, and a process's memory and CPU from /proc.
 */
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';

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

/** A process's memory (MB, 10^6 bytes) and CPU time (ms), read from /proc. */
export interface ProcessFigures {
  /** VmRSS now. */
  readonly rssMb: number;
  /** VmHWM: the peak resident set since the process started. */
  readonly peakMb: number;
  /** utime + stime; with `children`, also cutime + cstime: the children it has waited for (helm, kustomize). */
  readonly cpuMs: number;
}

/**
 * Reads `/proc/<pid>/status` and `/proc/<pid>/stat`. Ticks are taken as 10 ms (CLK_TCK 100, as on every Linux
 * the benches run on). Throws when the process is gone, so a figure is never made up.
 */
export async function processFigures(pid: number, options: { readonly children?: boolean } = {}): Promise<ProcessFigures> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  const statLine = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: fields 14-17 counted after it, from field 3.
  const fields = statLine.slice(statLine.lastIndexOf(')') + 2).split(' ');
  const cpuFields = options.children === true ? [14, 15, 16, 17] : [14, 15];
  const ticks = cpuFields.reduce((sum, field) => sum + Number(fields[field - 3]), 0);
  return { rssMb: (kib('VmRSS') * 1024) / 1e6, peakMb: (kib('VmHWM') * 1024) / 1e6, cpuMs: ticks * 10 };
}

/**
 * NODE_OPTIONS of the controller container in manifests/controller/base/deployment.yaml (the hub overlay keeps
 * them), so a bench runs the controller with the heap limits users get.
 */
export async function shippedNodeOptions(): Promise<string> {
  const text = await readFile(join(import.meta.dirname, '..', 'manifests', 'controller', 'base', 'deployment.yaml'), 'utf8');
  return /- name: NODE_OPTIONS\n\s+value: (.+)\n/.exec(text)?.[1]?.trim() ?? '';
}
