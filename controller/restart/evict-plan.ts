/**
 * The pure planner of the `evict` restart: given a workload, its own pods and
 * the restart time T, say what the executor should do next — nothing left,
 * wait, give up with a Warning, or evict these pods now. It is modelled on
 * Argo Rollouts' `rollout/restart.go` (a restart at T replaces the pods
 * created before T, at most max(maxUnavailable, 1) unavailable at a time, and
 * only while `available − (desired − budget) > 0`), and it is called again on
 * every reconcile: the plan is level-triggered from the current pods, so a
 * controller restarted mid-way simply continues, and a pod already being
 * deleted is never evicted twice.
 *
 * Decisions beyond restart.go, each deliberate:
 * - A stale pod that is not Ready at all (crash-looping, Pending) costs no
 *   availability, so it is evicted first and does not use the availability
 *   allowance; without that, a workload broken by the very config the restart
 *   delivers (a rotated password) would wait forever. A stale pod that is Ready
 *   but younger than `minReadySeconds` serves traffic, so it is not evicted
 *   until it becomes available. Every plan still evicts at most `budget` pods,
 *   and the pods left unavailable after a plan never exceed the budget unless
 *   they were unavailable before it.
 * - Pods being deleted are never evicted and never count as available; for a
 *   Deployment or DaemonSet they just use up the allowance (their replacement
 *   is unavailable or missing); a StatefulSet waits until they are gone.
 * - Pods in a terminal phase (`Succeeded`, `Failed`, e.g. evicted by the
 *   kubelet) run nothing and their controller has already replaced them:
 *   they are neither stale nor counted.
 * - A paused Deployment (or Rollout) is restarted: its ReplicaSets still
 *   recreate evicted pods from their own template, so no pending template is
 *   applied, and a paused rollout would never create the fresh pods we wait
 *   for. Only the "rollout in progress" checks are skipped for it.
 * - A Recreate Deployment/DeploymentConfig goes one pod at a time (Kubernetes
 *   gives it no maxUnavailable); `restartWarnings` tells about volume claims.
 * - `observedGeneration < generation` means the status describes an older
 *   spec, so every kind waits, not only Deployments.
 */
import type { PodSummary, WorkloadSummary } from '../model.ts';
import { isLivePod, isStalePod } from './stale-pods.ts';

/** What to do next for one workload's eviction restart. Reasons name counts, never config values. */
export type EvictionPlan =
  /** No stale pod left: the restart is complete. */
  | { readonly action: 'done' }
  /**
   * Come back later: `cause` says which check held it — T is ahead of the clock, the workload's own
   * rollout (or scale-down) is in progress, or the availability budget is used up.
   */
  | { readonly action: 'wait'; readonly cause: EvictionWaitCause; readonly reason: string }
  /** Do not restart this workload (a Warning Event): evicting would apply a pending update revision. */
  | { readonly action: 'skip'; readonly reason: string }
  /** Evict these pods now, in this order; `budget` is how many may be unavailable at once. */
  | { readonly action: 'evict'; readonly pods: readonly PodSummary[]; readonly budget: number };

/** Which of the planner's checks holds an eviction restart. */
export type EvictionWaitCause = 'restart-time' | 'rollout-in-progress' | 'availability';

/** What `planEvictions` reads: the workload, exactly its own pods, T and the clock (epoch ms). */
export interface EvictionInput {
  readonly workload: WorkloadSummary;
  readonly pods: readonly PodSummary[];
  /** T, epoch ms of a whole second: the pods created before it are replaced. */
  readonly restartAt: number;
  readonly now: number;
}

/** A `maxUnavailable` that is neither a non-negative integer nor a `<digits>%` string. */
export class InvalidMaxUnavailableError extends Error {
  override readonly name = 'InvalidMaxUnavailableError';
}

/** Kubernetes' default for Deployments, and Argo Rollouts' and OpenShift's for theirs. */
const ROLLING_DEFAULT_MAX_UNAVAILABLE = '25%';
/** The DaemonSet default (the apiserver usually writes it already). */
const DAEMONSET_DEFAULT_MAX_UNAVAILABLE = 1;
const PERCENT = /^(\d+)%$/;
const ORDINAL = /-(\d+)$/;

