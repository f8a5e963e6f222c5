/**
 * One cluster's pipeline, built as a unit: the cache and the indexes beside
 * it, the restart limits, the writes, the workqueue, the reconciler and the
 * reflectors the watch table asks for. It is handed the process-wide parts
 * it uses (the metrics, the write fence, the Event recorder, the Git
 * write-back) and owns nothing process-wide, so that a hub can build one per
 * cluster. Building starts nothing: see lifecycle.ts.
 */
import type { Logger } from 'pino';
import type { HashKey } from '../../core/index.ts';
import { ClusterView } from '../cache/cluster-view.ts';
import { ClockSkew } from '../clock-skew.ts';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import type { EventRecorder } from '../events.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Fence } from '../kube/fence.ts';
import type { Reflector } from '../kube/reflector.ts';
import { WorkQueue } from '../queue.ts';
import { Reconciler } from '../reconciler.ts';
import { RecordCache, createRecordStore } from '../record/store.ts';
import { createScope } from '../scope.ts';
import { TokenBucket } from '../token-bucket.ts';
import type { ClusterWriteBack } from '../writeback/engine.ts';
import type { PipelineMetrics } from './metrics.ts';
import { reconcileOptions } from './reconcile-options.ts';
import { createReflectors } from './reflectors.ts';
import { createSkewSampler, type SkewSampler } from './skew-sampler.ts';
import type { HubScope } from '../hub/destinations.ts';
import { watchTable } from './watches.ts';
import { createClusterWrites, type WritesOverride } from './writes.ts';

/** What a pipeline is handed. */
export interface PipelineDeps {
  /** The cluster's client (cluster-client.ts); the pipeline closes it. */
  readonly client: KubeClient;
  /** The election's fence and the deadline of a fenced write (election.ts). */
  readonly fence: Fence;
  readonly writeTimeoutMs: number;
  readonly events: EventRecorder;
  /**
   * The Git write-back, as this cluster's workloads use it (in hub mode `forCluster`, fenced by this pipeline's
   * fence, ADR 0026); absent: no workload of this pipeline takes the `git` strategy.
   */
  readonly writeBack: ClusterWriteBack | undefined;
  /** The metrics, bound to this pipeline's cluster (metrics.ts `clusterMetrics`). */
  readonly metrics: PipelineMetrics;
  readonly clock: Clock;
  readonly log: Logger;
  readonly hashKey: HashKey | undefined;
  /** Where the restart records live: the controller's own namespace. */
  readonly recordNamespace: string;
  /**
   * Argo CD runs elsewhere: its Applications and AppProjects are read through `client` (the hub's), and only
   * the Applications deploying to this pipeline's cluster are kept (`scope`). In hub mode (ADR 0019, `scope.id`
   * set) the records are read and written through it too and name this cluster; with the spoke option (ADR
   * 0025, no `scope.id`) they stay in the pipeline's own cluster, and the hub's watches are left out of
   * liveness (a restart of this process mends no hub). Absent: the pipeline's own client, records that name no
   * cluster, every Application.
   */
  readonly hub?: { readonly client: KubeClient; readonly scope: HubScope };
  readonly writes: WritesOverride | undefined;
}

/** A built pipeline; nothing runs yet. */
export interface ClusterPipeline {
  readonly client: KubeClient;
  readonly view: ClusterView;
  readonly queue: WorkQueue;
  readonly reconciler: Reconciler;
  readonly reflectors: readonly Reflector<unknown>[];
  /** The reflectors whose silence fails /healthz: all but the hub's with the spoke option (see `PipelineDeps.hub`). */
  readonly liveness: readonly Reflector<unknown>[];
  /** The API server's clock as learnt from fresh writes, and what feeds it. */
  readonly skew: ClockSkew;
  readonly sampler: SkewSampler;
  /** Reconciles running now. */
  inFlight(): number;
}

