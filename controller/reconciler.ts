/**
 * Reconciling one workload, level-triggered from the caches: decide what its
 * out-of-band configs call for, record it on the workload's metadata, and
 * move a restart in progress one paced step further. Every write is compared
 * before it is made, so a reconcile with nothing changed writes nothing — a
 * controller restart or a leader change restarts nothing.
 *
 * Semantics, the same for every strategy: a restart at T replaces the pods
 * created before T. T is when the controller first saw the new content, so
 * pods a racing sync created after T are left alone (no double restart), and
 * pods created just before an operator wrote the new value are replaced.
 */
import type { Logger } from 'pino';
import { BOOKKEEPING, FLEET_ANNOTATIONS, ManifestError, WRITE_BACK_ANNOTATION, type PolicyMode } from '../core/index.ts';
import { formatDigestMap, formatTime, parseDigestMap, parseRestartAt } from './bookkeeping.ts';
import { parseWorkloadKey, workloadKey, type ClusterView } from './cache/cluster-view.ts';
import type { Clock } from './clock.ts';
import type { ClockSkew } from './clock-skew.ts';
import type { RecordStore } from './record/store.ts';
import { compareDigests, outOfBandDigests, resolveStrategy, selectConfigs, type ResolvedStrategy } from './decide.ts';
import { normalEvent, warningEvent, type EventConfig, type EventRecorder } from './events.ts';
import type { FleetMetrics } from './fleet/metrics.ts';
import { breakerState, cooldownFor, cooldownRemaining, formatHalt, parseHalt, type BreakerState, type FleetOptions } from './fleet/safety.ts';
import type { ControllerMetrics } from './metrics.ts';
import type { AppProjectSummary, PodSummary, RestartStrategy, WorkloadSummary } from './model.ts';
import type { ProcessResult } from './queue.ts';
import { restartWarnings } from './restart/evict-plan.ts';
import { isStalePod, isTerminalPod } from './restart/stale-pods.ts';
import { expiredSyncWait, nextStep, type RestartInput, type RestartStep, type WaitCause } from './restart/step.ts';
import type { OwnFields, Writes } from './kube/writes.ts';
import { gitStep, type GitFallback } from './restart/git.ts';
import type { WriteBack } from './writeback/engine.ts';
import type { WriteBackMetrics } from './writeback/metrics.ts';
import type { ConfigDigest } from './writeback/model.ts';
import { formatWriteBackRecord, parseWriteBackRecord, type WriteBackRecord } from './writeback/record.ts';
import { selectGit, type WriteBackDefaults } from './writeback/select.ts';

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

/** The fleet-wide limit on restart starts (a TokenBucket); `retryAfterMs` is when to look again. */
export interface StartLimiter {
  tryTake(): boolean;
  readonly retryAfterMs: number;
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
  readonly metrics?: ControllerMetrics;
  readonly fleetMetrics?: FleetMetrics;
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
  readonly writeBack?: WriteBack;
  readonly writeBackMetrics?: WriteBackMetrics;
  /** Enqueues a workload (a write-back it submitted has an answer); absent: looked at again each check interval. */
  readonly wake?: (key: string) => void;
}

/** Waits that hold a restart before it acts: a `--dry-run` restart reports its evictions only past them. */
const HOLDS_BEFORE_ACTING: ReadonlySet<WaitCause> = new Set<WaitCause>(['argocd-sync', 'rollout-update', 'breaker', 'sync-window']);

/**
 * Waits the progress deadline applies to: the restart waits on the workload itself, which may never move.
 * Not the bounded ones (sync wait, T ahead), not the breaker's pause, and not a PodDisruptionBudget's 429
 * (that restart already holds no slot, is retried, and has its own Warning).
 */
const DEADLINE_CAUSES: ReadonlySet<WaitCause> = new Set<WaitCause>(['rollout-in-progress', 'availability', 'replacements', 'restarted-at', 'template-rollout']);

/** How long an evicted pod's UID is remembered while the watch has not yet shown its deletion. */
const EVICTED_MEMORY_MS = 5 * 60_000;

/** The breaker reads every workload's halt annotation; once a second is enough (a scan per restart start would not be). */
const BREAKER_RECHECK_MS = 1000;

const FLEET_OFF: FleetOptions = Object.freeze({ minRestartIntervalMs: 0, pausePeriodMs: 0, healthGateTimeoutMs: 0, breakerThreshold: Number.MAX_SAFE_INTEGER, breakerWindowMs: 0 });

