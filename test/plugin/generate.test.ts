/**
 * `driftless generate` end to end, as Argo CD runs it: the real CLI in a
 * child process, cwd = the app dir, ARGOCD_APP_* in the environment.
 * Golden files pin the exact bytes; the other tests pin each point of the
 * output contract independently of the goldens.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { HASH_ANNOTATION } from '../../core/index.ts';
import { FIXTURES, REPO, assertGolden, assertOk, runCli } from './cli.ts';
import { ALLOWED_ADDED, ALLOWED_REMOVED, lineDiff, normalise, parseYaml11 } from './diff.ts';

const WORKLOADS = join(FIXTURES, 'workloads');
const ANNOTATED = join(FIXTURES, 'annotated');
const HASH = /^v1:[0-9a-f]{64}$/;

function fixtureInput(dir: string): string {
  return readdirSync(dir)
    .filter((name) => /\.(ya?ml|json)$/.test(name))
    .sort()
    .map((name) => `---\n${readFileSync(join(dir, name), 'utf8')}`)
    .join('');
}

/** Kubernetes objects of a stream, Lists expanded, keyed `kind/namespace/name`. */
function objectsByName(text: string): Map<string, Record<string, any>> {
  const out = new Map<string, Record<string, any>>();
  const add = (o: Record<string, any>): void => {
    if (typeof o['kind'] === 'string' && o['kind'].endsWith('List') && Array.isArray(o['items'])) {
      for (const item of o['items']) add(item);
      return;
    }
    out.set(`${o['kind']}/${o['metadata']?.['namespace'] ?? ''}/${o['metadata']?.['name']}`, o);
  };
  for (const doc of parseYaml11(text)) add(doc as Record<string, any>);
  return out;
}

const annotationOf = (o: Record<string, any> | undefined, path: readonly string[]): unknown => {
  let node: any = o;
  for (const step of [...path, 'metadata', 'annotations']) node = node?.[step];
  return node?.[HASH_ANNOTATION];
};

describe('generate: golden files over the fixtures', () => {
  it('stamps every workload kind (include-rollouts=true, the default)', async () => {
    const result = await runCli(['generate'], { cwd: WORKLOADS });
    assertOk(result);
    assertGolden('generate/workloads.yaml', result.stdout);
  });

  it('leaves Rollouts (and a workloadRef Deployment) alone with include-rollouts=false from ARGOCD_APP_PARAMETERS', async () => {
    const result = await runCli(['generate'], {
      cwd: WORKLOADS,
      env: { ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'include-rollouts', string: 'false' }]) },
    });
    assertOk(result);
    assertGolden('generate/workloads-no-rollouts.yaml', result.stdout);
    const objects = objectsByName(result.stdout);
    assert.equal(annotationOf(objects.get('Rollout/demo/canary') ?? objects.get('Rollout//canary'), ['spec', 'template']), undefined);
    assert.equal(annotationOf(objects.get('Deployment//borrowed-base'), ['spec', 'template']), undefined);
    assert.match(String(annotationOf(objects.get('Deployment//web'), ['spec', 'template'])), HASH);
  });

  it('follows the Reloader annotations in mode=annotated', async () => {
    const result = await runCli(['generate'], {
      cwd: ANNOTATED,
      env: { ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'mode', string: 'annotated' }]) },
    });
    assertOk(result);
    assertGolden('generate/annotated.yaml', result.stdout);
    const objects = objectsByName(result.stdout);
    for (const name of ['auto', 'named', 'search', 'template-annotated']) {
      assert.match(String(annotationOf(objects.get(`Deployment//${name}`), ['spec', 'template'])), HASH, name);
    }
    for (const name of ['excluded', 'not-annotated']) {
      assert.equal(annotationOf(objects.get(`Deployment//${name}`), ['spec', 'template']), undefined, name);
    }
  });

  it('renders examples/directory', async () => {
    const result = await runCli(['generate'], { cwd: join(REPO, 'examples', 'directory') });
    assertOk(result);
    assertGolden('generate/examples-directory.yaml', result.stdout);
  });
});

