import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { RenderError, exitCodeFor } from '../../plugin/errors.ts';
import { helmSecretValues } from '../../plugin/source/helm.ts';
import { runProcess, tailText } from '../../plugin/source/process.ts';
import { MIN_REDACT_LENGTH, REDACTED, appendToTail, redactionForms, rollingKeepBytes } from '../../plugin/source/redact.ts';
import type { RollingTail } from '../../plugin/source/redact.ts';
import { renderSource } from '../../plugin/source/index.ts';
import { secretGeneratorLiterals } from '../../plugin/source/secret-literals.ts';
import { configFor, fakeTool, fixtureCopy, tempDir, toolEnv } from './source-support.ts';

const never = new AbortController().signal;
const SECRET = 'S3cr3tZebra!Quokka';

/** A chart whose template fails with `.Values.pw` in its message, as is and in base64. */
async function leakyChart(): Promise<string> {
  const app = await tempDir();
  await writeFile(path.join(app, 'Chart.yaml'), 'apiVersion: v2\nname: leaky\nversion: 0.1.0\n');
  await mkdir(path.join(app, 'templates'));
  await writeFile(path.join(app, 'templates', 'secret.yaml'), '{{ fail (printf "password rejected: %v (encoded %s)" .Values.pw (b64enc (toString .Values.pw))) }}\n');
  return app;
}

const base64 = (value: string): string => Buffer.from(value, 'utf8').toString('base64');

/** Every window of `size` characters of `secret`: none may appear in output (the noise around it shares none). */
function fragments(secret: string, size = 4): string[] {
  return Array.from({ length: secret.length - size + 1 }, (_, index) => secret.slice(index, index + size));
}

function assertNoFragment(text: string, secret: string, context: string): void {
  for (const fragment of fragments(secret)) assert.ok(!text.includes(fragment), `${context}: ${JSON.stringify(fragment)} in ${JSON.stringify(text)}`);
}

/** The checks every real-renderer case makes: a render error, the tool's own words kept, no value and no base64. */
function assertRedacted(error: unknown, secrets: readonly string[], kept: RegExp): true {
  assert.ok(error instanceof RenderError, String(error));
  assert.equal(exitCodeFor(error), 3);
  assert.match(error.stderrTail, kept);
  assert.ok(error.stderrTail.includes(REDACTED), error.stderrTail);
  for (const secret of secrets) {
    assert.ok(!error.message.includes(secret), `${secret} in ${error.message}`);
    assert.ok(!error.message.includes(base64(secret).replace(/=+$/, '')), `base64 of ${secret} in ${error.message}`);
  }
  return true;
}

describe('redaction forms', () => {
  it('covers the value, its base64 and its quoted escaping, and ignores values too short to be secrets', () => {
    const forms = redactionForms(['abc', '', 'line "one"\nline two', SECRET, SECRET]).map((form) => form.toString('utf8'));
    assert.equal(MIN_REDACT_LENGTH, 4);
    assert.ok(!forms.includes('abc'));
    assert.deepEqual(forms, ['line "one"\nline two', base64('line "one"\nline two').replace(/=+$/, ''), 'line \\"one\\"\\nline two', SECRET, base64(SECRET).replace(/=+$/, '')]);
  });
});