/** Reconciles workloads; one instance per controller, keys are `Kind/namespace/name`. */
export class Reconciler {
  readonly #deps: ReconcilerDeps;
  /** Workloads with a restart in progress (the global cap counts these). */
  readonly #restarting = new Set<string>();
  /** When evictions of a workload were first refused, while they still are. */
  readonly #blockedSince = new Map<string, number>();
  /** Pods evicted by us whose deletion the pod watch has not shown yet: never evicted twice. */
  readonly #evicted = new Map<string, number>();
  /** Our last apply per workload and the resourceVersion it was based on: the cache may not show it yet. */
  readonly #lastApply = new Map<string, { readonly basedOn: string; readonly fields: string; readonly own: OwnFields }>();
  /** `--dry-run` only: what the writes would have recorded per workload. */
  readonly #shadow = new Map<string, OwnFields>();
  /** `--dry-run` only: the T of the restarts already reported. */
  readonly #dryRunFinished = new Map<string, number>();
  /** Halts we wrote that the cache may not show yet, with the resourceVersion they were based on. */
  readonly #pendingHalts = new Map<string, { readonly at: number; readonly basedOn: string }>();
  #breaker: { readonly at: number; readonly state: BreakerState } | undefined;
  /** Per restart in progress: what its pods looked like when they last moved, and when. */
  readonly #lastProgress = new Map<string, { readonly restartAt: number; readonly marker: string; readonly at: number }>();
  /** Restarts halted by the progress deadline and their pods then: no slot; pods that move resume them. */
  readonly #stalled = new Map<string, { readonly restartAt: number; readonly marker: string }>();
  /** Per workload, the T whose wait for Argo CD was announced (and whether its bound expired): one Event each. */
  readonly #syncWaits = new Map<string, { readonly restartAt: number; expired: boolean }>();
  /**
   * Per workload, the sync-window hold announced (its end, or the reason when none is known): one Event per
   * hold, however many changes arrive while it lasts (they become one restart when the window opens).
   */
  readonly #windowHolds = new Map<string, string>();
  /** Restarts in progress through Git (strategy git, not fallen back): they act on no pod, so they hold no slot. */
  readonly #gitKeys = new Set<string>();

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
  }

  /** True while the workload has a restart in progress (its pod events wake it). */
  isRestarting(key: string): boolean {
    return this.#restarting.has(key);
  }

  /** True while the fleet-wide breaker pauses every restart (as of its last evaluation). */
  get breakerOpen(): boolean {
    return this.#breaker?.state.open === true;
  }

  /** Number of restarts in progress. */
  get restartingCount(): number {
    return this.#restarting.size;
  }

  /** The pod watch has shown the pod deleted. */
  podGone(uid: string): void {
    this.#evicted.delete(uid);
  }

  /** One reconcile of one workload. */
  async reconcile(key: string): Promise<ProcessResult> {
    const { view, options, clock, records } = this.#deps;
    let workload = this.#withShadow(key, view.workload(key));
    const { kind: keyKind, namespace: keyNamespace, name: keyName } = parseWorkloadKey(key);
    if (records !== undefined && options.dryRun !== true && records.hasStale(keyKind, keyNamespace, keyName, workload?.uid)) {
      // The workload was deleted (or deleted and created again, a new UID): its old record says nothing now.
      await records.forget(keyKind, keyNamespace, keyName, workload?.uid);
    }
    if (workload === undefined || !this.#deps.inScope(workload.namespace)) {
      this.#finish(key);
      return undefined;
    }
    workload = await this.#withRecord(key, workload);
    const source = workload.workloadRef === undefined ? workload : view.workload(workloadKey(workload.workloadRef.kind, workload.namespace, workload.workloadRef.name));
    // A Rollout whose borrowed Deployment is not cached yet: the Deployment's arrival enqueues it.
    if (source === undefined) return undefined;
    let selection;
    try {
      selection = selectConfigs(workload, source, view.configLookup(workload.namespace), options.mode);
    } catch (error) {
      if (!(error instanceof ManifestError)) throw error;
      await this.#deps.events.record(workload, warningEvent('PolicyError', error.message));
      return undefined;
    }
    const now = clock.now();
    const current = outOfBandDigests(selection);
    const recorded = parseDigestMap(workload.annotations[BOOKKEEPING.restartedFor]);
    let restartAt = parseRestartAt(workload.annotations[BOOKKEEPING.restartAt]);
    const summaryOf = (configKey: string) => selection.configs.find((c) => `${c.kind}/${c.name}` === configKey)?.summary;
    const seenAt = (configKey: string): number => summaryOf(configKey)?.seenAt ?? now;
    const verdict = compareDigests(recorded, current, seenAt, now, options.debounceMs, (configKey) => summaryOf(configKey)?.changedAt);
    const { strategy, problem } = resolveStrategy(workload, options.defaultStrategy, this.#gitSelected(workload));
    if (problem !== undefined) await this.#deps.events.record(workload, warningEvent('RestartWarning', problem));
    const halt = parseHalt(workload.annotations[FLEET_ANNOTATIONS.restartHalted]);

    switch (verdict.action) {
      case 'debounce':
        return { requeueAfterMs: verdict.afterMs };
      case 'record':
        await this.#apply(workload, { restartedFor: formatDigestMap(current), restartAt: optionalTime(restartAt), templateRestartedAt: workload.templateRestartedAt });
        this.#deps.log.debug({ workload: key, why: verdict.why }, 'recorded the current config digests');
        break;
      case 'restart': {
        const changed = changedConfigs(verdict.changed);
        if (strategy === 'record-only') {
          await this.#apply(workload, { restartedFor: formatDigestMap(current), restartAt: optionalTime(restartAt), templateRestartedAt: workload.templateRestartedAt });
          this.#deps.metrics?.restartsSkipped.inc({ kind: workload.kind, namespace: workload.namespace, reason: workload.kind === 'CronJob' ? 'cronjob' : 'strategy-none' });
          await this.#deps.events.record(workload, normalEvent('RestartSkipped', `${workload.kind === 'CronJob' ? 'a CronJob\'s next Job reads the new config' : 'restart-strategy none'}: recorded only`, changed));
          return undefined;
        }
        const held = await this.#holdStart(key, workload, changed, restartAt, halt, now);
        if (held !== false) return held;
        restartAt = verdict.restartAt;
        // T is recorded now, as always (a controller restarted while waiting resumes from it). The template
        // annotation is not: it is the template step's first act (controller/restart/template.ts), which waits
        // for T (a rollout started in T's second makes pods that read as created before T) and for Argo CD's sync.
        await this.#apply(workload, {
          restartedFor: formatDigestMap(current),
          restartAt: formatTime(restartAt),
          templateRestartedAt: workload.templateRestartedAt,
          // The git strategy records what it is to write before it writes it (ADR 0016): a controller restarted
          // meanwhile submits the same again, which Git makes harmless.
          ...(strategy === 'git' ? { writeBack: formatWriteBackRecord(pendingWriteBack(workload, restartAt, verdict.changed, current, now)) } : {}),
        });
        if (strategy === 'git') this.#gitKeys.add(key);
        this.#restarting.add(key);
        this.#blockedSince.delete(key);
        const metrics = this.#deps.metrics;
        if (metrics !== undefined) {
          metrics.restartsStarted.inc({ kind: workload.kind, namespace: workload.namespace, strategy });
          metrics.reloaderReloadExecuted.inc({ success: 'true', namespace: workload.namespace });
          metrics.changeToRestartSeconds.observe({ kind: workload.kind }, Math.max(0, now - Math.max(...verdict.changed.map(seenAt))) / 1000);
        }
        await this.#deps.events.record(workload, normalEvent('RestartStarted', strategy === 'git'
          ? `the restart at ${formatTime(restartAt)} goes through Git: ${describeStrategy(strategy)}`
          : `replacing the pods created before ${formatTime(restartAt)} (${describeStrategy(strategy)})`, changed));
        for (const warning of strategy === 'evict' ? restartWarnings(workload) : []) await this.#deps.events.record(workload, warningEvent('RestartWarning', warning));
        break;
      }
      case 'none':
        break;
    }
    if (restartAt === undefined || strategy === 'record-only' || halt !== undefined) {
      // A halted workload's restart stops where it is; removing the annotation resumes it from the recorded T.
      this.#finish(key);
      return undefined;
    }
    return this.#progress(key, workload, strategy, restartAt, now);
  }

  /**
   * The workload's bookkeeping, made whole from its record: a workload without the annotations whose UID
   * has a record was replaced as Git renders it (Argo CD Replace=true, kubectl replace), not created anew —
   * the annotations are written back from the record and the restart in progress goes on. A workload with
   * the annotations and no (or an older) record gets its record.
   */
  async #withRecord(key: string, workload: WorkloadSummary): Promise<WorkloadSummary> {
    const { records, options, log } = this.#deps;
    if (records === undefined || options.dryRun === true) return workload;
    const restartedFor = workload.annotations[BOOKKEEPING.restartedFor];
    if (restartedFor !== undefined) {
      await records.write(workload, { restartedFor, restartAt: workload.annotations[BOOKKEEPING.restartAt], writeBack: workload.annotations[WRITE_BACK_ANNOTATION] });
      return workload;
    }
    const record = records.get(workload.uid);
    if (record === undefined) return workload;
    log.info({ workload: key, restartAt: record.restartAt }, 'the workload lost its bookkeeping annotations (replaced): restored from its record');
    const fields: OwnFields = { restartedFor: record.restartedFor, restartAt: record.restartAt, templateRestartedAt: workload.templateRestartedAt, writeBack: record.writeBack };
    await this.#apply(workload, fields);
    // Decided from what was just written, over the newest cached version: the cache may already hold a later
    // version of the replaced object (a status update) that does not show the write yet.
    return withOwnFields(this.#deps.view.workload(key) ?? workload, { ...fields, restartHalted: workload.annotations[FLEET_ANNOTATIONS.restartHalted] });
  }

  /** Server-side apply of the controller's own fields, only when they differ from the live ones. */
  async #apply(workload: WorkloadSummary, given: OwnFields): Promise<void> {
    const key = workloadKey(workload.kind, workload.namespace, workload.name);
    // An apply that omits an owned field removes it: the halt and the write-back record are carried over unless
    // this write sets them.
    const withHalt: OwnFields = 'restartHalted' in given ? given : { ...given, restartHalted: workload.annotations[FLEET_ANNOTATIONS.restartHalted] };
    const fields: OwnFields = 'writeBack' in withHalt ? withHalt : { ...withHalt, writeBack: workload.annotations[WRITE_BACK_ANNOTATION] };
    const same = workload.annotations[BOOKKEEPING.restartedFor] === fields.restartedFor
      && workload.annotations[BOOKKEEPING.restartAt] === fields.restartAt
      && workload.templateRestartedAt === fields.templateRestartedAt
      && workload.annotations[FLEET_ANNOTATIONS.restartHalted] === fields.restartHalted
      && workload.annotations[WRITE_BACK_ANNOTATION] === fields.writeBack;
    const text = JSON.stringify(fields);
    const last = this.#lastApply.get(key);
    // Written already, and the watch has not delivered our write yet: writing again would be a wasted request.
    if (same || (last !== undefined && last.basedOn === workload.resourceVersion && last.fields === text)) return;
    if (this.#deps.options.dryRun !== true) await this.#deps.records?.write(workload, { restartedFor: fields.restartedFor, restartAt: fields.restartAt, writeBack: fields.writeBack });
    await this.#deps.writes.applyOwnFields(workload, fields);
    if (this.#deps.options.dryRun === true) {
      // Nothing was applied: the dry-run writes said what they would record.
      this.#shadow.set(key, fields);
      return;
    }
    this.#lastApply.set(key, { basedOn: workload.resourceVersion, fields: text, own: fields });
    this.#deps.log.debug({ workload: key, restartAt: fields.restartAt }, 'applied own fields');
  }

  /**
   * Moves a restart one step: asks `nextStep` (controller/restart/step.ts) what to do, and does it. Nothing
   * here decides; what it keeps is memory the cluster does not show yet (pods evicted, Events announced).
   */
  async #progress(key: string, workload: WorkloadSummary, strategy: Exclude<ResolvedStrategy, 'record-only'>, restartAt: number, now: number): Promise<ProcessResult> {
    const { options, view } = this.#deps;
    if (strategy === 'git') return this.#progressGit(key, workload, restartAt, now);
    if (strategy === 'evict' && this.#dryRunFinished.get(key) === restartAt) return undefined;
    const input: RestartInput = {
      workload,
      pods: view.podsOf(workload).map((pod) => this.#withEvictions(pod, now)),
      restartAt,
      strategy,
      // T and the pods' creation and Ready times are the API server's: the step compares them with its clock.
      now: this.#deps.skew?.apiNow(now) ?? now,
      acting: this.#restarting.has(key),
      app: view.applicationOf(workload),
      project: this.#projectOf(workload),
      syncWaitMs: options.argocdSyncWaitMs ?? 0,
      healthGateTimeoutMs: (options.fleet ?? FLEET_OFF).healthGateTimeoutMs,
      breakerOpen: () => this.#breakerAt(now).open,
    };
    const marker = progressMarker(workload, input.pods, restartAt);
    const stalled = this.#stalled.get(key);
    if (stalled !== undefined) {
      // Halted by the progress deadline: it acts again only once its pods moved by themselves (or at a new T),
      // and only with a free slot, as a start would.
      if (stalled.restartAt === restartAt && stalled.marker === marker) return { requeueAfterMs: options.checkIntervalMs };
      if (!this.#restarting.has(key) && this.#actingCount() >= options.maxConcurrentRestarts) return { requeueAfterMs: options.checkIntervalMs };
      this.#stalled.delete(key);
      this.#deps.log.info({ workload: key }, 'a stalled restart moved: resuming it');
    }
    await this.#announceSyncWaitExpiry(key, workload, input);
    let step = nextStep(input);
    if (step.kind === 'set-template') {
      await this.#apply(workload, { restartedFor: workload.annotations[BOOKKEEPING.restartedFor] ?? '{}', restartAt: formatTime(restartAt), templateRestartedAt: formatTime(restartAt) });
      // Written: the same reconcile goes on from the annotation (a restart with no stale pod left is done now).
      step = nextStep({ ...input, workload: { ...workload, templateRestartedAt: formatTime(restartAt) } });
    }
    // `--dry-run`: no pod goes away, so pacing would wait forever; every eviction the restart would make is reported at once.
    const heldOrHalted = (step.kind === 'halt' && step.cause === 'health-gate') || (step.kind === 'wait' && HOLDS_BEFORE_ACTING.has(step.cause));
    if (options.dryRun === true && strategy === 'evict' && !heldOrHalted) {
      return this.#dryRunEvictions(key, workload, input.pods, restartAt, now);
    }
    if (this.#deadlinePassed(key, step, restartAt, marker, now)) return this.#stall(key, workload, strategy, restartAt, step, input.pods, marker);
    return this.#execute(key, workload, strategy, restartAt, now, step, input.now);
  }

  /**
   * Whether the restart has waited on its workload, its pods unmoved, for `--restart-progress-deadline`.
   * Any other step (an eviction, a write, a bounded or fleet-wide wait) starts the clock again.
   */
  #deadlinePassed(key: string, step: RestartStep, restartAt: number, marker: string, now: number): boolean {
    const deadlineMs = this.#deps.options.progressDeadlineMs ?? 0;
    const last = this.#lastProgress.get(key);
    const waitsOnWorkload = step.kind === 'wait' && DEADLINE_CAUSES.has(step.cause);
    if (deadlineMs <= 0 || !waitsOnWorkload || last === undefined || last.restartAt !== restartAt || last.marker !== marker) {
      this.#lastProgress.set(key, { restartAt, marker, at: now });
      return false;
    }
    return now - last.at >= deadlineMs;
  }

  /** The progress deadline passed: the restart stops acting, gives its slot back, and says why. */
  async #stall(key: string, workload: WorkloadSummary, strategy: ResolvedStrategy, restartAt: number, step: RestartStep, pods: readonly PodSummary[], marker: string): Promise<ProcessResult> {
    const { options, log } = this.#deps;
    this.#finish(key);
    this.#stalled.set(key, { restartAt, marker });
    this.#lastProgress.delete(key);
    const cause = step.kind === 'wait' ? step.cause : step.kind;
    this.#deps.metrics?.restartsStalled.inc({ kind: workload.kind, namespace: workload.namespace, strategy, cause });
    const why = stallReason(step, pods, restartAt);
    log.warn({ workload: key, cause, reason: why }, 'restart halted: no progress within --restart-progress-deadline');
    const deadline = `${Math.round((options.progressDeadlineMs ?? 0) / 1000)}s`;
    await this.#deps.events.record(workload, warningEvent('RestartProgressDeadlineExceeded',
      `the restart at ${formatTime(restartAt)} made no progress for ${deadline} (--restart-progress-deadline): ${why}; it holds no restart slot now and resumes once its pods move, or at the next change`));
    return { requeueAfterMs: options.checkIntervalMs };
  }

  /** Does what a step says. */
  async #execute(key: string, workload: WorkloadSummary, strategy: ResolvedStrategy, restartAt: number, now: number, step: RestartStep, apiNow: number): Promise<ProcessResult> {
    const { options, events, log } = this.#deps;
    // A sync-window hold ends with an act (or the restart's end); the next hold (a later window) is announced
    // anew. Other waits do not end it: a later change's T may be ahead of the clock for a moment.
    if (step.kind !== 'wait') this.#windowHolds.delete(key);
    switch (step.kind) {
      case 'done':
        return this.#done(key, workload, restartAt);
      case 'halt':
        if (step.cause === 'health-gate') return this.#halt(key, workload, strategy, step.reason, now);
        this.#finish(key);
        this.#deps.metrics?.restartsSkipped.inc({ kind: workload.kind, namespace: workload.namespace, reason: 'pending-revision' });
        await events.record(workload, warningEvent('RestartSkipped', step.reason));
        return undefined;
      case 'set-restart-at':
        this.#restarting.add(key);
        await this.#deps.writes.patchRestartAt(workload, step.restartAt);
        return { requeueAfterMs: options.checkIntervalMs };
      case 'set-template':
        // Written just above; the cache shows it on the next reconcile.
        this.#restarting.add(key);
        return { requeueAfterMs: options.checkIntervalMs };
      case 'wait':
        this.#restarting.add(key);
        if (step.cause === 'argocd-sync') {
          const announced = this.#syncWaits.get(key);
          if (announced?.restartAt !== restartAt) {
            this.#syncWaits.set(key, { restartAt, expired: false });
            await events.record(workload, normalEvent('RestartWaitingForSync', `${step.reason}: its sync replaces the pods, so the restart at ${formatTime(restartAt)} waits for it (at most ${this.#syncWaitBound()})`));
          }
        }
        if (step.cause === 'sync-window') {
          const hold = `${step.name ?? ''}\u0000${step.until ?? step.reason}`;
          if (this.#windowHolds.get(key) !== hold) {
            this.#windowHolds.set(key, hold);
            await events.record(workload, normalEvent('RestartWaitingForSyncWindow', `${step.reason} (the restart at ${formatTime(restartAt)}; changes meanwhile join it)`));
          }
          // Nothing in the cluster announces a window opening: look again at its end (resync and an AppProject change wake it too).
          return { requeueAfterMs: step.until === undefined ? options.checkIntervalMs : Math.max(1, step.until - apiNow) };
        }
        if (step.cause === 'breaker') this.#deps.fleetMetrics?.restartsDeferred.inc({ cause: 'breaker' });
        log.debug({ workload: key, cause: step.cause, reason: step.reason }, 'restart waiting');
        // T ahead is waited for to the millisecond; the sync wait is looked at again at its bound at the latest.
        if (step.cause === 'restart-time' && step.until !== undefined) return { requeueAfterMs: step.until - apiNow };
        if (step.cause === 'argocd-sync' && step.until !== undefined) return { requeueAfterMs: Math.max(1, Math.min(options.checkIntervalMs, step.until - apiNow)) };
        return { requeueAfterMs: options.checkIntervalMs };
      case 'evict':
        this.#restarting.add(key);
        for (const pod of step.pods) {
          const { outcome, message } = await this.#deps.writes.evict(pod);
          this.#deps.metrics?.evictions.inc({ namespace: pod.namespace, outcome });
          if (outcome === 'evicted' || outcome === 'gone') {
            this.#evicted.set(pod.uid, now);
            this.#blockedSince.delete(key);
            log.info({ workload: key, pod: pod.name }, 'evicted');
            continue;
          }
          this.#deps.metrics?.restartsBlocked.inc({ kind: workload.kind, namespace: workload.namespace, strategy });
          const since = this.#blockedSince.get(key) ?? now;
          this.#blockedSince.set(key, since);
          if (now - since >= options.blockedWarningMs) {
            // The same words for as long as the block lasts (the oldest stale pod is the one asked, and no elapsed
            // time): the recorder folds the rechecks into one Event with a rising count.
            await events.record(workload, warningEvent('RestartBlocked', `eviction of pod ${pod.name} refused since ${formatTime(since)}: ${message}`));
          }
          log.info({ workload: key, pod: pod.name, outcome }, 'eviction refused; retrying later');
          break;
        }
        return { requeueAfterMs: options.checkIntervalMs };
    }
  }

  /** Whether the Git write-back selects the workload (strategy git): its annotation, or the `--write-back-*` defaults. */
  #gitSelected(workload: WorkloadSummary): boolean {
    const { options, writeBack, view } = this.#deps;
    if (options.writeBack === undefined || writeBack === undefined) return false;
    return selectGit(workload, view.applicationOf(workload), options.writeBack.defaults).git;
  }

  /**
   * Moves a restart through Git one step (controller/restart/git.ts decides, ADR 0016): submit the changed
   * digests, record the engine's answer, wait for Argo CD's sync and the roll, or fall back to the cluster.
   */
  async #progressGit(key: string, workload: WorkloadSummary, restartAt: number, now: number): Promise<ProcessResult> {
    const { options, view, events, log } = this.#deps;
    const writeBack = this.#deps.writeBack;
    const settings = options.writeBack;
    const record = parseWriteBackRecord(workload.annotations[WRITE_BACK_ANNOTATION]);
    // No record for this T: the restart at T was not one through Git (the strategy changed since); nothing is written for it.
    if (writeBack === undefined || settings === undefined || record?.restartAt !== restartAt) {
      this.#finish(key);
      return undefined;
    }
    const app = view.applicationOf(workload);
    const configs = recordedConfigs(workload.namespace, record);
    const ref = { kind: workload.kind, namespace: workload.namespace, name: workload.name };
    const step = gitStep({
      restartAt,
      changed: configs,
      record,
      // The answer to this workload's own submission: its Application's other workloads submit separately.
      status: writeBack.statusOfWorkload(ref),
      tracked: app !== undefined && configs.length > 0,
      keyed: settings.keyed,
      workload,
      now,
      fallbackAfterMs: settings.fallbackAfterMs,
      fallback: settings.fallback,
      retryMs: settings.retryMs,
    });
    const own = (next: WriteBackRecord): OwnFields => ({
      restartedFor: workload.annotations[BOOKKEEPING.restartedFor] ?? '{}',
      restartAt: workload.annotations[BOOKKEEPING.restartAt],
      templateRestartedAt: workload.templateRestartedAt,
      writeBack: formatWriteBackRecord(next),
    });
    // Done is not acting: re-adding it would announce RestartFinished again on every later look at the same T.
    if (step.kind !== 'fall-back' && step.kind !== 'done') {
      this.#restarting.add(key);
      this.#gitKeys.add(key);
    }
    switch (step.kind) {
      case 'submit': {
        await this.#apply(workload, own(step.record));
        if (app === undefined) return { requeueAfterMs: options.checkIntervalMs };
        log.info({ workload: key, application: `${app.namespace}/${app.name}` }, 'write-back submitted');
        void writeBack.submit({
          application: app.writeBackSource,
          configs: step.configs,
          workloads: [ref],
          changeSeenAt: restartAt,
        }).then(() => this.#deps.wake?.(key));
        return { requeueAfterMs: options.checkIntervalMs };
      }
      case 'record': {
        await this.#apply(workload, own(step.record));
        const { sha, branch, repo, error } = step.record;
        if (step.record.state === 'committed') {
          await events.record(workload, normalEvent('WriteBackCommitted', `${sha === undefined ? 'the digests were already' : `committed ${sha.slice(0, 12)}`} in ${repo ?? 'the repository'} on ${branch ?? 'its branch'} for the restart at ${formatTime(restartAt)}: Argo CD's sync rolls the ${workload.kind}`, changedConfigs(Object.keys(record.configs))));
        } else {
          const result = writeBack.statusOfWorkload(ref)?.result;
          const message = result?.status === 'failed' ? result.error.message : error ?? 'unknown';
          await events.record(workload, warningEvent('WriteBackFailed', `the write-back failed (${error ?? 'unknown'}): ${message}; retrying until --write-back-fallback-after`));
        }
        return { requeueAfterMs: options.checkIntervalMs };
      }
      case 'wait':
        log.debug({ workload: key, cause: step.cause, reason: step.reason }, 'write-back waiting');
        return { requeueAfterMs: step.until === undefined ? options.checkIntervalMs : Math.max(1, Math.min(options.checkIntervalMs * 60, step.until - now)) };
      case 'fall-back': {
        await this.#apply(workload, own(step.record));
        if (step.announce) {
          this.#deps.writeBackMetrics?.fallbacks.inc({ cause: step.cause });
          log.warn({ workload: key, cause: step.cause, to: step.to }, 'write-back given up');
          await events.record(workload, warningEvent('WriteBackFallback', `${step.reason}; ${step.to === 'restart' ? 'restarting in the cluster instead' : 'recorded only (--write-back-fallback none)'}`, changedConfigs(Object.keys(record.configs))));
        }
        this.#gitKeys.delete(key);
        const inCluster = resolveStrategy(workload, options.defaultStrategy).strategy;
        if (step.to === 'none' || inCluster === 'record-only' || inCluster === 'git') {
          this.#finish(key);
          return undefined;
        }
        // The restart at T goes on in the cluster, from what was just written.
        return this.#progress(key, withOwnFields(workload, own(step.record)), inCluster, restartAt, now);
      }
      case 'done':
        // Synced and rolled, seen now: recorded on the workload, so a later revert or rollback re-opens nothing.
        if (step.record !== undefined) await this.#apply(workload, own(step.record));
        // Every look at a finished restart says so (debug): that it looked, where nothing else shows it.
        log.debug({ workload: key, restartAt: formatTime(restartAt), state: step.record?.state ?? record.state }, 'restart through Git done');
        if (this.#finish(key)) {
          if (step.unconfirmed !== undefined) {
            log.warn({ workload: key }, 'write-back not synced by Argo CD within --write-back-fallback-after; no longer waiting');
            await events.record(workload, warningEvent('RestartSyncWaitExpired', step.unconfirmed, changedConfigs(Object.keys(record.configs))));
            return undefined;
          }
          this.#deps.metrics?.restartsFinished.inc({ kind: workload.kind, namespace: workload.namespace, strategy: 'git' });
          await events.record(workload, normalEvent('RestartFinished', `Argo CD synced the write-back${record.sha === undefined ? '' : ` (commit ${record.sha.slice(0, 12)})`} and the ${workload.kind} rolled`));
        }
        return undefined;
    }
  }

  /** The workload's Application's AppProject, when both are watched. */
  #projectOf(workload: WorkloadSummary): AppProjectSummary | undefined {
    const app = this.#deps.view.applicationOf(workload);
    return app === undefined ? undefined : this.#deps.view.projectOf(app);
  }

  /** `--argocd-sync-wait` in words, as the Events give it. */
  #syncWaitBound(): string {
    return `${Math.round((this.#deps.options.argocdSyncWaitMs ?? 0) / 1000)}s`;
  }

  /** One Warning per T when a sync still pending no longer holds the restart (ADR 0011). */
  async #announceSyncWaitExpiry(key: string, workload: WorkloadSummary, input: RestartInput): Promise<void> {
    const reason = expiredSyncWait(input);
    if (reason === undefined) return;
    const announced = this.#syncWaits.get(key);
    const state = announced?.restartAt === input.restartAt ? announced : { restartAt: input.restartAt, expired: false };
    this.#syncWaits.set(key, state);
    if (state.expired) return;
    state.expired = true;
    await this.#deps.events.record(workload, warningEvent('RestartSyncWaitExpired', `${reason} ${this.#syncWaitBound()} after ${formatTime(input.restartAt)} (--argocd-sync-wait): restarting anyway`));
  }

  /**
   * Whether a restart may start now; `false` when it may, else what to return. In order: a halted
   * workload never starts; the breaker pauses every start; the workload's cooldown; the concurrency
   * cap; the rate — last, so a token is only spent on a start that happens.
   */
  async #holdStart(key: string, workload: WorkloadSummary, changed: readonly EventConfig[], lastRestartAt: number | undefined, halt: ReturnType<typeof parseHalt>, now: number): Promise<ProcessResult | false> {
    const { options, events } = this.#deps;
    const fleet = options.fleet ?? FLEET_OFF;
    if (halt !== undefined) {
      await events.record(workload, warningEvent('RestartHalted', `not restarted: restarts of this workload are halted (${halt.reason}); remove the annotation ${FLEET_ANNOTATIONS.restartHalted} to resume`, changed));
      return undefined;
    }
    const breaker = this.#breakerAt(now);
    if (breaker.open) {
      this.#deps.fleetMetrics?.restartsDeferred.inc({ cause: 'breaker' });
      await events.record(workload, warningEvent('RestartPaused', `every restart is paused: ${breaker.halts} restarts halted within --breaker-window; remove the ${FLEET_ANNOTATIONS.restartHalted} annotations to resume`, changed));
      return { requeueAfterMs: options.checkIntervalMs };
    }
    const cooldown = cooldownFor(workload, fleet);
    if (cooldown.problem !== undefined) await events.record(workload, warningEvent('RestartWarning', cooldown.problem));
    const wait = cooldownRemaining(lastRestartAt, cooldown.ms, now);
    if (wait > 0 && lastRestartAt !== undefined && cooldown.cause !== undefined) {
      this.#deps.fleetMetrics?.restartsDeferred.inc({ cause: cooldown.cause });
      const last = formatTime(lastRestartAt);
      const next = formatTime(lastRestartAt + cooldown.ms);
      const seconds = `${Math.round(cooldown.ms / 1000)}s`;
      // A config flipping within the interval is a fight (two issuers, one Secret): a Warning. A pause period is asked for.
      if (cooldown.cause === 'pause-period') await events.record(workload, normalEvent('RestartDeferred', `within the pause period (${seconds}) of the restart at ${last}: restarting at ${next}`, changed));
      else await events.record(workload, warningEvent('RestartDeferred', `again within --min-restart-interval (${seconds}) of the restart at ${last}: at most one restart per interval, next at ${next}`, changed));
      return { requeueAfterMs: wait };
    }
    // A restart a PodDisruptionBudget blocks does not hold a slot: ten blocked workloads must not stop the fleet.
    if (!this.#restarting.has(key) && this.#actingCount() >= options.maxConcurrentRestarts) {
      this.#deps.log.debug({ workload: key }, 'waiting for a restart slot (max-concurrent-restarts)');
      return { requeueAfterMs: options.checkIntervalMs };
    }
    const limiter = this.#deps.startLimiter;
    if (limiter !== undefined && !limiter.tryTake()) {
      this.#deps.fleetMetrics?.restartsDeferred.inc({ cause: 'rate' });
      this.#deps.log.debug({ workload: key }, 'waiting for a restart token (restart-rate)');
      return { requeueAfterMs: limiter.retryAfterMs };
    }
    return false;
  }

  /** The health gate failed: record the halt on the workload (it outlives this process) and stop. */
  async #halt(key: string, workload: WorkloadSummary, strategy: ResolvedStrategy, reason: string, now: number): Promise<ProcessResult> {
    const at = Math.floor(now / 1000) * 1000;
    await this.#apply(workload, {
      restartedFor: workload.annotations[BOOKKEEPING.restartedFor] ?? '{}',
      restartAt: workload.annotations[BOOKKEEPING.restartAt],
      templateRestartedAt: workload.templateRestartedAt,
      restartHalted: formatHalt({ at, reason }),
    });
    // The cache shows our write a moment later; the breaker must count this halt now.
    this.#pendingHalts.set(key, { at, basedOn: workload.resourceVersion });
    this.#breaker = undefined;
    this.#finish(key);
    this.#deps.metrics?.restartsFailed.inc({ kind: workload.kind, namespace: workload.namespace, strategy });
    this.#deps.metrics?.reloaderReloadExecuted.inc({ success: 'false', namespace: workload.namespace });
    this.#deps.fleetMetrics?.restartsHalted.inc({ kind: workload.kind, namespace: workload.namespace });
    this.#deps.log.warn({ workload: key, reason }, 'restart halted by the health gate');
    await this.#deps.events.record(workload, warningEvent('RestartHalted', `${reason}: no further restart of this workload until the annotation ${FLEET_ANNOTATIONS.restartHalted} is removed`));
    return undefined;
  }

  /** The breaker, from every cached workload's halt; evaluated at most once a second. */
  #breakerAt(now: number): BreakerState {
    const fleet = this.#deps.options.fleet ?? FLEET_OFF;
    if (this.#breaker !== undefined && now - this.#breaker.at < BREAKER_RECHECK_MS) return this.#breaker.state;
    const { view } = this.#deps;
    const times: number[] = [];
    for (const key of view.workloadKeys()) {
      const workload = this.#withShadow(key, view.workload(key));
      const pending = this.#pendingHalts.get(key);
      if (pending !== undefined && workload?.resourceVersion !== pending.basedOn) this.#pendingHalts.delete(key);
      const halt = this.#pendingHalts.get(key)?.at ?? parseHalt(workload?.annotations[FLEET_ANNOTATIONS.restartHalted])?.at;
      if (halt !== undefined) times.push(halt);
    }
    const state = breakerState(times, fleet.breakerThreshold, fleet.breakerWindowMs);
    const was = this.#breaker?.state.open === true;
    if (state.open && !was) this.#deps.log.warn({ halts: state.halts }, 'restart breaker open: every restart is paused');
    if (!state.open && was) this.#deps.log.info('restart breaker closed: restarts resume');
    this.#breaker = { at: now, state };
    return state;
  }

  /** `--dry-run`: what the writes would have recorded, read back over the cached workload. */
  #withShadow(key: string, workload: WorkloadSummary | undefined): WorkloadSummary | undefined {
    // Our last apply, while the cache still shows the version it was based on (the watch has not delivered
    // it yet): deciding from the stale copy would start the same restart twice.
    const last = this.#lastApply.get(key);
    const shadow = this.#shadow.get(key) ?? (last !== undefined && workload !== undefined && last.basedOn === workload.resourceVersion ? last.own : undefined);
    if (workload === undefined || shadow === undefined) return workload;
    return withOwnFields(workload, shadow);
  }

  /** `--dry-run`: no pod goes away, so pacing would wait forever; report every eviction the restart would make, once. */
  async #dryRunEvictions(key: string, workload: WorkloadSummary, pods: readonly PodSummary[], restartAt: number, now: number): Promise<ProcessResult> {
    for (const pod of pods) {
      if (!isStalePod(pod, restartAt)) continue;
      await this.#deps.writes.evict(pod);
      this.#evicted.set(pod.uid, now);
    }
    this.#dryRunFinished.set(key, restartAt);
    return this.#done(key, workload, restartAt);
  }

  /** A pod we evicted counts as being deleted until the watch says so. */
  #withEvictions(pod: PodSummary, now: number): PodSummary {
    const at = this.#evicted.get(pod.uid);
    if (at === undefined) return pod;
    if (now - at > EVICTED_MEMORY_MS) {
      this.#evicted.delete(pod.uid);
      return pod;
    }
    return pod.deleting ? pod : { ...pod, deleting: true };
  }

  async #done(key: string, workload: WorkloadSummary, restartAt: number): Promise<ProcessResult> {
    if (this.#finish(key)) {
      this.#deps.metrics?.restartsFinished.inc({ kind: workload.kind, namespace: workload.namespace, strategy: resolveStrategy(workload, this.#deps.options.defaultStrategy).strategy });
      await this.#deps.events.record(workload, normalEvent('RestartFinished', `every pod created before ${formatTime(restartAt)} was replaced`));
    }
    return undefined;
  }

  /** Restarts holding a `--max-concurrent-restarts` slot: in progress, not refused by a PodDisruptionBudget, not held by sync windows. */
  #actingCount(): number {
    return this.#restarting.size - this.#blockedCount() - this.#windowHeldCount() - [...this.#gitKeys].filter((key) => this.#restarting.has(key)).length;
  }

  /** Restarts in progress held by their sync windows: they act on nothing, so they hold no slot (a window may stay shut for hours). */
  #windowHeldCount(): number {
    let count = 0;
    for (const key of this.#windowHolds.keys()) if (this.#restarting.has(key) && !this.#blockedSince.has(key)) count++;
    return count;
  }

  /** Restarts in progress whose evictions are being refused (PodDisruptionBudget). */
  #blockedCount(): number {
    let count = 0;
    for (const key of this.#blockedSince.keys()) if (this.#restarting.has(key)) count++;
    return count;
  }

  /** Forgets a restart in progress; true when there was one. */
  #finish(key: string): boolean {
    this.#blockedSince.delete(key);
    this.#syncWaits.delete(key);
    this.#windowHolds.delete(key);
    this.#gitKeys.delete(key);
    this.#lastProgress.delete(key);
    if (this.#deps.view.workload(key) === undefined) {
      this.#stalled.delete(key);
      this.#lastApply.delete(key);
      this.#shadow.delete(key);
      this.#dryRunFinished.delete(key);
      this.#pendingHalts.delete(key);
    }
    return this.#restarting.delete(key);
  }
}

