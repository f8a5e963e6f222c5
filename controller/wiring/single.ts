/**
 * The controller's pipelines as the composition root runs them: the one
 * cluster it runs in (this file), or, in hub mode, every cluster Argo CD
 * deploys to (controller/hub/hub.ts). Both are started the same way and
 * stopped the same way.
 */
import type { HashKey } from '../../core/index.ts';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import type { EventRecorder } from '../events.ts';
import type { HealthSources } from '../http.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Fence } from '../kube/fence.ts';
import type { WriteBack } from '../writeback/engine.ts';
import type { ArgoCdHub } from './argocd-hub.ts';
import { startPipeline } from './lifecycle.ts';
import { clusterMetrics, type GaugeSources, type ProcessMetrics } from './metrics.ts';
import { createClusterPipeline } from './pipeline.ts';
import type { WritesOverride } from './writes.ts';

/** Running pipelines: their watches run, reconciling waits for `reconcileWhen`. */
export interface RunningPipelines {
  /** Starts reconciling once the caches are synced and `leading` resolves; resolves then. */
  reconcileWhen(leading: Promise<void>): Promise<void>;
  /** /readyz and /healthz. */
  readonly health: HealthSources;
  /** Stops taking work and waits for the reconciles in flight, at most `budgetMs`; false when they did not finish. */
  drain(budgetMs: number): Promise<boolean>;
  /** Stops the watches and closes the clients (after `drain`). */
  close(): Promise<void>;
}

/** The process-wide parts a pipeline is handed. */
export interface ProcessParts {
  readonly client: KubeClient;
  readonly fence: Fence;
  readonly writeTimeoutMs: number;
  readonly events: EventRecorder;
  readonly writeBack: WriteBack;
  readonly metrics: ProcessMetrics;
  readonly gauges: GaugeSources;
  readonly isLeader: () => boolean;
  readonly clock: Clock;
  readonly log: Logger;
  readonly hashKey: HashKey | undefined;
  readonly recordNamespace: string;
  readonly writes: WritesOverride | undefined;
  /** The spoke option (ADR 0025): Argo CD's cluster, read-only; absent: Argo CD runs in this cluster. */
  readonly hub?: ArgoCdHub | undefined;
}

/** The one cluster the controller runs in: one pipeline, started. */
export function startSingleCluster(config: ControllerConfig, parts: ProcessParts): RunningPipelines {
  // The one cluster: its series carry no `cluster` label, as before hub mode (ADR 0027).
  const pipeline = createClusterPipeline(config, { ...parts, metrics: clusterMetrics(parts.metrics, undefined) });
  parts.gauges.attach(pipeline, parts.isLeader);
  return startPipeline(pipeline, config, { clock: parts.clock, log: parts.log });
}
