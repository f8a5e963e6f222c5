/**
 * Fleet safety's metrics, registered on the controller's own registry (see
 * controller/metrics.ts): halted restarts by kind and namespace, and whether
 * the fleet-wide breaker is open — a gauge read at scrape time in O(1).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The fleet-safety metrics. Labels are kinds and namespaces, never a config's name or value. */
export interface FleetMetrics {
  /** Restarts halted by the health gate. */
  readonly restartsHalted: Counter<'kind' | 'namespace'>;
  /** Restart starts deferred, by cause: rate, min-restart-interval, pause-period, breaker. */
  readonly restartsDeferred: Counter<'cause'>;
}

/** Registers the fleet metrics; `breakerOpen` is read at scrape time. */
export function createFleetMetrics(registry: Registry, breakerOpen: () => boolean): FleetMetrics {
  new Gauge({ name: 'driftless_restart_breaker_open', help: '1 while the fleet-wide circuit breaker pauses every restart.', registers: [registry], collect() { this.set(breakerOpen() ? 1 : 0); } });
  return {
    restartsHalted: new Counter({ name: 'driftless_restarts_halted_total', help: 'Restarts halted because replacement pods were not Ready within --health-gate-timeout.', labelNames: ['kind', 'namespace'] as const, registers: [registry] }),
    restartsDeferred: new Counter({ name: 'driftless_restarts_deferred_total', help: 'Reconciles that deferred a restart start, by cause (rate, min-restart-interval, pause-period, breaker).', labelNames: ['cause'] as const, registers: [registry] }),
  };
}
