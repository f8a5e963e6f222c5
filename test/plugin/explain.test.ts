/**
 * `driftless explain` through the real CLI: the same inputs as generate, a
 * readable table, a stable JSON document, and hashes equal to what generate
 * stamps.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { HASH_ANNOTATION } from '../../core/index.ts';
import type { ExplainReport } from '../../plugin/commands/explain.ts';
import { FIXTURES, REPO, assertGolden, assertOk, runCli } from './cli.ts';
import { parseYaml11 } from './diff.ts';

const WORKLOADS = join(FIXTURES, 'workloads');
const ANNOTATED = join(FIXTURES, 'annotated');
const annotated = { ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'mode', string: 'annotated' }]) };

async function report(cwd: string, env: Record<string, string> = {}, args: string[] = []): Promise<ExplainReport> {
  const result = await runCli(['explain', '--output', 'json', ...args], { cwd, env });
  assertOk(result);
  return JSON.parse(result.stdout) as ExplainReport;
}

describe('explain', () => {
  it('prints an aligned table per workload (golden)', async () => {
    const result = await runCli(['explain'], { cwd: WORKLOADS });
    assertOk(result);
    assertGolden('explain/workloads.txt', result.stdout);
    assert.match(result.stdout, /^Deployment demo\/web {2}\(10-deployment\.yaml#0\)$/m);
    assert.match(result.stdout, /^ {2}KIND +NAME +IN RENDER +SELECTED +RULE +REFERENCE +FIELD +CONTAINERS +OPTIONAL +PROVIDERS +REASON$/m);
  });

  it('prints stable JSON (golden), the same bytes on every run', async () => {
    const first = await runCli(['explain', '--output', 'json'], { cwd: ANNOTATED, env: annotated });
    const second = await runCli(['explain', '--output', 'json'], { cwd: ANNOTATED, env: annotated });
    assertOk(first);
    assert.equal(second.stdout, first.stdout);
    assertGolden('explain/annotated.json', first.stdout);
    const table = await runCli(['explain'], { cwd: ANNOTATED, env: annotated });
    assertGolden('explain/annotated.txt', table.stdout);
  });

  it('reports each reference with its containers, field, path and optional flag', async () => {
    const r = await report(WORKLOADS);
    const web = r.workloads.find((w) => w.kind === 'Deployment' && w.name === 'web');
    assert.ok(web);
    assert.equal(web.namespace, 'demo');
    assert.equal(web.source, '10-deployment.yaml#0');
    assert.equal(web.template, 'spec.template');
    const secret = web.configs.find((c) => c.kind === 'Secret' && c.name === 'app-secret');
    assert.deepEqual(secret?.references, [{ path: 'volumes[creds]', field: 'volume.secret', containers: ['web'], optional: true }]);
    assert.equal(secret?.inRender, true);
    assert.equal(secret?.selected, true);
    assert.equal(secret?.rule, 'auto-all');
    const cron = r.workloads.find((w) => w.kind === 'CronJob');
    assert.equal(cron?.template, 'spec.jobTemplate.spec.template');
  });

  it('says why a workload has no hash', async () => {
    const r = await report(WORKLOADS, {}, ['--include-rollouts=false']);
    const reason = (kind: string, name: string): string | null | undefined =>
      r.workloads.find((w) => w.kind === kind && w.name === name)?.noHashReason;
    assert.match(String(reason('Rollout', 'canary')), /include-rollouts/);
    assert.match(String(reason('Deployment', 'out-of-band')), /not in the render/);
    assert.match(String(reason('Deployment', 'plain')), /references no ConfigMap/);
    assert.equal(r.workloads.some((w) => w.kind === 'Job' || w.kind === 'Pod'), false, 'Jobs and Pods are not workloads');
    const missing = r.workloads.find((w) => w.name === 'out-of-band')?.configs[0];
    assert.equal(missing?.inRender, false);
  });

  it('shows which rule selected or skipped each config in mode=annotated, and providers', async () => {
    const r = await report(ANNOTATED, annotated);
    const rules = Object.fromEntries(r.workloads.map((w) => [w.name, w.configs.map((c) => `${c.kind}/${c.name}:${c.rule}:${c.selected}`)]));
    assert.deepEqual(rules['auto'], ['ConfigMap/app-settings:auto:true', 'ConfigMap/noisy:ignore:false', 'Secret/db-credentials:auto:true']);
    assert.deepEqual(rules['named'], ['ConfigMap/app-settings:named:true']);
    assert.deepEqual(rules['excluded'], ['ConfigMap/app-settings:exclude:false']);
    const auto = r.workloads.find((w) => w.name === 'auto');
    assert.deepEqual(auto?.configs.find((c) => c.kind === 'Secret')?.providers, [{ kind: 'SealedSecret', name: 'db-credentials' }]);
    assert.equal(r.mode, 'annotated');
  });

  it('reports the hashes generate stamps', async () => {
    const r = await report(WORKLOADS);
    const generated = await runCli(['generate'], { cwd: WORKLOADS });
    assertOk(generated);
    const stamped = new Map<string, string>();
    for (const doc of parseYaml11(generated.stdout) as Record<string, any>[]) {
      const items = doc['kind'] === 'List' ? doc['items'] : [doc];
      for (const o of items) {
        const template = o.kind === 'CronJob' ? o.spec?.jobTemplate?.spec?.template : o.spec?.template;
        const hash = template?.metadata?.annotations?.[HASH_ANNOTATION];
        if (hash !== undefined) stamped.set(`${o.kind}/${o.metadata.name}`, hash);
      }
    }
    const explained = new Map(r.workloads.filter((w) => w.hash !== null).map((w) => [`${w.kind}/${w.name}`, w.hash]));
    assert.deepEqual(explained, stamped);
  });

  it('explains examples/directory', async () => {
    const result = await runCli(['explain'], { cwd: join(REPO, 'examples', 'directory') });
    assertOk(result);
    assertGolden('explain/examples-directory.txt', result.stdout);
  });
});
