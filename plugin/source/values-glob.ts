/**
 * Argo CD's values-file globs (v3.6, reposerver `getResolvedValueFiles`): an
 * entry of `valueFiles` with `*`, `?` or `[` is expanded with
 * `doublestar.FilepathGlob`, whose matches are put in the order helm merges
 * them. This module reproduces doublestar's syntax and order:
 * - `*` any run of characters but `/` (dot files included), `?` one of them,
 *   `[a-z]`/`[^a-z]`/`[!a-z]` a class, `{a,b}` alternatives, `\` escapes,
 *   and a whole `**` segment any number of directories (the directory itself too);
 * - matches come segment by segment: every directory the leading segments match,
 *   in order, then the last segment's matches inside each, by name (Go's byte
 *   order); under `**` a directory comes before what it holds, depth first;
 * - directories match too (doublestar's default), so helm is then handed a directory and
 *   the caller refuses it, as helm would fail on it.
 */
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';

/** A pattern doublestar would refuse (an unclosed `[` or `{`). */
export class GlobPatternError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'GlobPatternError';
  }
}

/** Argo CD's `isGlobPath`: only these three make an entry a glob (`{a,b}` alone does not). */
export function isGlobPath(file: string): boolean {
  return /[*?[]/.test(file);
}

/** Every path `pattern` (absolute) matches, in doublestar's order; `[]` when nothing matches. */
export async function expandGlob(pattern: string): Promise<string[]> {
  const segments = splitSegments(path.resolve(pattern).slice(1));
  const first = segments.findIndex(hasMeta);
  const base = `/${segments.slice(0, first).map(unescape).join('/')}`;
  let found = [base];
  const rest = segments.slice(first);
  for (const [index, segment] of rest.entries()) {
    const last = index === rest.length - 1;
    const next: string[] = [];
    for (const dir of found) next.push(...(await matchSegment(dir, segment, last)));
    found = next;
  }
  return found;
}

async function matchSegment(dir: string, segment: string, canMatchFiles: boolean): Promise<string[]> {
  if (segment === '**') {
    if (!(await isDirectory(dir))) return [];
    return [dir, ...(await descend(dir, canMatchFiles, new Set()))];
  }
  if (!hasMeta(segment)) {
    const candidate = path.join(dir, unescape(segment));
    const info = await stat(candidate).catch(() => undefined);
    if (info === undefined || (!canMatchFiles && !info.isDirectory())) return [];
    return [candidate];
  }
  const matcher = compileSegment(segment);
  const matches: string[] = [];
  for (const name of await sortedNames(dir)) {
    if (!matcher.test(name)) continue;
    const candidate = path.join(dir, name);
    if (canMatchFiles || (await isDirectory(candidate))) matches.push(candidate);
  }
  return matches;
}

/** `**` below `dir`: each directory, then what it holds, depth first; files only in the last segment. */
async function descend(dir: string, canMatchFiles: boolean, visiting: Set<string>): Promise<string[]> {
  // Symlinked directories are followed as doublestar does; a loop is walked once, where Go would walk it until
  // the path is too long.
  const real = await realOrSelf(dir);
  if (visiting.has(real)) return [];
  visiting.add(real);
  const matches: string[] = [];
  for (const name of await sortedNames(dir)) {
    const candidate = path.join(dir, name);
    if (await isDirectory(candidate)) {
      matches.push(candidate, ...(await descend(candidate, canMatchFiles, visiting)));
    } else if (canMatchFiles) {
      matches.push(candidate);
    }
  }
  visiting.delete(real);
  return matches;
}

async function realOrSelf(dir: string): Promise<string> {
  return realpath(dir).catch(() => dir);
}

/** A directory's entries by name in Go's byte order (`os.ReadDir`); `[]` when it cannot be read, as doublestar ignores I/O errors. */
async function sortedNames(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

async function isDirectory(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined))?.isDirectory() ?? false;
}

/** Splits at `/` outside `{...}` and not escaped. */
function splitSegments(pattern: string): string[] {
  const segments: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < pattern.length; index++) {
    const char = pattern[index];
    if (char === '\\') index++;
    else if (char === '{') depth++;
    else if (char === '}' && depth > 0) depth--;
    else if (char === '/' && depth === 0) {
      segments.push(pattern.slice(start, index));
      start = index + 1;
    }
  }
  segments.push(pattern.slice(start));
  return segments.filter((segment) => segment !== '');
}

function hasMeta(segment: string): boolean {
  for (let index = 0; index < segment.length; index++) {
    const char = segment[index] as string;
    if (char === '\\') index++;
    else if ('*?[{'.includes(char)) return true;
  }
  return false;
}

function unescape(segment: string): string {
  return segment.replace(/\\(.)/gu, '$1');
}

/** doublestar's `Match` for one segment, as an anchored regular expression. */
function compileSegment(segment: string): RegExp {
  // Code points, as Go's matcher reads runes: `?` is one character even outside the BMP.
  // oxlint-disable-next-line typescript/no-misused-spread
  const chars = [...segment];
  let source = '';
  let depth = 0;
  for (let index = 0; index < chars.length; index++) {
    const char = chars[index] as string;
    if (char === '\\') {
      index++;
      source += escapeRegExp(chars[index] ?? '\\');
    } else if (char === '*') {
      while (chars[index + 1] === '*') index++;
      source += '[^/]*';
    } else if (char === '?') {
      source += '[^/]';
    } else if (char === '[') {
      const close = chars.indexOf(']', index + 2);
      if (close === -1) throw new GlobPatternError(`unclosed "[" in ${JSON.stringify(segment)}`);
      let body = chars.slice(index + 1, close).join('');
      const negate = body.startsWith('^') || body.startsWith('!');
      if (negate) body = body.slice(1);
      const inner = body.replace(/\\(.)/gu, '$1').replace(/[\\\]^[]/gu, '\\$&');
      source += negate ? `[^/${inner}]` : `[${inner}]`;
      index = close;
    } else if (char === '{') {
      depth++;
      source += '(?:';
    } else if (char === ',' && depth > 0) {
      source += '|';
    } else if (char === '}' && depth > 0) {
      depth--;
      source += ')';
    } else {
      source += escapeRegExp(char);
    }
  }
  if (depth > 0) throw new GlobPatternError(`unclosed "{" in ${JSON.stringify(segment)}`);
  return new RegExp(`^${source}$`, 'u');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/gu, '\\$&');
}
