/**
 * What the reconciler knows about each workload's restart that the cluster does
 * not show (yet): which restarts are in progress, pods it evicted whose deletion
 * the watch has not delivered, when evictions were first refused, the Events it
 * announced once, and how far a restart's pods have moved. Everything else is
 * read from the caches on every reconcile.
 *
 * Two ways out, and only two: `finish` ends a restart in progress (its slot,
 * announcements and progress clock), `forget` drops everything about a workload
 * that is gone from the cluster.
 */
import type { PodSummary } from '../model.ts';

/** How long an evicted pod's UID is remembered while the watch has not yet shown its deletion. */
const EVICTED_MEMORY_MS = 5 * 60_000;

/** What a restart's pods looked like when they last moved, and when. */
export interface ProgressMark {
  readonly restartAt: number;
  /** `progressMarker` (controller/restart/progress.ts) of the pods and status then. */
  readonly marker: string;
  readonly at: number;
}

/** The per-workload memory of restarts; keys are `Kind/namespace/name`. */
export class RestartMemory {
  /** Workloads with a restart in progress (the global cap counts these). */
  readonly #inProgress = new Set<string>();
  /** When evictions of a workload were first refused, while they still are. */
  readonly #blockedSince = new Map<string, number>();
  /**
   * Per restart in progress, the pods we evicted and when: until the watch shows a pod deleting, it counts as
   * being deleted, so it is never evicted twice. Kept per workload and dropped when its restart ends (by then
   * the cache shows every pod it evicted gone), so no pod event has to reach in here.
   */
  readonly #evictedPods = new Map<string, Map<string, number>>();
  /** Per restart in progress: what its pods looked like when they last moved. */
  readonly #lastMoved = new Map<string, ProgressMark>();
  /** Restarts halted by the progress deadline and their pods then: no slot; pods that move resume them. */
  readonly #stalled = new Map<string, Omit<ProgressMark, 'at'>>();
  /** Per workload, the T whose wait for Argo CD was announced (and whether its bound expired): one Event each. */
  readonly #syncWaitsAnnounced = new Map<string, { readonly restartAt: number; readonly expired: boolean }>();
  /**
   * Per workload, the sync-window hold announced (its end, or the reason when none is known): one Event per
   * hold, however many changes arrive while it lasts (they become one restart when the window opens).
   */
  readonly #windowHoldsAnnounced = new Map<string, string>();
  /** Restarts in progress through Git (strategy git, not fallen back): they act on no pod, so they hold no slot. */
  readonly #throughGit = new Set<string>();

  /** True while the workload has a restart in progress. */
  inProgress(key: string): boolean {
    return this.#inProgress.has(key);
  }

  /** Number of restarts in progress. */
  get inProgressCount(): number {
    return this.#inProgress.size;
  }

  /** The workload's restart is in progress (started, or acting again). */
  markInProgress(key: string): void {
    this.#inProgress.add(key);
  }

  /** The restart goes through Git (true) or, fallen back, in the cluster (false). */
  markThroughGit(key: string, git: boolean): void {
    if (git) this.#throughGit.add(key);
    else this.#throughGit.delete(key);
  }

  /** Restarts holding a `--max-concurrent-restarts` slot: in progress, not refused by a PodDisruptionBudget, not held by sync windows, not through Git. */
  actingCount(): number {
    let idle = 0;
    for (const key of this.#inProgress) {
      // Each restart counts once, however many of the reasons hold for it.
      if (this.#blockedSince.has(key) || this.#windowHoldsAnnounced.has(key) || this.#throughGit.has(key)) idle++;
    }
    return this.#inProgress.size - idle;
  }

  /** When evictions of the workload were first refused, now the latest refusal is `now`. */
  markBlocked(key: string, now: number): number {
    const since = this.#blockedSince.get(key) ?? now;
    this.#blockedSince.set(key, since);
    return since;
  }

  /** An eviction went through (or a new restart starts): the workload is no longer blocked. */
  clearBlocked(key: string): void {
    this.#blockedSince.delete(key);
  }

  /** We evicted the workload's pod at `now` (or, under `--dry-run`, said we would). */
  markEvicted(key: string, uid: string, now: number): void {
    const pods = this.#evictedPods.get(key) ?? new Map<string, number>();
    pods.set(uid, now);
    this.#evictedPods.set(key, pods);
  }

  /** The workload's pod as far as we know: one we evicted counts as being deleted until the watch says so. */
  withEviction(key: string, pod: PodSummary, now: number): PodSummary {
    const pods = this.#evictedPods.get(key);
    const at = pods?.get(pod.uid);
    if (pods === undefined || at === undefined) return pod;
    if (now - at > EVICTED_MEMORY_MS) {
      pods.delete(pod.uid);
      return pod;
    }
    return pod.deleting ? pod : { ...pod, deleting: true };
  }

  /** When the restart's pods last moved (as of the last look), for the progress deadline. */
  lastMoved(key: string): ProgressMark | undefined {
    return this.#lastMoved.get(key);
  }

  /** The restart's pods look like `marker` since `at`. */
  markMoved(key: string, mark: ProgressMark): void {
    this.#lastMoved.set(key, mark);
  }

  /** The restart halted by the progress deadline, and what its pods looked like then. */
  stalled(key: string): Omit<ProgressMark, 'at'> | undefined {
    return this.#stalled.get(key);
  }

  /** The progress deadline halted the restart: it holds no slot until its pods move. Call after `finish`. */
  markStalled(key: string, restartAt: number, marker: string): void {
    this.#stalled.set(key, { restartAt, marker });
  }

  /** The stalled restart's pods moved: it acts again. */
  clearStalled(key: string): void {
    this.#stalled.delete(key);
  }

  /** The wait for Argo CD's sync announced for the workload: its T, and whether its bound's expiry was too. */
  syncWaitAnnounced(key: string): { readonly restartAt: number; readonly expired: boolean } | undefined {
    return this.#syncWaitsAnnounced.get(key);
  }

  /** The wait for Argo CD's sync at T was announced (`expired`: so was the end of its bound). */
  markSyncWaitAnnounced(key: string, restartAt: number, expired: boolean): void {
    this.#syncWaitsAnnounced.set(key, { restartAt, expired });
  }

  /** The sync-window hold announced for the workload (its end, or the reason). */
  windowHoldAnnounced(key: string): string | undefined {
    return this.#windowHoldsAnnounced.get(key);
  }

  /** The sync-window hold `hold` was announced. */
  markWindowHoldAnnounced(key: string, hold: string): void {
    this.#windowHoldsAnnounced.set(key, hold);
  }

  /** The restart acted: a later sync-window hold is announced anew. */
  clearWindowHold(key: string): void {
    this.#windowHoldsAnnounced.delete(key);
  }

  /** Ends the workload's restart in progress (finished, halted, stalled, or not one any more); true when there was one. */
  finish(key: string): boolean {
    this.#blockedSince.delete(key);
    this.#evictedPods.delete(key);
    this.#syncWaitsAnnounced.delete(key);
    this.#windowHoldsAnnounced.delete(key);
    this.#throughGit.delete(key);
    this.#lastMoved.delete(key);
    return this.#inProgress.delete(key);
  }

  /** The workload is gone from the cluster: nothing about it is kept. */
  forget(key: string): void {
    this.finish(key);
    this.#stalled.delete(key);
  }
}