/** The workload as it reads with the controller's own fields `own` written. */
function withOwnFields(workload: WorkloadSummary, own: OwnFields): WorkloadSummary {
  const annotations: Record<string, string> = { ...workload.annotations, [BOOKKEEPING.restartedFor]: own.restartedFor };
  if (own.restartAt !== undefined) annotations[BOOKKEEPING.restartAt] = own.restartAt;
  if (own.restartHalted !== undefined) annotations[FLEET_ANNOTATIONS.restartHalted] = own.restartHalted;
  if (own.writeBack !== undefined) annotations[WRITE_BACK_ANNOTATION] = own.writeBack;
  return { ...workload, annotations, templateRestartedAt: own.templateRestartedAt };
}

/** `Kind/name` config keys as the Events name them. */
function changedConfigs(keys: readonly string[]): readonly EventConfig[] {
  return keys.map((key) => {
    const slash = key.indexOf('/');
    return Object.freeze({ kind: key.slice(0, slash) as EventConfig['kind'], name: key.slice(slash + 1) });
  });
}

/**
 * What the restart's pods and status look like, as far as progress goes: pods from before T still running
 * and being deleted, replacements and how many are Ready, and the status fields a rollout advances.
 * A change in any of them is progress.
 */
function progressMarker(workload: WorkloadSummary, pods: readonly PodSummary[], restartAt: number): string {
  let old = 0;
  let deleting = 0;
  let fresh = 0;
  let ready = 0;
  for (const pod of pods) {
    if (isTerminalPod(pod)) continue;
    if (pod.createdAt < restartAt) {
      if (pod.deleting) deleting++;
      else old++;
    } else {
      fresh++;
      if (pod.readySince !== undefined) ready++;
    }
  }
  const { status } = workload;
  return JSON.stringify([old, deleting, fresh, ready, status.restartedAt ?? null, status.updatedReplicas ?? null, status.updatedNumberScheduled ?? null, status.currentRevision ?? null]);
}

