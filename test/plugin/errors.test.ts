/**
 * Every failure of `generate`/`explain` through the real CLI: the exit code,
 * a message on stderr that names the file, the document and the field, and
 * nothing at all on stdout (no half output for Argo CD to apply).
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { runCli } from './cli.ts';
import type { CliResult } from './cli.ts';

/** Every app directory of this file, removed at its end (each run used to leave some thirty in the temp dir). */
const apps: string[] = [];
after(() => {
  for (const dir of apps) rmSync(dir, { recursive: true, force: true });
});

/** A fresh app directory holding `files`. */
function app(files: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), 'driftless-err-'));
  apps.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function assertFailure(result: CliResult, code: number, message: RegExp): void {
  assert.equal(result.code, code, `exit code; stderr:\n${result.stderr}`);
  assert.equal(result.stdout, '', 'nothing on stdout');
  assert.match(result.stderr, /^driftless: /);
  assert.match(result.stderr, message);
}

const DEPLOYMENT = (extra = ''): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
${extra}spec:
  template:
    spec:
      containers:
        - name: web
          image: web:1
          envFrom:
            - configMapRef: {name: settings}
`;

describe('errors: invalid input (exit 4)', () => {
  it('names the file, document, line and column of unparsable YAML', async () => {
    const dir = app({ 'broken.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: [b\n' });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /broken\.yaml#1 ConfigMap <unnamed>: line \d+, column \d+: /);
  });

  it('rejects a line break only Argo CD sees (U+2028), naming file, document and line, quoting nothing', async () => {
    const dir = app({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n  a: x # c\u2028  b: hidden\n' });
    const result = await runCli(['generate'], { cwd: dir });
    assertFailure(result, 4, /cm\.yaml#1 ConfigMap b: line 9, column 11: U\+2028/);
    assert.doesNotMatch(result.stderr, /hidden/);
  });

  it('rejects an integer JSON cannot carry; a template built from an alias is stamped, not refused', async () => {
    const big = app({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nspec:\n  n: 12345678901234567890\n' });
    assertFailure(await runCli(['generate'], { cwd: big }), 4, /cm\.yaml#0 ConfigMap a: line 5, column 6: a number that JSON cannot carry exactly/);
    const aliased = DEPLOYMENT().replace('spec:\n  template:\n', 'x: &t\n').replace(/\n$/, '\nspec:\n  template: *t\n');
    const dir = app({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n', 'd.yaml': aliased });
    const result = await runCli(['generate'], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    // Written out as Go reads it (ADR 6): the template has the annotation, the anchored mapping `x` does not.
    const deployment = JSON.parse(result.stdout.split('---\n').find((d) => d.includes('Deployment')) ?? '') as { x: { metadata?: unknown }; spec: { template: { metadata: { annotations: Record<string, string> } } } };
    assert.match(deployment.spec.template.metadata.annotations['driftless.dev/config-hash'] ?? '', /^v1:[0-9a-f]{64}$/);
    assert.equal(deployment.x.metadata, undefined);
  });

  it('rejects keys that Argo CD would keep one of at random (1 and "1"), naming the object', async () => {
    const dir = app({ 'dup.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  1: x\n  "1": y\n' });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /dup\.yaml#0 ConfigMap a: line 7, column 3: two keys of this mapping have the same name but different types/);
  });

  it('bounds YAML alias expansion (billion laughs)', async () => {
    const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++) {
      const prev = String.fromCharCode(96 + i);
      const name = String.fromCharCode(97 + i);
      bomb.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(',')}]`);
    }
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\nspec:\n${bomb.map((l) => `  ${l}`).join('\n')}\n`;
    const dir = app({ 'bomb.yaml': text });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /bomb\.yaml#0 ConfigMap bomb: YAML aliases expand beyond the limit/);
  });

  it('rejects a !!binary value (Go decodes it, the plugin cannot hash it as Go reads it), saying what to write instead', async () => {
    const dir = app({ 's.yaml': 'apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData:\n  token: !!binary c2VjcmV0LXZhbHVl\n' });
    const result = await runCli(['generate'], { cwd: dir });
    assertFailure(result, 4, /s\.yaml#0 Secret creds: line 5, column 10: a !!binary value, which Argo CD's YAML parser decodes from base64 and this plugin does not read; put the base64 text without the tag under data \(Secret\) or binaryData \(ConfigMap\), or write the decoded text as a plain string/);
    assert.doesNotMatch(result.stderr, /c2VjcmV0/);
  });

  it('rejects a document over 8 MiB, naming it', async () => {
    const huge = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: huge}\ndata:\n  blob: "${'x'.repeat(8 * 1024 * 1024)}"\n`;
    const dir = app({ 'huge.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small}\n---\n${huge}` });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /huge\.yaml#1: document is \d+ bytes, over the limit of 8388608 bytes/);
  });

  it('rejects a ConfigMap value that is not a string, naming the field', async () => {
    const dir = app({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata:\n  enabled: yes\n' });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /cm\.yaml#0 ConfigMap demo\/settings: data\.enabled: /);
  });

  it('rejects base64 that does not decode, naming the Secret and the key', async () => {
    const dir = app({ 's.yaml': 'apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata:\n  token: "not base64!"\n' });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /s\.yaml#0 Secret demo\/creds: data\.token: /);
  });

  it('rejects a bad regex in a reload annotation, naming the annotation', async () => {
    const dir = app({
      'd.yaml': DEPLOYMENT('  annotations:\n    configmap.reloader.stakater.com/reload: "app-(["\n'),
    });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /d\.yaml#0 Deployment demo\/web: .*configmap\.reloader\.stakater\.com\/reload/);
  });

  it('fails on zero documents unless allow-empty', async () => {
    const dir = app({ 'empty.yaml': '# nothing\n---\n' });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /empty\.yaml: the render produced no Kubernetes objects.*allow-empty=true/);
  });

  it('rejects a document that is not a Kubernetes object', async () => {
    const dir = app({ 'list.yaml': '- a\n- b\n' });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /list\.yaml#0 .*must be a mapping/);
  });

  it('rejects an object without metadata.name', async () => {
    const dir = app({ 'anon.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n' });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /anon\.yaml#0 ConfigMap.*metadata\.name/);
  });

  it('rejects YAML directives rather than dropping them', async () => {
    const dir = app({ 'dir.yaml': '%YAML 1.2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n' });
    assertFailure(await runCli(['generate'], { cwd: dir }), 4, /dir\.yaml#0: line 1, column 1: YAML directives \(%YAML\) are not supported/);
  });

  it('rejects a pod template whose metadata is not a mapping', async () => {
    const dir = app({
      'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n',
      'd.yaml': DEPLOYMENT().replace('    spec:\n', '    metadata: oops\n    spec:\n'),
    });
    const result = await runCli(['generate'], { cwd: dir });
    assert.equal(result.code, 4, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /d\.yaml#0.*metadata/);
  });
});

describe('errors: usage (exit 2)', () => {
  it('names an unreadable hash-key-file', async () => {
    const dir = app({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n' });
    assertFailure(await runCli(['generate', '--hash-key-file', 'missing-key'], { cwd: dir }), 2, /hash-key-file .*missing-key: cannot read the key \(ENOENT\)/);
  });

  it('rejects an empty hash-key-file', async () => {
    const dir = app({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n', key: '' });
    assertFailure(await runCli(['generate', '--hash-key-file', 'key'], { cwd: dir }), 2, /hash-key-file .*key: the key file is empty/);
  });

  for (const command of ['generate', 'explain']) {
    it(`${command}: rejects a hash-key-file of only a newline, as the controller does (a Secret mounted without its key)`, async () => {
      const dir = app({ 'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n', key: '\n' });
      assertFailure(await runCli([command, '--hash-key-file', 'key'], { cwd: dir }), 2, /hash-key-file .*key: the key file holds only whitespace \(1 byte;/);
    });
  }

  it('rejects an unknown flag', async () => {
    const dir = app({});
    const result = await runCli(['generate', '--no-such-flag'], { cwd: dir });
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^driftless: .*--no-such-flag/);
  });
});

/** A fake renderer: a shell script standing in for kustomize (the real one is tested in generate-examples). */
function fakeKustomize(dir: string, body: string): string {
  const script = join(dir, 'fake-kustomize');
  writeFileSync(script, `#!/bin/sh\n${body}\n`);
  chmodSync(script, 0o755);
  return script;
}

describe('errors: renderer, budget and signals', () => {
  it('exits 3 with the tail of a failing renderer\'s stderr', async () => {
    const dir = app({ 'kustomization.yaml': 'resources: []\n' });
    const kustomize = fakeKustomize(dir, 'echo "Error: accumulating resources: missing.yaml: no such file" >&2\nexit 1');
    const result = await runCli(['generate'], { cwd: dir, env: { DRIFTLESS_KUSTOMIZE: kustomize } });
    assertFailure(result, 3, /kustomize build.*\n?.*Error: accumulating resources: missing\.yaml: no such file/);
  });

  it('exits 1 when the time budget (ARGOCD_EXEC_TIMEOUT) runs out', async () => {
    const dir = app({});
    const result = await runCli(['generate', '-'], { cwd: dir, keepStdinOpen: true, env: { ARGOCD_EXEC_TIMEOUT: '300ms' } });
    assertFailure(result, 1, /exceeded the time budget of 300ms/);
  });

  it('stops the renderer and exits non-zero on SIGTERM, writing nothing to stdout', async () => {
    const dir = app({ 'kustomization.yaml': 'resources: []\n' });
    const pidFile = join(dir, 'renderer.pid');
    const kustomize = fakeKustomize(dir, `echo $$ > "${pidFile}.tmp" && mv "${pidFile}.tmp" "${pidFile}"\nexec sleep 60`);
    const result = await runCli(['generate'], {
      cwd: dir,
      env: { DRIFTLESS_KUSTOMIZE: kustomize },
      onSpawn: (child) => {
        void (async () => {
          while (!existsSync(pidFile)) await sleep(20);
          child.kill('SIGTERM');
        })();
      },
    });
    assertFailure(result, 1, /stopped by SIGTERM/);
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    // The renderer got the signal too: it is gone (or a zombie being reaped) shortly after.
    let alive = true;
    for (let i = 0; i < 100 && alive; i++) {
      try {
        process.kill(pid, 0);
        await sleep(50);
      } catch {
        alive = false;
      }
    }
    assert.equal(alive, false, `renderer ${pid} still running`);
  });
});

describe('errors: a Secret value never appears in any output', () => {
  const VALUE = 'Zebra-s3cr3t-4242-value';
  const BASE64 = Buffer.from(VALUE).toString('base64');
  const assertClean = (result: CliResult, where: string, includeStdout = true): void => {
    for (const needle of [VALUE, BASE64, BASE64.replace(/=+$/, '')]) {
      assert.ok(!result.stderr.includes(needle), `${where}: stderr leaks the Secret:\n${result.stderr}`);
      if (includeStdout) assert.ok(!result.stdout.includes(needle), `${where}: stdout leaks the Secret`);
    }
  };
  const secret = (data: string): string => `apiVersion: v1\nkind: Secret\nmetadata: {name: settings-secret}\n${data}`;
  const uses = DEPLOYMENT().replace('- configMapRef: {name: settings}', '- secretRef: {name: settings-secret}');

  it('explain (table and json) and generate\'s stderr', async () => {
    const dir = app({ 's.yaml': secret(`data:\n  password: ${BASE64}\nstringData:\n  other: ${VALUE}\n`), 'd.yaml': uses });
    assertClean(await runCli(['explain'], { cwd: dir }), 'explain');
    assertClean(await runCli(['explain', '--output', 'json'], { cwd: dir }), 'explain json');
    const generated = await runCli(['generate'], { cwd: dir });
    assert.equal(generated.code, 0, generated.stderr);
    assertClean(generated, 'generate', false);
  });

  it('a kustomization literal the YAML reader warns about is not quoted on stderr', async () => {
    // An unknown tag makes the yaml package warn, and its default is to print the warning with the line.
    const dir = app({ 'kustomization.yaml': `secretGenerator:\n  - name: creds\n    literals:\n      - !vault password=${VALUE}\n` });
    const kustomize = fakeKustomize(dir, 'printf "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: a}\\n"');
    const result = await runCli(['generate'], { cwd: dir, env: { DRIFTLESS_KUSTOMIZE: kustomize } });
    assert.equal(result.code, 0, result.stderr);
    assertClean(result, 'generate');
  });

  const failing: [string, string][] = [
    ['bad base64 next to the value', `data:\n  password: ${BASE64}\n  broken: "${VALUE}!"\n`],
    ['a non-string data value', `data:\n  password: [${VALUE}]\n`],
    ['a non-string stringData value', `stringData:\n  password: {v: ${VALUE}}\n`],
    ['an unterminated quote', `data:\n  password: "${VALUE}\n`],
    ['a bad escape', `data:\n  password: "\\q${VALUE}"\n`],
    ['a duplicate key', `data:\n  password: ${BASE64}\n  password: ${VALUE}\n`],
    ['an unknown alias', `data:\n  password: *${VALUE}\n`],
    ['a tab indentation', `data:\n\tpassword: ${VALUE}\n`],
    ['a bad flow mapping', `data: {password: ${VALUE}, : }\n  x\n`],
    ['a value after a quoted value', `data:\n  password: "x" ${VALUE}\n`],
    ['a tag made of the value', `data:\n  password: !<${VALUE}> x\n  other: !${VALUE} {}\n`],
    ['a block scalar header with extra characters', `data:\n  password: |${VALUE}\n    x\n`],
    ['a stray token in a flow collection', `data: [${VALUE} ]] }\n`],
    ['an error token holding the value', `data:\n  password: x\n - ${VALUE}\n`],
    ['a sequence on the line of a key', `data:\n  password: - ${VALUE}\n`],
  ];
  for (const [name, data] of failing) {
    it(`fails cleanly on ${name}`, async () => {
      const dir = app({ 's.yaml': secret(data), 'd.yaml': uses });
      for (const command of ['generate', 'explain']) {
        const result = await runCli([command], { cwd: dir });
        assert.notEqual(result.code, 0, `${command} should fail on ${name}`);
        assert.equal(result.stdout, '');
        assertClean(result, `${command}: ${name}`);
      }
    });
  }
});

describe('not errors: values Go reads as strings', () => {
  it('accepts `.`, `e5` and `E10` as the strings Argo CD applies, and hashes them', async () => {
    const dir = app({
      'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  BASE_DIR: .\n  EXP: E10\n',
      'd.yaml': DEPLOYMENT(),
      'e5.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e5\ndata: {a: e1}\n',
    });
    const result = await runCli(['generate'], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /driftless\.dev\/config-hash: "v1:[0-9a-f]{64}"/);
  });
});
