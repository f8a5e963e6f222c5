/**
 * The bundled examples are valid inputs for the real renderers and contain what
 * the README promises (workloads that reference configs, Reloader annotations),
 * so the golden tests over them exercise the interesting paths.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { ensureTools } from './tools.ts';

const run = promisify(execFile);
const examples = join(import.meta.dirname, '..', 'examples');

type Json = Record<string, any>;

function parseStream(text: string): Json[] {
  const documents = parseAllDocuments(text);
  for (const d of documents) assert.deepEqual(d.errors, []);
  return documents.map((d) => d.toJS() as Json).filter((d) => d !== null);
}

function byKindName(documents: Json[]): Map<string, Json> {
  return new Map(documents.map((d) => [`${d['kind']}/${d['metadata']?.name}`, d]));
}

describe('examples/directory', () => {
  it('has a Deployment reading a ConfigMap via envFrom and a Secret via a volume, both present, and a Service', async () => {
    const files = (await readdir(join(examples, 'directory'))).filter((f) => f.endsWith('.yaml')).sort();
    const documents = (await Promise.all(files.map((f) => readFile(join(examples, 'directory', f), 'utf8')))).flatMap(parseStream);
    const objects = byKindName(documents);
    const deployment = objects.get('Deployment/web') as Json;
    assert.ok(deployment);
    const pod = deployment['spec'].template.spec as Json;
    const cm = pod['containers'][0].envFrom[0].configMapRef.name as string;
    const secret = (pod['volumes'] as Json[]).find((v) => v['secret'])?.['secret'].secretName as string;
    assert.ok(objects.has(`ConfigMap/${cm}`));
    assert.ok(objects.has(`Secret/${secret}`));
    assert.ok(objects.has('Service/web'));
  });
});

describe('examples/kustomize', () => {
  it('builds with the pinned kustomize: a StatefulSet on a generated ConfigMap and an annotated Rollout', async () => {
    const { kustomize } = await ensureTools();
    const { stdout } = await run(kustomize, ['build', join(examples, 'kustomize')]);
    const documents = parseStream(stdout);
    const statefulSet = documents.find((d) => d['kind'] === 'StatefulSet') as Json;
    assert.equal(statefulSet['metadata'].namespace, 'shop');
    const ref = statefulSet['spec'].template.spec.containers[0].env[0].valueFrom.configMapKeyRef.name as string;
    assert.match(ref, /^queue-config-[a-z0-9]{10}$/, 'kustomize rewrote the generated name');
    const generated = documents.find((d) => d['kind'] === 'ConfigMap' && d['metadata'].name === ref) as Json;
    assert.equal(generated['data'].RETENTION_HOURS, '72', 'the overlay merged into the base generator');
    const rollout = documents.find((d) => d['kind'] === 'Rollout') as Json;
    assert.equal(rollout['metadata'].annotations['configmap.reloader.stakater.com/reload'], 'worker-settings');
    assert.ok(documents.some((d) => d['kind'] === 'ConfigMap' && d['metadata'].name === 'worker-settings'));
  });
});

describe('examples/helm', () => {
  it('renders with the pinned helm: Deployment, CronJob and the ConfigMap they share, with Reloader annotations', async () => {
    const { helm } = await ensureTools();
    const { stdout } = await run(helm, ['template', 'shop', join(examples, 'helm'), '--namespace', 'shop', '--values', join(examples, 'helm', 'values-production.yaml')], {
      env: { ...process.env, HELM_CACHE_HOME: '/nonexistent/cache', HELM_CONFIG_HOME: '/nonexistent/config', HELM_DATA_HOME: '/nonexistent/data' },
    });
    const objects = byKindName(parseStream(stdout));
    const configMap = objects.get('ConfigMap/shop-shop-api-settings') as Json;
    assert.equal(configMap['data'].LOG_LEVEL, 'warn', 'the extra values file applies');
    assert.equal(configMap['metadata'].annotations['reloader.stakater.com/match'], 'true');
    const deployment = objects.get('Deployment/shop-shop-api') as Json;
    assert.equal(deployment['spec'].replicas, 4);
    assert.equal(deployment['spec'].template.spec.containers[0].envFrom[0].configMapRef.name, 'shop-shop-api-settings');
    const cronJob = objects.get('CronJob/shop-shop-api-report') as Json;
    assert.equal(cronJob['metadata'].annotations['reloader.stakater.com/search'], 'true');
    assert.equal(cronJob['spec'].jobTemplate.spec.template.spec.containers[0].envFrom[0].configMapRef.name, 'shop-shop-api-settings');
  });
});
