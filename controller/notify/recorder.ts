/**
 * An EventRecorder that also notifies. The reconciler reports each restart
 * through Kubernetes Events; wrapping the recorder turns the four restart
 * reasons into notifications without the reconciler knowing about webhooks.
 *
 * It reads the Event's data, never its sentence: the configs a RestartStarted
 * names are remembered per workload, so a RestartFinished or RestartBlocked
 * names them too. A restart that stays blocked is rechecked every few
 * seconds; it is notified once per restart, not once per check.
 */
import type { Logger } from 'pino';
import { resolveStrategy } from '../decide.ts';
import { eventMessage, type EventReason, type EventRecorder, type WorkloadEvent } from '../events.ts';
import type { RestartStrategy, WorkloadSummary } from '../model.ts';
import type { Notification, NotifyEvent } from './message.ts';

/** Where notifications go: a Notifier, or a test double. */
export interface NotificationSink {
  notify(notification: Notification): void;
}

/** What the wrapper needs besides the recorder it wraps. */
export interface NotifyingRecorderOptions {
  readonly sink: NotificationSink;
  /** The events to notify; others only reach the inner recorder. */
  readonly on: readonly NotifyEvent[];
  /** `--restart-strategy`, to name the strategy as the reconciler resolves it. */
  readonly defaultStrategy: RestartStrategy;
  readonly now: () => number;
  readonly dryRun: boolean;
  readonly log: Logger;
}

const EVENT_OF: Partial<Record<EventReason, NotifyEvent>> = {
  RestartStarted: 'started',
  RestartFinished: 'finished',
  RestartBlocked: 'blocked',
  RestartSkipped: 'skipped',
};

/** Restarts remembered at most: workloads restarting at once are capped far below this. */
const REMEMBERED_RESTARTS = 10_000;

/** What the wrapper remembers of a restart in progress. */
interface Episode {
  readonly changed: Notification['changed'];
  blockedNotified: boolean;
}

/** Wraps `inner` so restart Events also produce notifications. The inner recorder is always called. */
export function notifyingRecorder(inner: EventRecorder, options: NotifyingRecorderOptions): EventRecorder {
  const episodes = new Map<string, Episode>();
  const wanted = new Set(options.on);

  function observe(workload: WorkloadSummary, given: WorkloadEvent): void {
    const event = EVENT_OF[given.reason];
    if (event === undefined) return;
    const parsed = given.configs.length === 0 ? undefined : Object.freeze(given.configs.map((config) => Object.freeze({ kind: config.kind, name: config.name })));
    let episode = episodes.get(workload.uid);
    if (event === 'started' || episode === undefined) {
      episode = { changed: parsed ?? episode?.changed ?? [], blockedNotified: false };
      episodes.delete(workload.uid);
      episodes.set(workload.uid, episode);
      // Maps iterate in insertion order: the first key is the restart heard of longest ago.
      if (episodes.size > REMEMBERED_RESTARTS) episodes.delete(episodes.keys().next().value as string);
    }
    if (event === 'finished' || event === 'skipped') episodes.delete(workload.uid);
    if (event === 'blocked') {
      if (episode.blockedNotified) return;
      episode.blockedNotified = true;
    }
    if (!wanted.has(event)) return;
    options.sink.notify(Object.freeze({
      event,
      workload: Object.freeze({ kind: workload.kind, namespace: workload.namespace, name: workload.name }),
      changed: parsed ?? episode.changed,
      strategy: resolveStrategy(workload, options.defaultStrategy).strategy,
      at: options.now(),
      detail: eventMessage(given),
      dryRun: options.dryRun,
    }));
  }

  function guarded(workload: WorkloadSummary, event: WorkloadEvent): void {
    // A notification is a courtesy: nothing it does may fail or delay the reconcile that reports.
    try {
      observe(workload, event);
    } catch (error) {
      options.log.warn({ err: error, event: event.reason }, 'could not queue a notification');
    }
  }

  return {
    record(workload, event) {
      guarded(workload, event);
      return inner.record(workload, event);
    },
  };
}
