/**
 * Input that is not UTF-8, or holds characters Go's YAML reader refuses
 * (control characters, U+FFFE/U+FFFF): Argo CD (go-yaml) refuses such a
 * stream, so the plugin must refuse it too — with exit 4, naming the file,
 * the document and the line — for every source type, instead of reading
 * U+FFFD in place of the bytes (which made `caf\xe9` and `caf\xe8` hash alike).
 * Go's side of each case is in go-oracle.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseStream } from '../../plugin/yaml/documents.ts';
import { InvalidInputError, exitCodeFor } from '../../plugin/errors.ts';
import { decodeSource, firstInvalidUtf8 } from '../../plugin/source/decode.ts';
import { runCli } from './cli.ts';
import type { CliResult } from './cli.ts';
import { fakeTool, tempDir } from './source-support.ts';

const bytes = (...parts: readonly (string | readonly number[])[]): Buffer =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part))));

const CONFIG_MAP = (value: readonly number[]): Buffer =>
  bytes('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: "caf', value, '"}\n');

const DEPLOYMENT = 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: web:1\n          envFrom:\n            - configMapRef: {name: c}\n';

function decodes(input: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(input);
    return true;
  } catch {
    return false;
  }
}

function assertRefused(result: CliResult, message: RegExp): void {
  assert.equal(result.code, 4, `exit code; stderr:\n${result.stderr}`);
  assert.equal(result.stdout, '', 'nothing on stdout');
  assert.match(result.stderr, message);
  assert.doesNotMatch(result.stderr, /caf/, 'no input quoted');
}

describe('encoding: invalid UTF-8 is refused (exit 4), never rewritten', () => {
  it('refuses the issue\'s stdin example, naming stream, document, object and line', async () => {
    const result = await runCli(['generate', '-'], { cwd: tmpdir(), stdin: CONFIG_MAP([0xe9]) });
    assertRefused(result, /^driftless: <stdin>#0 ConfigMap c: line 4, column 15: bytes that are not valid UTF-8/);
    assert.match(result.stderr, /Argo CD's YAML parser refuses/);
    assert.match(result.stderr, /save .* as UTF-8/);
  });

  it('refuses every invalid byte in a ConfigMap a Deployment uses, so none can hash like another', async () => {
    for (const bad of [[0xe9], [0xe8], [0xff]]) {
      const stdin = Buffer.concat([Buffer.from(`${DEPLOYMENT}---\n`), CONFIG_MAP(bad)]);
      const result = await runCli(['generate', '-'], { cwd: tmpdir(), stdin });
      assertRefused(result, /^driftless: <stdin>#1 ConfigMap c: line 16, column 15: bytes that are not valid UTF-8/);
    }
  });

  it('refuses a directory file, naming the file, the document (from #0) and the line, also in a Secret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'driftless-enc-'));
    writeFileSync(join(dir, 'a.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n');
    writeFileSync(join(dir, 'b.yaml'), bytes('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: "caf', [0xe9], '"\n'));
    const result = await runCli(['generate', '--path', dir], { cwd: tmpdir() });
    assertRefused(result, /^driftless: b\.yaml#1 Secret creds: line 10, column 17: bytes that are not valid UTF-8/);
  });

  it('refuses kustomize and helm output, counting lines within the rendered document', async () => {
    const printed = String.raw`printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: "caf\351"\n'`;
    const tools = await tempDir();
    const kustomize = await fakeTool(tools, 'kustomize', printed);
    const helm = await fakeTool(tools, 'helm', printed);
    const kApp = await tempDir();
    writeFileSync(join(kApp, 'kustomization.yaml'), 'resources: []\n');
    const k = await runCli(['generate'], { cwd: kApp, env: { DRIFTLESS_KUSTOMIZE: kustomize } });
    assertRefused(k, /^driftless: <kustomize build>#1 Secret s: line 7 of the document, column 10: bytes that are not valid UTF-8/);
    const hApp = await tempDir();
    writeFileSync(join(hApp, 'Chart.yaml'), 'apiVersion: v2\nname: c\nversion: 0.1.0\n');
    const h = await runCli(['generate'], { cwd: hApp, env: { DRIFTLESS_HELM: helm } });
    assertRefused(h, /^driftless: <helm template>#1 Secret s: line 7 of the document, column 10: bytes that are not valid UTF-8/);
  });

  it('names UTF-16 input as such', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n', 'utf16le')]);
    const result = await runCli(['generate', '-'], { cwd: tmpdir(), stdin: utf16 });
    assert.equal(result.code, 4, result.stderr);
    assert.match(result.stderr, /^driftless: <stdin>#0: line 1, column 1: UTF-16 \(it starts with a UTF-16 byte order mark\).*save it as UTF-8/);
  });

  it('finds the first ill-formed sequence as Go does (overlong, surrogate, past U+10FFFF, cut short)', () => {
    const cases: readonly (readonly [readonly number[], number | undefined])[] = [
      [[0x61, 0xc3, 0xa9, 0x62], undefined], // é
      [[0xf0, 0x9f, 0x98, 0x80], undefined], // an emoji
      [[0xef, 0xbb, 0xbf, 0x61], undefined], // a byte order mark is UTF-8
      [[0x61, 0xe9, 0x62], 1],
      [[0x61, 0x80], 1], // a continuation byte alone
      [[0xc0, 0x80], 0], // overlong NUL
      [[0xe0, 0x80, 0x80], 0], // overlong
      [[0xed, 0xa0, 0x80], 0], // a surrogate
      [[0xf4, 0x90, 0x80, 0x80], 0], // past U+10FFFF
      [[0xf5, 0x80, 0x80, 0x80], 0],
      [[0x61, 0x62, 0xe2, 0x82], 2], // cut short at the end
      [[0xc3, 0xa9, 0xc3], 2],
    ];
    for (const [input, expected] of cases) {
      const bytes = Uint8Array.from(input);
      assert.equal(firstInvalidUtf8(bytes), expected, `${Buffer.from(input).toString('hex')}`);
      // The scanner agrees with the fatal decoder, which is the check on the way: valid exactly when it finds nothing.
      assert.equal(decodes(bytes), expected === undefined, `${Buffer.from(input).toString('hex')}`);
    }
  });

  it('keeps valid input as it is, a byte order mark included (the document stage strips it, as before)', async () => {
    const text = '\ufeffapiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: "café"}\n';
    assert.deepEqual(await decodeSource('x.yaml', Buffer.from(text), false), { label: 'x.yaml', text });
    assert.deepEqual(await decodeSource('<helm template>', Buffer.from(text), true), { label: '<helm template>', text, rendered: true });
  });
});

describe('encoding: characters Go\'s YAML reader refuses anywhere (exit 4)', () => {
  const refused = [0x00, 0x01, 0x08, 0x0b, 0x0c, 0x1b, 0x1f, 0x7f, 0x80, 0x84, 0x86, 0x9f, 0xfffe, 0xffff];
  const allowed = [0x09, 0x85, 0xa0, 0xd7ff, 0xe000, 0xfffd, 0x10000];

  it('refuses control characters, U+FFFE and U+FFFF in values, quoted strings and comments, naming the line', () => {
    for (const code of refused) {
      for (const template of ['a: x%y\n', 'a: "x%y"\n', "a: 'x%y'\n", 'a: |\n  x%y\n', '# c%\na: 1\n', '{"a": "x%y"}\n']) {
        const text = `kind: ConfigMap\n${template.replace('%', String.fromCharCode(code))}`;
        assert.throws(() => parseStream({ label: 'f.yaml', text }), (error: unknown) => {
          assert.ok(error instanceof InvalidInputError && exitCodeFor(error) === 4, String(error));
          assert.match(error.message, /^f\.yaml#0 ConfigMap <unnamed>: line [23], column \d+: U\+[0-9A-F]{4}, a character Argo CD's YAML parser refuses anywhere/);
          return true;
        }, `U+${code.toString(16)} in ${JSON.stringify(template)}`);
      }
    }
  });

  it('hints at UTF-16 for a NUL', () => {
    assert.throws(() => parseStream({ label: 'f.yaml', text: 'a: 1\u0000\n' }), /UTF-16 without a byte order mark\?/);
  });

  it('accepts the characters Go allows (tab, NEL in a quoted string is still refused as a line break)', () => {
    for (const code of allowed) {
      if (code === 0x85) continue; // a line break for Go: refused on its own grounds (documents.ts)
      const text = `a: "x${String.fromCodePoint(code)}y"\n`;
      assert.deepEqual(parseStream({ label: 'f.yaml', text }).map((d) => d.value), [{ a: `x${String.fromCodePoint(code)}y` }]);
    }
  });
});
