/**
 * No double rollout, under the real Argo CD with the real controller beside
 * it: an app rendered by the Driftless plugin whose Deployment, StatefulSet,
 * DaemonSet and Rollout use a ConfigMap from Git (in the render, so in the
 * hash) and a Secret written by an operator (owned by an ExternalSecret, not
 * in Git). A commit changes the ConfigMap and the Secret rotates within the
 * same seconds; pods are tracked by uid for the whole run.
 *
 * The contract (ADR 0007 §4, ADR 0011): the controller replaces the pods
 * created before T and leaves alone every pod created at or after T, and a
 * restart about to act waits while Argo CD is about to roll the workload.
 *
 * Secret first: the Secret rotates, and within a second the commit lands and
 * Argo CD is asked to refresh and sync, as its Git webhook would cause. The
 * controller (at its default debounce, 2 s) finds the sync pending, waits,
 * and the sync's rollout replaces every pod after T: each workload's pods are
 * replaced exactly once, by the sync; the controller evicts nothing.
 *
 * Sync first: the Secret rotates once Argo CD has applied the new template,
 * so the rollout's first pods predate the rotation (or share its second,
 * which creation times cannot split) and hold the old Secret value: they are
 * rightly replaced again — correctness over count. None created at or after
 * T may be.
 */
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { ApiClient, KubeList, KubeObject } from '../cluster/api.ts';
import { applicationStatus, type ArgoCD } from '../cluster/argocd.ts';
import { podIsReady, useArgoCD } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { startControllerProcess, type ControllerProcess } from '../controller/support/process.ts';
import { COLLECTIONS, configMap, createExternalSecret, eventsFor, read, rotateSecret, workload } from '../controller/support/fixtures.ts';
import { hashOf, pluginApplicationSpec, type CommittedApp } from './plugin-support.ts';

const fixture = useArgoCD({ rolloutsController: true });

type Kind = 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Rollout';

/** The workloads of the app: `<kind in lower case>`, each with label `app=<name>`. */
const WORKLOADS: readonly { readonly kind: Kind; readonly name: string; readonly pods: number }[] = [
  { kind: 'Deployment', name: 'deployment', pods: 2 },
  { kind: 'StatefulSet', name: 'statefulset', pods: 2 },
  // One fake node: one pod.
  { kind: 'DaemonSet', name: 'daemonset', pods: 1 },
  { kind: 'Rollout', name: 'rollout', pods: 2 },
];

/**
 * Drops empty `labels` and `annotations` maps: the API server stores none, so
 * Argo CD would compare `{}` in Git with an absent live map.
 */
function withoutEmptyMetadataMaps(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutEmptyMetadataMaps);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value).filter(([key, item]) =>
    !((key === 'labels' || key === 'annotations') && typeof item === 'object' && item !== null && Object.keys(item).length === 0));
  return Object.fromEntries(entries.map(([key, item]) => [key, withoutEmptyMetadataMaps(item)]));
}

/** The app's files: the ConfigMap every workload mounts, and the workloads; the Secret `db` is not in Git. */
function appFiles(logLevel: string): Record<string, string> {
  const files: Record<string, string> = { 'configmap.yaml': stringify(withoutEmptyMetadataMaps(configMap('settings', { LOG_LEVEL: logLevel }))) };
  for (const { kind, name, pods } of WORKLOADS) {
    files[`${name}.yaml`] = stringify(withoutEmptyMetadataMaps(workload(kind, name, { replicas: pods, uses: { secret: 'db', configMap: 'settings' } })));
  }
  return files;
}

/** The revision a pod was created from, whatever its controller calls it. */
function revisionOf(pod: KubeObject): string {
  const labels = pod.metadata?.labels ?? {};
  return labels['rollouts-pod-template-hash'] ?? labels['pod-template-hash'] ?? labels['controller-revision-hash'] ?? '?';
}

/** Everything observed of one pod over the run. */
interface TrackedPod {
  readonly uid: string;
  readonly name: string;
  readonly workload: string;
  readonly revision: string;
  readonly createdAt: string;
  /** Seen terminating or gone. */
  deleted: boolean;
}

