/**
 * An EventRecorder that also notifies. The reconciler reports each restart
 * through Kubernetes Events; wrapping the recorder turns the four restart
 * reasons into notifications without the reconciler knowing about webhooks.
 *
 * The Event message is the reconciler's sentence; the configs that changed
 * are read back from its fixed opening (`Secret db, ConfigMap app changed…`,
 * names being DNS subdomains, without spaces or commas) and remembered per
 * workload, so a RestartFinished or RestartBlocked names them too. A restart
 * that stays blocked is rechecked every few seconds with a new message each
 * time; it is notified once per restart, not once per check.
 */
import type { Logger } from 'pino';
import { resolveStrategy } from '../decide.ts';
import type { EventReason, EventRecorder } from '../events.ts';
import type { RestartStrategy, WatchedConfigKind, WorkloadSummary } from '../model.ts';
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

const CONFIG_KINDS: readonly string[] = ['ConfigMap', 'Secret', 'SecretProviderClass'] satisfies WatchedConfigKind[];

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

  function observe(workload: WorkloadSummary, reason: EventReason, message: string): void {
    const event = EVENT_OF[reason];
    if (event === undefined) return;
    const parsed = changedConfigs(message);
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
      detail: message,
      dryRun: options.dryRun,
    }));
  }

  function guarded(workload: WorkloadSummary, reason: EventReason, message: string): void {
    // A notification is a courtesy: nothing it does may fail or delay the reconcile that reports.
    try {
      observe(workload, reason, message);
    } catch (error) {
      options.log.warn({ err: error, event: reason }, 'could not queue a notification');
    }
  }

  return {
    normal(workload, reason, message) {
      guarded(workload, reason, message);
      return inner.normal(workload, reason, message);
    },
    warning(workload, reason, message) {
      guarded(workload, reason, message);
      return inner.warning(workload, reason, message);
    },
  };
}

/** The configs named by a message's `<Kind> <name>[, <Kind> <name>…] changed` opening, or undefined. */
export function changedConfigs(message: string): Notification['changed'] | undefined {
  const match = /^(.+?) changed[:;]/.exec(message);
  if (match === null) return undefined;
  const configs: { kind: WatchedConfigKind; name: string }[] = [];
  for (const item of (match[1] as string).split(', ')) {
    const [kind, name, ...rest] = item.split(' ');
    if (kind === undefined || name === undefined || name === '' || rest.length > 0 || !CONFIG_KINDS.includes(kind)) return undefined;
    configs.push(Object.freeze({ kind: kind as WatchedConfigKind, name }));
  }
  return Object.freeze(configs);
}
