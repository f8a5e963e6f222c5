/**
 * Reconciling one workload, level-triggered from the caches: decide what its
 * out-of-band configs call for, admit a restart (fleet/admission.ts), write T
 * on the workload's metadata, and move a restart in progress one paced step
 * further (restart/step.ts decides, restart/execute.ts acts, the Git path in
 * restart/git-progress.ts). Every write is compared before it is made, so a
 * reconcile with nothing changed writes nothing — a controller restart or a
 * leader change restarts nothing. What the cluster does not show yet is kept
 * in restart/memory.ts.
 *
 * Semantics, the same for every strategy: a restart at T replaces the pods
 * created before T. T is when the controller first saw the new content, so
 * pods a racing sync created after T are left alone (no double restart), and
 * pods created just before an operator wrote the new value are replaced.
 */
import { BOOKKEEPING, FLEET_ANNOTATIONS, ManifestError, WRITE_BACK_ANNOTATION } from '../core/index.ts';
import { formatDigestMap, formatTime, parseDigestMap, parseRestartAt, type DigestMap } from './bookkeeping.ts';
import { parseWorkloadKey, workloadKey } from './cache/cluster-view.ts';
import { compareDigests, outOfBandDigests, resolveStrategy, selectConfigs, type ResolvedStrategy, type Verdict } from './decide.ts';
import { changedConfigs, normalEvent, warningEvent } from './events.ts';
import { admitStart, FLEET_OFF } from './fleet/admission.ts';
import { Breaker } from './fleet/breaker.ts';
import { parseHalt, type Halt } from './fleet/safety.ts';
import type { OwnFields } from './kube/writes.ts';
import type { WorkloadSummary } from './model.ts';
import type { ProcessResult } from './queue.ts';
import type { ReconcilerDeps } from './reconciler-deps.ts';
import type { RecordStore as RestartRecords } from './record/store.ts';
import { evictAtOnce, evictionsReported, evictsAtOnce } from './restart/evict-at-once.ts';
import { finishRestart, haltRestart, skipRestart, stallRestart, type Ending } from './restart/endings.ts';
import { announceSyncWaitExpiry, executeStep, type Execution, type StepTarget } from './restart/execute.ts';
import { progressGit, type GitProgress } from './restart/git-progress.ts';
import { RestartMemory } from './restart/memory.ts';
import { completeOwnFields, ownFieldsWith, showsOwnFields, withOwnFields } from './restart/own-fields.ts';
import { deadlinePassed, progressMarker, resumesStalled } from './restart/progress.ts';
import { nextStep, type RestartInput } from './restart/step.ts';
import { startRestart, type Starting } from './restart/start.ts';
import { rememberWrites, shadowWrites, type UnseenWrites } from './restart/unseen-writes.ts';
import { selectGit } from './writeback/select.ts';

export type { StartLimiter } from './fleet/admission.ts';
export type { GitStrategyOptions, ReconcileOptions, ReconcilerDeps } from './reconciler-deps.ts';

/** A strategy that moves pods in the cluster (or through Git). */
type ActingStrategy = Exclude<ResolvedStrategy, 'record-only'>;

/** What the workload's configs call for, and everything the later stages read. */
interface Decision {
  readonly workload: WorkloadSummary;
  readonly verdict: Verdict;
  readonly strategy: ResolvedStrategy;
  readonly current: DigestMap;
  /** The T recorded on the workload (its last restart), if any. */
  readonly lastRestartAt: number | undefined;
  readonly halt: Halt | undefined;
  readonly now: number;
  /** When a config's current content was first seen. */
  readonly seenAt: (configKey: string) => number;
}