/**
 * Resolves an int-or-percent `maxUnavailable` against the desired count the
 * way Kubernetes' `intstr.GetScaledValueFromIntOrPercent` does: a percentage
 * is scaled and rounded down (Deployments, Rollouts) or up (`roundUp`, as the
 * DaemonSet controller does); `undefined` takes the kind's default. The result
 * is never more than `desired` (as the Deployment controller clamps it). It may
 * be 0: callers take max(…, 1), as restart.go does.
 * @throws InvalidMaxUnavailableError for a negative or fractional number or a string that is not `<digits>%`.
 */
export function resolveMaxUnavailable(
  value: number | string | undefined,
  desired: number,
  kindDefault: number | string,
  roundUp = false,
): number {
  const raw = value ?? kindDefault;
  let resolved: number;
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw) || raw < 0) throw new InvalidMaxUnavailableError(`maxUnavailable ${raw} is not a non-negative integer`);
    resolved = raw;
  } else {
    const match = PERCENT.exec(raw);
    if (match === null) throw new InvalidMaxUnavailableError(`maxUnavailable ${JSON.stringify(raw)} is not a percentage`);
    // Same float64 expression as Go's, so the rounding edge cases agree.
    const scaled = (Number(match[1]) * desired) / 100;
    resolved = roundUp ? Math.ceil(scaled) : Math.floor(scaled);
  }
  return Math.min(resolved, Math.max(desired, 0));
}

/** The number of pods the workload's controller keeps: `spec.replicas`, or for a DaemonSet the nodes it schedules to. */
export function desiredPods(workload: WorkloadSummary): number {
  if (workload.kind === 'DaemonSet') return workload.status.desiredNumberScheduled ?? 0;
  if (workload.kind === 'CronJob') return 0;
  return workload.replicas ?? 1;
}

/**
 * Warnings to give (as Warning Events) when an eviction restart of this
 * workload starts. A DaemonSet's node-local disruption is the nature of the
 * kind, not a warning; a StatefulSet recreates a pod only once the old one is
 * gone, so its volume claims never overlap.
 */
export function restartWarnings(workload: WorkloadSummary): string[] {
  const warnings: string[] = [];
  if (workload.kind !== 'DaemonSet' && workload.kind !== 'CronJob' && desiredPods(workload) === 1) {
    warnings.push('a single replica: an eviction restart has no surge, so the workload is down until the replacement is ready');
  }
  if (isRecreate(workload) && workload.usesVolumeClaims) {
    warnings.push('Recreate strategy with volume claims: the replacement starts before the evicted pod is gone, so a ReadWriteOnce volume may fail to attach until it is released');
  }
  return warnings;
}

/**
 * Plans the next step of the eviction restart at `restartAt` (see the module
 * comment for the rules). Pure: the same input always gives the same plan, and
 * pods are ordered deterministically (StatefulSet highest ordinal first; else
 * not-Ready pods, then oldest first, ties by name).
 */
