/**
 * One destination cluster's pipeline in hub mode (ADR 0019): its own client
 * (from the cluster Secret's config, or the controller's own kubeconfig for
 * the in-cluster destination), its own Event recorder writing there, its own
 * reflectors, cache, queue, limits and breaker (wiring/pipeline.ts), and a
 * fence of its own inside the election's: when the cluster is removed or
 * reconnected the fence closes first, so not one more write reaches it, then
 * the reconciles in flight drain and the watches and client close.
 *
 * Its restart records stay in the hub (ADR 0019), read and written with the
 * hub's client and labelled with the cluster's id.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { HashKey } from '../../core/index.ts';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import { createEventRecorder, type EventRecorder } from '../events.ts';
import { FencedError, type Fence } from '../kube/fence.ts';
import { connectCluster, userAgentOf } from '../wiring/cluster-client.ts';
import { startPipeline } from '../wiring/lifecycle.ts';
import { clusterMetrics, type GaugeSources, type ProcessMetrics } from '../wiring/metrics.ts';
import { createClusterPipeline } from '../wiring/pipeline.ts';
import type { WritesOverride } from '../wiring/writes.ts';
import type { WriteBack } from '../writeback/engine.ts';
import { kubeConfigFor } from './connect.ts';
import type { Destination } from './destinations.ts';
import type { RunningCluster } from './registry.ts';

/** How long a removed or reconnected cluster's reconciles get to finish (their writes already fenced off). */
const CLUSTER_DRAIN_MS = 10_000;

/** What every cluster's pipeline shares: the process-wide parts. */
export interface SharedParts {
  readonly config: ControllerConfig;
  /** The controller's own kubeconfig: the in-cluster destination's. */
  readonly homeKubeConfig: KubeConfig;
  readonly fence: Fence;
  readonly writeTimeoutMs: number;
  /** Wraps a cluster's recorder so its restarts notify too. */
  notify(recorder: EventRecorder): EventRecorder;
  readonly writeBack: WriteBack;
  readonly metrics: ProcessMetrics;
  readonly gauges: GaugeSources;
  readonly isLeader: () => boolean;
  /** Resolves once this replica leads. */
  readonly leading: Promise<void>;
  readonly clock: Clock;
  readonly log: Logger;
  readonly hashKey: HashKey | undefined;
  readonly recordNamespace: string;
  readonly identity: string;
  readonly writes: WritesOverride | undefined;
}

/** The configuration of one cluster's pipeline: the cluster Secret's `namespaces` (within `--namespaces`, when both are given). */
export function clusterConfig(config: ControllerConfig, destination: Destination): ControllerConfig {
  const namespaces = destination.namespaces === undefined ? config.namespaces
    : config.namespaces === undefined ? destination.namespaces : destination.namespaces.filter((ns) => config.namespaces?.includes(ns));
  return Object.freeze({ ...config, namespaces });
}

/**
 * Argo CD's in-cluster address without credentials of its own is the cluster the controller runs in, reached
 * with the controller's own kubeconfig (`--kubeconfig`, else its service account) — as Argo CD uses its pod's
 * service account there. With a token or a username in the Secret, `kubeConfigFor` replaces the token as
 * Argo CD does.
 */
function ownCredentials(destination: Destination): boolean {
  const c = destination.cluster.connection;
  return destination.inCluster && c.bearerToken === undefined && c.username === undefined && c.password === undefined;
}

/** A fence that closes when the election's does, or when the cluster stops. */
function clusterFence(parent: Fence, name: string): Fence & { close(): void } {
  const own = new AbortController();
  return {
    signal: AbortSignal.any([parent.signal, own.signal]),
    check(what) {
      if (own.signal.aborted) throw new FencedError(`${what}: the cluster ${name} was removed or is reconnecting`);
      parent.check(what);
    },
    close: () => own.abort(new FencedError(`the cluster ${name} was removed or is reconnecting`)),
  };
}

/** Connects to the destination and starts its pipeline; throws when the connection cannot be built. */
export function startClusterPipeline(destination: Destination, shared: SharedParts): RunningCluster {
  const { clock } = shared;
  const log = shared.log.child({ cluster: destination.name });
  const config = clusterConfig(shared.config, destination);
  const kubeConfig = ownCredentials(destination) ? shared.homeKubeConfig : kubeConfigFor(destination.cluster);
  if (destination.cluster.warnings.length > 0) log.warn({ warnings: destination.cluster.warnings }, 'the cluster Secret has fields Argo CD ignores');
  // Every series of this pipeline carries `cluster`: Argo CD's name of the destination (ADR 0027).
  const metrics = clusterMetrics(shared.metrics, destination.name);
  const connection = { clock, apiRequests: metrics.controller.apiRequests, userAgent: userAgentOf(shared.identity) };
  const client = connectCluster(kubeConfig, config, connection);
  // The cluster's side in the hub (its restart records, the Applications deploying to it) has a client and a
  // --kube-qps budget of its own too: through one shared hub budget, every cluster's first sight queued behind
  // the others' record writes (bench:hub: ready grew ~1.2 s per registered cluster).
  const hubSide = connectCluster(shared.homeKubeConfig, config, connection);
  const fence = clusterFence(shared.fence, destination.name);
  // The cluster's Events go to the cluster, beside the workload they are about; none once it stopped.
  const recorder = shared.notify(createEventRecorder({ client, log, now: () => clock.now(), instance: shared.identity || hostname(), repeatMs: 10 * 60_000, seriesUpdateMs: config.eventSeriesInterval.ms, fence }));
  const events: EventRecorder = { record: (workload, event) => (fence.signal.aborted ? Promise.resolve() : recorder.record(workload, event)) };
  const pipeline = createClusterPipeline(config, {
    client,
    fence,
    writeTimeoutMs: shared.writeTimeoutMs,
    events,
    // The write-back keys this cluster's workloads by its id, and its fence stops their commits (ADR 0026): the
    // commit lands in the Application's repository with the hub's Argo CD credentials, whichever cluster it deploys to.
    writeBack: shared.writeBack.forCluster({ id: destination.id, fence: fence.signal }),
    metrics,
    clock,
    log,
    hashKey: shared.hashKey,
    recordNamespace: shared.recordNamespace,
    hub: { client: hubSide, scope: { id: destination.id, server: destination.server, name: destination.name } },
    writes: shared.writes,
  });
  shared.gauges.attach(pipeline, shared.isLeader, destination.name);
  const running = startPipeline(pipeline, config, { clock, log });
  void running.reconcileWhen(shared.leading);
  let stopping: Promise<void> | undefined;
  const whyDown = (): string | undefined => {
    const failing = pipeline.reflectors.find((r) => r.failing);
    if (failing !== undefined) return `listing or watching ${failing.spec.name} failed: ${failing.failure ?? 'no answer from the API server'}`;
    if (!running.health.ready()) return 'its first lists have not completed';
    return running.health.unhealthy();
  };
  return {
    up: () => whyDown() === undefined,
    whyDown,
    stop(removed) {
      stopping ??= (async () => {
        if (removed) fence.close();
        if (!await running.drain(CLUSTER_DRAIN_MS)) log.warn({ budgetMs: CLUSTER_DRAIN_MS }, 'the cluster\'s reconciles did not finish within the drain budget; stopping anyway');
        fence.close();
        shared.gauges.detach(pipeline);
        await running.close().catch((error: unknown) => log.warn({ err: error }, 'closing the cluster\'s watches failed'));
        await hubSide.close();
      })();
      return stopping;
    },
  };
}
