/**
 * Kubernetes Events on workloads: every restart started, finished, blocked or
 * skipped, saying which config changed by kind and name — never a value.
 * Repeats of the same Event on the same object within `repeatMs` are folded
 * (a blocked restart is rechecked every few seconds; its Warning is not).
 * A failure to record an Event is logged and never fails a reconcile.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { formatTime } from './bookkeeping.ts';
import type { KubeClient } from './kube/client.ts';
import type { WorkloadSummary } from './model.ts';

/** Reasons, CamelCase as Kubernetes writes them. */
export type EventReason = 'RestartStarted' | 'RestartFinished' | 'RestartBlocked' | 'RestartSkipped' | 'RestartWarning' | 'Recorded' | 'PolicyError'
  /** Fleet safety (controller/fleet/): a restart waits for its interval, was halted by the health gate, or the breaker is open. */
  | 'RestartDeferred' | 'RestartHalted' | 'RestartPaused'
  /** A restart waits for Argo CD's pending sync (ADR 0011), or stopped waiting at its bound. */
  | 'RestartWaitingForSync' | 'RestartSyncWaitExpired'
  /** The API server refused one of the controller's writes for good (403 from an admission webhook, 422). */
  | 'WriteRejected';

/** Writes Events. */
export interface EventRecorder {
  normal(workload: WorkloadSummary, reason: EventReason, message: string): Promise<void>;
  warning(workload: WorkloadSummary, reason: EventReason, message: string): Promise<void>;
}

/** Creates a recorder that writes core/v1 Events as component `driftless`. */
export function createEventRecorder(deps: { client: KubeClient; log: Logger; now: () => number; instance: string; repeatMs: number; dryRun?: boolean }): EventRecorder {
  const lastSent = new Map<string, number>();
  async function emit(type: 'Normal' | 'Warning', workload: WorkloadSummary, reason: EventReason, message: string): Promise<void> {
    const now = deps.now();
    const fold = `${workload.uid}\0${type}\0${reason}\0${message}`;
    const last = lastSent.get(fold);
    if (last !== undefined && now - last < deps.repeatMs) return;
    lastSent.set(fold, now);
    // Forget old entries so the map stays bounded by what happened recently.
    if (lastSent.size > 10_000) for (const [key, at] of lastSent) if (now - at >= deps.repeatMs) lastSent.delete(key);
    deps.log.info({ workload: `${workload.kind}/${workload.namespace}/${workload.name}`, event: reason, type }, message);
    if (deps.dryRun === true) return;
    const time = formatTime(now);
    try {
      await deps.client.request('POST', `/api/v1/namespaces/${workload.namespace}/events`, {
        body: {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name: `${workload.name}.${randomBytes(8).toString('hex')}`, namespace: workload.namespace },
          involvedObject: {
            apiVersion: workload.apiVersion,
            kind: workload.kind,
            name: workload.name,
            namespace: workload.namespace,
            uid: workload.uid,
            resourceVersion: workload.resourceVersion,
          },
          reason,
          message: message.slice(0, 1024),
          type,
          count: 1,
          firstTimestamp: time,
          lastTimestamp: time,
          source: { component: 'driftless' },
          reportingComponent: 'driftless.dev/controller',
          reportingInstance: deps.instance,
        },
      });
    } catch (error) {
      deps.log.warn({ err: error, event: reason }, 'could not record an Event');
    }
  }
  return {
    normal: (workload, reason, message) => emit('Normal', workload, reason, message),
    warning: (workload, reason, message) => emit('Warning', workload, reason, message),
  };
}
