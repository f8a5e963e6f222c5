import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HASH_ANNOTATION, type HashKey } from '../../core/index.ts';
import {
  TRACKING_ID_ANNOTATION,
  readTracking,
  reduceConfig,
  reducePod,
  reduceProviderPodStatus,
  reduceReplicaSet,
  reduceWorkload,
  type ConfigReduceContext,
} from '../../controller/cache/reduce.ts';
import { ANNOTATION_TRACKING, podSpec } from './support/summaries.ts';

const SECRET_VALUE = 'hunter2-do-not-leak-7f3a';
const KEY: HashKey = { bytes: new Uint8Array(32).fill(7) };
const OTHER_KEY: HashKey = { bytes: new Uint8Array(32).fill(9) };

function context(overrides: Partial<ConfigReduceContext> = {}): ConfigReduceContext {
  return { key: KEY, tracking: ANNOTATION_TRACKING, now: 1_000, ...overrides };
}

function rawSecret(data: Record<string, string>, metadata: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    metadata: { name: 'db', namespace: 'prod', uid: 'uid-db', resourceVersion: '5', ...metadata },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

// ---- configs ----------------------------------------------------------------

test('reduceConfig drops the payload: the summary holds neither a value nor its base64', () => {
  const summary = reduceConfig('Secret', rawSecret({ password: SECRET_VALUE }, { annotations: { 'reloader.stakater.com/match': 'true', 'kubectl.kubernetes.io/last-applied-configuration': SECRET_VALUE } }), undefined, context());
  const text = JSON.stringify(summary);
  assert.ok(!text.includes(SECRET_VALUE));
  assert.ok(!text.includes(Buffer.from(SECRET_VALUE).toString('base64')));
  assert.deepEqual(summary.annotations, { 'reloader.stakater.com/match': 'true' }, 'only the policy annotations are kept');
  assert.equal(summary.kind, 'Secret');
  assert.equal(summary.namespace, 'prod');
  assert.equal(summary.name, 'db');
  assert.equal(summary.resourceVersion, '5');
  assert.match(summary.digest, /^v1:/);
  assert.ok(Object.isFrozen(summary));

  const configMap = reduceConfig('ConfigMap', { metadata: { name: 'app', namespace: 'prod' }, data: { 'app.yaml': SECRET_VALUE } }, undefined, context());
  assert.ok(!JSON.stringify(configMap).includes(SECRET_VALUE));
});

test('reduceConfig: equal content gives equal digests, different content or key different ones', () => {
  const digest = (data: Record<string, string>, key: HashKey | undefined, metadata: Record<string, unknown> = {}): string =>
    reduceConfig('Secret', rawSecret(data, metadata), undefined, context({ key })).digest;
  assert.equal(digest({ password: 'a' }, KEY), digest({ password: 'a' }, KEY, { resourceVersion: '6', annotations: { x: 'y' } }));
  assert.notEqual(digest({ password: 'a' }, KEY), digest({ password: 'b' }, KEY));
  assert.notEqual(digest({ password: 'a' }, KEY), digest({ passwd: 'a' }, KEY));
  assert.notEqual(digest({ password: 'a' }, KEY), digest({ password: 'a' }, OTHER_KEY));
  assert.notEqual(digest({ password: 'a' }, KEY), digest({ password: 'a' }, undefined));
  assert.equal(digest({ password: 'a' }, OTHER_KEY), digest({ password: 'a' }, OTHER_KEY));
});

/** The largest payload the API server accepts in one Secret or ConfigMap (core validation's MaxSecretSize). */
const MAX_DATA_BYTES = 1024 * 1024;

/** A list item as the reflector gets it: parsed from the API server's JSON, nothing shared with another. */
function parsedConfig(index: number, data: Record<string, string>): unknown {
  return JSON.parse(JSON.stringify({ metadata: { name: `c${index}`, namespace: 'prod', uid: `u${index}`, resourceVersion: String(index) }, data }));
}

function bigSecretData(index: number): Record<string, string> {
  return { blob: Buffer.alloc(MAX_DATA_BYTES - 4, 65 + (index % 26)).toString('base64') };
}

function manyKeysData(index: number): Record<string, string> {
  const data: Record<string, string> = {};
  for (let key = 0; key < 5000; key++) data[`key-${String(key).padStart(4, '0')}`] = `value-${index}-${key}`.padEnd(100, '.');
  return data;
}

test('reduceConfig keeps no more of a 1 MiB Secret or a ConfigMap of 5,000 keys than of a small one', () => {
  const small = reduceConfig('Secret', parsedConfig(0, { password: Buffer.from('a').toString('base64') }), undefined, context());
  const big = reduceConfig('Secret', parsedConfig(0, bigSecretData(0)), undefined, context());
  const many = reduceConfig('ConfigMap', parsedConfig(0, manyKeysData(0)), undefined, context());
  // Same fields, same sizes: a digest of 67 characters stands for the payload, whatever its size.
  assert.equal(JSON.stringify(big).length, JSON.stringify(small).length);
  assert.ok(JSON.stringify(many).length < 256, `a ConfigMap summary of ${JSON.stringify(many).length} characters`);
  assert.match(big.digest, /^v1:[0-9a-f]{64}$/);
  assert.notEqual(reduceConfig('Secret', parsedConfig(0, bigSecretData(1)), undefined, context()).digest, big.digest);
});

test('reduceConfig summaries of 1 MiB Secrets hold no reference into the raw object', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // Measured on Node 24: about 2.5 KB a summary for a 1 MiB Secret, a 5,000-key ConfigMap and an
  // 8-byte Secret alike. A summary that kept a value (or a slice of its string) would keep its 1.4 MB.
  const count = 16;
  for (let index = 0; index < 2; index++) reduceConfig('Secret', parsedConfig(100 + index, bigSecretData(index)), undefined, context());
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept = [];
  for (let index = 0; index < count; index++) kept.push(reduceConfig('Secret', parsedConfig(index, bigSecretData(index)), undefined, context()));
  for (let index = 0; index < count; index++) kept.push(reduceConfig('ConfigMap', parsedConfig(index, manyKeysData(index)), undefined, context()));
  gc();
  const perSummary = (process.memoryUsage().heapUsed - before) / kept.length;
  assert.ok(perSummary < 64 * 1024, `${Math.round(perSummary)} bytes retained per summary`);
});

