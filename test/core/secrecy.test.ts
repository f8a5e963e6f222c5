import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManifestError, planWorkloads, secretEntry, toManifest } from '../../core/index.ts';
import { deployment, envFromPod } from './helpers.ts';

const PLAIN = 'plaintext-Secret-Value';
const ENCODED = Buffer.from(PLAIN).toString('base64');

/** Every rendering of an error a shell might print or log. */
function everyText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  while (current instanceof Error) {
    parts.push(current.message, current.stack ?? '', String(current), JSON.stringify(current));
    current = current.cause;
  }
  return parts.join('\n');
}

/** The secret-looking fragments that must never leak: the value itself, its base64, its decoded bytes. */
function fragments(value: unknown): string[] {
  const out = [PLAIN, ENCODED];
  if (typeof value === 'string' && value.length >= 6) out.push(value);
  if (typeof value === 'number') out.push(String(value));
  if (typeof value === 'object' && value !== null) out.push(JSON.stringify(value));
  return out;
}

describe('a Secret value never appears in a ManifestError', () => {
  const badValues: [string, unknown][] = [
    ['a non-base64 string with the secret in it', `${PLAIN}!`],
    ['a base64 string with a space', `${ENCODED.slice(0, 8)} ${ENCODED.slice(8)}`],
    ['base64 missing its padding', ENCODED.replace(/=+$/, '').slice(0, -1)],
    ['a URL-safe base64 string', '8J-Ri-secretZZ'],
    ['a number', 123456789],
    ['a boolean', true],
    ['an object', { nested: PLAIN }],
    ['a list', [PLAIN]],
    ['null', null],
  ];
  for (const field of ['data', 'stringData'] as const) {
    for (const [name, value] of badValues) {
      if (field === 'stringData' && typeof value === 'string') continue; // any string is valid stringData
      it(`${field} holding ${name}`, () => {
        const secret = toManifest({
          apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' },
          data: { good: ENCODED, ...(field === 'data' ? { bad: value } : {}) },
          stringData: { also: PLAIN, ...(field === 'stringData' ? { bad: value } : {}) },
        }, { defaultNamespace: 'prod', origin: { file: 'secrets.yaml', document: 0 } });
        let thrown: unknown;
        try {
          planWorkloads([deployment('web', envFromPod({ secrets: ['db'] })), secret], { mode: 'all', includeRollouts: true });
        } catch (error) {
          thrown = error;
        }
        assert.ok(thrown instanceof ManifestError, 'expected a ManifestError');
        assert.equal(thrown.field, `${field}.bad`);
        assert.match(thrown.message, /^secrets\.yaml#0 Secret prod\/db: /);
        const text = everyText(thrown);
        for (const fragment of fragments(value)) {
          assert.ok(!text.includes(fragment), `the error text contains ${JSON.stringify(fragment)}: ${thrown.message}`);
        }
      });
    }
  }

  it('a valid Secret entry carries only base64, which never reaches an error', () => {
    const entry = secretEntry(toManifest({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, stringData: { p: PLAIN } }, { defaultNamespace: 'prod' }));
    assert.ok(!JSON.stringify(entry).includes(PLAIN));
  });
});