describe('stderr tail redaction at the cut', () => {
  const forms = redactionForms([SECRET]);

  it('redacts before cutting: no cut position leaves a fragment of the value', () => {
    const stream = Buffer.from(`....\n........${SECRET}.....\n.....${SECRET}\n......`, 'utf8');
    for (let tail = 1; tail <= stream.length + 1; tail++) {
      const text = tailText(stream, false, forms, tail);
      assertNoFragment(text, SECRET, `tail of ${tail} bytes`);
    }
    // Without cutting, both occurrences are replaced and the rest is kept.
    assert.equal(tailText(stream, false, forms, 4096), `....\n........${REDACTED}.....\n.....${REDACTED}\n......`);
  });

  it('never shows a value cut by the rolling trim, whatever the chunking, even across newlines', () => {
    // A value that spans lines: starting the tail at a whole line would not hide its second half.
    const secret = `first-half-S3cr3t\nSECOND-HALF-Quokka`;
    const multi = redactionForms([secret]);
    for (let padding = 0; padding < 25; padding++) {
      const stream = Buffer.from(`${'.'.repeat(padding)}${secret}\n${'.'.repeat(30)}${secret}\n...${secret}.${secret}\n`, 'utf8');
      for (const tail of [5, 20, 40, 60]) {
        const keep = rollingKeepBytes(multi, tail);
        for (const size of [1, 2, 3, 7, 11, 50]) {
          // Chunks of `size` bytes, as a pipe may deliver them; the padding moves where the trims fall.
          let rolling: RollingTail = { bytes: Buffer.alloc(0), truncated: false };
          for (let at = 0; at < stream.length; at += size) rolling = appendToTail(rolling, stream.subarray(at, at + size), keep);
          assert.ok(rolling.truncated || stream.length <= keep * 2);
          assertNoFragment(tailText(rolling.bytes, rolling.truncated, multi, tail), secret, `padding ${padding}, tail ${tail}, chunks of ${size}`);
        }
      }
    }
  });

  it('redacts values a real program prints across many stderr chunks and trims', async () => {
    const dir = await tempDir();
    // ~70 KiB of the values back to back, so the rolling buffer trims inside them many times.
    const secret = `multi-line-S3cr3t\nQuokka-second-line`;
    const command = await fakeTool(dir, 'tool', `i=0; while [ $i -lt 2000 ]; do printf '%s' "$A" >&2; printf '%s' "$B" >&2; i=$((i+1)); done; echo >&2; echo 'Error: could not render' >&2; exit 1`);
    await assert.rejects(
      runProcess({ tool: 'tool', command, args: [], display: 'tool run', cwd: dir, env: { PATH: process.env['PATH'] ?? '', A: SECRET, B: secret }, signal: never, redact: [SECRET, secret] }),
      (error: unknown) => {
        assert.ok(error instanceof RenderError);
        assert.ok(error.stderrTail.endsWith('Error: could not render'), error.stderrTail.slice(-100));
        assert.ok(error.stderrTail.startsWith('…'));
        // Only markers, newlines and the final line are left.
        assert.match(error.stderrTail, /^…(\[redacted\]|\n)*Error: could not render$/);
        assertNoFragment(error.message, SECRET, 'runProcess');
        assertNoFragment(error.message, secret, 'runProcess');
        return true;
      },
    );
  });
});

describe('helm values to redact', () => {
  it('takes set values (lists, escaped commas, several assignments) and inline value leaves, not keys or booleans', () => {
    const config = configFor('/repo/app', [], {
      ARGOCD_APP_PARAMETERS: JSON.stringify([
        { name: 'values', string: 'db:\n  password: Inline-Secret\n  port: 54321\n  enabled: true\nlist: [item-one, 0x1F2E]\nblock: |\n  multi\n  line\n' },
        { name: 'set', map: { 'a.b': 'with,comma', flag: 'true' } },
        { name: 'set-string', array: ['x={Alpha-Secret,Beta-Secret}', 'y=one-value,z=two-value'] },
      ]),
    });
    const values = helmSecretValues(config);
    for (const expected of ['with\\,comma', 'with,comma', '{Alpha-Secret,Beta-Secret}', 'Alpha-Secret', 'Beta-Secret', 'one-value', 'two-value', 'Inline-Secret', '54321', 'item-one', '0x1F2E', String(0x1f2e), 'multi\nline\n']) {
      assert.ok(values.includes(expected), `${expected} missing from ${JSON.stringify(values)}`);
    }
    for (const absent of ['true', 'db', 'password', 'a.b', 'enabled']) assert.ok(!values.includes(absent), absent);
  });
});

