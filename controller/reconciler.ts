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
import { ManifestError, type PolicyMode } from '../core/index.ts';
import { BOOKKEEPING, formatDigestMap, formatTime, parseDigestMap, parseRestartAt } from './bookkeeping.ts';
import { parseWorkloadKey, workloadKey, type ClusterView } from './cache/cluster-view.ts';
import type { Clock } from './clock.ts';
import { compareDigests, outOfBandDigests, resolveStrategy, selectConfigs, type ResolvedStrategy } from './decide.ts';
import type { EventRecorder } from './events.ts';
import type { ControllerMetrics } from './metrics.ts';
import type { PodSummary, RestartStrategy, WorkloadSummary } from './model.ts';
import type { ProcessResult } from './queue.ts';
import { planEvictions, restartWarnings } from './restart/evict-plan.ts';
import type { OwnFields, Writes } from './kube/writes.ts';

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
}

/** How long an evicted pod's UID is remembered while the watch has not yet shown its deletion. */
const EVICTED_MEMORY_MS = 5 * 60_000;

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
  readonly #lastApply = new Map<string, { readonly basedOn: string; readonly fields: string }>();

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
  }

  /** True while the workload has a restart in progress (its pod events wake it). */
  isRestarting(key: string): boolean {
    return this.#restarting.has(key);
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
    const { view, options, clock } = this.#deps;
    const workload = view.workload(key);
    if (workload === undefined || !this.#deps.inScope(workload.namespace)) {
      this.#finish(key);
      return undefined;
    }
    const source = workload.workloadRef === undefined ? workload : view.workload(workloadKey(workload.workloadRef.kind, workload.namespace, workload.workloadRef.name));
    // A Rollout whose borrowed Deployment is not cached yet: the Deployment's arrival enqueues it.
    if (source === undefined) return undefined;
    let selection;
    try {
      selection = selectConfigs(workload, source, view.configLookup(workload.namespace), options.mode);
    } catch (error) {
      if (!(error instanceof ManifestError)) throw error;
      await this.#deps.events.warning(workload, 'PolicyError', error.message);
      return undefined;
    }
    const now = clock.now();
    const current = outOfBandDigests(selection);
    const recorded = parseDigestMap(workload.annotations[BOOKKEEPING.restartedFor]);
    let restartAt = parseRestartAt(workload.annotations[BOOKKEEPING.restartAt]);
    const seenAt = (configKey: string): number => selection.configs.find((c) => `${c.kind}/${c.name}` === configKey)?.summary?.seenAt ?? now;
    const verdict = compareDigests(recorded, current, seenAt, now, options.debounceMs);
    const { strategy, problem } = resolveStrategy(workload, options.defaultStrategy);
    if (problem !== undefined) await this.#deps.events.warning(workload, 'RestartWarning', problem);

    switch (verdict.action) {
      case 'debounce':
        return { requeueAfterMs: verdict.afterMs };
      case 'record':
        await this.#apply(workload, { restartedFor: formatDigestMap(current), restartAt: optionalTime(restartAt), templateRestartedAt: workload.templateRestartedAt });
        this.#deps.log.debug({ workload: key, why: verdict.why }, 'recorded the current config digests');
        break;
      case 'restart': {
        const changed = verdict.changed.map((c) => `${c.replace('/', ' ')}`).join(', ');
        if (strategy === 'record-only') {
          await this.#apply(workload, { restartedFor: formatDigestMap(current), restartAt: optionalTime(restartAt), templateRestartedAt: workload.templateRestartedAt });
          this.#deps.metrics?.restartsSkipped.inc({ kind: workload.kind, namespace: workload.namespace, reason: workload.kind === 'CronJob' ? 'cronjob' : 'strategy-none' });
          await this.#deps.events.normal(workload, 'RestartSkipped', `${changed} changed; ${workload.kind === 'CronJob' ? 'a CronJob\'s next Job reads the new config' : 'restart-strategy none'}: recorded only`);
          return undefined;
        }
        if (!this.#restarting.has(key) && this.#restarting.size >= options.maxConcurrentRestarts) {
          this.#deps.log.debug({ workload: key }, 'waiting for a restart slot (max-concurrent-restarts)');
          return { requeueAfterMs: options.checkIntervalMs };
        }
        restartAt = verdict.restartAt;
        await this.#apply(workload, {
          restartedFor: formatDigestMap(current),
          restartAt: formatTime(restartAt),
          templateRestartedAt: strategy === 'template' ? formatTime(restartAt) : workload.templateRestartedAt,
        });
        this.#restarting.add(key);
        this.#blockedSince.delete(key);
        const metrics = this.#deps.metrics;
        if (metrics !== undefined) {
          metrics.restartsStarted.inc({ kind: workload.kind, namespace: workload.namespace, strategy });
          metrics.reloaderReloadExecuted.inc({ success: 'true', namespace: workload.namespace });
          metrics.changeToRestartSeconds.observe({ kind: workload.kind }, Math.max(0, now - Math.max(...verdict.changed.map(seenAt))) / 1000);
        }
        await this.#deps.events.normal(workload, 'RestartStarted', `${changed} changed: replacing the pods created before ${formatTime(restartAt)} (${describeStrategy(strategy)})`);
        for (const warning of strategy === 'evict' ? restartWarnings(workload) : []) await this.#deps.events.warning(workload, 'RestartWarning', warning);
        break;
      }
      case 'none':
        break;
    }
    if (restartAt === undefined || strategy === 'record-only') {
      this.#finish(key);
      return undefined;
    }
    return this.#progress(key, workload, strategy, restartAt, now);
  }

  /** Server-side apply of the controller's own fields, only when they differ from the live ones. */
  async #apply(workload: WorkloadSummary, fields: OwnFields): Promise<void> {
    const key = workloadKey(workload.kind, workload.namespace, workload.name);
    const same = workload.annotations[BOOKKEEPING.restartedFor] === fields.restartedFor
      && workload.annotations[BOOKKEEPING.restartAt] === fields.restartAt
      && workload.templateRestartedAt === fields.templateRestartedAt;
    const text = JSON.stringify(fields);
    const last = this.#lastApply.get(key);
    // Written already, and the watch has not delivered our write yet: writing again would be a wasted request.
    if (same || (last !== undefined && last.basedOn === workload.resourceVersion && last.fields === text)) return;
    await this.#deps.writes.applyOwnFields(workload, fields);
    this.#lastApply.set(key, { basedOn: workload.resourceVersion, fields: text });
    this.#deps.log.debug({ workload: key, restartAt: fields.restartAt }, 'applied own fields');
  }

  /** Moves a restart one step: the Rollout's restartAt, the template annotation, or the next paced evictions. */
  async #progress(key: string, workload: WorkloadSummary, strategy: ResolvedStrategy, restartAt: number, now: number): Promise<ProcessResult> {
    const { options } = this.#deps;
    if (strategy === 'restart-at') {
      const restarted = parseRestartAt(workload.status.restartedAt);
      if (restarted !== undefined && restarted >= restartAt) return this.#done(key, workload, restartAt);
      this.#restarting.add(key);
      const asked = parseRestartAt(workload.restartAt);
      if (asked === undefined || asked < restartAt) await this.#deps.writes.patchRestartAt(workload, restartAt);
      return { requeueAfterMs: options.checkIntervalMs };
    }
    const pods = this.#deps.view.podsOf(workload).map((pod) => this.#withEvictions(pod, now));
    if (strategy === 'template') {
      const formatted = formatTime(restartAt);
      if (workload.templateRestartedAt !== formatted) {
        await this.#apply(workload, { restartedFor: workload.annotations[BOOKKEEPING.restartedFor] ?? '{}', restartAt: formatted, templateRestartedAt: formatted });
      }
      if (pods.every((pod) => pod.deleting || pod.createdAt >= restartAt)) return this.#done(key, workload, restartAt);
      this.#restarting.add(key);
      return { requeueAfterMs: options.checkIntervalMs };
    }
    // T is the next whole second after the change (pod creation times have whole-second precision): a
    // replacement created before T would count as stale, so evictions start at T, to the millisecond.
    if (now < restartAt) {
      this.#restarting.add(key);
      return { requeueAfterMs: restartAt - now };
    }
    const plan = planEvictions({ workload, pods, restartAt, now });
    switch (plan.action) {
      case 'done':
        // The planner is done once the last stale pod is being deleted; the restart is finished when it is gone.
        if (pods.some((pod) => pod.createdAt < restartAt)) return { requeueAfterMs: options.checkIntervalMs };
        return this.#done(key, workload, restartAt);
      case 'skip':
        this.#finish(key);
        this.#deps.metrics?.restartsSkipped.inc({ kind: workload.kind, namespace: workload.namespace, reason: 'pending-revision' });
        await this.#deps.events.warning(workload, 'RestartSkipped', plan.reason);
        return undefined;
      case 'wait':
        this.#restarting.add(key);
        this.#deps.log.debug({ workload: key, reason: plan.reason }, 'restart waiting');
        return { requeueAfterMs: options.checkIntervalMs };
      case 'evict': {
        this.#restarting.add(key);
        for (const pod of plan.pods) {
          const { outcome, message } = await this.#deps.writes.evict(pod);
          this.#deps.metrics?.evictions.inc({ namespace: pod.namespace, outcome });
          if (outcome === 'evicted' || outcome === 'gone') {
            this.#evicted.set(pod.uid, now);
            this.#blockedSince.delete(key);
            this.#deps.log.info({ workload: key, pod: pod.name }, 'evicted');
            continue;
          }
          this.#deps.metrics?.restartsBlocked.inc({ kind: workload.kind, namespace: workload.namespace, strategy });
          const since = this.#blockedSince.get(key) ?? now;
          this.#blockedSince.set(key, since);
          if (now - since >= options.blockedWarningMs) {
            await this.#deps.events.warning(workload, 'RestartBlocked', `eviction of pod ${pod.name} refused for ${Math.round((now - since) / 1000)}s: ${message}`);
          }
          this.#deps.log.info({ workload: key, pod: pod.name, outcome }, 'eviction refused; retrying later');
          break;
        }
        return { requeueAfterMs: options.checkIntervalMs };
      }
    }
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
      await this.#deps.events.normal(workload, 'RestartFinished', `every pod created before ${formatTime(restartAt)} was replaced`);
    }
    return undefined;
  }

  /** Forgets a restart in progress; true when there was one. */
  #finish(key: string): boolean {
    this.#blockedSince.delete(key);
    if (this.#deps.view.workload(key) === undefined) this.#lastApply.delete(key);
    return this.#restarting.delete(key);
  }
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
  }
}

export { parseWorkloadKey };
