/**
 * Property tests with a seeded generator (no dependency): random documents
 * full of YAML 1.1 traps go through `generate` byte for byte, and stamping a
 * random workload changes nothing but the annotation lines.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { HASH_ANNOTATION } from '../../core/index.ts';
import { generate } from '../../plugin/commands/generate.ts';
import { parseConfig } from '../../plugin/config.ts';
import { annotationOnlyProblems, normalise, parseYaml11 } from './diff.ts';
import { Gen } from './gen.ts';

const CONFIG_MAP = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: "v"';

async function runGenerate(text: string): Promise<string> {
  const config = parseConfig(['generate', '-'], { ARGOCD_APP_NAMESPACE: 'demo' }, process.cwd());
  const result = await generate(config, new AbortController().signal, async () => [{ label: '<stdin>', text }]);
  return result.stdout;
}

/** Joins documents as a stream, each with its own `---`, each ending in a newline. */
const stream = (docs: readonly string[]): string => docs.map((d) => `---\n${d}\n`).join('');

function assertValidYaml(text: string, seed: number): void {
  for (const doc of parseAllDocuments(text, { version: '1.1' })) {
    assert.deepEqual(doc.errors.map((e) => e.message), [], `seed ${seed}: the generator produced invalid YAML:\n${text}`);
  }
}

describe('property: documents the plugin does not change pass through byte for byte', () => {
  it('300 random streams of non-workload documents', async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const gen = new Gen(seed);
      const docs = Array.from({ length: 1 + gen.int(4) }, (_, i) => gen.nonWorkload(i));
      const input = stream(docs);
      assertValidYaml(input, seed);
      const output = await runGenerate(input);
      assert.equal(output, input, `seed ${seed}`);
    }
  });
});

describe('property: stamping a random workload changes only the annotation lines', () => {
  it('200 random workloads among random documents', async () => {
    for (let seed = 1001; seed <= 1200; seed++) {
      const gen = new Gen(seed);
      const docs = [CONFIG_MAP, gen.nonWorkload(0), gen.workload(1), gen.nonWorkload(2), gen.workload(3)];
      const input = stream(docs);
      assertValidYaml(input, seed);
      const output = await runGenerate(input);
      assert.deepEqual(annotationOnlyProblems(input, output), [], `seed ${seed}:\n${output}`);
      const before = parseYaml11(input);
      const after = parseYaml11(output) as Record<string, any>[];
      assert.deepEqual(after.map(normalise), before.map(normalise), `seed ${seed}: meaning changed`);
      for (const index of [2, 4]) {
        assert.match(after[index]?.['spec']['template']['metadata']['annotations'][HASH_ANNOTATION], /^v1:[0-9a-f]{64}$/, `seed ${seed}`);
      }
      // Everything else is the input's own text.
      for (const index of [0, 1, 3]) assert.ok(output.includes(`---\n${docs[index]}\n`), `seed ${seed}: document ${index} changed`);
    }
  });
});
