/**
 * Objects and observations the controller's cluster tests share: workloads
 * that use a Secret and a ConfigMap, out-of-band updates, and the pods, Events
 * and ReplicaSets a test asserts on.
 */
import type { ApiClient, KubeList, KubeObject } from '../../cluster/api.ts';
import { podIsReady, podTemplate } from '../../cluster/testing.ts';
import { waitFor } from '../../support/wait.ts';
import { LEAK_CANARY } from './leak.ts';

export { LEAK_CANARY };

/** A Secret value no log, Event or error may ever contain (nor its base64). */
export const SECRET_VALUE = 'hunter2-do-not-leak-7f3a';

/** The value as stored: the test's value plus the canary. */
export function storedSecretValue(value: string): string {
  return `${value}.${LEAK_CANARY}`;
}

/** Kind → collection path. */
export const COLLECTIONS = {
  Deployment: (ns: string) => `/apis/apps/v1/namespaces/${ns}/deployments`,
  StatefulSet: (ns: string) => `/apis/apps/v1/namespaces/${ns}/statefulsets`,
  DaemonSet: (ns: string) => `/apis/apps/v1/namespaces/${ns}/daemonsets`,
  Rollout: (ns: string) => `/apis/argoproj.io/v1alpha1/namespaces/${ns}/rollouts`,
  Secret: (ns: string) => `/api/v1/namespaces/${ns}/secrets`,
  ConfigMap: (ns: string) => `/api/v1/namespaces/${ns}/configmaps`,
} as const;

/** A Secret, with annotations. */
export function secret(name: string, value: string, options: { annotations?: Record<string, string> } = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, annotations: options.annotations ?? {} }, stringData: { password: storedSecretValue(value) } };
}

/**
 * An ExternalSecret and the Secret it "produced" (owned by it, as External
 * Secrets writes it; no ESO controller runs, so the test rotates the value).
 * The owner must exist: the garbage collector deletes a Secret whose owner does not.
 */
export async function createExternalSecret(client: ApiClient, namespace: string, name: string, value: string): Promise<void> {
  const owner = await client.request<KubeObject>('POST', `/apis/external-secrets.io/v1/namespaces/${namespace}/externalsecrets`, {
    apiVersion: 'external-secrets.io/v1',
    kind: 'ExternalSecret',
    metadata: { name },
    spec: { secretStoreRef: { name: 'vault', kind: 'SecretStore' }, target: { name } },
  });
  const produced = secret(name, value);
  (produced.metadata as Record<string, unknown>)['ownerReferences'] = [{
    apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', name, uid: owner.metadata?.['uid'], controller: true,
  }];
  await client.request('POST', COLLECTIONS.Secret(namespace), produced);
}

/** A ConfigMap. */
export function configMap(name: string, data: Record<string, string>, annotations: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, annotations }, data };
}

/** Pod spec pieces that reference a Secret by env and a ConfigMap by volume. */
function usingConfigs(labels: Record<string, string>, uses: { secret?: string; configMap?: string }, templateAnnotations: Record<string, string> = {}): KubeObject {
  const template = podTemplate(labels, templateAnnotations);
  const spec = template.spec as Record<string, unknown>;
  const container = (spec['containers'] as Record<string, unknown>[])[0] as Record<string, unknown>;
  if (uses.secret !== undefined) container['env'] = [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: uses.secret, key: 'password' } } }];
  if (uses.configMap !== undefined) {
    spec['volumes'] = [{ name: 'config', configMap: { name: uses.configMap } }];
    container['volumeMounts'] = [{ name: 'config', mountPath: '/etc/app' }];
  }
  return template;
}

/** Options of a test workload. */
export interface WorkloadOptions {
  readonly replicas?: number;
  readonly uses: { secret?: string; configMap?: string };
  /** Workload annotations; default `reloader.stakater.com/auto: "true"`. */
  readonly annotations?: Record<string, string>;
  readonly templateAnnotations?: Record<string, string>;
  readonly labels?: Record<string, string>;
  readonly extraSpec?: Record<string, unknown>;
}