test('reduceConfig keeps seenAt across metadata-only updates and restamps it on a content change', () => {
  const first = reduceConfig('Secret', rawSecret({ password: 'a' }), undefined, context({ now: 1_000 }));
  assert.equal(first.seenAt, 1_000);
  const relabelled = reduceConfig('Secret', rawSecret({ password: 'a' }, { resourceVersion: '6', labels: { team: 'x' } }), first, context({ now: 2_000 }));
  assert.equal(relabelled.seenAt, 1_000);
  const changed = reduceConfig('Secret', rawSecret({ password: 'b' }, { resourceVersion: '7' }), relabelled, context({ now: 3_000 }));
  assert.equal(changed.seenAt, 3_000);
});

test('reduceConfig names the producer from owner references and the cert-manager annotation', () => {
  const owned = (apiVersion: string, kind: string) => reduceConfig('Secret', rawSecret({ a: 'b' }, { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'unrelated', uid: 'u0' }, { apiVersion, kind, name: 'db-source', uid: 'u1', controller: true }] }), undefined, context()).producer;
  assert.deepEqual(owned('external-secrets.io/v1', 'ExternalSecret'), { kind: 'ExternalSecret', name: 'db-source' });
  assert.deepEqual(owned('bitnami.com/v1alpha1', 'SealedSecret'), { kind: 'SealedSecret', name: 'db-source' });
  assert.equal(owned('example.com/v1', 'SealedSecret'), undefined, 'the group must match, not only the kind');
  const issued = reduceConfig('Secret', rawSecret({ a: 'b' }, { annotations: { 'cert-manager.io/certificate-name': 'web-tls' } }), undefined, context());
  assert.deepEqual(issued.producer, { kind: 'Certificate', name: 'web-tls' });
  assert.equal(reduceConfig('Secret', rawSecret({ a: 'b' }), undefined, context()).producer, undefined);
});

// ---- tracking -----------------------------------------------------------------

