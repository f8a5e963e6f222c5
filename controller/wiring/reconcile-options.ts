/**
 * The reconciler's options, from the flags: pure, so that the mapping from
 * `--*` to what the reconciler obeys is one table to read.
 */
import type { ControllerConfig } from '../config/model.ts';
import type { ReconcileOptions } from '../reconciler.ts';

/** How long a failed write-back waits before it is submitted again (until --write-back-fallback-after). */
export const WRITE_BACK_RETRY_MS = 30_000;

/** `keyed`: a `--hash-key-file` was given (the git strategy needs one, ADR 0016). */
export function reconcileOptions(config: ControllerConfig, keyed: boolean): ReconcileOptions {
  return {
    mode: config.mode,
    defaultStrategy: config.restartStrategy,
    debounceMs: config.debounce.ms,
    checkIntervalMs: config.restartCheckInterval.ms,
    maxConcurrentRestarts: config.maxConcurrentRestarts,
    blockedWarningMs: config.evictionBlockedWarning.ms,
    progressDeadlineMs: config.restartProgressDeadline.ms,
    fleet: {
      minRestartIntervalMs: config.minRestartInterval.ms,
      pausePeriodMs: config.pausePeriod.ms,
      healthGateTimeoutMs: config.healthGateTimeout.ms,
      breakerThreshold: config.breakerThreshold,
      breakerWindowMs: config.breakerWindow.ms,
    },
    dryRun: config.dryRun,
    argocdSyncWaitMs: config.argocdSyncWait.ms,
    // The git strategy (ADR 0016); never under --dry-run, where a push would be a write.
    ...(config.dryRun ? {} : {
      writeBack: {
        defaults: { namespaces: config.writeBackNamespaces, applications: config.writeBackApplications },
        fallbackAfterMs: config.writeBackFallbackAfter.ms,
        fallback: config.writeBackFallback,
        retryMs: WRITE_BACK_RETRY_MS,
        keyed,
      },
    }),
  };
}