export function planEvictions(input: EvictionInput): EvictionPlan {
  const { workload, restartAt, now } = input;
  if (workload.kind === 'CronJob') return skip('a CronJob is not restarted by eviction: its next Job reads the current config');

  const live = input.pods.filter(isLivePod);
  const stale = live.filter((pod) => isStalePod(pod, restartAt));
  if (stale.length === 0) return DONE;
  if (restartAt > now) return wait('restart-time', `the restart time is ${Math.ceil((restartAt - now) / 1000)}s ahead of the clock`);

  const observed = workload.status.observedGeneration;
  if (observed !== undefined && observed < workload.generation) {
    return wait('rollout-in-progress', `the ${workload.kind} controller has observed generation ${observed} of ${workload.generation}`);
  }

  const desired = desiredPods(workload);
  const blocked = pendingRevision(workload, desired) ?? rolloutInProgress(workload, desired, live.length);
  if (blocked !== undefined) return blocked;

  if (desired === 0) return wait('availability', `scaled to 0: waiting for ${pods(live.length)} to go`);
  if (live.length < desired) return wait('availability', `${live.length} of ${desired} pods exist: replacement not available yet`);

  const available = live.filter((pod) => isAvailable(pod, workload.minReadySeconds, now));
  if (workload.kind === 'StatefulSet') return planStatefulSet(input, desired, live, stale, available.length);

  let budget: number;
  try {
    budget = Math.max(budgetOf(workload, desired), 1);
  } catch (error) {
    if (error instanceof InvalidMaxUnavailableError) return skip('maxUnavailable is neither a count nor a percentage');
    throw error;
  }
  // restart.go takes the larger of desired and existing pods, so pods beyond
  // the desired count (a paused surge) never count as spare capacity.
  const allowance = Math.max(available.length - (Math.max(desired, live.length) - budget), 0);
  const notReady = stale.filter((pod) => pod.readySince === undefined).sort(oldestFirst);
  const isAvailableNow = new Set(available);
  const availableStale = stale.filter((pod) => isAvailableNow.has(pod)).sort(oldestFirst);
  // Every not-Ready pod is already unavailable, so the allowance never exceeds
  // the budget left after them: a plan never holds more than `budget` pods.
  const victims = [...notReady.slice(0, budget), ...availableStale.slice(0, allowance)];
  if (victims.length === 0) {
    return wait('availability', `${available.length} of ${desired} pods available, at most ${budget} may be unavailable: replacement not available yet`);
  }
  return evict(victims, budget);
}

function planStatefulSet(
  input: EvictionInput,
  desired: number,
  live: readonly PodSummary[],
  stale: readonly PodSummary[],
  available: number,
): EvictionPlan {
  // A StatefulSet recreates an ordinal only once the old pod is gone: while
  // one terminates, a second eviction would take two members down at once.
  const terminating = input.pods.filter((pod) => pod.deleting).length;
  if (terminating > 0) return wait('availability', `${pods(terminating)} terminating: replacement not available yet`);
  if (live.length > desired) return wait('rollout-in-progress', `${live.length} pods for ${desired} desired: waiting for the scale-down`);
  if (available === desired) return evict([...stale].sort(highestOrdinalFirst).slice(0, 1), 1);
  // Evicting a member that is not Ready cannot cost quorum; any other
  // unavailable member (a replacement still starting) must become available first.
  const unavailable = live.filter((pod) => !isAvailable(pod, input.workload.minReadySeconds, input.now));
  if (unavailable.every((pod) => pod.readySince === undefined && stale.includes(pod))) {
    return evict([...unavailable].sort(highestOrdinalFirst).slice(0, 1), 1);
  }
  return wait('availability', `${available} of ${desired} pods available: replacement not available yet`);
}

/** A pending update revision an evicted pod would pick up, or a staged update the restart must not disturb. */
function pendingRevision(workload: WorkloadSummary, desired: number): EvictionPlan | undefined {
  const { status, strategy } = workload;
  if (workload.kind === 'StatefulSet') {
    // updatedReplicas as well: an OnDelete StatefulSet never advances
    // currentRevision, even once every pod runs the update revision.
    const updated = status.updatedReplicas ?? 0;
    if (status.currentRevision === status.updateRevision || updated >= desired) return undefined;
    if (strategy.type === 'OnDelete') {
      return skip(`the StatefulSet has a pending update (${updated} of ${desired} pods updated) that its OnDelete strategy would apply to every evicted pod`);
    }
    if ((strategy.partition ?? 0) > 0) {
      return skip(`the StatefulSet has an update staged by partition ${strategy.partition} (${updated} of ${desired} pods updated): not restarting until it is rolled out`);
    }
  }
  if (workload.kind === 'DaemonSet' && strategy.type === 'OnDelete') {
    const updated = status.updatedNumberScheduled ?? 0;
    if (updated < desired) {
      return skip(`the DaemonSet has a pending update (${updated} of ${desired} pods updated) that its OnDelete strategy would apply to every evicted pod`);
    }
  }
  return undefined;
}

