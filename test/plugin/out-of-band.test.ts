/**
 * The plugin reading the app's out-of-band file (ADR 0013) through the real
 * CLI, with the real pinned kustomize and helm: listed digests folded into
 * the hashes (golden files), the file never emitted nor read as a manifest,
 * a render without the file unchanged, and a bad file refused with exit 4.
 */
import assert from 'node:assert/strict';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { HASH_ANNOTATION, OUT_OF_BAND_FILE } from '../../core/index.ts';
import type { ExplainReport } from '../../plugin/commands/explain.ts';
import { ensureTools } from '../tools.ts';
import { REPO, assertGolden, assertOk, runCli } from './cli.ts';
import { parseYaml11 } from './diff.ts';

const FIXTURES = join(REPO, 'test', 'fixtures', 'out-of-band');
const DEMO = { ARGOCD_APP_NAMESPACE: 'demo' };
const SOURCES = ['directory', 'kustomize', 'helm'] as const;

let binDir = '';
let scratch = '';
before(async () => {
  binDir = (await ensureTools()).binDir;
  scratch = await mkdtemp(join(tmpdir(), 'driftless-out-of-band-'));
});
after(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A copy of a fixture app without its out-of-band file, to compare against. */
async function withoutFile(source: string): Promise<string> {
  const dir = join(scratch, `${source}-without`);
  await cp(join(FIXTURES, source), dir, { recursive: true });
  await rm(join(dir, '.driftless'), { recursive: true });
  return dir;
}

/** `kind/namespace/name` → the stamped hash, for every stamped workload of a render. */
function hashes(stdout: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const o of parseYaml11(stdout) as Record<string, any>[]) {
    const value = o['spec']?.template?.metadata?.annotations?.[HASH_ANNOTATION];
    if (typeof value === 'string') out.set(`${o['kind']}/${o['metadata']?.namespace ?? ''}/${o['metadata']?.name}`, value);
  }
  return out;
}

/** The render's objects with the hash annotation (and a map left empty by it) removed: what the file must leave alone. */
function withoutHashes(stdout: string): unknown[] {
  return (parseYaml11(stdout) as Record<string, any>[]).map((o) => {
    const metadata = o['spec']?.template?.metadata;
    if (metadata?.annotations !== undefined) {
      delete metadata.annotations[HASH_ANNOTATION];
      if (Object.keys(metadata.annotations).length === 0) delete metadata.annotations;
    }
    return o;
  });
}

for (const source of SOURCES) {
  describe(`out-of-band file in a ${source} app`, () => {
    const cwd = join(FIXTURES, source);

    it('generate folds the listed digests (golden)', async () => {
      const result = await runCli(['generate'], { cwd, binDir, env: DEMO });
      assertOk(result);
      assertGolden(`generate/out-of-band-${source}.yaml`, result.stdout);
      assert.doesNotMatch(result.stdout, /^(version: 1|configs:|- kind: Secret|\s+digest: )/m, 'the file is never emitted as a manifest');
    });

    it('explain shows each folded config with its origin (golden)', async () => {
      const result = await runCli(['explain'], { cwd, binDir, env: DEMO });
      assertOk(result);
      assertGolden(`explain/out-of-band-${source}.txt`, result.stdout);
      assert.match(result.stdout, new RegExp(`^ {2}out-of-band: Secret \\S+ v1:[0-9a-f]{64} \\(${OUT_OF_BAND_FILE.replace('.', '\\.')}:\\d+\\), folded into the hash$`, 'm'));
    });

    it('changes only the hashes of workloads that use a listed config outside the render', async () => {
      const withFile = await runCli(['generate'], { cwd, binDir, env: DEMO });
      const plain = await runCli(['generate'], { cwd: await withoutFile(source), binDir, env: DEMO });
      assertOk(withFile);
      assertOk(plain);
      assert.deepEqual(withoutHashes(withFile.stdout), withoutHashes(plain.stdout));
      const changed = [...hashes(withFile.stdout)].filter(([id, hash]) => hashes(plain.stdout).get(id) !== hash).map(([id]) => id);
      assert.ok(changed.length > 0, 'at least one workload rolls when the file is committed');
    });
  });
}

