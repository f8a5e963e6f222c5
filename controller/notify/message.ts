/**
 * What a notification says, and the body each sink receives. Pure: the
 * sender only moves these bytes.
 *
 * A notification names the workload (kind, namespace, name), the configs
 * that changed (kind and name), the strategy and the time — never a value,
 * a digest or a hash: a digest of a short Secret could be brute-forced.
 *
 * The chat bodies match Reloader's (`internal/pkg/alerts`), so a receiver
 * that took Reloader's alerts keeps working:
 * - slack: `{"attachments":[{"text","color","author_name"}]}`
 * - teams, gchat: `{"text"}`
 * - raw: the text as `text/plain`, without the `*` bold markers
 * - webhook: Driftless's own JSON, `NotificationBody` (schema `driftless.dev/notification/v1`).
 * Reloader prefixes its additional info as `"<info> : <text>"`; so does this.
 */
import { formatTime } from '../bookkeeping.ts';
import type { ResolvedStrategy } from '../decide.ts';
import type { WatchedConfigKind, WorkloadKindName } from '../model.ts';

/** The sinks: Slack, Microsoft Teams, Google Chat, Driftless's JSON webhook, Reloader's plain-text webhook. */
export type NotifySink = (typeof NOTIFY_SINKS)[number];

/** What can be notified: a restart started, finished, blocked (a PodDisruptionBudget refusing evictions) or skipped. */
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** Every sink, in `--help` order. */
export const NOTIFY_SINKS = Object.freeze(['slack', 'teams', 'gchat', 'webhook', 'raw'] as const);

/** Every event, in the order a restart goes through them. */
export const NOTIFY_EVENTS = Object.freeze(['started', 'finished', 'blocked', 'skipped'] as const);

/** One notification, before it is rendered for a sink. */
export interface Notification {
  readonly event: NotifyEvent;
  readonly workload: { readonly kind: WorkloadKindName; readonly namespace: string; readonly name: string };
  /** The configs whose change caused the restart, by kind and name; `[]` when unknown. */
  readonly changed: readonly { readonly kind: WatchedConfigKind; readonly name: string }[];
  /** As the metrics' `strategy` label: evict, restart-at, template or record-only. */
  readonly strategy: ResolvedStrategy;
  /** Epoch milliseconds of the event. */
  readonly at: number;
  /** The Kubernetes Event's message (why a restart is blocked or skipped); it never holds a value either. */
  readonly detail: string;
  /** Written by a `--dry-run` controller: nothing was restarted. */
  readonly dryRun: boolean;
}

/**
 * The generic webhook's JSON body, schema `driftless.dev/notification/v1`.
 * Fields are only ever added to this version, never renamed or removed.
 */
export interface NotificationBody {
  readonly schema: 'driftless.dev/notification/v1';
  readonly event: NotifyEvent;
  /** `normal` for started and finished, `warning` for blocked and skipped. */
  readonly severity: 'normal' | 'warning';
  readonly workload: Notification['workload'];
  readonly changed: Notification['changed'];
  readonly strategy: ResolvedStrategy;
  /** RFC 3339, UTC, whole seconds. */
  readonly time: string;
  readonly detail: string;
  readonly dryRun: boolean;
  /** `--notify-additional-info` (Reloader's `ALERT_ADDITIONAL_INFO`), when set. */
  readonly additionalInfo?: string;
  /** The same sentence the chat sinks show. */
  readonly text: string;
}

/** A request body and its content type. */
export interface RenderedBody {
  readonly contentType: string;
  readonly body: string;
}

function severityOf(event: NotifyEvent): 'normal' | 'warning' {
  return event === 'blocked' || event === 'skipped' ? 'warning' : 'normal';
}

function changedText(notification: Notification): string {
  if (notification.changed.length === 0) return 'its configs';
  return notification.changed.map((config) => `*${config.kind} ${config.name}*`).join(', ');
}

/**
 * The sentence chat sinks show, with `*bold*` markers (Slack's and Google Chat's markup; Reloader sends the
 * same to Teams), prefixed `"<info> : "` when there is additional info.
 */
export function notificationText(notification: Notification, additionalInfo: string | undefined): string {
  const { workload, strategy } = notification;
  const subject = `*${workload.kind} ${workload.name}* in namespace *${workload.namespace}*`;
  const changed = changedText(notification);
  const when = formatTime(notification.at);
  const dryRun = notification.dryRun ? ' (dry run: nothing was written)' : '';
  let sentence: string;
  switch (notification.event) {
    case 'started':
      sentence = `Driftless detected a change in ${changed}; restarting ${subject} (${strategy}) at ${when}${dryRun}`;
      break;
    case 'finished':
      sentence = `Driftless finished restarting ${subject} after a change in ${changed} (${strategy}) at ${when}${dryRun}`;
      break;
    case 'blocked':
      sentence = `Driftless cannot continue restarting ${subject} after a change in ${changed} (${strategy}) at ${when}: ${notification.detail}${dryRun}`;
      break;
    case 'skipped':
      sentence = `Driftless skipped restarting ${subject} after a change in ${changed} (${strategy}) at ${when}: ${notification.detail}${dryRun}`;
      break;
  }
  return additionalInfo === undefined || additionalInfo === '' ? sentence : `${additionalInfo} : ${sentence}`;
}

/** The generic webhook's body (`webhook` sink). */
export function notificationBody(notification: Notification, additionalInfo: string | undefined): NotificationBody {
  const body: NotificationBody = {
    schema: 'driftless.dev/notification/v1',
    event: notification.event,
    severity: severityOf(notification.event),
    workload: { kind: notification.workload.kind, namespace: notification.workload.namespace, name: notification.workload.name },
    changed: notification.changed.map((config) => ({ kind: config.kind, name: config.name })),
    strategy: notification.strategy,
    time: formatTime(notification.at),
    detail: notification.detail,
    dryRun: notification.dryRun,
    ...(additionalInfo === undefined || additionalInfo === '' ? {} : { additionalInfo }),
    text: notificationText(notification, additionalInfo).replaceAll('*', ''),
  };
  return body;
}

/** Renders a notification for one sink. */
export function renderNotification(sink: NotifySink, notification: Notification, additionalInfo: string | undefined): RenderedBody {
  const json = (value: unknown): RenderedBody => ({ contentType: 'application/json', body: JSON.stringify(value) });
  const text = notificationText(notification, additionalInfo);
  switch (sink) {
    case 'slack':
      // Slack's attachment colours: good (green) for progress, warning (amber) for what needs a look.
      return json({ attachments: [{ text, color: severityOf(notification.event) === 'normal' ? 'good' : 'warning', author_name: 'Driftless' }] });
    case 'teams':
    case 'gchat':
      return json({ text });
    case 'raw':
      return { contentType: 'text/plain; charset=utf-8', body: text.replaceAll('*', '') };
    case 'webhook':
      return json(notificationBody(notification, additionalInfo));
  }
}