/** A workload of the kind, using the configs. */
export function workload(kind: 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Rollout', name: string, options: WorkloadOptions): KubeObject {
  const labels = { app: name };
  const spec: Record<string, unknown> = {
    // Separate objects: a test that changes the template's labels must not change the (immutable) selector.
    selector: { matchLabels: { ...labels } },
    template: usingConfigs({ ...labels }, options.uses, options.templateAnnotations),
    ...(kind === 'DaemonSet' ? {} : { replicas: options.replicas ?? 2 }),
    ...(kind === 'StatefulSet' ? { serviceName: name } : {}),
    ...(kind === 'Rollout' ? { strategy: { canary: { steps: [{ setWeight: 50 }, { pause: { duration: '1s' } }] } } } : {}),
    ...options.extraSpec,
  };
  return {
    apiVersion: kind === 'Rollout' ? 'argoproj.io/v1alpha1' : 'apps/v1',
    kind,
    metadata: { name, labels: options.labels ?? {}, annotations: options.annotations ?? { 'reloader.stakater.com/auto': 'true' } },
    spec,
  };
}

/** The pods of a workload (label `app=<name>`). */
export async function podsOf(client: ApiClient, namespace: string, name: string): Promise<KubeObject[]> {
  const list = await client.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(`app=${name}`)}`);
  return list.items;
}

/** Waits until the workload has `count` Ready pods, none terminating, and returns them. */
export function waitForReadyPods(client: ApiClient, namespace: string, name: string, count: number, timeoutMs = 60_000): Promise<KubeObject[]> {
  return waitFor(`${count} ready pods of ${namespace}/${name}`, async () => {
    const pods = await podsOf(client, namespace, name);
    const live = pods.filter((pod) => pod.metadata?.['deletionTimestamp'] === undefined);
    return live.length === count && pods.length === count && live.every(podIsReady) ? live : undefined;
  }, { timeoutMs });
}

/** UIDs of pods. */
export function uids(pods: readonly KubeObject[]): string[] {
  return pods.map((pod) => String(pod.metadata?.['uid'])).sort();
}

/** Replaces the Secret's value out of band (as an operator would), keeping its metadata. */
export async function rotateSecret(client: ApiClient, namespace: string, name: string, value: string): Promise<void> {
  await client.request('PATCH', `${COLLECTIONS.Secret(namespace)}/${name}`, { stringData: { password: storedSecretValue(value) } }, { contentType: 'application/merge-patch+json' });
}

/** Events whose involved object is the named object, oldest first. */
export async function eventsFor(client: ApiClient, namespace: string, name: string): Promise<KubeObject[]> {
  const list = await client.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${name}`)}`);
  return list.items.filter((event) => (event['source'] as { component?: string } | undefined)?.component === 'driftless');
}

/** An Event as `type reason xcount`: what an object was told, comparable before and after (a repeat raises the count). */
export function eventSummary(event: KubeObject): string {
  const count = typeof event['count'] === 'number' ? event['count'] : 1;
  return `${String(event['type'])} ${String(event['reason'])} x${count}`;
}

/** Waits for an Event with the reason on the object. */
export function waitForEvent(client: ApiClient, namespace: string, name: string, reason: string, timeoutMs = 60_000): Promise<KubeObject> {
  return waitFor(`Event ${reason} on ${namespace}/${name}`, async () => (await eventsFor(client, namespace, name)).find((event) => event['reason'] === reason), { timeoutMs });
}

/** ReplicaSet names of a namespace. */
export async function replicaSetNames(client: ApiClient, namespace: string): Promise<string[]> {
  const list = await client.request<KubeList>('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets`);
  return list.items.map((rs) => String(rs.metadata?.['name'])).sort();
}

/** GETs an object. */
export function read(client: ApiClient, path: string): Promise<KubeObject> {
  return client.request<KubeObject>('GET', path);
}
