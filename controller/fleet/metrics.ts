/**
 * Fleet safety's metrics, registered on the controller's own registry (see
 * controller/metrics.ts): halted restarts by kind and namespace, and whether
 * the fleet-wide breaker is open — a gauge read at scrape time in O(1).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { CLUSTER_LABEL, setPerCluster, type ClusterReading, type CounterHandle } from '../metrics.ts';

/** The fleet-safety metrics. Labels are kinds, namespaces and (hub mode) clusters, never a config's name or value. */
export interface FleetMetrics {
  /** Restarts halted by the health gate. */
  readonly restartsHalted: Counter<'kind' | 'namespace' | typeof CLUSTER_LABEL>;
  /** Restart starts deferred, by cause: rate, min-restart-interval, pause-period, breaker. */
  readonly restartsDeferred: Counter<'cause' | typeof CLUSTER_LABEL>;
}

/** A pipeline's view of the fleet metrics (bound to its cluster in hub mode). */
export interface ClusterFleetMetrics {
  readonly restartsHalted: CounterHandle<'kind' | 'namespace'>;
  readonly restartsDeferred: CounterHandle<'cause'>;
}

/** Registers the fleet metrics; `breakerOpen` is read at scrape time, 1 or 0 per cluster (each pipeline has its own breaker). */
export function createFleetMetrics(registry: Registry, breakerOpen: () => readonly ClusterReading[]): FleetMetrics {
  new Gauge({
    name: 'driftless_restart_breaker_open', help: '1 while the fleet-wide circuit breaker pauses every restart (in hub mode: every restart of its cluster).',
    labelNames: [CLUSTER_LABEL] as const, registers: [registry], collect() { setPerCluster(this, breakerOpen()); },
  });
  return {
    restartsHalted: new Counter({ name: 'driftless_restarts_halted_total', help: 'Restarts halted because replacement pods were not Ready within --health-gate-timeout.', labelNames: ['kind', 'namespace', CLUSTER_LABEL] as const, registers: [registry] }),
    restartsDeferred: new Counter({ name: 'driftless_restarts_deferred_total', help: 'Reconciles that deferred a restart start, by cause (rate, min-restart-interval, pause-period, breaker).', labelNames: ['cause', CLUSTER_LABEL] as const, registers: [registry] }),
  };
}
