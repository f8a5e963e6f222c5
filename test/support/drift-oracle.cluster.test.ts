/**
 * The drift oracle against a real API server: it sees nothing right after an
 * Argo CD-style apply, sees an out-of-band change of a field Git renders, and
 * sees nothing for what Driftless writes (its own annotation keys, a Rollout's
 * `spec.restartAt`) or for pods being deleted and evicted. Each workload kind
 * runs under both Argo CD sync modes (client-side apply and ServerSideApply=true).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiClient, KubeObject } from '../cluster/api.ts';
import type { KubectlResult } from '../cluster/kubectl.ts';
import { listPods, podIsReady, useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from './wait.ts';
import {
  applyAsArgoCD,
  applyAsArgoCDServerSide,
  assertNoDrift,
  clientSideDrift,
  driftOf,
  DriftOracleError,
  type KubectlHost,
} from './drift-oracle.ts';

// The Rollouts controller gives the Rollout pods (to delete and evict) and acts on restartAt.
const fixture = useCluster({ rolloutsController: true });

const appLabel = 'app';
const gitTemplateAnnotation = 'driftless.dev/config-hash';
const driftlessManager = 'driftless';

/** A workload kind as these tests drive it. */
interface WorkloadKind {
  readonly kind: 'Deployment' | 'Rollout';
  readonly apiVersion: string;
  /** Collection path in a namespace. */
  collection(namespace: string): string;
  /** Extra spec fields Git renders for this kind. */
  readonly extraSpec: Record<string, unknown>;
  /** Waits until the workload runs its current template on every replica. */
  settled(admin: ApiClient, namespace: string, name: string): Promise<unknown>;
}

const replicas = 2;

const deploymentKind: WorkloadKind = {
  kind: 'Deployment',
  apiVersion: 'apps/v1',
  collection: (namespace) => `/apis/apps/v1/namespaces/${namespace}/deployments`,
  extraSpec: {},
  settled: (admin, namespace, name) => waitForDeploymentRollout(admin, namespace, name),
};

const rolloutKind: WorkloadKind = {
  kind: 'Rollout',
  apiVersion: 'argoproj.io/v1alpha1',
  collection: (namespace) => `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/rollouts`,
  // Written as the Rollouts controller writes it back (see the test of its rewrite below).
  extraSpec: { strategy: { canary: {} } },
  settled: (admin, namespace, name) =>
    waitFor(
      `Rollout ${namespace}/${name} to be Healthy at its current generation`,
      async () => {
        const rollout = await admin.request('GET', `${rolloutKind.collection(namespace)}/${name}`);
        const status = rollout.status ?? {};
        return (
          String(status['observedGeneration']) === String(rollout.metadata?.generation) &&
          status['phase'] === 'Healthy' &&
          status['updatedReplicas'] === replicas &&
          status['availableReplicas'] === replicas &&
          status['replicas'] === replicas
        );
      },
      { timeoutMs: 90_000 },
    ),
};

/** The workload as Git (with Argo CD's tracking id added) renders it: metadata and template annotations, one env var. */
function gitManifest(workload: WorkloadKind, name: string): KubeObject {
  return {
    apiVersion: workload.apiVersion,
    kind: workload.kind,
    metadata: { name, annotations: { 'argocd.argoproj.io/tracking-id': `demo:${workload.apiVersion.split('/')[0]}/${workload.kind}:ns/${name}` } },
    spec: {
      replicas,
      selector: { matchLabels: { [appLabel]: name } },
      template: {
        metadata: { labels: { [appLabel]: name }, annotations: { [gitTemplateAnnotation]: 'v1:0123456789abcdef' } },
        spec: {
          // Short grace: the fake kubelet removes a deleted pod only when its grace period ends.
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'app',
              image: 'registry.invalid/app:1',
              env: [{ name: 'MODE', value: 'blue' }],
              // Not empty: the Rollouts controller writes an absent `resources` back as `{}`.
              resources: { requests: { cpu: '10m' } },
            },
          ],
        },
      },
      ...workload.extraSpec,
    },
  };
}

