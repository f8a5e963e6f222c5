/**
 * `npm run test:unit` runs every test but `*.cluster.test.ts` (package.json), so a test
 * that needs the cluster must say so in its name, or the unit run would start (or wait
 * for) a whole control plane. A test needs the cluster when its imports reach the
 * harness that starts one (test/cluster/harness.ts).
 */
import assert from 'node:assert/strict';
import { existsSync, globSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { it } from 'node:test';

const root = join(import.meta.dirname, '..');
const HARNESS = 'test/cluster/harness.ts';

/** The repository files a module imports, statically or dynamically, by relative path. */
function localImports(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+\.ts)'/g)].map((match) => match[1] as string);
  // Import-like text inside strings (test/lint.test.ts writes such files elsewhere) names no file here.
  return specifiers.map((specifier) => relative(root, join(root, dirname(file), specifier))).filter((path) => existsSync(join(root, path)));
}

/** Whether `file`'s imports, followed through the repository, reach `target`. */
function reaches(file: string, target: string): boolean {
  const seen = new Set<string>();
  const pending = [file];
  while (pending.length > 0) {
    const next = pending.pop() as string;
    if (next === target) return true;
    if (seen.has(next)) continue;
    seen.add(next);
    pending.push(...localImports(next));
  }
  return false;
}

it('names every test whose imports reach the cluster harness *.cluster.test.ts, so the unit run leaves it out', () => {
  const tests = globSync('test/**/*.test.ts', { cwd: root }).sort();
  assert.ok(tests.length > 50, `found only ${tests.length} tests`);
  const misnamed = tests.filter((file) => !file.endsWith('.cluster.test.ts') && reaches(file, HARNESS));
  assert.deepEqual(misnamed, []);
});

it('finds the harness through imports, so the rule above can fail', () => {
  assert.equal(reaches('test/controller/lifecycle.cluster.test.ts', HARNESS), true);
  assert.equal(reaches('test/core/hash.test.ts', HARNESS), false);
});
