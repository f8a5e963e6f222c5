/**
 * The spoke option (`--argocd-kubeconfig`, ADR 0025): the controller runs in
 * one cluster and Argo CD in another (the hub). This connects to the hub with
 * the second kubeconfig — a client of its own, with its own `--kube-qps`
 * budget, used only to read — and names this cluster as the hub's Argo CD
 * does, so the pipeline keeps only the Applications deploying here. The
 * pipeline's records, Events and writes stay in its own cluster (the hub
 * scope has no cluster id).
 */
import type { Counter } from 'prom-client';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import { loadKubeConfig, type KubeClient } from '../kube/client.ts';
import { KubeConfigError } from '../kube/errors.ts';
import { connectCluster } from './cluster-client.ts';
import type { HubScope } from '../hub/destinations.ts';

/** Argo CD's cluster, as a pipeline is handed it (`PipelineDeps.hub`). */
export interface ArgoCdHub {
  readonly client: KubeClient;
  readonly scope: HubScope;
}

/** The settings the spoke option reads. */
export type ArgoCdHubSettings = Pick<ControllerConfig, 'argocdKubeconfig' | 'argocdDestinationServer' | 'argocdDestinationName' | 'kubeQps' | 'kubeBurst' | 'kubeRequestTimeout'>;

/**
 * Connects to the hub when `--argocd-kubeconfig` is given; undefined otherwise (Argo CD runs here).
 * @throws {KubeConfigError} naming the flag and the file when the kubeconfig cannot be used (never its content).
 */
export function connectArgoCdHub(config: ArgoCdHubSettings, deps: { readonly clock: Clock; readonly apiRequests: Counter<'verb' | 'code'> }): ArgoCdHub | undefined {
  if (config.argocdKubeconfig === undefined) return undefined;
  let kubeConfig;
  try {
    kubeConfig = loadKubeConfig({ kubeconfig: [config.argocdKubeconfig] });
  } catch (error) {
    if (error instanceof KubeConfigError) throw new KubeConfigError(`--argocd-kubeconfig: ${error.message}`, { cause: error });
    throw error;
  }
  return {
    client: connectCluster(kubeConfig, config, deps),
    // No id: the restart records stay in this cluster (ADR 0025), unlike hub mode's (ADR 0019).
    scope: { id: undefined, server: config.argocdDestinationServer ?? '', name: config.argocdDestinationName ?? '' },
  };
}
