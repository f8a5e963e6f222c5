/**
 * Helpers for the plugin tests: run the real CLI as Argo CD's cmp-server
 * would (cwd = app dir, ARGOCD_APP_* env, nothing else inherited), and
 * compare against golden files (`UPDATE_GOLDEN=1` rewrites them).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import assert from 'node:assert/strict';

export const REPO = join(import.meta.dirname, '..', '..');
export const BIN = join(REPO, 'bin', 'driftless.js');
export const GOLDEN = join(REPO, 'test', 'golden');
export const FIXTURES = join(REPO, 'test', 'fixtures', 'generate');

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly cwd: string;
  /** Extra environment on top of the Argo-CD-like base. */
  readonly env?: Readonly<Record<string, string>>;
  /** Written to stdin (bytes as they are), then stdin is closed. Omitted: stdin closed at once (unless keepStdinOpen). */
  readonly stdin?: string | Uint8Array;
  readonly keepStdinOpen?: boolean;
  /** Directory put first on PATH (the pinned kustomize and helm). */
  readonly binDir?: string;
  /** Called with the child once spawned (e.g. to signal it). */
  readonly onSpawn?: (child: ReturnType<typeof spawn>) => void;
}

/** The environment Argo CD gives a plugin, plus PATH and HOME. */
export function argocdEnv(extra: Readonly<Record<string, string>> = {}, binDir?: string): Record<string, string> {
  const path = [binDir, process.env['PATH'] ?? ''].filter((p) => p !== undefined && p !== '').join(':');
  return {
    PATH: path,
    HOME: process.env['HOME'] ?? '/tmp',
    ARGOCD_APP_NAME: 'argocd_demo',
    ARGOCD_APP_NAMESPACE: 'demo',
    ARGOCD_APP_PARAMETERS: 'null',
    ...extra,
  };
}

/** Runs `driftless <args>` with the pinned Node running the tests. */
export function runCli(args: readonly string[], options: CliOptions): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: argocdEnv(options.env, options.binDir),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }),
    );
    if (options.stdin !== undefined) child.stdin.end(options.stdin);
    else if (!options.keepStdinOpen) child.stdin.end();
    options.onSpawn?.(child);
  });
}

/** Asserts `actual` equals the golden file `test/golden/<name>`, or rewrites it under UPDATE_GOLDEN=1. */
export function assertGolden(name: string, actual: string): void {
  const file = join(GOLDEN, name);
  if (process.env['UPDATE_GOLDEN'] === '1') {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  assert.ok(existsSync(file), `golden file ${file} is missing; run with UPDATE_GOLDEN=1 to create it`);
  assert.equal(actual, readFileSync(file, 'utf8'), `output differs from ${file} (UPDATE_GOLDEN=1 rewrites it after review)`);
}

/** A successful run: exit 0. Shows stderr when it is not. */
export function assertOk(result: CliResult): void {
  assert.equal(result.code, 0, `expected exit 0, got ${result.code}; stderr:\n${result.stderr}`);
}
