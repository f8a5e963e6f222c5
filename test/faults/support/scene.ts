/**
 * The scene of the fault tests and their verdicts: an out-of-band Secret
 * (owned by an ExternalSecret, as External Secrets writes it), Deployments
 * using it whose pods become Ready only a few seconds after binding (so a
 * restart lasts long enough for a fault to land in its middle), and the checks
 * "every old pod replaced exactly once, none missed, no replacement evicted,
 * never more pods down than the budget", from the pod watch and the audit log.
 */
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { KubeList, KubeObject } from '../../cluster/api.ts';
import { describeAudit } from '../../cluster/audit.ts';
import type { Cluster } from '../../cluster/harness.ts';
import { readyDelayAnnotation } from '../../cluster/kwok-stages.ts';
import { create, podIsReady } from '../../cluster/testing.ts';
import { waitFor } from '../../support/wait.ts';
import { COLLECTIONS, createExternalSecret, podsOf, workload } from '../../controller/support/fixtures.ts';
import type { PodTracker } from './pod-tracker.ts';

/** The controller's first-sight record on a workload (it restarts only what it has recorded). */
export const RECORD_ANNOTATION = 'driftless.dev/restarted-for';

/** Readiness delay of the fault tests' pods: a 3-pod restart one pod at a time lasts ~10 s. */
export const SLOW_READY = '3s';

/** Options of `deployApps`. */
export interface AppOptions {
  readonly replicas?: number;
  /** The Secret the apps use (created once by `createSecret`). */
  readonly secret: string;
  /** Pod readiness delay (a Go duration; default SLOW_READY). */
  readonly readyDelay?: string;
  /** Extra pod-template annotations. */
  readonly templateAnnotations?: Record<string, string>;
  /** Extra Deployment spec fields. */
  readonly extraSpec?: Record<string, unknown>;
}

/** The manifest of one fault-test Deployment. */
export function appManifest(name: string, options: AppOptions): KubeObject {
  return workload('Deployment', name, {
    replicas: options.replicas ?? 3,
    uses: { secret: options.secret },
    templateAnnotations: { [readyDelayAnnotation]: options.readyDelay ?? SLOW_READY, ...options.templateAnnotations },
    ...(options.extraSpec === undefined ? {} : { extraSpec: options.extraSpec }),
  });
}

/** Creates the out-of-band Secret `name` (value `v1`). */
export async function createSecret(cluster: Cluster, namespace: string, name: string): Promise<void> {
  await createExternalSecret(cluster.admin, namespace, name, 'v1');
}

/** Creates the Deployments and waits until each has all its pods Ready. */
export async function deployApps(cluster: Cluster, namespace: string, names: readonly string[], options: AppOptions): Promise<void> {
  for (const name of names) await create(cluster.admin, COLLECTIONS.Deployment(namespace), appManifest(name, options));
  for (const name of names) await waitForSettled(cluster, namespace, name, options.replicas ?? 3, 90_000);
}

/** Waits until the workload has exactly `count` pods, all Ready, none terminating; false on timeout. */
export async function waitForSettled(cluster: Cluster, namespace: string, name: string, count: number, timeoutMs: number): Promise<boolean> {
  try {
    await waitFor(`${count} ready pods of ${namespace}/${name}`, async () => {
      const pods = await podsOf(cluster.admin, namespace, name);
      return pods.length === count && pods.every((pod) => pod.metadata?.deletionTimestamp === undefined && podIsReady(pod));
    }, { timeoutMs, intervalMs: 250 });
    return true;
  } catch {
    return false;
  }
}

/** Waits until the controller has recorded the current digests on every named Deployment. */
export async function waitForRecords(cluster: Cluster, namespace: string, names: readonly string[], timeoutMs = 90_000): Promise<void> {
  await waitFor(`first-sight records on ${names.length} Deployments in ${namespace}`, async () => {
    const list = await cluster.admin.request<KubeList>('GET', COLLECTIONS.Deployment(namespace));
    const recorded = list.items.filter((d) => names.includes(String(d.metadata?.name)) && d.metadata?.annotations?.[RECORD_ANNOTATION] !== undefined);
    return recorded.length === names.length;
  }, { timeoutMs, intervalMs: 250 });
}

/**
 * Waits until none of `old` is live and the workload has `count` Ready pods;
 * false on timeout (the caller reports what was missed rather than a timeout).
 */