const secretType = { apiVersion: 'v1', kind: 'Secret' };

function tracked(annotation: string | undefined, label: string | undefined): Record<string, unknown> {
  return {
    metadata: {
      name: 'db',
      namespace: 'prod',
      annotations: annotation === undefined ? {} : { [TRACKING_ID_ANNOTATION]: annotation },
      labels: label === undefined ? {} : { 'app.kubernetes.io/instance': label },
    },
  };
}

test('readTracking, annotation method: a tracking id naming the object itself, or another object', () => {
  assert.deepEqual(readTracking(tracked('shop:/Secret:prod/db', undefined), secretType, ANNOTATION_TRACKING), { app: 'shop', namesItself: true });
  assert.deepEqual(readTracking(tracked('argocd_shop:/Secret:prod/db', undefined), secretType, ANNOTATION_TRACKING), { app: 'argocd_shop', namesItself: true });
  // An operator copied its ExternalSecret's metadata onto the Secret it wrote.
  assert.deepEqual(readTracking(tracked('shop:external-secrets.io/ExternalSecret:prod/db', undefined), secretType, ANNOTATION_TRACKING), { app: 'shop', namesItself: false });
  assert.deepEqual(readTracking(tracked('shop:/Secret:prod/other', undefined), secretType, ANNOTATION_TRACKING), { app: 'shop', namesItself: false });
  assert.deepEqual(readTracking(tracked('shop:/Secret:staging/db', undefined), secretType, ANNOTATION_TRACKING), { app: 'shop', namesItself: false });
  assert.equal(readTracking(tracked(undefined, 'shop'), secretType, ANNOTATION_TRACKING), undefined, 'the annotation method ignores the label');
  assert.equal(readTracking(tracked('garbage', undefined), secretType, ANNOTATION_TRACKING), undefined);
});

test('readTracking, label and annotation+label methods', () => {
  const label = { method: 'label', label: 'app.kubernetes.io/instance' } as const;
  const both = { method: 'annotation+label', label: 'app.kubernetes.io/instance' } as const;
  assert.deepEqual(readTracking(tracked(undefined, 'shop'), secretType, label), { app: 'shop', namesItself: true });
  assert.equal(readTracking(tracked('shop:/Secret:prod/db', undefined), secretType, label), undefined, 'the label method ignores the annotation');
  assert.deepEqual(readTracking(tracked('shop:/Secret:prod/other', 'shop'), secretType, both), { app: 'shop', namesItself: false }, 'the annotation decides when present');
  assert.deepEqual(readTracking(tracked(undefined, 'billing'), secretType, both), { app: 'billing', namesItself: true });
  assert.equal(readTracking(tracked(undefined, undefined), secretType, both), undefined);
});

// ---- workloads ------------------------------------------------------------------

test('reduceWorkload: a Deployment keeps references, stamp, strategy, status and replicas, not the pod spec', () => {
  const raw = {
    metadata: {
      name: 'web', namespace: 'prod', uid: 'u-web', resourceVersion: '9', generation: 4,
      annotations: { 'driftless.dev/restart-strategy': 'rollout', 'reloader.stakater.com/auto': 'true', [TRACKING_ID_ANNOTATION]: 'shop:apps/Deployment:prod/web' },
    },
    spec: {
      replicas: 3,
      minReadySeconds: 5,
      paused: true,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%' } },
      template: { metadata: { annotations: { [HASH_ANNOTATION]: 'v1:x', 'driftless.dev/restarted-at': '2026-01-01T00:00:00Z' } }, spec: podSpec({ secrets: ['db'], configMaps: ['app'] }) },
    },
    status: { observedGeneration: 4, replicas: 3, updatedReplicas: 2, readyReplicas: 3, availableReplicas: 3 },
  };
  const w = reduceWorkload({ apiVersion: 'apps/v1', kind: 'Deployment' }, raw, ANNOTATION_TRACKING);
  assert.deepEqual(w.references.map((r) => `${r.kind}/${r.name}`).sort(), ['ConfigMap/app', 'Secret/db']);
  assert.equal(w.stamped, true);
  assert.deepEqual(w.tracking, { app: 'shop', namesItself: true });
  assert.deepEqual(w.annotations, { 'driftless.dev/restart-strategy': 'rollout' }, 'only its own and the Reloader strategy annotations');
  assert.equal(w.templateRestartedAt, '2026-01-01T00:00:00Z');
  assert.equal(w.replicas, 3);
  assert.equal(w.minReadySeconds, 5);
  assert.equal(w.paused, true);
  assert.equal(w.generation, 4);
  assert.deepEqual(w.strategy, { type: 'RollingUpdate', maxUnavailable: '25%', partition: undefined });
  assert.equal(w.status.updatedReplicas, 2);
  assert.equal(w.status.observedGeneration, 4);
  assert.equal(w.usesVolumeClaims, false);
  assert.equal(w.workloadRef, undefined);
  assert.ok(!JSON.stringify(w).includes('app:1'), 'the container image (pod spec) is dropped');
  // The policy still sees the annotation, through the policy manifest.
  assert.equal((w.policyManifest.object['metadata'] as { annotations: Record<string, string> }).annotations['reloader.stakater.com/auto'], 'true');
});

