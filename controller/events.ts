/**
 * Kubernetes Events on workloads: every restart started, finished, blocked or
 * skipped, saying which config changed by kind and name — never a value.
 * Repeats are folded as client-go's EventCorrelator folds them: the same
 * type, reason and message on the same object within `repeatMs` of the last
 * occurrence is one Event whose `count` rises (a PATCH of count and
 * lastTimestamp, at most once per `seriesUpdateMs`), never a new one — so a
 * restart a PodDisruptionBudget blocks for an hour is one Warning, not one per
 * recheck. That is why a message must stay the same while its situation does.
 * A failure to record an Event is logged and never fails a reconcile.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { formatTime } from './bookkeeping.ts';
import type { KubeClient } from './kube/client.ts';
import type { Fence } from './kube/fence.ts';
import type { WatchedConfigKind, WorkloadSummary } from './model.ts';

/** Reasons, CamelCase as Kubernetes writes them. */
export type EventReason = 'RestartStarted' | 'RestartFinished' | 'RestartBlocked' | 'RestartSkipped' | 'RestartWarning' | 'Recorded' | 'PolicyError'
  /** Fleet safety (controller/fleet/): a restart waits for its interval, was halted by the health gate, or the breaker is open. */
  | 'RestartDeferred' | 'RestartHalted' | 'RestartPaused'
  /** A restart waits for Argo CD's pending sync (ADR 0011), or stopped waiting at its bound (also a git restart's commit never synced, ADR 0016). */
  | 'RestartWaitingForSync' | 'RestartSyncWaitExpired'
  /** A restart waits for its AppProject's sync windows to open (ADR 0016). */
  | 'RestartWaitingForSyncWindow'
  /** The git strategy (ADR 0016): the digests are in Git; a write-back failed (retried); given up, the fallback. */
  | 'WriteBackCommitted' | 'WriteBackFailed' | 'WriteBackFallback'
  /** The API server refused one of the controller's writes for good (403 from an admission webhook, 422). */
  | 'WriteRejected'
  /** A restart made no progress within --restart-progress-deadline: halted, its slot given back. */
  | 'RestartProgressDeadlineExceeded';

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

/** `Kind/name` config keys (the digest maps' keys) as the Events name them. */
export function changedConfigs(keys: readonly string[]): readonly EventConfig[] {
  return keys.map((key) => {
    const slash = key.indexOf('/');
    return Object.freeze({ kind: key.slice(0, slash) as EventConfig['kind'], name: key.slice(slash + 1) });
  });
}

/** A Normal Event with no config named. */
export function normalEvent(reason: EventReason, detail: string, configs: readonly EventConfig[] = []): WorkloadEvent {
  return Object.freeze({ type: 'Normal', reason, configs, detail });
}

/** A Warning Event with no config named. */
export function warningEvent(reason: EventReason, detail: string, configs: readonly EventConfig[] = []): WorkloadEvent {
  return Object.freeze({ type: 'Warning', reason, configs, detail });
}

/** An Event this recorder wrote and may still fold repeats into. */
interface Series {
  readonly name: string;
  readonly firstTimestamp: string;
  /** Occurrences so far. */
  count: number;
  /** Epoch ms of the last occurrence and of the last write. */
  lastSeen: number;
  lastWrite: number;
}

/** What the recorder needs. */
export interface EventRecorderDeps {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly now: () => number;
  readonly instance: string;
  /** An occurrence this long after the last one starts a new Event. */
  readonly repeatMs: number;
  /** The rising count is written at most this often (default a minute). */
  readonly seriesUpdateMs?: number;
  readonly dryRun?: boolean;
  /**
   * Checked right before each Event is sent, as every other write is: an Event that waited for the client's
   * rate limit past a lost or handed-over Lease is not written.
   */
  readonly fence?: Fence;
}

/** Creates a recorder that writes core/v1 Events as component `driftless`. */
export function createEventRecorder(deps: EventRecorderDeps): EventRecorder {
  const series = new Map<string, Series>();
  const seriesUpdateMs = deps.seriesUpdateMs ?? 60_000;
  const fenced = deps.fence === undefined ? {} : { fence: deps.fence };

  async function create(workload: WorkloadSummary, event: WorkloadEvent, message: string, entry: Series, time: string): Promise<void> {
    await deps.client.request('POST', `/api/v1/namespaces/${workload.namespace}/events`, {
      ...fenced,
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: entry.name, namespace: workload.namespace },
        involvedObject: {
          apiVersion: workload.apiVersion,
          kind: workload.kind,
          name: workload.name,
          namespace: workload.namespace,
          uid: workload.uid,
          resourceVersion: workload.resourceVersion,
        },
        reason: event.reason,
        message: message.slice(0, 1024),
        type: event.type,
        count: entry.count,
        firstTimestamp: entry.firstTimestamp,
        lastTimestamp: time,
        source: { component: 'driftless' },
        reportingComponent: 'driftless.dev/controller',
        reportingInstance: deps.instance,
      },
    });
  }

  async function emit(workload: WorkloadSummary, event: WorkloadEvent): Promise<void> {
    const { type, reason } = event;
    const message = eventMessage(event);
    const now = deps.now();
    const time = formatTime(now);
    const fold = `${workload.uid}\0${type}\0${reason}\0${message}`;
    let entry = series.get(fold);
    if (entry !== undefined && now - entry.lastSeen >= deps.repeatMs) entry = undefined;
    // Forget old entries so the map stays bounded by what happened recently.
    if (series.size > 10_000) for (const [key, old] of series) if (now - old.lastSeen >= deps.repeatMs) series.delete(key);
    if (entry !== undefined) {
      entry.count++;
      entry.lastSeen = now;
      if (now - entry.lastWrite < seriesUpdateMs || deps.dryRun === true) return;
      entry.lastWrite = now;
      const count = entry.count;
      try {
        await deps.client.request('PATCH', `/api/v1/namespaces/${workload.namespace}/events/${entry.name}`, {
          ...fenced,
          body: { count, lastTimestamp: time },
          contentType: 'application/merge-patch+json',
        });
      } catch (error) {
        // Gone (Events expire after the API server's --event-ttl) or refused: the series goes on as a new Event.
        deps.log.warn({ err: error, event: reason }, 'could not update an Event\'s count');
        series.delete(fold);
      }
      return;
    }
    entry = { name: `${workload.name}.${randomBytes(8).toString('hex')}`, firstTimestamp: time, count: 1, lastSeen: now, lastWrite: now };
    series.set(fold, entry);
    deps.log.info({ workload: `${workload.kind}/${workload.namespace}/${workload.name}`, event: reason, type }, message);
    if (deps.dryRun === true) return;
    try {
      await create(workload, event, message, entry, time);
    } catch (error) {
      deps.log.warn({ err: error, event: reason }, 'could not record an Event');
    }
  }
  return { record: emit };
}
