/**
 * The restart path as data: `nextStep` reads one workload's restart at T (its
 * recorded `driftless.dev/restart-at`), its pods and the facts around it, and
 * returns the one thing to do next — wait (why, and until when when that is
 * known), evict these pods, write the Rollout's `spec.restartAt`, write the
 * pod template annotation, halt (why), or done. It is pure: the reconciler's
 * executor only acts on the step, and `explain --live` shows the same step,
 * so the two cannot disagree.
 *
 * The rules every strategy shares come first, in this order: the sync wait
 * (ADR 0011) holds a restart that has not acted yet; the health gate halts a
 * restart whose replacements never become Ready; the breaker pauses every
 * restart. And last, the sync windows (ADR 0016): an act in the cluster — an
 * eviction, `spec.restartAt`, the template annotation — waits while the
 * AppProject of the workload's Application allows no automated sync. Then each strategy decides in a file of its own: `evict.ts`,
 * `restart-at.ts`, `template.ts`. The Git write-back strategy (`git.ts`,
 * ADR 0016) acts on no pod: its own steps (submit, record, wait, fall back,
 * done) hand the restart to one of these when it falls back.
 */
import { restartNotActed, rolloutUpdateWait, syncWait } from '../argocd-sync.ts';
import type { ResolvedStrategy } from '../decide.ts';
import { healthGate } from '../fleet/safety.ts';
import type { AppProjectSummary, ApplicationSummary, PodSummary, WorkloadSummary } from '../model.ts';
import { windowHold } from '../windows/gate.ts';
import { evictStep } from './evict.ts';
import { restartAtStep } from './restart-at.ts';
import { isStalePod } from './stale-pods.ts';
import { templateStep } from './template.ts';

/** Why a restart waits. Each names the check that holds it. */
export type WaitCause =
  /** Argo CD is about to roll the workload (ADR 0011): its sync replaces the pods. */
  | 'argocd-sync'
  /** After the sync, a tracked Rollout's own update replaces the pods (ADR 0011). */
  | 'rollout-update'
  /** The fleet-wide breaker pauses every restart. */
  | 'breaker'
  /** T is ahead of the clock: a replacement created before T would count as stale. */
  | 'restart-time'
  /** The workload's own rollout (or scale-down) is in progress. */
  | 'rollout-in-progress'
  /** At most the budget may be unavailable, and it is used: replacements are not available yet. */
  | 'availability'
  /** A pod from before T is still being deleted, or a replacement is not Ready yet (the health gate's wait). */
  | 'replacements'
  /** The Rollout's `spec.restartAt` is written; Argo Rollouts has not reported `status.restartedAt` ≥ T yet. */
  | 'restarted-at'
  /** The pod template annotation is written; the workload's controller is rolling the pods. */
  | 'template-rollout'
  /** The AppProject's sync windows allow no automated sync now (ADR 0016): the act waits for a window. */
  | 'sync-window';

/** Why a restart stops for good (until an operator or a new change starts another). */
export type HaltCause =
  /** A replacement never became Ready within the health gate's timeout: the halt annotation is written. */
  | 'health-gate'
  /** Evicting would apply a pending update revision (OnDelete, partition): not restarted (RestartSkipped). */
  | 'pending-revision';

/** The one next thing to do for a restart at T. Reasons name counts and objects, never config values. */
export type RestartStep =
  /** Nothing to do now. `until`: epoch ms when the wait ends by itself (T, the sync bound); `name`: the object holding it. */
  | { readonly kind: 'wait'; readonly cause: WaitCause; readonly reason: string; readonly until?: number; readonly name?: string }
  /** Evict these pods now, in this order; `budget` is how many may be unavailable at once. */
  | { readonly kind: 'evict'; readonly pods: readonly PodSummary[]; readonly budget: number }
  /** Write the Rollout's `spec.restartAt` = T. */
  | { readonly kind: 'set-restart-at'; readonly restartAt: number }
  /** Write the pod template annotation `driftless.dev/restarted-at` = T (the `rollout` strategy). */
  | { readonly kind: 'set-template'; readonly restartAt: number }
  | { readonly kind: 'halt'; readonly cause: HaltCause; readonly reason: string }
  /** Every pod created before T is replaced (and Ready, when the health gate is on). */
  | { readonly kind: 'done' };

/** Everything `nextStep` reads. */
export interface RestartInput {
  readonly workload: WorkloadSummary;
  /** Exactly the workload's own pods; a pod the controller evicted and the watch has not shown gone yet is marked deleting. */
  readonly pods: readonly PodSummary[];
  /** T, epoch ms of a whole second. */
  readonly restartAt: number;
  readonly strategy: Exclude<ResolvedStrategy, 'record-only'>;
  readonly now: number;
  /** True while this process is running the restart (the health gate waits for its replacements to be Ready). */
  readonly acting: boolean;
  /** The workload's Argo CD Application (`undefined`: untracked or not watched). */
  readonly app: ApplicationSummary | undefined;
  /** The Application's AppProject, for its sync windows (`undefined`: none, or not watched: nothing is held). */
  readonly project?: AppProjectSummary | undefined;
  /** `--argocd-sync-wait` in ms; 0: off. */
  readonly syncWaitMs: number;
  /** The health gate's timeout in ms; 0: off. */
  readonly healthGateTimeoutMs: number;
  /** Asked only when the restart is in progress and would act: whether the breaker is open. */
  readonly breakerOpen: () => boolean;
}

