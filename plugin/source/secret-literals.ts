/**
 * The `secretGenerator` literals of a kustomization and of the local
 * kustomizations it builds on. They are Secret values by definition, and
 * kustomize echoes a malformed one in its error ("invalid literal source
 * <literal>"), so they are redacted from its stderr.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { isInside } from '../config.ts';
import { readFastDocument } from '../yaml/fast-yaml.ts';
import { loadYaml } from '../yaml/lazy-yaml.ts';

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
      const document = parseKustomization(await readFile(file, 'utf8'));
      return document !== null && typeof document === 'object' && !Array.isArray(document) ? (document as Record<string, unknown>) : undefined;
    } catch {
      // missing (try the next name), a directory entry that is a file resource, or not YAML
    }
  }
  return undefined;
}

/** Deep enough for any kustomization; deeper input goes to yaml, which has its own limits. */
const MAX_DEPTH = 200;

/**
 * The kustomization as a value: the fast reader's when it reads the file
 * (loading `yaml` was a good part of every Kustomize render's start), else
 * yaml's. The two agree on every string; where they could differ on the
 * lists read here (Go's YAML 1.1 against yaml's 1.2: an item that is a string
 * for one and not for the other), an item that is not a string for the fast
 * reader sends the file to yaml, and one that is a string only for it adds a
 * value to redact or a directory to follow, never takes one away.
 */
function parseKustomization(text: string): unknown {
  const fast = readFastDocument(text, 0, text.length, MAX_DEPTH);
  if (fast !== undefined && readItemsAreStrings(fast.value)) return fast.value;
  // logLevel 'error': a warning would go to process.emitWarning (stderr, the server's log) quoting the line, which may hold a literal.
  return loadYaml().parse(text, { maxAliasCount: 100, logLevel: 'error' });
}

/** Whether every item of the lists this module reads (literals, resources, components, bases) is a string. */
function readItemsAreStrings(document: unknown): boolean {
  if (document === null || typeof document !== 'object' || Array.isArray(document)) return true;
  const record = document as Record<string, unknown>;
  const lists: unknown[] = [record['resources'], record['components'], record['bases']];
  const generators = record['secretGenerator'];
  if (Array.isArray(generators)) for (const generator of generators) lists.push((generator as { literals?: unknown } | null)?.literals);
  return lists.every((list) => !Array.isArray(list) || list.every((item) => typeof item === 'string'));
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
