/**
 * The hub's own metrics (ADR 0019), on the process registry:
 * `driftless_cluster_up{cluster}` (1 once the cluster's first lists completed
 * and no watch is silent past its bound; 0 while it cannot be reached or
 * listed), and `driftless_cluster_refused{secret,reason}` (1 per cluster
 * Secret the hub does not act on). Both are read at scrape time.
 */
import { Gauge, type Registry } from 'prom-client';

/** What the gauges read. */
export interface HubMetricSources {
  clusters(): readonly { readonly name: string; readonly up: boolean }[];
  refused(): readonly { readonly secret: string; readonly reason: string }[];
}

/** Registers the hub's gauges. */
export function registerHubMetrics(registry: Registry, sources: HubMetricSources): void {
  new Gauge({
    name: 'driftless_cluster_up',
    help: 'Per cluster the hub manages: 1 once its first lists completed and its watches are alive, else 0.',
    labelNames: ['cluster'],
    registers: [registry],
    collect() {
      this.reset();
      for (const cluster of sources.clusters()) this.set({ cluster: cluster.name }, cluster.up ? 1 : 0);
    },
  });
  new Gauge({
    name: 'driftless_cluster_refused',
    help: 'Per Argo CD cluster Secret the hub does not act on: 1, with the reason (a Warning Event on the Secret says more).',
    labelNames: ['secret', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const refusal of sources.refused()) this.set({ secret: refusal.secret, reason: refusal.reason }, 1);
    },
  });
}
