/**
 * Runs a built pipeline: its reflectors fill the cache, and only once every
 * first list has completed and this replica leads does the queue start, with
 * every workload enqueued — a restarted controller sees the whole cluster
 * before it decides anything. Then a level-triggered resync, and on stop a
 * bounded drain of the reconciles in flight.
 */
import type { Logger } from 'pino';
import { sleep, type Clock, type Timer } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import type { HealthSources } from '../http.ts';
import type { ClusterPipeline } from './pipeline.ts';
import { silentWatch } from './reflectors.ts';

/** The lifecycle's settings. */
export type LifecycleSettings = Pick<ControllerConfig, 'resyncPeriod' | 'watchSilenceTimeout'>;

/** A pipeline whose watches run. */
export interface RunningPipeline {
  /** Starts reconciling once the caches are synced and `leading` resolves; resolves then. */
  reconcileWhen(leading: Promise<void>): Promise<void>;
  /** /readyz: every first list completed (before any stop); /healthz: no watch silent past its bound. */
  readonly health: HealthSources;
  /** Stops taking work and waits for the reconciles in flight, at most `budgetMs`; false when they did not finish. */
  drain(budgetMs: number): Promise<boolean>;
  /** Stops the watches and closes the client (after `drain`). */
  close(): Promise<void>;
}

/** Starts the pipeline's reflectors. */
export function startPipeline(pipeline: ClusterPipeline, settings: LifecycleSettings, deps: { readonly clock: Clock; readonly log: Logger }): RunningPipeline {
  const { view, queue, reflectors } = pipeline;
  const { clock, log } = deps;
  let stopped = false;
  let allSynced = false;
  let resyncTimer: Timer | undefined;
  for (const reflector of reflectors) reflector.start();
  const cachesSynced = Promise.all(reflectors.map((r) => r.whenSynced())).then(() => {
    allSynced = !stopped;
    pipeline.sampler.start();
    if (allSynced) log.info({ workloads: view.workloadCount, configs: view.configCount, pods: view.podCount }, 'caches synced');
  });
  const enqueueAll = (): void => {
    for (const key of view.workloadKeys()) queue.add(key);
  };
  const reconcile = (): void => {
    if (stopped) return;
    log.info('reconciling');
    queue.start();
    enqueueAll();
    announceInitialReconcile(pipeline, deps, () => stopped);
    // Level-triggered backstop: every workload is looked at again each resync period.
    const resync = (): void => {
      enqueueAll();
      resyncTimer = clock.setTimer(resync, settings.resyncPeriod.ms);
    };
    resyncTimer = clock.setTimer(resync, settings.resyncPeriod.ms);
  };
  return {
    reconcileWhen: (leading) => Promise.all([cachesSynced, leading]).then(reconcile),
    health: {
      ready: () => allSynced,
      // Twice the silence timeout: the reflector itself restarts a watch silent for one.
      unhealthy: () => silentWatch(pipeline.liveness, clock.now(), 2 * settings.watchSilenceTimeout.ms),
    },
    async drain(budgetMs) {
      stopped = true;
      resyncTimer?.cancel();
      // In-flight reconciles get a bounded drain (every request has a deadline, but a reconcile makes several).
      const drainBound = new AbortController();
      const drained = await Promise.race([
        queue.shutdown().then(() => true),
        sleep(clock, budgetMs, drainBound.signal).then(() => false),
      ]);
      drainBound.abort();
      return drained;
    },
    async close() {
      await Promise.all(reflectors.map((r) => r.stop()));
      await pipeline.client.close();
    },
  };
}

/**
 * Says once, for operators and tests, that every workload has been looked at since the start: idle twice in
 * a row, 50 ms apart, because the queue may hand a key to a worker between two looks.
 */
function announceInitialReconcile(pipeline: ClusterPipeline, deps: { readonly clock: Clock; readonly log: Logger }, stopped: () => boolean): void {
  let idleLooks = 0;
  const announce = (): void => {
    if (stopped()) return;
    idleLooks = pipeline.inFlight() === 0 && pipeline.queue.depth === 0 ? idleLooks + 1 : 0;
    if (idleLooks >= 2) deps.log.info({ restarting: pipeline.reconciler.restartingCount }, 'initial reconcile finished');
    else deps.clock.setTimer(announce, 50);
  };
  deps.clock.setTimer(announce, 50);
}