export async function waitForReplaced(cluster: Cluster, tracker: PodTracker, namespace: string, name: string, old: readonly string[], count: number, timeoutMs: number): Promise<boolean> {
  try {
    await waitFor(`every old pod of ${namespace}/${name} replaced`, () => tracker.replacedOf(old) === old.length, { timeoutMs, intervalMs: 250 });
  } catch {
    return false;
  }
  return waitForSettled(cluster, namespace, name, count, Math.max(timeoutMs, 30_000));
}

/**
 * Waits until at least one but not all of `old` are replaced, the moment a
 * fault is injected "mid-restart"; returns how many were.
 * @throws when the restart never starts or ends before this is seen.
 */
export async function waitForMidRestart(tracker: PodTracker, old: readonly string[], timeoutMs = 90_000): Promise<number> {
  const replaced = await waitFor('the restart to be under way (some old pods replaced)', () => {
    const count = tracker.replacedOf(old);
    return count >= 1 ? count : undefined;
  }, { timeoutMs, intervalMs: 50 });
  assert.ok(replaced < old.length, `the fault must hit a restart in progress, but ${replaced} of ${old.length} old pods were already replaced`);
  return replaced;
}

/**
 * `kubectl replace -f -` of the manifest, as a user (or Argo CD's Replace=true) does it. kubectl puts the live
 * resourceVersion into the object it PUTs, so a write in between (the Deployment controller's status, the
 * controller's record) makes it a 409 Conflict; like a user, it is tried again, until `timeoutMs`.
 * @throws when kubectl fails otherwise, or still conflicts at the deadline.
 */
export async function kubectlReplace(cluster: Cluster, namespace: string, manifest: KubeObject, timeoutMs = 30_000): Promise<void> {
  let last = '';
  await waitFor(`kubectl replace of ${String(manifest.metadata?.name)} without a conflict`, async () => {
    const replaced = await cluster.kubectl(['replace', '-n', namespace, '-f', '-'], { stdin: stringify(manifest) });
    if (replaced.code === 0) return true;
    last = replaced.stderr.trim();
    if (!last.includes('(Conflict)')) throw new Error(`kubectl replace of ${String(manifest.metadata?.name)} failed: ${last}`);
    return undefined;
  }, { timeoutMs, intervalMs: 100 }).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; last: ${last}`, { cause: error });
  });
}

/** Successful evictions of pods in the namespace since `since` (local epoch ms), per pod name. */
export async function evictionsByPod(cluster: Cluster, namespace: string, since: number): Promise<Map<string, number>> {
  const entries = await cluster.audit({ namespace, resource: 'pods', subresource: 'eviction', verbs: ['create'], succeeded: true, since });
  const counts = new Map<string, number>();
  for (const entry of entries) {
    const name = entry.objectRef?.name ?? '';
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/**
 * The verdict "every pod of `old` replaced exactly once, none missed, no
 * replacement evicted": from the pod watch (deletions) and from the audit log
 * (each old pod evicted successfully exactly once, no other pod evicted).
 */
export async function assertReplacedExactlyOnce(cluster: Cluster, tracker: PodTracker, namespace: string, app: string, old: readonly string[], since: number): Promise<void> {
  const { missed, doubled } = tracker.verdict(app, old, since);
  assert.deepEqual(missed, [], `${app}: old pods never replaced (missed)`);
  assert.deepEqual(doubled, [], `${app}: replacement pods deleted again (doubled)`);
  const oldNames = old.map((uid) => tracker.pods.get(uid)?.name ?? uid);
  const evictions = await evictionsByPod(cluster, namespace, since);
  const ofApp = [...evictions.entries()].filter(([pod]) => pod.startsWith(`${app}-`));
  const twice = ofApp.filter(([, count]) => count > 1).map(([pod, count]) => `${pod} ×${count}`);
  assert.deepEqual(twice, [], `${app}: pods evicted more than once (audit log)`);
  const stray = ofApp.filter(([pod]) => !oldNames.includes(pod)).map(([pod]) => pod);
  assert.deepEqual(stray, [], `${app}: pods evicted that were not old (audit log)`);
  const evictedOld = oldNames.filter((pod) => evictions.has(pod)).length;
  if (evictedOld !== old.length) {
    const entries = await cluster.audit({ namespace, resource: 'pods', subresource: 'eviction', since });
    assert.fail(`${app}: ${evictedOld} of ${old.length} old pods evicted per the audit log:\n${describeAudit(entries)}`);
  }
}

/** Seconds since `startedAt`, for the per-test timing line. */
export function elapsed(startedAt: number): string {
  return `${((Date.now() - startedAt) / 1000).toFixed(1)} s`;
}