/** Why a stalled restart is stuck, in words: the step's reason, and a replacement that cannot start. */
function stallReason(step: RestartStep, pods: readonly PodSummary[], restartAt: number): string {
  const reason = step.kind === 'wait' || step.kind === 'halt' ? step.reason : step.kind;
  const pending = pods.filter((pod) => pod.createdAt >= restartAt && !pod.deleting && pod.phase === 'Pending').map((pod) => pod.name).sort();
  return pending.length === 0 ? reason : `${reason}; replacement pod ${pending[0]} is Pending (unschedulable, or waiting for quota or volumes)`;
}

function optionalTime(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : formatTime(ms);
}

function describeStrategy(strategy: ResolvedStrategy): string {
  switch (strategy) {
    case 'evict': return 'paced evictions';
    case 'restart-at': return 'the Rollout\'s spec.restartAt';
    case 'template': return 'a rolling update through the pod template annotation driftless.dev/restarted-at';
    case 'record-only': return 'recorded only';
    case 'git': return 'a commit of the changed digests to the Application\'s Git source, which Argo CD syncs';
  }
}

export { parseWorkloadKey };

/** The record of a restart through Git at T, before its first submission: the changed configs' keyed digests. */
function pendingWriteBack(workload: WorkloadSummary, restartAt: number, changed: readonly string[], current: Readonly<Record<string, string>>, now: number): WriteBackRecord {
  const configs: Record<string, string> = {};
  for (const key of changed) {
    const digest = current[key];
    if (digest !== undefined && (key.startsWith('ConfigMap/') || key.startsWith('Secret/'))) configs[key] = digest;
  }
  return { restartAt, state: 'pending', configs, templateHash: workload.configHash ?? '', since: now, at: now };
}

/** The configs a record holds, as the write-back takes them (only ConfigMaps and Secrets have a digest the plugin folds). */
function recordedConfigs(namespace: string, record: WriteBackRecord): ConfigDigest[] {
  const out: ConfigDigest[] = [];
  for (const [key, digest] of Object.entries(record.configs)) {
    const slash = key.indexOf('/');
    const kind = key.slice(0, slash);
    if (kind === 'ConfigMap' || kind === 'Secret') out.push({ kind, namespace, name: key.slice(slash + 1), digest });
  }
  return out;
}