describe('secretGenerator literals to redact', () => {
  it('reads the app\'s kustomization and the local ones it includes, inside the repository only', async () => {
    const repo = await tempDir();
    const write = async (dir: string, text: string): Promise<void> => {
      await mkdir(path.join(repo, dir), { recursive: true });
      await writeFile(path.join(repo, dir, 'kustomization.yaml'), text);
    };
    await write('apps/web', 'resources:\n  - ../../base\n  - deployment.yaml\n  - https://example.com/remote\n  - ../../../outside\ncomponents:\n  - ../../components/extra\nsecretGenerator:\n  - name: a\n    literals:\n      - "pw=\\"quoted-one\\""\n      - Malformed-Literal\n');
    await write('base', 'secretGenerator:\n  - name: b\n    literals: [token=base-token]\nresources: [../apps/web]\n');
    await write('components/extra', 'kind: Component\nsecretGenerator:\n  - name: c\n    literals: [key=component-value]\n');
    await mkdir(path.join(repo, 'broken'), { recursive: true });
    await writeFile(path.join(repo, 'broken', 'kustomization.yaml'), 'secretGenerator: [: nope\n');
    const values = await secretGeneratorLiterals(path.join(repo, 'apps/web'), repo);
    assert.deepEqual(values, ['"quoted-one"', 'quoted-one', 'Malformed-Literal', 'base-token', 'component-value']);
    // Nothing to read is no error.
    assert.deepEqual(await secretGeneratorLiterals(path.join(repo, 'broken'), repo), []);
    assert.deepEqual(await secretGeneratorLiterals(path.join(repo, 'nowhere'), repo), []);
  });
});

describe('renderer stderr never carries a Secret value (real helm and kustomize)', () => {
  it('helm: a template that fails with a --set value prints the error without the value', async () => {
    const app = await fixtureCopy('helm-chart');
    await assert.rejects(renderSource(configFor(app, ['--set', `fail=${SECRET}`], await toolEnv()), never), (error: unknown) =>
      assertRedacted(error, [SECRET], /execution error at \(probe\/templates\/probe\.yaml/),
    );
  });

  it('helm: set-string lists, map values with commas and inline values are redacted, also in base64', async () => {
    const app = await leakyChart();
    const cases: [string, unknown[], string[]][] = [
      ['set-string list', [{ name: 'set-string', array: ['pw={Alpha-S3cret,Beta-S3cret}'] }], ['Alpha-S3cret', 'Beta-S3cret']],
      ['set map', [{ name: 'set', map: { pw: 'Comma,S3cret-Value' } }], ['Comma,S3cret-Value']],
      ['inline values', [{ name: 'values', string: `pw: "${SECRET}"\n` }], [SECRET]],
    ];
    for (const [what, parameters, secrets] of cases) {
      await assert.rejects(renderSource(configFor(app, [], await toolEnv({ ARGOCD_APP_PARAMETERS: JSON.stringify(parameters) })), never), (error: unknown) => {
        assert.ok(error instanceof RenderError, what);
        return assertRedacted(error, secrets, /password rejected: /);
      });
    }
    await assert.rejects(
      renderSource(configFor(app, [], await toolEnv({ ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'values', string: `pw: "${SECRET}"\n` }]) })), never),
      (error: unknown) => assertRedacted(error, [SECRET], /password rejected: \[redacted\] \(encoded \[redacted\]=*\)/),
    );
  });

  it('kustomize: a malformed secretGenerator literal in a base is not echoed', async () => {
    const repo = await tempDir();
    await mkdir(path.join(repo, 'base'));
    await mkdir(path.join(repo, 'overlay'));
    await writeFile(path.join(repo, 'base', 'kustomization.yaml'), `secretGenerator:\n  - name: db\n    literals:\n      - user=Admin-Account-Name\n      - ${SECRET}\n`);
    await writeFile(path.join(repo, 'overlay', 'kustomization.yaml'), 'resources:\n  - ../base\n');
    const env = await toolEnv({ ARGOCD_APP_SOURCE_PATH: 'overlay' });
    await assert.rejects(renderSource(configFor(path.join(repo, 'overlay'), [], env), never), (error: unknown) =>
      assertRedacted(error, [SECRET, 'Admin-Account-Name'], /invalid literal source \[redacted\], expected key=value/),
    );
  });
});