test('reduceWorkload: a Deployment without replicas or strategy gets the defaults, and is unstamped', () => {
  const w = reduceWorkload({ apiVersion: 'apps/v1', kind: 'Deployment' }, { metadata: { name: 'web', namespace: 'prod' }, spec: { template: { spec: podSpec({}) } } }, ANNOTATION_TRACKING);
  assert.equal(w.replicas, 1);
  assert.equal(w.stamped, false);
  assert.equal(w.strategy.type, 'RollingUpdate');
  assert.equal(w.tracking, undefined);
});

test('reduceWorkload: a StatefulSet reads updateStrategy, partition, claims and revisions', () => {
  const raw = {
    metadata: { name: 'db', namespace: 'prod', uid: 'u-db' },
    spec: {
      replicas: 3,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 1, maxUnavailable: 2 } },
      volumeClaimTemplates: [{ metadata: { name: 'data' } }],
      template: { spec: podSpec({ secrets: ['db-password'] }) },
    },
    status: { currentRevision: 'db-1', updateRevision: 'db-2', replicas: 3 },
  };
  const w = reduceWorkload({ apiVersion: 'apps/v1', kind: 'StatefulSet' }, raw, ANNOTATION_TRACKING);
  assert.deepEqual(w.strategy, { type: 'RollingUpdate', maxUnavailable: 2, partition: 1 });
  assert.equal(w.usesVolumeClaims, true);
  assert.equal(w.status.currentRevision, 'db-1');
  assert.equal(w.status.updateRevision, 'db-2');
  assert.deepEqual(w.references.map((r) => r.name), ['db-password']);
});

test('reduceWorkload: a CronJob reads the job template, has no replicas', () => {
  const raw = {
    metadata: { name: 'nightly', namespace: 'prod' },
    spec: { schedule: '0 0 * * *', jobTemplate: { spec: { template: { metadata: { annotations: { [HASH_ANNOTATION]: 'v1:x' } }, spec: podSpec({ configMaps: ['jobs'] }) } } } },
  };
  const w = reduceWorkload({ apiVersion: 'batch/v1', kind: 'CronJob' }, raw, ANNOTATION_TRACKING);
  assert.deepEqual(w.references.map((r) => `${r.kind}/${r.name}`), ['ConfigMap/jobs']);
  assert.equal(w.stamped, true);
  assert.equal(w.replicas, undefined);
});