/** A rollout of the workload that creates fresh pods anyway (status fields are omitempty: absent means 0). */
function rolloutInProgress(workload: WorkloadSummary, desired: number, existing: number): EvictionPlan | undefined {
  const { status, strategy } = workload;
  switch (workload.kind) {
    case 'Deployment':
    case 'Rollout':
    case 'DeploymentConfig': {
      if (workload.paused) return undefined;
      const replicas = status.replicas ?? 0;
      const updated = status.updatedReplicas ?? 0;
      if (updated !== replicas) return wait('rollout-in-progress', `a rollout is in progress: ${updated} of ${replicas} replicas updated`);
      if (replicas > desired) return wait('rollout-in-progress', `a rollout is in progress: ${replicas} replicas for ${desired} desired`);
      if (existing > desired) return wait('rollout-in-progress', `${existing} pods for ${desired} desired: waiting for the scale-down`);
      return undefined;
    }
    case 'StatefulSet':
      if (strategy.type === 'RollingUpdate' && (strategy.partition ?? 0) === 0 && status.currentRevision !== status.updateRevision) {
        return wait('rollout-in-progress', `a rolling update is in progress: ${status.updatedReplicas ?? 0} of ${desired} pods updated`);
      }
      return undefined;
    case 'DaemonSet': {
      const updated = status.updatedNumberScheduled ?? 0;
      if (strategy.type === 'RollingUpdate' && updated < desired) {
        return wait('rollout-in-progress', `a rolling update is in progress: ${updated} of ${desired} pods updated`);
      }
      return undefined;
    }
    case 'CronJob':
      return undefined;
  }
}

function budgetOf(workload: WorkloadSummary, desired: number): number {
  if (workload.kind === 'DaemonSet') {
    if (workload.strategy.type !== 'RollingUpdate') return DAEMONSET_DEFAULT_MAX_UNAVAILABLE;
    return resolveMaxUnavailable(workload.strategy.maxUnavailable, desired, DAEMONSET_DEFAULT_MAX_UNAVAILABLE, true);
  }
  if (isRecreate(workload)) return 1;
  return resolveMaxUnavailable(workload.strategy.maxUnavailable, desired, ROLLING_DEFAULT_MAX_UNAVAILABLE);
}

function isRecreate(workload: WorkloadSummary): boolean {
  return (workload.kind === 'Deployment' || workload.kind === 'DeploymentConfig') && workload.strategy.type === 'Recreate';
}

function isAvailable(pod: PodSummary, minReadySeconds: number, now: number): boolean {
  return !pod.deleting && pod.readySince !== undefined && now - pod.readySince >= minReadySeconds * 1000;
}

function compareNames(a: PodSummary, b: PodSummary): number {
  if (a.name === b.name) return 0;
  return a.name < b.name ? -1 : 1;
}

function oldestFirst(a: PodSummary, b: PodSummary): number {
  return a.createdAt - b.createdAt || compareNames(a, b);
}

/** StatefulSet pods are `<set>-<ordinal>`; a pod without one (never expected) goes last. */
function highestOrdinalFirst(a: PodSummary, b: PodSummary): number {
  const ordinalOf = (pod: PodSummary): number => {
    const match = ORDINAL.exec(pod.name);
    return match === null ? -1 : Number(match[1]);
  };
  return ordinalOf(b) - ordinalOf(a) || compareNames(a, b);
}

function pods(count: number): string {
  return count === 1 ? '1 pod' : `${count} pods`;
}

const DONE: EvictionPlan = Object.freeze({ action: 'done' });

function wait(cause: EvictionWaitCause, reason: string): EvictionPlan {
  return Object.freeze({ action: 'wait', cause, reason });
}

function skip(reason: string): EvictionPlan {
  return Object.freeze({ action: 'skip', reason });
}

function evict(victims: readonly PodSummary[], budget: number): EvictionPlan {
  return Object.freeze({ action: 'evict', pods: Object.freeze([...victims]), budget });
}
