/**
 * Everything the demo runs, started the way the tests start it: the local
 * cluster (test/cluster/harness.ts), the real Argo CD with the Driftless
 * sidecar reading the shipped manifests/plugin/ (test/cluster/argocd.ts), a
 * second cluster registered in Argo CD as `argocd cluster add` registers one
 * (test/cluster/spokes.ts), and the real `driftless controller` process
 * (test/controller/support/process.ts) in hub mode (`--argocd-clusters`), with
 * the hash key of the sidecar, as the shipped manifests share one key, and
 * the real Argo Rollouts controller for the canary of the write-back scene.
 */
import { join } from 'node:path';
import { argoCdNamespace, startArgoCD, type ArgoCD } from '../test/cluster/argocd.ts';
import { ensureArgoCdBinaries, ensureClusterBinaries } from '../test/cluster/build.ts';
import { startCluster, type Cluster } from '../test/cluster/harness.ts';
import { registerSpoke, type Spoke } from '../test/cluster/spokes.ts';
import { waitFor } from '../test/support/wait.ts';
import { startControllerProcess, type ControllerProcess } from '../test/controller/support/process.ts';
import { ensureTools, type Tools } from '../test/tools.ts';
import type { Narrator } from './narrator.ts';
import type { Teardown } from './teardown.ts';

/** The binaries the demo runs, all from the cache `npm run setup` fills. */
export interface DemoBinaries {
  /** The cluster's multi-call binary; `<k8s> kubectl …` is kubectl. */
  readonly k8s: string;
  readonly tools: Tools;
}

/** What runs while the demo runs. */
export interface DemoEnvironment {
  readonly cluster: Cluster;
  readonly argocd: ArgoCD;
  readonly controller: ControllerProcess;
  /**
   * The second cluster, registered in Argo CD by a cluster Secret; only its workloads run there (the
   * controller reaches it from the first cluster with the Secret's credentials).
   */
  readonly spoke: Spoke;
  /** The namespace the demo's Application deploys to (the controller watches it). */
  readonly namespace: string;
}

/** The Argo CD cluster name of the second cluster (`destination.name`). */
export const spokeName = 'edge';
/** Argo CD's name for the cluster it runs in (`https://kubernetes.default.svc`). */
export const hubName = 'in-cluster';

/**
 * Makes sure every binary is built, exactly as `npm run setup` does (so a demo
 * run also prepares `npm test`): kustomize and helm, the cluster, Argo CD.
 * Seconds when cached; the cold build of the cluster and Argo CD is long, and
 * its progress goes to stderr.
 */
export async function ensureDemoBinaries(): Promise<DemoBinaries> {
  const tools = await ensureTools();
  const cluster = await ensureClusterBinaries();
  await ensureArgoCdBinaries();
  return { k8s: cluster.k8s, tools };
}

/** Creates a namespace with a fixed name and waits for its `default` ServiceAccount (pods need it). */
async function createNamespace(cluster: Cluster, name: string): Promise<void> {
  await cluster.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  await waitFor(`ServiceAccount ${name}/default`, async () => (await cluster.admin.send('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200);
}

/**
 * Starts the second cluster with an audit log (the hub scene shows who evicted there) and the demo's
 * namespace. `registerSpoke` then registers it once Argo CD's namespace exists.
 */
async function startSpoke(teardown: Teardown, namespace: string): Promise<Cluster> {
  // Tracked before Argo CD, so that Argo CD (which watches it) stops first.
  const spoke = await teardown.track('the second cluster', startCluster({ handleSignals: false, auditLog: true }), (started) => started.stop());
  await createNamespace(spoke, namespace);
  return spoke;
}

/**
 * Starts the cluster, then Argo CD and the second cluster side by side (both mostly wait on
 * processes becoming ready), registers the second cluster, then starts the controller; each part
 * registered with `teardown` as soon as it runs.
 */
export async function startEnvironment(narrator: Narrator, teardown: Teardown, namespace: string): Promise<DemoEnvironment> {
  // The demo stops everything itself on a signal, the cluster last.
  const cluster = await teardown.track('the cluster', startCluster({ handleSignals: false, rolloutsController: true }), (started) => started.stop());
  narrator.say(`cluster ready: kube-apiserver ${cluster.server}, one fake node (kwok runs the pods); Argo CD calls it ${hubName}`);
  await createNamespace(cluster, namespace);

  const spokeStart = startSpoke(teardown, namespace);
  const argocdStart = teardown.track('Argo CD', startArgoCD(cluster), (started) => started.stop());
  // allSettled: neither start may be left running unseen when the other fails (the teardown awaits both).
  const [spokeResult, argocdResult] = await Promise.allSettled([spokeStart, argocdStart]);
  if (spokeResult.status === 'rejected') throw spokeResult.reason;
  if (argocdResult.status === 'rejected') throw argocdResult.reason;
  const argocd = argocdResult.value;
  narrator.say('Argo CD v3.6.1 ready: application controller, repo server, and the driftless sidecar (argocd-cmp-server with manifests/plugin/plugin.yaml)');
  // As `argocd cluster add` does: the `argocd-manager` ServiceAccount in the second cluster, its token and the
  // cluster's CA in a cluster Secret in Argo CD's namespace. Argo CD and the controller both find the cluster by it.
  const spoke = await registerSpoke(cluster, spokeResult.value, { name: spokeName });
  narrator.say(
    `second cluster ${spokeName} ready (kube-apiserver ${spoke.server}, started beside Argo CD) and registered as \`argocd cluster add\` does: ` +
      `ServiceAccount ${spoke.user.split(':').slice(2).join('/')} there, its token and the cluster's CA in the cluster Secret ${argoCdNamespace}/${spoke.secretName} (never shown)`,
  );

  const controller = await teardown.track(
    'the driftless controller',
    startControllerProcess(cluster, {
      args: [
        // Hub mode: one pipeline per cluster of Argo CD's cluster Secrets, and one for its own cluster;
        // --namespaces scopes each of them to the demo's namespace.
        '--argocd-clusters',
        `--argocd-namespace=${argoCdNamespace}`,
        `--namespaces=${namespace}`,
        `--hash-key-file=${argocd.hashKeyFile}`,
        // The write-back scene: a 1 s batch window instead of 5 s (nothing else changes in the demo's
        // repository meanwhile), and the clones in the cluster's temp dir, removed with it.
        '--write-back-batch-window=1s',
        `--write-back-work-dir=${join(cluster.stateDir, 'write-back')}`,
      ],
    }),
    async (started) => {
      process.off('exit', killController);
      await started.stop();
    },
  );
  // The controller is a plain child process; if the demo exits without its teardown, it must not outlive it.
  function killController(): void {
    void controller.kill();
  }
  process.on('exit', killController);
  await Promise.all([hubName, spokeName].map((name) =>
    controller.waitForLog(`the initial reconcile of ${name}`, (line) => line.msg === 'initial reconcile finished' && line['cluster'] === name, { timeoutMs: 120_000 })));
  narrator.say(
    `driftless controller ready in ${hubName} (pid ${controller.pid}, hub mode: --argocd-clusters reads Argo CD's cluster Secrets; ` +
      `one pipeline each for ${hubName} and ${spokeName}, namespace ${namespace}; the sidecar's hash key; Git write-back batched over 1 s)`,
  );
  return { cluster, argocd, controller, spoke, namespace };
}