describe('generate: output contract', () => {
  it('changes a document only by the annotation lines, and drops only empty documents', async () => {
    const input = fixtureInput(WORKLOADS);
    const result = await runCli(['generate'], { cwd: WORKLOADS });
    assertOk(result);
    const { removed, added } = lineDiff(input, result.stdout);
    const droppedEmpty = /^(---|# a comment-only document is dropped)$/;
    for (const line of removed) assert.match(line, new RegExp(`${ALLOWED_REMOVED.source}|${droppedEmpty.source}`), `unexpected removed line: ${line}`);
    for (const line of added) assert.match(line, new RegExp(`${ALLOWED_ADDED.source}|^---$`), `unexpected added line: ${line}`);
    assert.ok(added.some((line) => line.includes(HASH_ANNOTATION)));
  });

  it('means the same to a YAML 1.1 parser as the input, apart from the annotation', async () => {
    const input = fixtureInput(WORKLOADS);
    const result = await runCli(['generate'], { cwd: WORKLOADS });
    assertOk(result);
    const before = parseYaml11(input).map(normalise);
    const after = parseYaml11(result.stdout).map(normalise);
    assert.deepEqual(after, before);
  });

  it('stamps the pod template of each workload kind, and never a Job, a Pod or a workload without configs in the render', async () => {
    const result = await runCli(['generate'], { cwd: WORKLOADS, env: { ARGOCD_APP_NAMESPACE: '' } });
    assertOk(result);
    const objects = objectsByName(result.stdout);
    const template = ['spec', 'template'];
    const stamped: [string, readonly string[]][] = [
      ['Deployment//web', template],
      ['StatefulSet//db', template],
      ['DaemonSet//agent', template],
      ['ReplicaSet//legacy', template],
      ['CronJob//report', ['spec', 'jobTemplate', 'spec', 'template']],
      ['DeploymentConfig//classic', template],
      ['Rollout//canary', template],
      ['Deployment//borrowed-base', template],
      ['Deployment//listed', template],
      ['Deployment//from-json', template],
      ['Deployment/other/other-app', template],
    ];
    for (const [id, path] of stamped) assert.match(String(annotationOf(objects.get(id), path)), HASH, id);
    for (const id of ['Job//migrate', 'Deployment//plain', 'Deployment//out-of-band', 'Deployment/other/other-misses']) {
      assert.equal(annotationOf(objects.get(id), template), undefined, id);
    }
    assert.equal(annotationOf(objects.get('Pod//debug'), []), undefined);
    assert.equal(objects.get('Rollout//borrowed')?.['spec']?.['template'], undefined);
    // The hash of a workload depends only on what it uses: web and report both use app-config + app-secret.
    assert.equal(annotationOf(objects.get('Deployment//web'), template), annotationOf(objects.get('CronJob//report'), ['spec', 'jobTemplate', 'spec', 'template']));
    assert.notEqual(annotationOf(objects.get('Deployment//web'), template), annotationOf(objects.get('ReplicaSet//legacy'), template));
  });

  it('double-quotes the hash, replaces a stale value, and creates the map for null annotations', async () => {
    const result = await runCli(['generate'], { cwd: WORKLOADS });
    assertOk(result);
    assert.match(result.stdout, /^ {8}driftless\.dev\/config-hash: "v1:[0-9a-f]{64}" {3}# replaced, comment kept$/m);
    assert.doesNotMatch(result.stdout, /v1:stale/);
    assert.doesNotMatch(result.stdout, /annotations: null/);
    assert.doesNotMatch(result.stdout, /config-hash: v1:/, 'an unquoted value');
  });

  it('writes manifests only to stdout: starts with ---, ends with a newline, warnings on stderr', async () => {
    const result = await runCli(['generate'], { cwd: WORKLOADS });
    assertOk(result);
    assert.ok(result.stdout.startsWith('---\n'));
    assert.ok(result.stdout.endsWith('\n'));
    for (const doc of parseYaml11(result.stdout)) {
      assert.equal(typeof (doc as Record<string, unknown>)['apiVersion'], 'string');
    }
    assert.match(result.stderr, /^driftless: warning: hashing Secrets without a key .*set hash-key-file/im);
  });

  it('is deterministic: the same input gives the same bytes', async () => {
    const first = await runCli(['generate'], { cwd: WORKLOADS });
    const second = await runCli(['generate'], { cwd: WORKLOADS });
    assertOk(first);
    assert.equal(second.stdout, first.stdout);
    assert.equal(second.stderr, first.stderr);
  });

  it('keeps a JSON document valid JSON meaning the same', async () => {
    const result = await runCli(['generate'], { cwd: WORKLOADS });
    assertOk(result);
    const chunk = result.stdout.split('---\n').find((part) => part.startsWith('{'));
    assert.ok(chunk !== undefined, 'the JSON document is in the output');
    const parsed = JSON.parse(chunk) as Record<string, any>;
    const original = JSON.parse(readFileSync(join(WORKLOADS, '60-json.json'), 'utf8')) as Record<string, any>;
    assert.match(parsed['spec']['template']['metadata']['annotations'][HASH_ANNOTATION], HASH);
    delete parsed['spec']['template']['metadata'];
    assert.deepEqual(parsed, original);
    assert.deepEqual(parseYaml11(`---\n${chunk}`)[0], JSON.parse(chunk), 'YAML 1.1 reads the JSON document as JSON does');
  });

  it('splits a JSON stream on stdin into documents', async () => {
    const deployment = JSON.parse(readFileSync(join(WORKLOADS, '60-json.json'), 'utf8')) as object;
    const config = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config' }, data: { k: 'v' } };
    const stdin = `${JSON.stringify(config)}\n${JSON.stringify(deployment)}\n`;
    const result = await runCli(['generate', '-'], { cwd: tmpdir(), stdin });
    assertOk(result);
    assertGolden('generate/stdin-json-stream.yaml', result.stdout);
    const docs = parseYaml11(result.stdout) as Record<string, any>[];
    assert.equal(docs.length, 2);
    assert.match(docs[1]?.['spec']['template']['metadata']['annotations'][HASH_ANNOTATION], HASH);
  });

  it('uses HMAC with hash-key-file: a different hash and no warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'driftless-key-'));
    const keyFile = join(dir, 'key');
    writeFileSync(keyFile, 'a-test-key-0123456789');
    const plain = await runCli(['generate'], { cwd: WORKLOADS });
    const keyed = await runCli(['generate', '--hash-key-file', keyFile], { cwd: WORKLOADS });
    assertOk(keyed);
    assert.equal(keyed.stderr, '');
    const hashOf = (out: string): unknown => annotationOf(objectsByName(out).get('Deployment//web'), ['spec', 'template']);
    assert.match(String(hashOf(keyed.stdout)), HASH);
    assert.notEqual(hashOf(keyed.stdout), hashOf(plain.stdout));
    const viaEnv = await runCli(['generate'], { cwd: WORKLOADS, env: { DRIFTLESS_HASH_KEY_FILE: keyFile } });
    assert.equal(viaEnv.stdout, keyed.stdout);
  });

  it('emits nothing and succeeds with allow-empty=true on an empty render', async () => {
    const result = await runCli(['generate', '-'], {
      cwd: tmpdir(),
      stdin: '# nothing here\n---\n',
      env: { ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'allow-empty', string: 'true' }]) },
    });
    assertOk(result);
    assert.equal(result.stdout, '');
  });
});
