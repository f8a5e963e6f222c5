/**
 * `driftless explain --live` run as a user runs it: the real bin/driftless.js in its own process, with a
 * kubeconfig file and no KUBECONFIG from the environment.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { LiveExplainReport } from '../../../controller/explain/report.ts';

const bin = join(import.meta.dirname, '..', '..', '..', 'bin', 'driftless.js');

/** What one run printed and its exit code. */
export interface ExplainRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `driftless explain --live --kubeconfig=KUBECONFIG ARGS…`; never rejects (a 60-s timeout kills it). */
export function explainLive(kubeconfig: string, args: readonly string[]): Promise<ExplainRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, 'explain', '--live', `--kubeconfig=${kubeconfig}`, ...args], { env: { ...process.env, KUBECONFIG: '' }, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The JSON report of a run that must succeed. */
export async function explainJson(kubeconfig: string, args: readonly string[]): Promise<LiveExplainReport> {
  const run = await explainLive(kubeconfig, [...args, '--output=json']);
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as LiveExplainReport;
}
