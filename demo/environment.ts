/**
 * Everything the demo runs, started the way the tests start it: the local
 * cluster (test/cluster/harness.ts), the real Argo CD with the Driftless
 * sidecar reading the shipped manifests/plugin/ (test/cluster/argocd.ts), and
 * the real `driftless controller` process (test/controller/support/process.ts),
 * with the hash key of the sidecar, as the shipped manifests share one key, and
 * the real Argo Rollouts controller for the canary of the write-back scene.
 */
import { join } from 'node:path';
import { startArgoCD, type ArgoCD } from '../test/cluster/argocd.ts';
import { ensureArgoCdBinaries, ensureClusterBinaries } from '../test/cluster/build.ts';
import { startCluster, type Cluster } from '../test/cluster/harness.ts';
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
  /** The namespace the demo's Application deploys to (the controller watches it). */
  readonly namespace: string;
}

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
 * Starts the cluster, Argo CD and the controller, one after the other, each
 * registered with `teardown` as soon as it runs.
 */
export async function startEnvironment(narrator: Narrator, teardown: Teardown, namespace: string): Promise<DemoEnvironment> {
  // The demo stops everything itself on a signal, the cluster last.
  const cluster = await teardown.track('the cluster', startCluster({ handleSignals: false, rolloutsController: true }), (started) => started.stop());
  narrator.say(`cluster ready: kube-apiserver ${cluster.server}, one fake node (kwok runs the pods)`);
  await createNamespace(cluster, namespace);

  const argocd = await teardown.track('Argo CD', startArgoCD(cluster), (started) => started.stop());
  narrator.say('Argo CD v3.6.1 ready: application controller, repo server, and the driftless sidecar (argocd-cmp-server with manifests/plugin/plugin.yaml)');

  const controller = await teardown.track(
    'the driftless controller',
    startControllerProcess(cluster, {
      args: [
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
  await controller.ready();
  narrator.say(`driftless controller ready (pid ${controller.pid}, watching namespace ${namespace}, the sidecar's hash key; Git write-back batched over 1 s)`);
  return { cluster, argocd, controller, namespace };
}
