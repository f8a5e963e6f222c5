/**
 * The docs are a web of relative links (the README is a map; the pages under docs/ link each other, the
 * ADRs and the READMEs beside the code). A moved section or renamed heading breaks them silently on
 * GitHub, so every relative link and `#anchor` in the repository's Markdown must resolve: the file (or
 * folder) exists, and the anchor is a heading of that file, slugged as GitHub slugs it.
 */
import assert from 'node:assert/strict';
import { existsSync, globSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, it } from 'node:test';

const root = join(import.meta.dirname, '..');

/** The project's Markdown: everything but dependencies and test inputs. */
function markdownFiles(): string[] {
  return globSync('**/*.md', { cwd: root, exclude: (path) => /(^|\/)(node_modules|\.git|fixtures|golden)$/.test(path) }).sort();
}

/** The text with fenced code blocks and inline code blanked out: a link in an example is not a link. */
function prose(text: string): string {
  const blank = (s: string): string => s.replace(/[^\n]/g, ' ');
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, blank).replace(/`[^`\n]+`/g, blank);
}

/** GitHub's heading anchor (github-slugger): lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a Markdown file offers: its headings (repeats get -1, -2, … as on GitHub) and explicit ids. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of prose(text).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    // The heading's own text, inline code included (prose() blanked it only to find the heading).
    const start = match.index;
    const line = text.slice(start, text.indexOf('\n', start) === -1 ? undefined : text.indexOf('\n', start));
    const base = slug(line.replace(/^#{1,6}[ \t]+/, '').replace(/[ \t#]*$/, ''));
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(match[1] as string);
  return out;
}

/** The link targets of a Markdown file: inline links and images, and reference definitions. */
function links(text: string): string[] {
  const body = prose(text);
  const inline = [...body.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
  const references = [...body.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1] as string);
  return [...inline, ...references];
}

/** Why `target`, linked from `file`, does not resolve; undefined when it does (or is not relative). */
function problem(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const hash = target.indexOf('#');
  const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const resolved = path === '' ? file : normalize(join(dirname(file), path));
  if (resolved.startsWith('..')) return `${target} leaves the repository`;
  if (!existsSync(join(root, resolved))) return `${target}: no such file or folder`;
  if (anchor === undefined) return undefined;
  if (!resolved.endsWith('.md') || statSync(join(root, resolved)).isDirectory()) return `${target}: an anchor into a file that is not Markdown`;
  if (!anchors(readFileSync(join(root, resolved), 'utf8')).has(anchor)) return `${target}: ${resolved} has no heading #${anchor}`;
  return undefined;
}

describe('the docs', () => {
  it('slugs headings as GitHub does', () => {
    assert.equal(slug('Configs changed outside Git: `.driftless/out-of-band`'), 'configs-changed-outside-git-driftlessout-of-band');
    assert.equal(slug("T is on the API server's clock"), 't-is-on-the-api-servers-clock');
    assert.equal(slug('Ask the controller why: `explain --live`'), 'ask-the-controller-why-explain---live');
    assert.equal(slug('7. The out-of-band file'), '7-the-out-of-band-file');
    assert.equal(slug('Argo CD: commit → Synced'), 'argo-cd-commit--synced');
  });

  it('every relative link and #anchor in the Markdown files resolves', () => {
    const files = markdownFiles();
    assert.ok(files.includes('README.md') && files.includes('docs/install.md'), `found ${files.length} Markdown files`);
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const target of links(readFileSync(join(root, file), 'utf8'))) {
        checked++;
        const why = problem(file, target);
        if (why !== undefined) broken.push(`${file}: ${why}`);
      }
    }
    assert.ok(checked > 100, `only ${checked} links found: the link reader is broken`);
    assert.deepEqual(broken, []);
  });

  it('every page under docs/ is reachable from the README, and starts with what its reader wants to do', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    for (const page of globSync('docs/*.md', { cwd: root }).sort()) {
      assert.ok(readme.includes(`](${page})`), `README.md links ${page}`);
      if (page === 'docs/hash-v1.md') continue; // A specification, not a task page.
      const first = readFileSync(join(root, page), 'utf8').split('\n\n')[1] ?? '';
      assert.match(first, /^You want to /, `${page} opens with "You want to …"`);
    }
  });

  it('the README gives the test command CI runs (.ci/run), word for word', () => {
    const ci = readFileSync(join(root, '.ci', 'run'), 'utf8').split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
    const command = ci.at(-1) as string;
    assert.equal(command, 'npm ci && npm test');
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    assert.match(readme, /^npm ci && npm test\s+# /m, 'the README\'s quick start has the command on a line of its own');
  });
});
