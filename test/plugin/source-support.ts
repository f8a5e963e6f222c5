/** Shared helpers for the source-stage tests (test/plugin/source-*.test.ts). */
import { readFileSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { parseConfig } from '../../plugin/config.ts';
import type { PluginConfig } from '../../plugin/config.ts';
import { ensureTools } from '../tools.ts';

export type Env = Record<string, string | undefined>;

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'sources');

const created: string[] = [];
// Registered once, at import, on the file's root: a hook registered from inside a running test is not reliably run.
after(() => Promise.all(created.map((dir) => rm(dir, { recursive: true, force: true }))));

/** A fresh temp dir, removed when the test file ends. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'driftless-source-'));
  created.push(dir);
  return dir;
}

/** A writable copy of a fixture (renderers such as `helm dependency build` write into the app dir). */
export async function fixtureCopy(name: string): Promise<string> {
  const target = path.join(await tempDir(), name);
  await cp(path.join(FIXTURES, name), target, { recursive: true });
  return target;
}

/**
 * An environment like the sidecar's: the real, pinned kustomize and helm first
 * on PATH, and HOME and Helm's cache, config and data dirs in a temp dir.
 */
export async function toolEnv(extra: Env = {}): Promise<Env> {
  const tools = await ensureTools();
  const home = await tempDir();
  return {
    PATH: `${tools.binDir}${path.delimiter}${process.env['PATH'] ?? ''}`,
    HOME: home,
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
    ...extra,
  };
}

/** parseConfig for `generate` in `appDir`, as Argo CD runs it (cwd = app dir). */
export function configFor(appDir: string, argv: readonly string[] = [], env: Env = {}): PluginConfig {
  return parseConfig(['generate', ...argv], env, appDir);
}

/** Writes an executable `sh` script named `name` into `dir` (a stand-in renderer on PATH). */
export async function fakeTool(dir: string, name: string, body: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, name);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

/**
 * True while a process with this pid runs. A zombie counts as dead: an orphaned
 * grandchild may wait for a reaper that a container's PID 1 never provides.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