/** A server-side apply as Driftless writes: only its own fields, as its own field manager. */
async function applyAsDriftless(admin: ApiClient, workload: WorkloadKind, namespace: string, name: string, fields: KubeObject): Promise<void> {
  const body = { apiVersion: workload.apiVersion, kind: workload.kind, ...fields, metadata: { name, ...fields.metadata } };
  await admin.request('PATCH', `${workload.collection(namespace)}/${name}?fieldManager=${driftlessManager}`, body, {
    contentType: 'application/apply-patch+yaml',
  });
}

/** Deletes one pod and evicts another, then waits until fresh pods replace both. */
async function deleteAndEvictPods(admin: ApiClient, namespace: string, name: string): Promise<void> {
  const pods = await listPods(admin, namespace, `${appLabel}=${name}`);
  const [deleted, evicted] = pods;
  assert.ok(deleted && evicted, `two pods of ${name}`);
  const gone = new Set([deleted.metadata?.uid, evicted.metadata?.uid]);
  await admin.request('DELETE', `/api/v1/namespaces/${namespace}/pods/${deleted.metadata?.name}`);
  await admin.request('POST', `/api/v1/namespaces/${namespace}/pods/${evicted.metadata?.name}/eviction`, {
    apiVersion: 'policy/v1',
    kind: 'Eviction',
    metadata: { name: evicted.metadata?.name, namespace },
  });
  await waitFor(`fresh Ready pods for ${name}`, async () => {
    const now = await listPods(admin, namespace, `${appLabel}=${name}`);
    return now.length === replicas && now.every((pod) => !gone.has(pod.metadata?.uid) && podIsReady(pod));
  }, { timeoutMs: 60_000 });
}

/** A timestamp in whole seconds, one second ahead: restartAt is compared with pod creation times, which have no fraction. */
function nextWholeSecond(): string {
  return new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000).toISOString().replace('.000Z', 'Z');
}

const syncModes = [
  { mode: 'client-side apply', apply: applyAsArgoCD },
  { mode: 'ServerSideApply=true', apply: applyAsArgoCDServerSide },
] as const;

for (const workload of [deploymentKind, rolloutKind]) {
  for (const { mode, apply } of syncModes) {
    fixture.test(
      `${workload.kind} synced by ${mode}: no drift from Driftless's writes or pod churn, drift from an out-of-band change`,
      async ({ cluster, namespace }) => {
        const { admin } = cluster;
        const name = 'web';
        const manifest = gitManifest(workload, name);
        const options = { namespace };

        await apply(cluster, manifest, options);
        await workload.settled(admin, namespace, name);
        await assertNoDrift(cluster, manifest, options);

        // The controller's bookkeeping: a metadata annotation key Git never rendered, beside keys it does render.
        await applyAsDriftless(admin, workload, namespace, name, {
          metadata: { annotations: { 'driftless.dev/restart-state': '{"digest":"abc"}' } },
        });
        await assertNoDrift(cluster, manifest, options);

        if (workload.kind === 'Rollout') {
          // The `evict` strategy's Rollout restart, as Argo CD's own "Restart Pods" action sends it.
          const restartAt = nextWholeSecond();
          await admin.request('PATCH', `${workload.collection(namespace)}/${name}`, { spec: { restartAt } }, {
            contentType: 'application/merge-patch+json',
          });
          await waitFor('the Rollout to record its restart', async () => {
            const rollout = await admin.request('GET', `${workload.collection(namespace)}/${name}`);
            return rollout.status?.['restartedAt'] === restartAt;
          }, { timeoutMs: 90_000 });
          await assertNoDrift(cluster, manifest, options);
        }

        await deleteAndEvictPods(admin, namespace, name);
        await assertNoDrift(cluster, manifest, options);

        // The `rollout` strategy: a pod-template annotation key of Driftless's own, while Git renders another.
        await applyAsDriftless(admin, workload, namespace, name, {
          spec: { template: { metadata: { annotations: { 'driftless.dev/restarted-at': '2026-01-01T00:00:00Z' } } } },
        });
        await workload.settled(admin, namespace, name);
        await assertNoDrift(cluster, manifest, options);

        // A field Git renders, changed out of band: both strategies must see it, or the oracle proves nothing.
        const patch = await cluster.kubectl([
          'patch', workload.kind.toLowerCase(), name, `--namespace=${namespace}`, '--type=json',
          '-p', JSON.stringify([{ op: 'replace', path: '/spec/template/spec/containers/0/env/0/value', value: 'green' }]),
        ]);
        assert.equal(patch.code, 0, patch.stderr);
        const drift = await driftOf(cluster, manifest, options);
        for (const [strategy, text] of Object.entries(drift)) {
          assert.match(text, /^-\s+value: green$/m, `${strategy} diff shows the live value going`);
          assert.match(text, /^\+\s+value: blue$/m, `${strategy} diff shows Git's value coming back`);
          assert.match(text, /^--- live\/\S+$/m, `${strategy} diff has stable file names`);
        }
        await assert.rejects(assertNoDrift(cluster, manifest, options), (error: Error) => {
          assert.equal(error.name, 'AssertionError');
          assert.match(error.message, /value: green/);
          return true;
        });
      },
      { timeout: 240_000 },
    );
  }
}

