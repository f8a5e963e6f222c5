/**
 * The sync-wait rule (ADR 0011), pure: a restart for an out-of-band change at
 * T holds while the workload's Argo CD Application is about to roll it anyway
 * — a sync is applying, a refresh was asked for (a webhook saw a commit), or
 * automated sync will sync the workload it lists OutOfSync. The sync's new
 * pods are created after T, so once it is done the existing rules finish the
 * restart with nothing left to evict. The hold is bounded from T: a sync that
 * never comes must not keep stale pods running.
 *
 * A manual-sync app that is OutOfSync does not hold a restart: when, or
 * whether, a human syncs it is unpredictable.
 */
import { formatTime, parseRestartAt } from './bookkeeping.ts';
import { applicationResourceKey } from './cache/reduce.ts';
import type { ResolvedStrategy } from './decide.ts';
import type { ApplicationSummary, WorkloadSummary } from './model.ts';

/** What the rule says about a restart that is about to act. */
export type SyncWait =
  /** No sync is pending for this workload (or the rule is off): act now. */
  | { readonly action: 'go' }
  /** Hold: Argo CD is about to roll the workload; look again within `remainingMs` at the latest. */
  | { readonly action: 'wait'; readonly reason: string; readonly remainingMs: number }
  /** A sync was still pending at T + the bound: act anyway. */
  | { readonly action: 'expired'; readonly reason: string };

/** What the rule reads. */
export interface SyncWaitInput {
  /** The workload's Application, from its tracking (`undefined`: untracked, or not watched). */
  readonly app: ApplicationSummary | undefined;
  readonly workload: Pick<WorkloadSummary, 'apiVersion' | 'kind' | 'namespace' | 'name'> & Partial<Pick<WorkloadSummary, 'workloadRef'>>;
  /** T of the restart (epoch ms). */
  readonly restartAt: number;
  readonly now: number;
  /** `--argocd-sync-wait` in ms; 0 turns the rule off. */
  readonly waitMs: number;
}

/** Why the Application is about to roll the workload, or `undefined` when it is not. */
export function pendingSync(app: ApplicationSummary, workload: SyncWaitInput['workload']): string | undefined {
  if (app.operationRunning) return `Application ${app.name} has a sync operation running`;
  if (app.refreshRequested) return `Application ${app.name} has a refresh requested`;
  const slash = workload.apiVersion.lastIndexOf('/');
  const group = slash === -1 ? '' : workload.apiVersion.slice(0, slash);
  if (!app.automated) return undefined;
  const listed = (resourceGroup: string, kind: string, name: string): boolean => app.outOfSync.includes(applicationResourceKey(resourceGroup, kind, workload.namespace, name));
  if (listed(group, workload.kind, workload.name)) return `Application ${app.name} has automated sync and lists this ${workload.kind} OutOfSync`;
  // A Rollout with a workloadRef takes its pod template from that Deployment: syncing the Deployment rolls the Rollout.
  const ref = workload.workloadRef;
  if (ref !== undefined && listed('apps', ref.kind, ref.name)) {
    return `Application ${app.name} has automated sync and lists the ${ref.kind} ${ref.name} this ${workload.kind} takes its pod template from OutOfSync`;
  }
  return undefined;
}

/**
 * Whether the restart at `restartAt` has not acted yet, so the rule may still hold it: once asked of the
 * Rollouts controller (`spec.restartAt`) or written into the template it is theirs; evictions are held
 * only while pods created before T remain (nothing else is left to hold).
 */
export function restartNotActed(
  strategy: ResolvedStrategy,
  workload: Pick<WorkloadSummary, 'restartAt' | 'templateRestartedAt'>,
  restartAt: number,
  stalePodsLeft: boolean,
): boolean {
  if (strategy === 'restart-at') return (parseRestartAt(workload.restartAt) ?? 0) < restartAt;
  if (strategy === 'template') return workload.templateRestartedAt !== formatTime(restartAt);
  if (strategy === 'evict') return stalePodsLeft;
  return true;
}

/** Applies the rule; see the module comment. */
export function syncWait(input: SyncWaitInput): SyncWait {
  const { app, restartAt, now, waitMs } = input;
  if (waitMs <= 0 || app === undefined) return { action: 'go' };
  const reason = pendingSync(app, input.workload);
  if (reason === undefined) return { action: 'go' };
  const remainingMs = restartAt + waitMs - now;
  return remainingMs > 0 ? { action: 'wait', reason, remainingMs } : { action: 'expired', reason };
}

/**
 * Why a Rollout's own update is still replacing its pods, or `undefined`. A
 * restart through `spec.restartAt` asked for mid-update restarts the old
 * ReplicaSet's pods that the update is about to scale down anyway (seen with
 * Argo Rollouts 1.10: two extra pods of the old revision), so after a sync the
 * restart waits for the update to finish.
 */
export function rolloutUpdating(workload: Pick<WorkloadSummary, 'generation' | 'replicas' | 'status'>): string | undefined {
  const { status } = workload;
  if (status.observedGeneration !== undefined && status.observedGeneration < workload.generation) {
    return `the Rollouts controller has observed generation ${status.observedGeneration} of ${workload.generation}`;
  }
  const replicas = status.replicas ?? 0;
  const updated = status.updatedReplicas ?? 0;
  if (updated !== replicas) return `an update is in progress: ${updated} of ${replicas} replicas updated`;
  if (replicas > (workload.replicas ?? 1)) return `an update is in progress: ${replicas} replicas for ${workload.replicas ?? 1} desired`;
  return undefined;
}

/** What `rolloutUpdateWait` reads. */
export interface RolloutUpdateWaitInput {
  /** The workload's Application (`undefined`: untracked, or not watched): only a tracked workload is held. */
  readonly app: ApplicationSummary | undefined;
  readonly workload: Pick<WorkloadSummary, 'generation' | 'replicas' | 'status'>;
  readonly strategy: ResolvedStrategy;
  /** T of the restart (epoch ms). */
  readonly restartAt: number;
  readonly now: number;
  /** `--argocd-sync-wait` in ms; 0 turns the hold off. */
  readonly waitMs: number;
}

/**
 * The sync wait's second hold: once no sync is pending (`syncWait` says go),
 * the sync may have started the Rollout's own update, and a `spec.restartAt`
 * written now restarts old pods that update removes anyway. So a `restart-at`
 * restart that has not acted yet (`restartNotActed`), of a workload an
 * Application tracks, waits while `rolloutUpdating` says so, until T + the
 * bound. Without Argo CD nothing changes. `undefined`: it does not hold; else
 * why, and how long the bound allows at most. The reconciler and
 * `explain --live` ask the same.
 */
export function rolloutUpdateWait(input: RolloutUpdateWaitInput): { readonly reason: string; readonly remainingMs: number } | undefined {
  const { app, workload, strategy, restartAt, now, waitMs } = input;
  const remainingMs = restartAt + waitMs - now;
  if (waitMs <= 0 || app === undefined || strategy !== 'restart-at' || remainingMs <= 0) return undefined;
  const reason = rolloutUpdating(workload);
  return reason === undefined ? undefined : { reason, remainingMs };
}