/** Pods of the namespace by uid, accumulated over samples: a pod once seen is never forgotten. */
class PodTracker {
  readonly pods = new Map<string, TrackedPod>();
  readonly #client: ApiClient;
  readonly #namespace: string;

  constructor(client: ApiClient, namespace: string) {
    this.#client = client;
    this.#namespace = namespace;
  }

  /** Lists the pods once and records what is new, terminating or gone; returns the live ones. */
  async sample(): Promise<KubeObject[]> {
    const list = await this.#client.request<KubeList>('GET', `/api/v1/namespaces/${this.#namespace}/pods`);
    const present = new Set<string>();
    for (const pod of list.items) {
      const uid = String(pod.metadata?.['uid']);
      present.add(uid);
      const tracked = this.pods.get(uid) ?? {
        uid,
        name: String(pod.metadata?.name),
        workload: pod.metadata?.labels?.['app'] ?? '?',
        revision: revisionOf(pod),
        createdAt: String(pod.metadata?.['creationTimestamp']),
        deleted: false,
      };
      if (pod.metadata?.['deletionTimestamp'] !== undefined) tracked.deleted = true;
      this.pods.set(uid, tracked);
    }
    for (const tracked of this.pods.values()) if (!present.has(tracked.uid)) tracked.deleted = true;
    return list.items.filter((pod) => pod.metadata?.['deletionTimestamp'] === undefined);
  }

  of(name: string): TrackedPod[] {
    return [...this.pods.values()].filter((pod) => pod.workload === name);
  }
}

/** Creates the app, syncs it, starts the controller and waits until every workload is recorded and every pod Ready. */
async function setUp(
  argocd: ArgoCD,
  client: ApiClient,
  cluster: Parameters<typeof startControllerProcess>[0],
  namespace: string,
  name: string,
): Promise<{ app: CommittedApp; controller: ControllerProcess }> {
  await createExternalSecret(client, namespace, 'db', 'v1');
  const repo = await argocd.createRepo(name);
  const path = 'apps/twice';
  const files = Object.entries(appFiles('info')).map(([file, content]): [string, string] => [`${path}/${file}`, content]);
  const app: CommittedApp = { repo, path, revision: await repo.commit(Object.fromEntries(files), 'the no-double-rollout app') };
  const revision = app.revision;
  await argocd.createApplication(name, pluginApplicationSpec(app, namespace));
  await argocd.sync(name, { revision });
  await argocd.waitForSyncedAndHealthy(name, revision, { timeoutMs: 150_000 }).catch(async (error: unknown) => {
    const resources = applicationStatus(await argocd.getApplication(name)).resources ?? [];
    throw new Error(`not Synced: ${JSON.stringify(resources.filter((resource) => resource.status !== 'Synced'))}`, { cause: error });
  });
  // The product's debounce (the process support's is 500 ms): the window in which Argo CD's webhook-driven sync
  // is asked for before the controller decides, as in production.
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`, '--debounce=2s'] });
  await controller.ready();
  for (const { kind, name: workloadName, pods } of WORKLOADS) {
    const path = `${COLLECTIONS[kind](namespace)}/${workloadName}`;
    const live = await read(client, path);
    assert.match(hashOf(live) ?? '', /\S/, `${kind} has the plugin's hash`);
    await waitFor(`the first-sight record on ${kind}`, async () => (await read(client, path)).metadata?.annotations?.['driftless.dev/restarted-for'], { timeoutMs: 60_000 });
    await waitFor(`${pods} ready pods of ${kind}`, async () => {
      const list = await client.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=app%3D${workloadName}`);
      return list.items.length === pods && list.items.every(podIsReady);
    }, { timeoutMs: 90_000 });
  }
  return { app, controller };
}

/**
 * Samples pods until the run is over: the app Synced to `revision` and
 * Healthy, the controller's restart finished on every workload, and every
 * workload running exactly its desired Ready pods, all of one revision other
 * than its original one.
 */
async function waitUntilSettled(
  argocd: ArgoCD,
  client: ApiClient,
  tracker: PodTracker,
  namespace: string,
  name: string,
  revision: string,
  original: ReadonlyMap<string, string>,
): Promise<void> {
  await waitFor('every workload rolled once and the restart finished', async () => {
    const live = await tracker.sample();
    const status = applicationStatus(await argocd.getApplication(name));
    if (status.sync?.status !== 'Synced' || status.sync.revision !== revision || status.health?.status !== 'Healthy') return false;
    for (const { name: workloadName, pods } of WORKLOADS) {
      const own = live.filter((pod) => pod.metadata?.labels?.['app'] === workloadName);
      const revisions = new Set(own.map(revisionOf));
      if (own.length !== pods || !own.every(podIsReady) || revisions.size !== 1 || revisions.has(original.get(workloadName) ?? '')) return false;
      const events = await eventsFor(client, namespace, workloadName);
      if (!events.some((event) => event['reason'] === 'RestartFinished')) return false;
    }
    // Nothing still terminating: a deletion in flight would be missed by the assertions.
    return (await client.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods`)).items.every((pod) => pod.metadata?.['deletionTimestamp'] === undefined);
  }, { timeoutMs: 240_000, intervalMs: 200 });
}