/** What a strategy's file reads besides the shared input: whether replacements are still to become Ready. */
export interface StrategyInput extends RestartInput {
  readonly replacementsPending: boolean;
}

/** The next step of the restart at `input.restartAt` (see the module comment for the order of the rules). */
export function nextStep(input: RestartInput): RestartStep {
  return inWindow(input, strategyStep(input));
}

/**
 * The sync windows' hold (ADR 0016): a step that acts in the cluster waits while the Application's AppProject
 * allows no automated sync — until the window opens, when that is known. Waits, halts and done pass.
 */
function inWindow(input: RestartInput, step: RestartStep): RestartStep {
  if (step.kind !== 'evict' && step.kind !== 'set-restart-at' && step.kind !== 'set-template') return step;
  const hold = windowHold({ app: input.app, project: input.project, now: input.now, notActed: true });
  if (hold === undefined) return step;
  return { kind: 'wait', cause: 'sync-window', reason: hold.reason, ...(hold.until === undefined ? {} : { until: hold.until }), name: hold.project };
}

/** The step of the shared rules and the strategy, before the sync windows. */
function strategyStep(input: RestartInput): RestartStep {
  const held = syncHold(input);
  if (held !== undefined) return held;
  // A Rollout's restart is Argo Rollouts' to pace: neither the gate nor the breaker reads its pods.
  if (input.strategy === 'restart-at') return restartAtStep(input);
  const { pods, restartAt, now, acting, healthGateTimeoutMs } = input;
  // The health gate judges the replacements of a restart this process is running, or one the pods show
  // unfinished; a restart finished before a controller restart is not judged again (its pods may fail later
  // for reasons of their own).
  const inProgress = acting || pods.some((pod) => isStalePod(pod, restartAt));
  const gate = healthGateTimeoutMs > 0 && inProgress ? healthGate(pods, restartAt, now, healthGateTimeoutMs) : { action: 'pass' as const };
  if (gate.action === 'fail') return { kind: 'halt', cause: 'health-gate', reason: gate.reason };
  if (inProgress && input.breakerOpen()) return { kind: 'wait', cause: 'breaker', reason: 'every restart is paused by the breaker' };
  // Finished means the replacements are Ready too, so a replacement that never becomes Ready is gated.
  const strategyInput: StrategyInput = { ...input, replacementsPending: gate.action === 'wait' && acting };
  return input.strategy === 'template' ? templateStep(strategyInput) : evictStep(strategyInput);
}

/**
 * The sync wait's hold (ADR 0011) on a restart that has not acted yet, bounded by `--argocd-sync-wait`
 * from T; `undefined`: go on.
 */
function syncHold(input: RestartInput): RestartStep | undefined {
  const { workload, strategy, restartAt, now, app, syncWaitMs } = input;
  if (syncWaitMs <= 0) return undefined;
  const stalePodsLeft = strategy === 'evict' && input.pods.some((pod) => isStalePod(pod, restartAt));
  if (!restartNotActed(strategy, workload, restartAt, stalePodsLeft)) return undefined;
  const rule = syncWait({ app, workload, restartAt, now, waitMs: syncWaitMs });
  if (rule.action === 'wait') {
    return { kind: 'wait', cause: 'argocd-sync', reason: rule.reason, until: now + rule.remainingMs, ...(app === undefined ? {} : { name: app.name }) };
  }
  if (rule.action === 'expired') return undefined;
  // The sync is done (or none is pending) but may have started the Rollout's own update.
  const updating = rolloutUpdateWait({ app, workload, strategy, restartAt, now, waitMs: syncWaitMs });
  if (updating === undefined) return undefined;
  return { kind: 'wait', cause: 'rollout-update', reason: updating.reason, until: now + updating.remainingMs };
}

/** The reason the sync wait stopped holding at its bound, for the one Warning that says so; `undefined` otherwise. */
export function expiredSyncWait(input: RestartInput): string | undefined {
  const { workload, strategy, restartAt, now, app, syncWaitMs } = input;
  if (syncWaitMs <= 0) return undefined;
  const stalePodsLeft = strategy === 'evict' && input.pods.some((pod) => isStalePod(pod, restartAt));
  if (!restartNotActed(strategy, workload, restartAt, stalePodsLeft)) return undefined;
  const rule = syncWait({ app, workload, restartAt, now, waitMs: syncWaitMs });
  return rule.action === 'expired' ? rule.reason : undefined;
}