/** Builds the pipeline, each part after the parts it uses. */
export function createClusterPipeline(config: ControllerConfig, deps: PipelineDeps): ClusterPipeline {
  const { client, clock, log, metrics } = deps;
  // The cache, and what lives beside it: namespace labels for the scope, the restart records, the clock skew.
  const view = new ClusterView();
  const namespaceLabels = new Map<string, Readonly<Record<string, string>>>();
  const inScope = createScope({ ignore: config.ignoreNamespaces, selector: config.namespaceSelector }, (ns) => namespaceLabels.get(ns));
  const skew = new ClockSkew();
  const sampler = createSkewSampler(skew, { clock, log, maxClockSkew: config.maxClockSkew });
  const recordCache = new RecordCache();
  const homeClient = deps.hub?.client ?? client;
  // In hub mode the records live in the hub; with the spoke option (no cluster id) in this cluster (ADR 0025).
  const recordsClient = deps.hub?.scope.id === undefined ? client : deps.hub.client;
  const records = config.dryRun ? undefined : createRecordStore({
    client: recordsClient, cluster: deps.hub?.scope.id, cache: recordCache, namespace: deps.recordNamespace, log, fence: deps.fence, timeoutMs: deps.writeTimeoutMs,
    // Another install may keep its records in the same namespace: only those of watched namespaces are ours.
    watches: (namespace) => config.namespaces === undefined || config.namespaces.includes(namespace),
  });
  // The limits and the writes: a refused write gives its restart's token back.
  const restartStarts = new TokenBucket({ ratePerSecond: config.restartRate, burst: config.restartBurst, clock });
  const writes = createClusterWrites({
    client,
    fence: deps.fence,
    timeoutMs: deps.writeTimeoutMs,
    dryRun: config.dryRun,
    override: deps.writes,
    log,
    events: deps.events,
    writeFailures: metrics.controller.writeFailures,
    refundRestart: () => restartStarts.refund(),
  });
  // The queue and the reconciler need each other, as in client-go's controller: the queue runs reconciles, and a
  // write-back's answer wakes its workload. The queue comes first, so `wake` is handed a queue that exists; the
  // queue calls `process` only once started (lifecycle.ts, after every first list), when the reconciler does.
  let inFlight = 0;
  const queue = new WorkQueue({
    metrics: metrics.workqueue,
    concurrency: config.workers,
    clock,
    // A restart in progress is looked at again every --restart-check-interval: a new change goes first (issue 23's
    // reaction under load), and the check at most 5 s later.
    deferrable: (key) => reconciler.isRestarting(key),
    process: async (key) => {
      inFlight++;
      const started = clock.now();
      let result = 'error';
      try {
        const outcome = await reconciler.reconcile(key);
        result = 'ok';
        return outcome;
      } finally {
        inFlight--;
        metrics.controller.reconcileSeconds.observe({ result }, (clock.now() - started) / 1000);
      }
    },
    onError: (key, error, attempt) => log.warn({ err: error, workload: key, attempt }, 'reconcile failed; retrying with backoff'),
  });
  const reconciler = new Reconciler({
    view,
    writes,
    events: deps.events,
    clock,
    log,
    inScope,
    options: reconcileOptions(config, deps.hashKey !== undefined),
    // A workload that finds no token is requeued for when the next one accrues: a worker never waits.
    startLimiter: { tryTake: () => restartStarts.tryTake(), retryAfterMs: Math.ceil(1000 / config.restartRate) },
    skew,
    ...(deps.writeBack === undefined ? {} : { writeBack: deps.writeBack }),
    // A write-back's answer wakes its workload at once.
    wake: (key) => queue.add(key),
    ...(records === undefined ? {} : { records }),
    metrics: metrics.controller,
    fleetMetrics: metrics.fleet,
    writeBackMetrics: metrics.writeBack,
  });
  const watches = watchTable(config, deps.recordNamespace, { view, recordCache, namespaceLabels, skew: sampler, restarts: reconciler, clock, hashKey: deps.hashKey }, deps.hub?.scope);
  const reflectorDeps = { clock, log, metrics: metrics.controller, enqueue: (key: string) => queue.add(key) };
  // The hub's rows (Argo CD's objects; in hub mode the records too) through the hub's client, the others through the cluster's.
  const fromHub = createReflectors(watches.filter((w) => w.home === true), config, { ...reflectorDeps, client: homeClient });
  const own = createReflectors(watches.filter((w) => w.home !== true), config, { ...reflectorDeps, client });
  const reflectors = [...fromHub, ...own];
  // In hub mode the hub is the process's own cluster; with the spoke option it is another, which a restart does not mend.
  const liveness = deps.hub !== undefined && deps.hub.scope.id === undefined ? own : reflectors;
  return { client, view, queue, reconciler, reflectors, liveness, skew, sampler, inFlight: () => inFlight };
}