/** What happened to one workload's pods over the run. */
interface WorkloadOutcome {
  readonly kind: Kind;
  /** T of the controller's restart (epoch ms). */
  readonly restartAt: number;
  readonly original: readonly TrackedPod[];
  /** Pods of neither the original nor the final revision: the controller's replacements of the original pods. */
  readonly intermediate: readonly TrackedPod[];
  readonly final: readonly TrackedPod[];
  /** Pods of the final revision that were deleted again. */
  readonly finalReplaced: readonly TrackedPod[];
}

function outcomeOf(tracker: PodTracker, originalUids: ReadonlySet<string>, kind: Kind, name: string, restartAt: number): WorkloadOutcome {
  const pods = tracker.of(name);
  const revision = pods.find((pod) => !pod.deleted)?.revision ?? '';
  const original = pods.filter((pod) => originalUids.has(pod.uid));
  return {
    kind,
    restartAt,
    original,
    intermediate: pods.filter((pod) => !originalUids.has(pod.uid) && pod.revision !== revision),
    final: pods.filter((pod) => pod.revision === revision && !pod.deleted),
    finalReplaced: pods.filter((pod) => pod.revision === revision && pod.deleted),
  };
}

function describe(outcome: WorkloadOutcome): string {
  const pods = (list: readonly TrackedPod[]): string => JSON.stringify(list.map((pod) => `${pod.name}@${pod.createdAt.slice(11)}`));
  return `${outcome.kind} (T ${new Date(outcome.restartAt).toISOString().slice(11)}): original ${pods(outcome.original)}, ` +
    `intermediate ${pods(outcome.intermediate)}, final ${pods(outcome.final)}, final replaced ${pods(outcome.finalReplaced)}`;
}

