/**
 * Which pods a restart at T is about, in one place: the reconciler, the
 * eviction planner, the health gate and `explain --live` must agree on it, or
 * explain reports a restart the controller considers finished (or the other
 * way round). A restart at T replaces the pods created before T; a pod being
 * deleted is already going, and a pod in a terminal phase runs nothing (its
 * controller has replaced it), so neither is stale.
 */
import type { PodSummary } from '../model.ts';

/** A pod that has exited (`Succeeded`, `Failed`, e.g. evicted by the kubelet): it runs nothing and is never waited for. */
export function isTerminalPod(pod: Pick<PodSummary, 'phase'>): boolean {
  return pod.phase === 'Succeeded' || pod.phase === 'Failed';
}

/** A pod that still runs and stays: not being deleted, and not in a terminal phase. */
export function isLivePod(pod: Pick<PodSummary, 'deleting' | 'phase'>): boolean {
  return !pod.deleting && !isTerminalPod(pod);
}

/**
 * A pod the restart at `restartAt` (T, epoch ms) still has to replace: live
 * (see `isLivePod`) and created strictly before T. A pod created at T or later
 * is a replacement (or a sync's pod) and is left alone.
 */
export function isStalePod(pod: Pick<PodSummary, 'createdAt' | 'deleting' | 'phase'>, restartAt: number): boolean {
  return isLivePod(pod) && pod.createdAt < restartAt;
}
