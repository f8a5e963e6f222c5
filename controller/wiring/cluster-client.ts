/**
 * A cluster's API client: every request of its pipeline (lists, watches,
 * writes, Events, records) shares one `--kube-qps`/`--kube-burst` budget and
 * is counted by verb and status code.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import { createKubeClient, type KubeClient } from '../kube/client.ts';
import type { CounterHandle } from '../metrics.ts';
import { TokenBucket } from '../token-bucket.ts';

/** The client's settings. */
export type ClusterClientSettings = Pick<ControllerConfig, 'kubeQps' | 'kubeBurst' | 'kubeRequestTimeout'>;

/** The User-Agent of replica `identity`: its requests tell apart from another replica's under one credential. */
export function userAgentOf(identity: string): string {
  return `driftless-controller (${identity})`;
}

/** A rate-limited client of the cluster `kubeConfig` names. */
export function connectCluster(kubeConfig: KubeConfig, settings: ClusterClientSettings, deps: { readonly clock: Clock; readonly apiRequests: CounterHandle<'verb' | 'code'>; readonly userAgent?: string }): KubeClient {
  const limiter = new TokenBucket({ ratePerSecond: settings.kubeQps, burst: settings.kubeBurst, clock: deps.clock });
  return createKubeClient(kubeConfig, limiter, (verb, code) => deps.apiRequests.inc({ verb, code: String(code) }), {
    requestTimeoutMs: settings.kubeRequestTimeout.ms,
    ...(deps.userAgent === undefined ? {} : { userAgent: deps.userAgent }),
  });
}