/** ReplicaSets owned by the Deployment. */
async function deploymentReplicaSets(client: ApiClient, namespace: string): Promise<string[]> {
  const list = await client.request<KubeList>('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets`);
  return list.items
    .filter((replicaSet) => (replicaSet.metadata?.['ownerReferences'] as { kind: string }[] | undefined)?.some((owner) => owner.kind === 'Deployment'))
    .map((replicaSet) => String(replicaSet.metadata?.name))
    .sort();
}

/** The scenario: `order` says whether the Secret rotates before the sync is asked for or right after. */
async function runScenario(
  context: { cluster: Parameters<typeof startControllerProcess>[0]; argocd: ArgoCD; namespace: string; t: { diagnostic(message: string): void } },
  order: 'secret-first' | 'sync-first',
): Promise<void> {
  const { cluster, argocd, namespace, t } = context;
  const client = cluster.admin;
  const name = `${namespace}-twice`;
  const { app, controller } = await setUp(argocd, client, cluster, namespace, name);
  try {
    const tracker = new PodTracker(client, namespace);
    const originalPods = await tracker.sample();
    const originalUids = new Set(originalPods.map((pod) => String(pod.metadata?.['uid'])));
    const original = new Map(originalPods.map((pod) => [pod.metadata?.labels?.['app'] ?? '?', revisionOf(pod)]));
    const replicaSetsBefore = await deploymentReplicaSets(client, namespace);
    assert.equal(replicaSetsBefore.length, 1);
    const evictedFrom = controller.lines.length;

    let rotatedAt = 0;
    let revision: string;
    if (order === 'secret-first') {
      // The Secret rotates; a second later the commit lands and, as Argo CD's webhook would, the app is
      // refreshed and synced: the controller must find the sync pending and leave the restart to it.
      await rotateSecret(client, namespace, 'db', 'v2');
      rotatedAt = Date.now();
      // Pod creation times have whole-second precision, so T is the first sight rounded up (ADR 0007 §4): a
      // pod the sync created in the rotation's own second is indistinguishable from a stale one and rightly
      // replaced. The commit lands just past T (the next second; one more when the rotation fell so near a
      // boundary that the controller may first see it in the next), still well within the 2 s debounce.
      const boundary = Math.ceil(rotatedAt / 1000) * 1000;
      const pastT = (boundary - rotatedAt < 150 ? boundary + 1000 : boundary) + 20;
      await waitFor('the second after the rotation', () => Date.now() >= pastT, { timeoutMs: 3000, intervalMs: 10 });
      revision = await app.repo.commit({ [`${app.path}/configmap.yaml`]: appFiles('debug')['configmap.yaml'] ?? '' }, 'LOG_LEVEL debug');
      await argocd.refresh(name);
      await argocd.sync(name, { revision });
      const askedAt = Date.now();
      assert.ok(askedAt - rotatedAt < 2000, `the sync was asked for ${askedAt - rotatedAt} ms after the rotation, within the debounce`);
    } else {
      revision = await app.repo.commit({ [`${app.path}/configmap.yaml`]: appFiles('debug')['configmap.yaml'] ?? '' }, 'LOG_LEVEL debug');
      await argocd.refresh(name);
      await argocd.waitForApplication(name, `compared at ${revision}`, (status) => status.sync?.revision === revision && status.sync.status === 'OutOfSync');
      await argocd.sync(name, { revision });
      // Argo CD takes seconds from the request to the apply; the Secret rotates once the new template is live.
      const deploymentPath = `${COLLECTIONS.Deployment(namespace)}/deployment`;
      const hashBefore = hashOf(await read(client, deploymentPath));
      await waitFor('Argo CD to apply the new Deployment template', async () => {
        await tracker.sample();
        return hashOf(await read(client, deploymentPath)) !== hashBefore;
      }, { timeoutMs: 90_000, intervalMs: 100 });
      await rotateSecret(client, namespace, 'db', 'v2');
      rotatedAt = Date.now();
    }

    await waitUntilSettled(argocd, client, tracker, namespace, name, revision, original);
    const outcomes: WorkloadOutcome[] = [];
    for (const { kind, name: workloadName } of WORKLOADS) {
      const live = await read(client, `${COLLECTIONS[kind](namespace)}/${workloadName}`);
      const restartAt = Date.parse(live.metadata?.annotations?.['driftless.dev/restart-at'] ?? '');
      assert.ok(Number.isFinite(restartAt), `${kind}: the controller restarted for the Secret`);
      outcomes.push(outcomeOf(tracker, originalUids, kind, workloadName, restartAt));
    }
    t.diagnostic(`${order}: rotated at ${new Date(rotatedAt).toISOString().slice(11)}; ${outcomes.map(describe).join('; ')}`);
    // What the controller did and why it waited, for the record of a failure.
    const steps = controller.lines.slice(evictedFrom).filter((line) => ['evicted', 'restart waiting', 'restart waiting for Argo CD', 'restart waiting for the Rollout\'s update'].includes(String(line.msg)));
    const text = (value: unknown): string => (typeof value === 'string' ? value : '');
    const said = steps.map((line) => `${text(line['time']).slice(11, 23)} ${text(line['workload'])} ${text(line.msg)} ${text(line['pod']) || text(line['reason'])}`);
    t.diagnostic(`controller: ${said.filter((line, i) => said.indexOf(line) === i).join('; ')}`);
    const evicted = controller.lines.slice(evictedFrom).filter((line) => line.msg === 'evicted').map((line) => String(line['pod']));
    let waited = 0;
    for (const outcome of outcomes) {
      const { name: workloadName, pods } = WORKLOADS.find((w) => w.kind === outcome.kind) ?? { name: '', pods: 0 };
      assert.ok(outcome.original.every((pod) => pod.deleted), `${outcome.kind}: every original pod was replaced`);
      // ADR 0007 §4: a pod created at or after T is current; the controller never evicts one. (Kubernetes's own
      // controllers may still churn a pod — a StatefulSet once re-created one in the same second — which is not ours.)
      // A Rollout's pods are evicted by the Rollouts controller on our `spec.restartAt`, so every one counts as ours.
      const ours = (pod: TrackedPod): boolean => outcome.kind === 'Rollout' || evicted.includes(pod.name);
      const replacedCurrent = outcome.finalReplaced.filter((pod) => Date.parse(pod.createdAt) >= outcome.restartAt);
      assert.deepEqual(replacedCurrent.filter(ours).map((pod) => pod.name), [], `${outcome.kind}: the controller replaced no pod created at or after T: ${describe(outcome)}`);
      const churned = replacedCurrent.filter((pod) => !ours(pod));
      if (churned.length > 0) t.diagnostic(`${outcome.kind}: replaced by Kubernetes itself, not by the controller: ${JSON.stringify(churned.map((pod) => pod.name))}`);
      // And every pod created before T ran with the old Secret value: none may survive, whoever created it.
      const stale = tracker.of(workloadName).filter((pod) => !pod.deleted && Date.parse(pod.createdAt) < outcome.restartAt);
      assert.deepEqual(stale.map((pod) => pod.name), [], `${outcome.kind}: no pod created before T is left running: ${describe(outcome)}`);
      if (order === 'secret-first') {
        // Exactly once: the original pods, replaced by the sync's rollout; no pod of the controller's in between.
        assert.deepEqual(outcome.intermediate.map((pod) => pod.name), [], `${outcome.kind}: no pod between the original and the sync's: ${describe(outcome)}`);
        assert.equal(outcome.final.length, pods, `${outcome.kind}: ${pods} pods, each replaced once: ${describe(outcome)}`);
        // A workload whose rollout the sync had finished before its debounce ended had nothing left to wait for.
        const events = await eventsFor(client, namespace, workloadName);
        if (events.some((event) => event['reason'] === 'RestartWaitingForSync')) waited += 1;
      }
    }
    // Whether a restart had to wait for the sync depends on how fast Argo CD is: when it applied before the
    // debounce ended, the rollout in progress held the restart instead. Either way each pod is replaced once
    // (asserted above); the wait itself is tested on fake time in test/controller/argocd-sync.test.ts.
    if (order === 'secret-first') t.diagnostic(`${waited} of ${outcomes.length} restarts waited for Argo CD's sync`);
    assert.equal(new Set(evicted).size, evicted.length, `no pod evicted twice: ${JSON.stringify(evicted)}`);
    if (order === 'secret-first') assert.deepEqual(evicted, [], 'the controller evicted nothing: the sync replaced every pod');

    const replicaSetsAfter = await deploymentReplicaSets(client, namespace);
    const created = replicaSetsAfter.filter((replicaSet) => !replicaSetsBefore.includes(replicaSet));
    assert.equal(created.length, 1, `exactly one new ReplicaSet for the Deployment: ${JSON.stringify(replicaSetsAfter)}`);
    const deployment = outcomes.find((outcome) => outcome.kind === 'Deployment');
    const evictedNew = (deployment?.finalReplaced ?? []).filter((pod) => evicted.includes(pod.name));
    if (order === 'secret-first') assert.deepEqual(evictedNew.map((pod) => pod.name), [], 'the controller evicted nothing from the new ReplicaSet');
    await argocd.waitForSyncedAndHealthy(name, revision);
  } finally {
    await controller.stop();
  }
}

fixture.test('a Secret rotated a second before a webhook-driven ConfigMap sync: each pod is replaced exactly once, by the sync', (context) =>
  runScenario(context, 'secret-first'), { timeout: 480_000 });

fixture.test('a Secret rotated just after Argo CD applies a ConfigMap commit: the rollout\'s pods created before T are replaced, those at or after T never', (context) =>
  runScenario(context, 'sync-first'), { timeout: 480_000 });
