/**
 * `node bench/spokes.ts`: what the hub-and-spokes harness costs
 * (test/cluster/spokes.ts `startHubAndSpokes`): a hub with Argo CD and two
 * spokes, each spoke registered as `argocd cluster add` registers one.
 *
 * - start: wall time from the call to every spoke registered, the three control
 *   planes started one after the other (sequential) and side by side
 *   (parallel), alternately (S P P S …) so that load falls on both alike;
 * - stop: wall time of `stop()`;
 * - memory: VmRSS of every process this one started (the components and what
 *   they fork), after the start, summed by command name.
 *
 * Nothing is asserted: figures belong in a report, not in a test.
 * Options: `--runs N` (default 2 of each).
 */
import { readdir, readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { startHubAndSpokes } from '../test/cluster/spokes.ts';
import { load } from './support.ts';

const { values: options } = parseArgs({ options: { runs: { type: 'string', default: '2' } } });
const runs = Number(options.runs);

/** pid → [parent pid, command name, VmRSS in KiB] for every process we may read. */
async function processTable(): Promise<Map<number, { ppid: number; name: string; rssKiB: number }>> {
  const table = new Map<number, { ppid: number; name: string; rssKiB: number }>();
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const field = (key: string): string => new RegExp(`^${key}:\\s*(.*)$`, 'm').exec(status)?.[1] ?? '';
    if (status === '') continue;
    // The Kubernetes components are one multi-call binary: name them by their role (its first argument).
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const name = field('Name') === 'k8s' ? (argv[1] ?? 'k8s') : field('Name');
    table.set(pid, { ppid: Number(field('PPid')), name, rssKiB: Number.parseInt(field('VmRSS') || '0', 10) });
  }
  return table;
}

/** VmRSS (MiB) of every descendant of this process, summed by command name. */
async function descendantsMemory(): Promise<Map<string, { count: number; mib: number }>> {
  const table = await processTable();
  const descendants = new Set<number>([process.pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, info] of table) {
      if (!descendants.has(pid) && descendants.has(info.ppid)) {
        descendants.add(pid);
        grew = true;
      }
    }
  }
  descendants.delete(process.pid);
  const byName = new Map<string, { count: number; mib: number }>();
  for (const pid of descendants) {
    const info = table.get(pid);
    if (info === undefined) continue;
    const sum = byName.get(info.name) ?? { count: 0, mib: 0 };
    byName.set(info.name, { count: sum.count + 1, mib: sum.mib + info.rssKiB / 1024 });
  }
  return byName;
}

async function measure(parallel: boolean, withMemory: boolean): Promise<{ startS: number; stopS: number }> {
  const started = performance.now();
  const system = await startHubAndSpokes({ parallel, spoke: { auditLog: true } });
  const startS = (performance.now() - started) / 1000;
  if (withMemory) {
    const memory = await descendantsMemory();
    const total = [...memory.values()].reduce((sum, { mib }) => sum + mib, 0);
    process.stdout.write(`memory after start (VmRSS, MiB), total ${total.toFixed(0)}:\n`);
    for (const [name, { count, mib }] of [...memory].sort((a, b) => b[1].mib - a[1].mib)) {
      process.stdout.write(`  ${name.padEnd(24)} ×${count}  ${mib.toFixed(0)}\n`);
    }
  }
  const stopping = performance.now();
  await system.stop();
  return { startS, stopS: (performance.now() - stopping) / 1000 };
}

const results: { parallel: boolean; startS: number; stopS: number; load: string }[] = [];
for (let round = 0; round < runs; round++) {
  // S P, then P S: each mode goes first as often as the other.
  const order = round % 2 === 0 ? [false, true] : [true, false];
  for (const parallel of order) {
    const result = await measure(parallel, round === 0 && parallel);
    results.push({ parallel, ...result, load: load() });
    process.stdout.write(`${parallel ? 'parallel  ' : 'sequential'} start ${result.startS.toFixed(1)} s, stop ${result.stopS.toFixed(1)} s (load ${load()})\n`);
  }
}
for (const parallel of [false, true]) {
  const starts = results.filter((result) => result.parallel === parallel).map((result) => result.startS).sort((a, b) => a - b);
  process.stdout.write(`${parallel ? 'parallel  ' : 'sequential'} starts: ${starts.map((s) => s.toFixed(1)).join(', ')} s\n`);
}