// Observed, not wished for: Git's empty map is a field Argo CD owns as a whole under server-side apply,
// so the `rollout` strategy's key conflicts with it on a Deployment (the Rollout CRD's map stays granular).
fixture.test('Git rendering empty template annotations: Driftless\'s key conflicts under ServerSideApply=true, not under client-side apply', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  const options = { namespace };
  /** The Git manifest with `annotations: {}` in its pod template. */
  const emptyTemplateAnnotations = (name: string): KubeObject => {
    const manifest = gitManifest(deploymentKind, name);
    const template = (manifest.spec?.['template'] ?? {}) as KubeObject;
    template.metadata = { ...template.metadata, annotations: {} };
    return manifest;
  };
  const applyTemplateAnnotation = (name: string) =>
    admin.send<{ message?: string }>(
      'PATCH',
      `${deploymentKind.collection(namespace)}/${name}?fieldManager=${driftlessManager}`,
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name },
        spec: { template: { metadata: { annotations: { 'driftless.dev/restarted-at': '2026-01-01T00:00:00Z' } } } },
      },
      { contentType: 'application/apply-patch+yaml' },
    );

  await applyAsArgoCDServerSide(cluster, emptyTemplateAnnotations('ssa'), options);
  const conflict = await applyTemplateAnnotation('ssa');
  assert.equal(conflict.status, 409);
  assert.match(String(conflict.body.message), /conflict with "argocd-controller": \.spec\.template\.metadata\.annotations/);

  await applyAsArgoCD(cluster, emptyTemplateAnnotations('csa'), options);
  assert.equal((await applyTemplateAnnotation('csa')).status, 200);
  await assertNoDrift(cluster, emptyTemplateAnnotations('csa'), options);
});

// Observed, and a pitfall for test manifests: the Rollouts controller updates its Rollout as a Go struct,
// dropping `steps: []` and writing an absent `resources` as `{}`. kubectl's client-side diff of a CRD
// replaces lists whole (JSON merge patch), so it flags the container too; Argo CD's legacy diff strips
// live fields absent from last-applied first, so it probably would not. The server-side diff merges
// containers by name (the CRD's list-map) and leaves the controller's `resources: {}` alone.
fixture.test('the Rollouts controller\'s rewrite of a Rollout spec shows as drift', async ({ cluster, namespace }) => {
  const manifest = gitManifest(rolloutKind, 'web');
  const spec = manifest.spec ?? {};
  spec['strategy'] = { canary: { steps: [] } };
  const template = spec['template'] as { spec: { containers: Record<string, unknown>[] } };
  for (const container of template.spec.containers) delete container['resources'];
  const options = { namespace };

  await applyAsArgoCD(cluster, manifest, options);
  await rolloutKind.settled(cluster.admin, namespace, 'web');
  const drift = await driftOf(cluster, manifest, options);
  for (const [strategy, text] of Object.entries(drift)) {
    assert.match(text, /^-\s+canary: \{\}$/m, `${strategy}: the controller dropped steps`);
    assert.match(text, /^\+\s+steps: \[\]$/m, `${strategy}: a sync would write them back`);
  }
  assert.match(drift.clientSide, /^-\s+resources: \{\}$/m);
  assert.doesNotMatch(drift.serverSide, /resources/);
});