describe('out-of-band file: what is and is not folded', () => {
  const cwd = join(FIXTURES, 'directory');

  it('reports, in JSON, the digest and line for exactly the listed configs outside the render', async () => {
    const result = await runCli(['explain', '--output', 'json'], { cwd, env: DEMO });
    assertOk(result);
    const report = JSON.parse(result.stdout) as ExplainReport;
    const folded = report.workloads.flatMap((w) =>
      w.configs.filter((c) => c.outOfBand !== undefined).map((c) => `${w.kind}/${w.namespace}/${w.name} ${c.kind}/${c.name} line ${c.outOfBand?.line}`),
    );
    assert.deepEqual(folded, [
      'Deployment/demo/web Secret/api-token line 11',
      'Deployment/demo/web Secret/db-credentials line 15',
      'StatefulSet/demo/db Secret/db-credentials line 15',
    ]);
    const db = report.workloads.find((w) => w.kind === 'StatefulSet');
    assert.match(db?.hash ?? '', /^v1:[0-9a-f]{64}$/, 'a workload whose only config is listed gets a hash');
    const other = report.workloads.find((w) => w.namespace === 'other');
    assert.equal(other?.hash, null, 'the same name in another namespace is another Secret');
  });

  it('with directory-recurse=true the file is still not read as a manifest', async () => {
    const recurse = { ...DEMO, ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'recurse', string: 'true' }]) };
    const plain = await runCli(['generate'], { cwd, env: DEMO });
    const walked = await runCli(['generate'], { cwd, env: recurse });
    assertOk(walked);
    assert.equal(walked.stdout, plain.stdout);
  });

  it('a keyed render folds the same listed digest into an HMAC hash', async () => {
    const keyFile = join(scratch, 'key');
    await writeFile(keyFile, 'driftless-test-key\n');
    const keyed = await runCli(['generate'], { cwd, env: { ...DEMO, DRIFTLESS_HASH_KEY_FILE: keyFile } });
    const plain = await runCli(['generate'], { cwd, env: DEMO });
    assertOk(keyed);
    assert.notEqual(hashes(keyed.stdout).get('StatefulSet/demo/db'), hashes(plain.stdout).get('StatefulSet/demo/db'));
    assert.doesNotMatch(keyed.stdout + keyed.stderr, /driftless-test-key/);
  });
});

describe('a bad out-of-band file', () => {
  const cases: { name: string; text: string; message: RegExp }[] = [
    { name: 'a bad digest', text: `version: 1\nconfigs:\n- kind: Secret\n  namespace: demo\n  name: db\n  digest: v1:hunter2\n`, message: /^driftless: \.driftless\/out-of-band: line 6: configs\[0\]\.digest must be "v1:" followed by 64 lowercase hex digits$/m },
    { name: 'an unknown version', text: 'version: 2\nconfigs: []\n', message: /^driftless: \.driftless\/out-of-band: line 1: version must be 1/m },
    { name: 'broken YAML', text: 'version: 1\nconfigs: [\n', message: /^driftless: \.driftless\/out-of-band: line 3: not valid YAML/m },
    { name: 'invalid UTF-8', text: 'version: 1\nconfigs: []\n# \xff\n', message: /^driftless: \.driftless\/out-of-band: is not valid UTF-8$/m },
  ];
  for (const c of cases) {
    it(`${c.name}: exit 4 naming the file and line, nothing on stdout`, async () => {
      const dir = join(scratch, `bad-${c.name.replaceAll(' ', '-')}`);
      await cp(join(FIXTURES, 'directory'), dir, { recursive: true });
      await writeFile(join(dir, OUT_OF_BAND_FILE), c.name === 'invalid UTF-8' ? Buffer.from(c.text, 'latin1') : c.text);
      for (const command of ['generate', 'explain']) {
        const result = await runCli([command], { cwd: dir, env: DEMO });
        assert.equal(result.code, 4, `${command}: ${result.stderr}`);
        assert.equal(result.stdout, '');
        assert.match(result.stderr, c.message);
        assert.doesNotMatch(result.stderr, /hunter2/);
      }
    });
  }
});
