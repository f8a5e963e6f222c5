/**
 * Turns the `--notify-*` settings into a recorder that notifies, or leaves
 * the recorder alone when notifications are off: the one call the
 * controller's wiring makes.
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import type { EventRecorder } from '../events.ts';
import { notifyingRecorder } from './recorder.ts';
import { Notifier } from './sender.ts';
import type { WebhookUrl } from './url.ts';

/** Notifications as the controller runs them. */
export interface Notifications {
  /** The recorder the reconciler is given. */
  readonly events: EventRecorder;
  /** Undefined when notifications are off. */
  readonly notifier: Notifier | undefined;
  /** Another cluster's recorder, notifying through the same notifier (hub mode: one recorder per cluster). */
  wrap(inner: EventRecorder): EventRecorder;
  /** Gives queued notifications up to `graceMs`, then abandons them. */
  close(graceMs: number): Promise<void>;
}

/**
 * Wraps `inner` when a webhook URL is configured (`urlFromFile`: the content of
 * `--notify-webhook-url-file`, read by main) and `--notify-on` names an event.
 */
export function setUpNotifications(
  inner: EventRecorder,
  config: Pick<ControllerConfig, 'notifyWebhookUrl' | 'notifySink' | 'notifyOn' | 'notifyAdditionalInfo' | 'restartStrategy' | 'dryRun'>,
  deps: { readonly clock: Clock; readonly log: Logger; readonly urlFromFile?: WebhookUrl | undefined },
): Notifications {
  const url = config.notifyWebhookUrl ?? deps.urlFromFile;
  if (url === undefined || config.notifyOn.length === 0) return { events: inner, notifier: undefined, wrap: (other) => other, close: async () => undefined };
  const notifier = new Notifier({ sink: config.notifySink, url, additionalInfo: config.notifyAdditionalInfo }, { clock: deps.clock, log: deps.log });
  deps.log.info({ sink: config.notifySink, target: url.display, on: config.notifyOn }, 'notifications on');
  const wrap = (other: EventRecorder): EventRecorder => notifyingRecorder(other, {
    sink: notifier,
    on: config.notifyOn,
    defaultStrategy: config.restartStrategy,
    now: () => deps.clock.now(),
    dryRun: config.dryRun,
    log: deps.log,
  });
  return { events: wrap(inner), notifier, wrap, close: (graceMs) => notifier.close(graceMs) };
}
