/**
 * The `secretGenerator` literals of a kustomization and of the local
 * kustomizations it builds on. They are Secret values by definition, and
 * kustomize echoes a malformed one in its error ("invalid literal source
 * <literal>"), so they are redacted from its stderr.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { isInside } from '../config.ts';

/** Kustomize's file names, in its lookup order. */
const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

/** Bounds for a hostile or huge repository: how many kustomizations are read, and how large each may be. */
const MAX_KUSTOMIZATIONS = 200;
const MAX_FILE_BYTES = 1024 * 1024;

/**
 * Literal values of every `secretGenerator` in the kustomization in `appDir`
 * and, following `resources`, `components` and `bases` that are directories
 * inside `repoRoot`, in the ones it includes. For `key=value` the value (also
 * without surrounding quotes, as kustomize strips them); for a malformed item
 * without `=`, the whole item. Never throws: a file that cannot be read or
 * parsed is skipped (kustomize will report it, with nothing of ours to hide).
 */
export async function secretGeneratorLiterals(appDir: string, repoRoot: string): Promise<string[]> {
  const values: string[] = [];
  const seen = new Set<string>();
  const queue = [path.resolve(appDir)];
  while (queue.length > 0 && seen.size < MAX_KUSTOMIZATIONS) {
    const dir = queue.shift() as string;
    if (seen.has(dir)) continue;
    seen.add(dir);
    const document = await readKustomization(dir);
    if (document === undefined) continue;
    values.push(...literalsOf(document['secretGenerator']));
    for (const field of ['resources', 'components', 'bases']) {
      const entries = document[field];
      if (!Array.isArray(entries)) continue;
      for (const entry of entries) {
        // Remote bases (URLs, `github.com/...?ref=`) are not fetched here; a local file resource has no generators.
        if (typeof entry !== 'string' || entry.includes('://') || entry.includes('?')) continue;
        const target = path.resolve(dir, entry);
        if (isInside(target, repoRoot) && !seen.has(target)) queue.push(target);
      }
    }
  }
  return values;
}

async function readKustomization(dir: string): Promise<Record<string, unknown> | undefined> {
  for (const name of KUSTOMIZATION_FILES) {
    const file = path.join(dir, name);
    try {
      const info = await stat(file);
      if (!info.isFile() || info.size > MAX_FILE_BYTES) continue;
      const document: unknown = parse(await readFile(file, 'utf8'), { maxAliasCount: 100 });
      return document !== null && typeof document === 'object' && !Array.isArray(document) ? (document as Record<string, unknown>) : undefined;
    } catch {
      // missing (try the next name), a directory entry that is a file resource, or not YAML
    }
  }
  return undefined;
}

function literalsOf(generators: unknown): string[] {
  if (!Array.isArray(generators)) return [];
  const values: string[] = [];
  for (const generator of generators) {
    const literals = (generator as { literals?: unknown } | null)?.literals;
    if (!Array.isArray(literals)) continue;
    for (const literal of literals) {
      if (typeof literal !== 'string') continue;
      const equals = literal.indexOf('=');
      const value = equals === -1 ? literal : literal.slice(equals + 1);
      values.push(value);
      const unquoted = /^(["'])(.*)\1$/s.exec(value)?.[2];
      if (unquoted !== undefined) values.push(unquoted);
    }
  }
  return values;
}