fixture.test('a Secret is refused, not diffed', async ({ cluster, namespace }) => {
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { password: 'hunter2' } };
  await assert.rejects(driftOf(cluster, secret, { namespace }), DriftOracleError);
  const list = `apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Secret\n    metadata: {name: s}\n    stringData: {password: hunter2}\n`;
  await assert.rejects(applyAsArgoCD(cluster, list, { namespace }), (error: Error) => {
    assert.ok(error instanceof DriftOracleError);
    assert.doesNotMatch(error.message, /hunter2/);
    return true;
  });
});

fixture.test('a kubectl failure is an error, not "no drift"', async ({ cluster, namespace }) => {
  const unknown = { apiVersion: 'example.invalid/v1', kind: 'Nothing', metadata: { name: 'x' } };
  await assert.rejects(driftOf(cluster, unknown, { namespace }), (error: Error) => {
    assert.ok(error instanceof DriftOracleError);
    assert.match(error.message, /exited [2-9]|exited \d{2,}/);
    return true;
  });
});

/** A kubectl that answers calls with `results` in turn, the last one forever: for the exit-code contract alone. */
function fakeHost(...results: KubectlResult[]): KubectlHost {
  let next = 0;
  return {
    kubectl: async () => {
      const result = results[Math.min(next++, results.length - 1)];
      assert.ok(result);
      return result;
    },
  };
}

test('kubectl diff exit codes: 0 is no drift, 1 with output is drift, anything else throws', async () => {
  const manifest = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } };
  assert.deepEqual(await driftOf(fakeHost({ code: 0, stdout: '', stderr: '' }), manifest), { clientSide: '', serverSide: '' });
  const raw = [
    'diff -u -N /tmp/LIVE-123/v1.ConfigMap.ns.c /tmp/MERGED-456/v1.ConfigMap.ns.c',
    '--- /tmp/LIVE-123/v1.ConfigMap.ns.c\t2026-12-01 10:00:00.000000000 +0000',
    '+++ /tmp/MERGED-456/v1.ConfigMap.ns.c\t2026-12-01 10:00:00.000000000 +0000',
    '@@ -1 +1 @@',
    '-a',
    '+b',
    '',
  ].join('\n');
  const { clientSide } = await driftOf(fakeHost({ code: 1, stdout: raw, stderr: '' }), manifest);
  assert.equal(
    clientSide,
    ['diff -u -N live/v1.ConfigMap.ns.c merged/v1.ConfigMap.ns.c', '--- live/v1.ConfigMap.ns.c', '+++ merged/v1.ConfigMap.ns.c', '@@ -1 +1 @@', '-a', '+b', ''].join('\n'),
  );
  // Exit 1 without a diff is kubectl failing before it compared anything.
  await assert.rejects(driftOf(fakeHost({ code: 1, stdout: '', stderr: 'error: boom' }), manifest), /boom/);
  await assert.rejects(driftOf(fakeHost({ code: 2, stdout: '', stderr: 'diff failed' }), manifest), DriftOracleError);
});

test('a diff that moves resourceVersion raced a writer and is taken again', async () => {
  const manifest = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } };
  const raced = { code: 1, stdout: '@@ -1 +1 @@\n-  resourceVersion: "1"\n+  resourceVersion: "2"\n', stderr: '' };
  const clean = { code: 0, stdout: '', stderr: '' };
  assert.equal(await clientSideDrift(fakeHost(raced, clean), manifest), '');
  await assert.rejects(clientSideDrift(fakeHost(raced), manifest), /live changed during each of 5 diffs/);
});
