/**
 * node:test glue for cluster tests: one cluster per test file, one namespace
 * per test, and the components' logs printed when a test fails.
 */
import { after, before, test, type TestContext } from 'node:test';
import type { ApiClient, KubeList, KubeObject } from './api.ts';
import { startArgoCD, type ArgoCD, type ArgoCdOptions } from './argocd.ts';
import { startCluster, type Cluster, type ClusterOptions } from './harness.ts';
import { startHubAndSpokes, type HubAndSpokes, type HubAndSpokesOptions, type Spoke } from './spokes.ts';
import { assertScratchDirsRemoved } from '../support/temp-dirs.ts';
import { waitFor, type WaitOptions } from '../support/wait.ts';

/** What a cluster test receives. */
export interface ClusterTestContext {
  readonly cluster: Cluster;
  /** A namespace created for this test alone. */
  readonly namespace: string;
  readonly t: TestContext;
}

/** A cluster shared by the tests of one file. */
export interface ClusterFixture {
  /** Declares a test that runs in its own namespace of the file's cluster. */
  test(name: string, body: (context: ClusterTestContext) => Promise<void>, options?: { timeout?: number }): void;
}

/**
 * Starts a cluster before the file's tests and stops it after them. The first
 * start may build the binaries; `npm test` builds them beforehand in test/setup.ts.
 */
export function useCluster(options: ClusterOptions = {}): ClusterFixture {
  let cluster: Cluster | undefined;
  before(async () => {
    cluster = await startCluster(options);
  }, { timeout: 60 * 60_000 });
  after(async () => {
    await cluster?.stop();
    assertScratchDirsRemoved();
  });
  return {
    test(name, body, testOptions = {}) {
      test(name, { timeout: testOptions.timeout ?? 120_000 }, async (t) => {
        if (!cluster) throw new Error('the test cluster did not start (see the before hook)');
        const namespace = await cluster.newNamespace();
        try {
          await body({ cluster, namespace, t });
        } catch (error) {
          // The reason a controller did not act is usually in its log, not in the assertion.
          process.stderr.write(`\n${name} failed; cluster logs (state in ${cluster.stateDir}):\n${await cluster.logs()}\n`);
          throw error;
        }
        // Deleting exercises the namespace controller; the test does not wait for it.
        await cluster.admin.send('DELETE', `/api/v1/namespaces/${namespace}`);
      });
    },
  };
}

/** What an Argo CD test receives. */
export interface ArgoCdTestContext extends ClusterTestContext {
  readonly argocd: ArgoCD;
}

/** A cluster with Argo CD, shared by the tests of one file. */
export interface ArgoCdFixture {
  /** Declares a test that runs in its own namespace of the file's cluster. */
  test(name: string, body: (context: ArgoCdTestContext) => Promise<void>, options?: { timeout?: number }): void;
}

/**
 * Starts a cluster and Argo CD on it before the file's tests and stops both
 * after them; a failing test prints the cluster's and Argo CD's logs and the
 * status of every Application.
 */
export function useArgoCD(options: ClusterOptions & ArgoCdOptions = {}): ArgoCdFixture {
  let cluster: Cluster | undefined;
  let argocd: ArgoCD | undefined;
  before(async () => {
    const { apiServer, ...clusterOptions } = options;
    cluster = await startCluster(clusterOptions);
    argocd = await startArgoCD(cluster, apiServer === undefined ? {} : { apiServer });
  }, { timeout: 60 * 60_000 });
  after(async () => {
    await argocd?.stop();
    await cluster?.stop();
    assertScratchDirsRemoved();
  });
  return {
    test(name, body, testOptions = {}) {
      test(name, { timeout: testOptions.timeout ?? 240_000 }, async (t) => {
        if (!cluster || !argocd) throw new Error('the test cluster or Argo CD did not start (see the before hook)');
        const namespace = await cluster.newNamespace();
        try {
          await body({ cluster, argocd, namespace, t });
        } catch (error) {
          process.stderr.write(
            `\n${name} failed; cluster logs (state in ${cluster.stateDir}):\n${await cluster.logs()}\n` +
              `Argo CD:\n${await argocd.logs()}\n`,
          );
          throw error;
        }
        // Applications have no finalizer: deleting them leaves their objects to the namespace deletion.
        for (const app of await argocd.listApplications()) {
          const destination = app.spec?.['destination'] as { namespace?: string } | undefined;
          if (destination?.namespace === namespace) await argocd.deleteApplication(app.metadata?.name ?? '');
        }
        await cluster.admin.send('DELETE', `/api/v1/namespaces/${namespace}`);
      });
    },
  };
}