/** Reconciles workloads; one instance per controller, keys are `Kind/namespace/name`. */
export class Reconciler {
  readonly #deps: ReconcilerDeps;
  readonly #memory = new RestartMemory();
  /** The writes, remembering what they applied (under `--dry-run`, what they would have). */
  readonly #writes: UnseenWrites;
  /** Copies of each workload's bookkeeping by UID; none under `--dry-run`, where nothing is written. */
  readonly #restartRecords: RestartRecords | undefined;
  readonly #breaker: Breaker;
  /** What the restart modules (start, execute, the Git path, the endings) act through. */
  readonly #context: Execution & GitProgress & Starting & Ending & { readonly writes: UnseenWrites };

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
    const dryRun = deps.options.dryRun === true;
    this.#writes = dryRun ? shadowWrites(deps.writes) : rememberWrites(deps.writes, deps.log);
    this.#restartRecords = dryRun ? undefined : deps.records;
    this.#breaker = new Breaker(deps.options.fleet ?? FLEET_OFF, deps.log);
    this.#context = {
      deps,
      memory: this.#memory,
      writes: this.#writes,
      breaker: this.#breaker,
      apply: (workload, fields) => this.#apply(workload, fields),
      finish: (key) => this.#finish(key),
    };
  }

  /** True while the workload has a restart in progress (its pod events wake it). */
  isRestarting(key: string): boolean {
    return this.#memory.inProgress(key);
  }

  /** True while the fleet-wide breaker pauses every restart (as of its last evaluation). */
  get breakerOpen(): boolean {
    return this.#breaker.open;
  }

  /** Number of restarts in progress. */
  get restartingCount(): number {
    return this.#memory.inProgressCount;
  }

  /** One reconcile of one workload: observe, decide, admit, write T, then one step of the restart. */
  async reconcile(key: string): Promise<ProcessResult> {
    const workload = await this.#observe(key);
    if (workload === undefined) return undefined;
    const decision = await this.#decide(key, workload);
    if (decision === undefined) return undefined;
    const { verdict, strategy, halt } = decision;
    let restartAt = decision.lastRestartAt;
    switch (verdict.action) {
      case 'debounce':
        return { requeueAfterMs: verdict.afterMs };
      case 'write-digests':
        await this.#writeDigests(decision);
        this.#deps.log.debug({ workload: key, why: verdict.why }, 'recorded the current config digests');
        break;
      case 'restart': {
        if (strategy === 'record-only') return this.#skipByStrategy(decision, verdict.changed);
        const admission = await this.#admit(key, decision, verdict.changed);
        if (admission !== true) return admission;
        restartAt = verdict.restartAt;
        await startRestart(this.#context, { key, workload: decision.workload, strategy, restartAt, changed: verdict.changed, current: decision.current, now: decision.now, seenAt: decision.seenAt });
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
    return this.#progress(key, decision.workload, strategy, restartAt, decision.now);
  }

  /** The workload as we know it (with our writes the cache does not show), made whole from its restart record; undefined: nothing to do. */
  async #observe(key: string): Promise<WorkloadSummary | undefined> {
    const records = this.#restartRecords;
    const workload = this.#writes.readBack(key, this.#deps.view.workload(key));
    const { kind, namespace, name } = parseWorkloadKey(key);
    if (records?.hasStale(kind, namespace, name, workload?.uid) === true) {
      // The workload was deleted (or deleted and created again, a new UID): its old record says nothing now.
      await records.forget(kind, namespace, name, workload?.uid);
    }
    if (workload === undefined || !this.#deps.inScope(workload.namespace)) {
      this.#finish(key);
      return undefined;
    }
    return this.#restoreBookkeeping(key, workload);
  }

  /** What the workload's configs call for; undefined when nothing can be decided now (an Event may say why). */
  async #decide(key: string, workload: WorkloadSummary): Promise<Decision | undefined> {
    const { view, options, clock, events } = this.#deps;
    const source = workload.workloadRef === undefined ? workload : view.workload(workloadKey(workload.workloadRef.kind, workload.namespace, workload.workloadRef.name));
    // A Rollout whose borrowed Deployment is not cached yet: the Deployment's arrival enqueues it.
    if (source === undefined) return undefined;
    let selection;
    try {
      selection = selectConfigs(workload, source, view.configLookup(workload.namespace), options.mode);
    } catch (error) {
      if (!(error instanceof ManifestError)) throw error;
      await events.record(workload, warningEvent('PolicyError', error.message));
      return undefined;
    }
    const now = clock.now();
    const current = outOfBandDigests(selection);
    const summaryOf = (configKey: string) => selection.configs.find((c) => `${c.kind}/${c.name}` === configKey)?.summary;
    const seenAt = (configKey: string): number => summaryOf(configKey)?.seenAt ?? now;
    const recorded = parseDigestMap(workload.annotations[BOOKKEEPING.restartedFor]);
    const verdict = compareDigests(recorded, current, seenAt, now, options.debounceMs, (configKey) => summaryOf(configKey)?.changedAt);
    const { strategy, problem } = resolveStrategy(workload, options.defaultStrategy, this.#gitSelected(workload));
    if (problem !== undefined) await events.record(workload, warningEvent('RestartWarning', problem));
    const lastRestartAt = parseRestartAt(workload.annotations[BOOKKEEPING.restartAt]);
    const halt = parseHalt(workload.annotations[FLEET_ANNOTATIONS.restartHalted]);
    return { workload, verdict, strategy, current, lastRestartAt, halt, now, seenAt };
  }

  /** A change whose strategy restarts nothing (none, a CronJob): the digests are written, and an Event says so. */
  async #skipByStrategy(decision: Decision, changed: readonly string[]): Promise<ProcessResult> {
    const { workload } = decision;
    await this.#writeDigests(decision);
    this.#deps.metrics?.restartsSkipped.inc({ kind: workload.kind, namespace: workload.namespace, reason: workload.kind === 'CronJob' ? 'cronjob' : 'strategy-none' });
    await this.#deps.events.record(workload, normalEvent('RestartSkipped', `${workload.kind === 'CronJob' ? 'a CronJob\'s next Job reads the new config' : 'restart-strategy none'}: recorded only`, changedConfigs(changed)));
    return undefined;
  }

  /** Writes the current digests (what the pods are current with), T as it was. */
  async #writeDigests({ workload, current, lastRestartAt }: Decision): Promise<void> {
    await this.#apply(workload, { restartedFor: formatDigestMap(current), restartAt: lastRestartAt === undefined ? undefined : formatTime(lastRestartAt), templateRestartedAt: workload.templateRestartedAt });
  }

  /** Whether the restart may start now (fleet/admission.ts): true, or what to return. Its Events are recorded here. */
  async #admit(key: string, decision: Decision, changed: readonly string[]): Promise<ProcessResult | true> {
    const { options, startLimiter } = this.#deps;
    const admission = admitStart({
      workload: decision.workload,
      changed: changedConfigs(changed),
      lastRestartAt: decision.lastRestartAt,
      halt: decision.halt,
      now: decision.now,
      fleet: options.fleet ?? FLEET_OFF,
      breaker: () => this.#breakerAt(decision.now),
      holdsSlot: this.#memory.inProgress(key),
      acting: this.#memory.actingCount(),
      maxConcurrentRestarts: options.maxConcurrentRestarts,
      checkIntervalMs: options.checkIntervalMs,
      ...(startLimiter === undefined ? {} : { limiter: startLimiter }),
    });
    if (!admission.start && admission.deferred !== undefined) this.#deps.fleetMetrics?.restartsDeferred.inc({ cause: admission.deferred });
    for (const event of admission.events) await this.#deps.events.record(decision.workload, event);
    if (admission.start) return true;
    if (admission.waiting !== undefined) this.#deps.log.debug({ workload: key }, admission.waiting);
    return admission.requeueAfterMs === undefined ? undefined : { requeueAfterMs: admission.requeueAfterMs };
  }

  /**
   * The workload's bookkeeping, made whole from its restart record: a workload without the annotations whose UID
   * has a record was replaced as Git renders it (Argo CD Replace=true, kubectl replace), not created anew —
   * the annotations are written back from the record and the restart in progress goes on. A workload with
   * the annotations and no (or an older) record gets its record.
   */
  async #restoreBookkeeping(key: string, workload: WorkloadSummary): Promise<WorkloadSummary> {
    const records = this.#restartRecords;
    if (records === undefined) return workload;
    const restartedFor = workload.annotations[BOOKKEEPING.restartedFor];
    if (restartedFor !== undefined) {
      await records.write(workload, { restartedFor, restartAt: workload.annotations[BOOKKEEPING.restartAt], writeBack: workload.annotations[WRITE_BACK_ANNOTATION] });
      return workload;
    }
    const saved = records.get(workload.uid);
    if (saved === undefined) return workload;
    this.#deps.log.info({ workload: key, restartAt: saved.restartAt }, 'the workload lost its bookkeeping annotations (replaced): restored from its record');
    const fields: OwnFields = { restartedFor: saved.restartedFor, restartAt: saved.restartAt, templateRestartedAt: workload.templateRestartedAt, writeBack: saved.writeBack };
    await this.#apply(workload, fields);
    // Decided from what was just written, over the newest cached version: the cache may already hold a later
    // version of the replaced object (a status update) that does not show the write yet.
    return withOwnFields(this.#deps.view.workload(key) ?? workload, { ...fields, restartHalted: workload.annotations[FLEET_ANNOTATIONS.restartHalted] });
  }

  /** Server-side apply of the controller's own fields (and their restart record), only when they differ from the live ones. */
  async #apply(workload: WorkloadSummary, given: OwnFields): Promise<void> {
    const fields = completeOwnFields(workload, given);
    // Written already, and the watch has not delivered our write yet: writing again would be a wasted request.
    if (showsOwnFields(workload, fields) || this.#writes.appliedOver(workload, fields)) return;
    await this.#restartRecords?.write(workload, { restartedFor: fields.restartedFor, restartAt: fields.restartAt, writeBack: fields.writeBack });
    await this.#writes.applyOwnFields(workload, fields);
  }

  /**
   * Moves a restart one step: asks `nextStep` (controller/restart/step.ts) what to do, and has it done
   * (restart/execute.ts), or ends the restart. Nothing here decides.
   */
  async #progress(key: string, workload: WorkloadSummary, strategy: ActingStrategy, restartAt: number, now: number): Promise<ProcessResult> {
    const { options, view } = this.#deps;
    if (strategy === 'git') {
      const outcome = await progressGit(this.#context, key, workload, restartAt, now);
      if ('result' in outcome) return outcome.result;
      return this.#progress(key, outcome.inCluster.workload, outcome.inCluster.strategy, restartAt, now);
    }
    if (evictionsReported(this.#writes, key, strategy, restartAt)) return undefined;
    const input: RestartInput = {
      workload,
      pods: view.podsOf(workload).map((pod) => this.#memory.withEviction(key, pod, now)),
      restartAt,
      strategy,
      // T and the pods' creation and Ready times are the API server's: the step compares them with its clock.
      now: this.#deps.skew?.apiNow(now) ?? now,
      acting: this.#memory.inProgress(key),
      app: view.applicationOf(workload),
      project: this.#projectOf(workload),
      syncWaitMs: options.argocdSyncWaitMs ?? 0,
      healthGateTimeoutMs: (options.fleet ?? FLEET_OFF).healthGateTimeoutMs,
      breakerOpen: () => this.#breakerAt(now).open,
    };
    const marker = progressMarker(workload, input.pods, restartAt);
    if (!resumesStalled(this.#memory, key, restartAt, marker, options.maxConcurrentRestarts, this.#deps.log)) return { requeueAfterMs: options.checkIntervalMs };
    await announceSyncWaitExpiry(this.#context, key, input);
    let step = nextStep(input);
    if (step.kind === 'set-template') {
      await this.#apply(workload, ownFieldsWith(workload, { restartAt: formatTime(restartAt), templateRestartedAt: formatTime(restartAt) }));
      // Written: the same reconcile goes on from the annotation (a restart with no stale pod left is done now).
      step = nextStep({ ...input, workload: { ...workload, templateRestartedAt: formatTime(restartAt) } });
    }
    const target: StepTarget = { key, workload, strategy, restartAt, now, apiNow: input.now };
    if (evictsAtOnce(this.#writes, strategy, step)) return evictAtOnce(this.#context, target, input.pods);
    if (deadlinePassed(this.#memory, key, step, restartAt, marker, now, options.progressDeadlineMs ?? 0)) return stallRestart(this.#context, target, step, input.pods, marker);
    if (step.kind !== 'wait') {
      // A sync-window hold ends with an act (or the restart's end); the next hold (a later window) is announced
      // anew. Other waits do not end it: a later change's T may be ahead of the clock for a moment.
      this.#memory.clearWindowHold(key);
    }
    if (step.kind === 'done') return finishRestart(this.#context, key, workload, restartAt);
    if (step.kind === 'halt') return step.cause === 'health-gate' ? haltRestart(this.#context, target, step.reason) : skipRestart(this.#context, key, workload, step.reason);
    return executeStep(this.#context, target, step);
  }

  /** Ends a restart in progress, and forgets the workload altogether once it is gone; true when there was a restart. */
  #finish(key: string): boolean {
    const was = this.#memory.finish(key);
    if (this.#deps.view.workload(key) === undefined) {
      this.#memory.forget(key);
      this.#writes.forget(key);
      this.#breaker.forget(key);
    }
    return was;
  }

  /** The breaker at `now`, from every cached workload as we know it. */
  #breakerAt(now: number) {
    const { view } = this.#deps;
    return this.#breaker.at(now, { keys: () => view.workloadKeys(), workload: (key) => this.#writes.readBack(key, view.workload(key)) });
  }

  /** Whether the Git write-back selects the workload (strategy git): its annotation, or the `--write-back-*` defaults. */
  #gitSelected(workload: WorkloadSummary): boolean {
    const { options, writeBack, view } = this.#deps;
    if (options.writeBack === undefined || writeBack === undefined) return false;
    return selectGit(workload, view.applicationOf(workload), options.writeBack.defaults).git;
  }

  /** The workload's Application's AppProject, when both are watched. */
  #projectOf(workload: WorkloadSummary) {
    const app = this.#deps.view.applicationOf(workload);
    return app === undefined ? undefined : this.#deps.view.projectOf(app);
  }
}

export { parseWorkloadKey };