test('reduceWorkload: a Rollout with a workloadRef borrows the template; strategy and restartAt are read', () => {
  const raw = {
    metadata: { name: 'web', namespace: 'prod', annotations: { 'reloader.stakater.com/rollout-strategy': 'restart' } },
    spec: {
      replicas: 4,
      restartAt: '2026-01-01T00:00:00Z',
      workloadRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-template' },
      strategy: { blueGreen: { activeService: 'web', maxUnavailable: 1 } },
    },
    status: { restartedAt: '2026-01-01T00:00:01Z' },
  };
  const w = reduceWorkload({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout' }, raw, ANNOTATION_TRACKING);
  assert.deepEqual(w.workloadRef, { kind: 'Deployment', name: 'web-template' });
  assert.deepEqual(w.references, []);
  assert.equal(w.stamped, false);
  assert.deepEqual(w.strategy, { type: 'blueGreen', maxUnavailable: 1, partition: undefined });
  assert.equal(w.restartAt, '2026-01-01T00:00:00Z');
  assert.equal(w.status.restartedAt, '2026-01-01T00:00:01Z');
  assert.equal(w.replicas, 4);
  assert.deepEqual(w.annotations, { 'reloader.stakater.com/rollout-strategy': 'restart' });
  assert.equal(w.apiVersion, 'argoproj.io/v1alpha1');
});

// ---- pods, ReplicaSets, provider statuses ---------------------------------------

test('reducePod: readiness, owner, creation and deletion', () => {
  const pod = (conditions: unknown[], extra: Record<string, unknown> = {}) => reducePod({
    metadata: {
      name: 'web-1', namespace: 'prod', uid: 'p1', creationTimestamp: '2026-01-01T00:00:00Z',
      ownerReferences: [{ kind: 'Node', name: 'n', uid: 'x' }, { kind: 'ReplicaSet', name: 'web-abc', uid: 'rs1', controller: true }],
      ...extra,
    },
    spec: { nodeName: 'node-a', containers: [{ name: 'app', env: [{ name: 'X', value: SECRET_VALUE }] }] },
    status: { phase: 'Running', conditions },
  });
  const ready = pod([{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:10Z' }]);
  assert.equal(ready.readySince, Date.parse('2026-01-01T00:00:10Z'));
  assert.equal(ready.createdAt, Date.parse('2026-01-01T00:00:00Z'));
  assert.deepEqual(ready.owner, { kind: 'ReplicaSet', name: 'web-abc', uid: 'rs1' });
  assert.equal(ready.nodeName, 'node-a');
  assert.equal(ready.phase, 'Running');
  assert.equal(ready.deleting, false);
  assert.ok(!JSON.stringify(ready).includes(SECRET_VALUE));
  assert.equal(pod([{ type: 'Ready', status: 'False', lastTransitionTime: '2026-01-01T00:00:10Z' }]).readySince, undefined);
  assert.equal(pod([]).readySince, undefined);
  assert.equal(pod([{ type: 'Ready', status: 'True' }]).readySince, Date.parse('2026-01-01T00:00:00Z'), 'no transition time: since creation');
  assert.equal(pod([], { deletionTimestamp: '2026-01-01T00:01:00Z' }).deleting, true);
});

test('reduceReplicaSet keeps the controlling owner', () => {
  const rs = reduceReplicaSet({ metadata: { name: 'web-abc', namespace: 'prod', uid: 'rs1', resourceVersion: '3', ownerReferences: [{ kind: 'Deployment', name: 'web', uid: 'd1', controller: true }] } });
  assert.deepEqual(rs, { namespace: 'prod', name: 'web-abc', uid: 'rs1', resourceVersion: '3', owner: { kind: 'Deployment', name: 'web', uid: 'd1' } });
});

test('reduceProviderPodStatus: the versions digest ignores object order, and changes with a version', () => {
  const status = (objects: { id: string; version: string }[], name = 'web-1-prod-vault') => reduceProviderPodStatus({
    metadata: { name, namespace: 'prod', resourceVersion: '2' },
    status: { secretProviderClassName: 'vault', podName: 'web-1', objects },
  }, KEY);
  const a = status([{ id: 'secret/db', version: '1' }, { id: 'secret/api', version: '3' }]);
  const b = status([{ id: 'secret/api', version: '3' }, { id: 'secret/db', version: '1' }], 'web-2-prod-vault');
  assert.equal(a.versions, b.versions);
  assert.equal(a.className, 'vault');
  assert.equal(a.podName, 'web-1');
  assert.notEqual(a.versions, status([{ id: 'secret/db', version: '2' }, { id: 'secret/api', version: '3' }]).versions);
  assert.notEqual(a.versions, reduceProviderPodStatus({ metadata: {}, status: { secretProviderClassName: 'vault', objects: [{ id: 'secret/db', version: '1' }, { id: 'secret/api', version: '3' }] } }, OTHER_KEY).versions);
});
