/**
 * Turns the watch table into reflectors: each row lists and watches its
 * collection with the controller's timing and page size, counts its lists
 * and watch restarts, and hands the keys its handler returns to `enqueue`.
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import type { KubeClient } from '../kube/client.ts';
import { Reachability, Reflector, type ReflectorTiming } from '../kube/reflector.ts';
import { collectionPath } from '../kube/resources.ts';
import type { ClusterControllerMetrics } from '../metrics.ts';
import type { AnyWatch } from './watches.ts';

/** The reflectors' settings. */
export type ReflectorSettings = Pick<ControllerConfig, 'watchSilenceTimeout' | 'relistPeriod' | 'listPageSize' | 'streamingList'>;

/** What the reflectors need. */
export interface ReflectorDeps {
  readonly client: KubeClient;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: Pick<ClusterControllerMetrics, 'relists' | 'watchRestarts'>;
  /** Where the keys a change returns go: the workqueue. */
  enqueue(key: string): void;
}

/** One reflector per row, in the table's order; none started. */
export function createReflectors(watches: readonly AnyWatch[], settings: ReflectorSettings, deps: ReflectorDeps): Reflector<unknown>[] {
  const timing: ReflectorTiming = {
    silenceMs: settings.watchSilenceTimeout.ms,
    relistMs: settings.relistPeriod.ms,
    backoffBaseMs: 500,
    backoffMaxMs: 30_000,
  };
  // One API server for every row: the first reflector it answers again wakes the others from their backoff.
  const reachability = new Reachability();
  return watches.map((watch) => {
    const { resource, namespace } = watch;
    const name = `${resource.plural}${namespace === undefined ? '' : ` in ${namespace}`}`;
    return new Reflector<unknown>({
      name,
      path: collectionPath(resource, namespace),
      pageSize: settings.listPageSize,
      streamingList: settings.streamingList,
      labelSelector: watch.labelSelector,
      fieldSelector: watch.fieldSelector,
      ...(watch.offWhenForbidden === undefined ? {} : { offWhenForbidden: watch.offWhenForbidden }),
      reduce: (raw, previous) => watch.reduce(raw, previous),
    }, {
      client: deps.client,
      timing,
      clock: deps.clock,
      log: deps.log,
      reachability,
      onChange: (_key, previous, next) => {
        for (const key of watch.keys(previous, next)) deps.enqueue(key);
      },
      hooks: {
        onList: () => deps.metrics.relists.inc({ resource: resource.plural }),
        onWatch: () => deps.metrics.watchRestarts.inc({ resource: resource.plural }),
      },
    });
  });
}

/** What liveness reads of a reflector, whatever its summaries. */
export interface WatchLiveness {
  readonly synced: boolean;
  readonly lastActivity: number;
  readonly absent: boolean;
  readonly disabled: boolean;
  readonly spec: { readonly name: string };
}

/** A watch silent past `boundMs` (the reflector itself restarts one after half of it), for /healthz. */
export function silentWatch(reflectors: readonly WatchLiveness[], now: number, boundMs: number): string | undefined {
  const stale = reflectors.find((r) => r.synced && now - r.lastActivity > boundMs && !r.absent && !r.disabled);
  return stale === undefined ? undefined : `watch of ${stale.spec.name} silent for ${Math.round((now - stale.lastActivity) / 1000)}s`;
}
