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
import type { WatchedConfigKind, WorkloadSummary } from './model.ts';

/** Reasons, CamelCase as Kubernetes writes them. */
export type EventReason = 'RestartStarted' | 'RestartFinished' | 'RestartBlocked' | 'RestartSkipped' | 'RestartWarning' | 'Recorded' | 'PolicyError'
  /** Fleet safety (controller/fleet/): a restart waits for its interval, was halted by the health gate, or the breaker is open. */
  | 'RestartDeferred' | 'RestartHalted' | 'RestartPaused'
  /** A restart waits for Argo CD's pending sync (ADR 0011), or stopped waiting at its bound. */
  | 'RestartWaitingForSync' | 'RestartSyncWaitExpired';

/** A config named in an Event, by kind and name (never a value). */
export interface EventConfig {
  readonly kind: WatchedConfigKind;
  readonly name: string;
}

/**
 * One Event about a workload, as data: the reconciler says what happened, `eventMessage` words it, and
 * notifications (controller/notify/) read the configs and the detail from here, never from the sentence.
 */
export interface WorkloadEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: EventReason;
  /** The configs whose change the Event is about, in the order given; `[]` when none. */
  readonly configs: readonly EventConfig[];
  /**
   * The rest of the message: what the controller does about the change, or why it cannot. It must stay the
   * same while the situation does (no elapsed time, no counter), so repeats fold into one Event.
   */
  readonly detail: string;
}

/** How the detail follows `<configs> changed` per reason; reasons not listed join with `: `. */
const AFTER_CHANGED: Partial<Record<EventReason, string>> = {
  RestartSkipped: '; ',
  RestartHalted: '; ',
  RestartPaused: '; ',
  RestartDeferred: ' ',
};

/** The one place Event messages are worded: `<Kind> <name>[, …] changed<joint><detail>`, or the detail alone. */
export function eventMessage(event: Pick<WorkloadEvent, 'reason' | 'configs' | 'detail'>): string {
  if (event.configs.length === 0) return event.detail;
  const configs = event.configs.map((config) => `${config.kind} ${config.name}`).join(', ');
  return `${configs} changed${AFTER_CHANGED[event.reason] ?? ': '}${event.detail}`;
}

/** Writes Events. */
export interface EventRecorder {
  record(workload: WorkloadSummary, event: WorkloadEvent): Promise<void>;
}

/** A Normal Event with no config named. */
export function normalEvent(reason: EventReason, detail: string, configs: readonly EventConfig[] = []): WorkloadEvent {
  return Object.freeze({ type: 'Normal', reason, configs, detail });
}

/** A Warning Event with no config named. */
export function warningEvent(reason: EventReason, detail: string, configs: readonly EventConfig[] = []): WorkloadEvent {
  return Object.freeze({ type: 'Warning', reason, configs, detail });
}

/** Creates a recorder that writes core/v1 Events as component `driftless`. */
export function createEventRecorder(deps: { client: KubeClient; log: Logger; now: () => number; instance: string; repeatMs: number; dryRun?: boolean }): EventRecorder {
  const lastSent = new Map<string, number>();
  async function emit(workload: WorkloadSummary, event: WorkloadEvent): Promise<void> {
    const { type, reason } = event;
    const message = eventMessage(event);
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
  return { record: emit };
}
