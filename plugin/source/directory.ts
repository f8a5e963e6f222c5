/**
 * The directory source, with Argo CD's semantics for `directory` apps:
 * `*.yaml`, `*.yml` and `*.json` files, the app dir only unless `recurse`,
 * hidden files included (Argo CD does not skip them), symlinked files followed
 * only when they stay inside the repository, symlinked directories not entered.
 * Order is a depth-first walk with entries sorted by name, as Go's
 * `filepath.Walk`, so the output is the same on every machine.
 */
import type { Dirent } from 'node:fs';
import { readFile, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { isInside } from '../config.ts';
import type { PluginConfig } from '../config.ts';
import { BudgetExceededError, RenderError, UsageError } from '../errors.ts';
import { decodeSource } from './decode.ts';
import { MAX_RENDER_BYTES } from './process.ts';
import type { RenderedStream } from './types.ts';

const MANIFEST_FILE = /\.(ya?ml|json)$/;

/** Reads the manifest files of a directory app, in walk order. A file that is not UTF-8 is refused (InvalidInputError, decode.ts). */
export async function renderDirectory(config: PluginConfig, signal: AbortSignal): Promise<RenderedStream[]> {
  const files = await listManifestFiles(config);
  const streams: RenderedStream[] = [];
  let total = 0;
  for (const file of files) {
    if (signal.aborted) throw new BudgetExceededError(`reading ${file.label} was stopped: ${reasonText(signal.reason)}`, { cause: signal.reason });
    total += file.size;
    if (total > MAX_RENDER_BYTES) {
      throw new RenderError(`the manifest files add up to more than ${MAX_RENDER_BYTES / (1024 * 1024)} MiB; refusing to read more (at ${file.label})`);
    }
    let bytes: Buffer;
    try {
      bytes = await readFile(file.absolute, { signal });
    } catch (error) {
      if (signal.aborted) throw new BudgetExceededError(`reading ${file.label} was stopped: ${reasonText(signal.reason)}`, { cause: error });
      throw new RenderError(`cannot read ${file.label}: ${(error as Error).message}`, '', { cause: error });
    }
    streams.push(await decodeSource(file.label, bytes, false));
  }
  return streams;
}

interface ManifestFile {
  /** Slash-separated path relative to the app dir. */
  readonly label: string;
  readonly absolute: string;
  readonly size: number;
}

/** The files a directory app consists of, in walk order. Exported for tests. */
export async function listManifestFiles(config: PluginConfig): Promise<ManifestFile[]> {
  const { appDir, repoRoot } = config;
  const { recurse, include, exclude } = config.directory;
  const found: ManifestFile[] = [];

  const walk = async (dir: string, realRoot: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => compareNames(a.name, b.name));
    } catch (error) {
      throw new RenderError(`cannot list ${relativeLabel(appDir, dir) || '.'}: ${(error as Error).message}`, '', { cause: error });
    }
    for (const entry of entries) {
      const absolute = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (recurse) await walk(absolute, realRoot);
        continue;
      }
      // Cheap name check first: most files in a repository are not manifests.
      if (!MANIFEST_FILE.test(entry.name)) continue;
      const label = relativeLabel(appDir, absolute);
      if (exclude !== '' && path.matchesGlob(label, exclude)) continue;
      if (include !== '' && !path.matchesGlob(label, include)) continue;
      let size: number;
      if (entry.isSymbolicLink()) {
        let target: string;
        try {
          target = await realpath(absolute);
        } catch {
          continue; // a dangling link: Argo CD skips it with a warning
        }
        if (!isInside(target, realRoot)) {
          throw new RenderError(`${label} is a symlink to a file outside the repository`);
        }
        const targetInfo = await stat(target);
        if (!targetInfo.isFile()) continue;
        size = targetInfo.size;
      } else if (entry.isFile()) {
        size = (await stat(absolute)).size;
      } else {
        continue;
      }
      found.push({ label, absolute, size });
    }
  };

  try {
    const root = await stat(appDir);
    if (!root.isDirectory()) throw new UsageError(`the app path ${appDir} is not a directory (--path)`);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`the app directory ${appDir} does not exist (--path)`, { cause: error });
  }
  // Compare symlink targets with the real root: the root itself may sit below a symlink.
  await walk(appDir, await realpath(repoRoot).catch(() => repoRoot));
  return found;
}

/** Go's sort order (bytes), not the locale's: the same order on every machine. */
function compareNames(a: string, b: string): number {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return Buffer.compare(left, right);
}

function relativeLabel(appDir: string, absolute: string): string {
  return path.relative(appDir, absolute).split(path.sep).join('/');
}

function reasonText(reason: unknown): string {
  return reason instanceof Error && reason.message !== '' ? reason.message : 'the command was stopped';
}
