/**
 * What the reconciler is given: its settings from the configuration and the
 * parts it reads and writes through (controller/controller.ts wires them).
 */
import type { Logger } from 'pino';
import type { PolicyMode } from '../core/index.ts';
import type { ClusterView } from './cache/cluster-view.ts';
import type { Clock } from './clock.ts';
import type { ClockSkew } from './clock-skew.ts';
import type { EventRecorder } from './events.ts';
import type { StartLimiter } from './fleet/admission.ts';
import type { ClusterFleetMetrics } from './fleet/metrics.ts';
import type { FleetOptions } from './fleet/safety.ts';
import type { Writes } from './kube/writes.ts';
import type { ClusterControllerMetrics, CounterHandle } from './metrics.ts';
import type { RestartStrategy } from './model.ts';
import type { RecordStore } from './record/store.ts';
import type { GitFallback } from './restart/git.ts';
import type { ClusterWriteBack } from './writeback/engine.ts';
import type { WriteBackDefaults } from './writeback/select.ts';

/** The reconcile settings from the configuration. */
export interface ReconcileOptions {
  readonly mode: PolicyMode;
  readonly defaultStrategy: RestartStrategy;
  readonly debounceMs: number;
  /** How often a restart in progress is looked at again, besides the pod events that wake it. */
  readonly checkIntervalMs: number;
  readonly maxConcurrentRestarts: number;
  /** A Warning Event when evictions have been refused (PDB) this long. */
  readonly blockedWarningMs: number;
  /** Cooldowns, health gate and breaker (controller/fleet/); absent: all off. */
  readonly fleet?: FleetOptions;
  /**
   * `--dry-run`: the writes only log, so what they would have recorded is kept
   * in memory and read back, and a restart reports every eviction at once.
   */
  readonly dryRun?: boolean;
  /**
   * `--restart-progress-deadline`: a restart whose pods have not moved for this long while it waits on the
   * workload (its rollout, availability, replacements, Argo Rollouts) is halted with a Warning and gives its
   * slot back; 0 or absent: never.
   */
  readonly progressDeadlineMs?: number;
  /**
   * `--argocd-sync-wait`: a restart about to act holds this long at most, from
   * T, while the workload's Argo CD Application is about to roll it (ADR 0011);
   * 0 or absent: never.
   */
  readonly argocdSyncWaitMs?: number;
  /** The git strategy's settings (`--write-back-*`, ADR 0016); absent: no workload uses it. */
  readonly writeBack?: GitStrategyOptions;
}

/** The git strategy's settings. */
export interface GitStrategyOptions {
  /** `--write-back-namespaces`, `--write-back-applications`. */
  readonly defaults: WriteBackDefaults;
  /** `--write-back-fallback-after` in ms. */
  readonly fallbackAfterMs: number;
  /** `--write-back-fallback`. */
  readonly fallback: GitFallback;
  /** How long a failed write-back waits before it is submitted again. */
  readonly retryMs: number;
  /** The controller has a hash key (without one nothing is written to Git). */
  readonly keyed: boolean;
}

/** What the reconciler needs. */
export interface ReconcilerDeps {
  readonly view: ClusterView;
  readonly writes: Writes;
  readonly events: EventRecorder;
  readonly clock: Clock;
  readonly log: Logger;
  readonly options: ReconcileOptions;
  /** False for a namespace out of scope (ignored, or not matching the namespace selector). */
  readonly inScope: (namespace: string) => boolean;
  /** The metrics, bound to this pipeline's cluster in hub mode. */
  readonly metrics?: ClusterControllerMetrics;
  readonly fleetMetrics?: ClusterFleetMetrics;
  /** `--restart-rate`/`--restart-burst`; absent: no limit. */
  readonly startLimiter?: StartLimiter;
  /**
   * The restart records (controller/record/): a copy of each workload's bookkeeping keyed by its UID, which
   * a Replace=true sync of the workload does not remove; absent: the annotations only.
   */
  readonly records?: RecordStore;
  /** The API server's clock as learnt from the watches; absent: the clocks are taken to agree. */
  readonly skew?: ClockSkew;
  /** The Git write-back (strategy git, ADR 0016); absent: no workload uses it. */
  readonly writeBack?: ClusterWriteBack;
  readonly writeBackMetrics?: { readonly fallbacks: CounterHandle<'cause'> };
  /** Enqueues a workload (a write-back it submitted has an answer); absent: looked at again each check interval. */
  readonly wake?: (key: string) => void;
}