/** What a hub-and-spokes test receives. */
export interface SpokesTestContext {
  /** The cluster Argo CD runs in. */
  readonly hub: Cluster;
  readonly argocd: ArgoCD;
  /** The registered spokes, in the order of `spokeNames` (default `spoke-a`, `spoke-b`). */
  readonly spokes: readonly Spoke[];
  /** A namespace of the same name, created for this test alone in the hub and in every spoke. */
  readonly namespace: string;
  readonly t: TestContext;
}

/** A hub with Argo CD and registered spokes, shared by the tests of one file. */
export interface SpokesFixture {
  /** Declares a test that runs in its own namespace (the same name in every cluster). */
  test(name: string, body: (context: SpokesTestContext) => Promise<void>, options?: { timeout?: number }): void;
}

/** Creates the namespace `name` and waits for its default ServiceAccount (pods need it). */
async function createNamespace(cluster: Cluster, name: string): Promise<void> {
  await cluster.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  await waitFor(`ServiceAccount ${name}/default`, async () =>
    (await cluster.admin.send('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200,
  );
}

/**
 * Starts a hub with Argo CD and the spokes (side by side, see `startHubAndSpokes`), each spoke
 * registered as `argocd cluster add` registers one, before the file's tests; stops them after. A
 * failing test prints every cluster's and Argo CD's logs and every Application's status.
 */
export function useSpokes(options: HubAndSpokesOptions = {}): SpokesFixture {
  let system: HubAndSpokes | undefined;
  before(async () => {
    system = await startHubAndSpokes(options);
  }, { timeout: 60 * 60_000 });
  after(async () => {
    await system?.stop();
    assertScratchDirsRemoved();
  });
  return {
    test(name, body, testOptions = {}) {
      test(name, { timeout: testOptions.timeout ?? 240_000 }, async (t) => {
        if (!system) throw new Error('the hub, Argo CD or a spoke did not start (see the before hook)');
        const { hub, argocd, spokes } = system;
        const namespace = await hub.newNamespace();
        await Promise.all(spokes.map((spoke) => createNamespace(spoke.cluster, namespace)));
        try {
          await body({ hub, argocd, spokes, namespace, t });
        } catch (error) {
          process.stderr.write(`\n${name} failed; logs of the hub, Argo CD and the spokes:\n${await system.logs()}\n`);
          throw error;
        }
        for (const app of await argocd.listApplications()) {
          const destination = app.spec?.['destination'] as { namespace?: string } | undefined;
          if (destination?.namespace === namespace) await argocd.deleteApplication(app.metadata?.name ?? '');
        }
        for (const cluster of [hub, ...spokes.map((spoke) => spoke.cluster)]) {
          await cluster.admin.send('DELETE', `/api/v1/namespaces/${namespace}`);
        }
      });
    },
  };
}

/** Creates an object through its collection path and returns what the server stored. */
export function create<T extends KubeObject = KubeObject>(client: ApiClient, collection: string, object: KubeObject): Promise<T> {
  return client.request<T>('POST', collection, object);
}

/** Lists pods of a namespace matching a label selector. */
export async function listPods(client: ApiClient, namespace: string, selector: string): Promise<KubeObject[]> {
  const list = await client.request<KubeList>(
    'GET',
    `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(selector)}`,
  );
  return list.items;
}

/** True when a pod has the condition Ready=True. */
export function podIsReady(pod: KubeObject): boolean {
  const conditions = (pod.status?.['conditions'] ?? []) as { type: string; status: string }[];
  return conditions.some((condition) => condition.type === 'Ready' && condition.status === 'True');
}

/** Waits until a Deployment has rolled out completely: all replicas updated, ready and available, none old. */
export function waitForDeploymentRollout(
  client: ApiClient,
  namespace: string,
  name: string,
  options: WaitOptions = {},
): Promise<KubeObject> {
  return waitFor(
    `Deployment ${namespace}/${name} to roll out`,
    async () => {
      const deployment = await client.request('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`);
      const status = (deployment.status ?? {}) as Record<string, number | undefined>;
      const replicas = (deployment.spec?.['replicas'] as number | undefined) ?? 1;
      const done =
        status['observedGeneration'] === deployment.metadata?.generation &&
        status['updatedReplicas'] === replicas &&
        status['readyReplicas'] === replicas &&
        status['availableReplicas'] === replicas &&
        (status['replicas'] ?? 0) === replicas;
      return done ? deployment : undefined;
    },
    { timeoutMs: 60_000, ...options },
  );
}

/** A minimal pod template: kwok never runs the image, so any name does. */
export function podTemplate(labels: Record<string, string>, annotations: Record<string, string> = {}): KubeObject {
  return {
    metadata: { labels, annotations },
    spec: {
      // Short grace: the fake kubelet honours the grace period before removing a pod.
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
    },
  };
}
