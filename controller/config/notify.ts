/**
 * The notification flags (`--notify-*`, and Reloader's `ALERT_*` variables
 * with Reloader's meaning): their rows of the flag table, their converters
 * and how they are read together.
 */
import { UsageError } from '../../cli/errors.ts';
import { NOTIFY_EVENTS, NOTIFY_SINKS, type NotifyEvent, type NotifySink } from '../notify/message.ts';
import { parseWebhookUrl, type WebhookUrl } from '../notify/url.ts';
import { flag, type ControllerFlagSpec } from './flag-spec.ts';
import type { ControllerConfig } from './model.ts';
import type { FlagReader } from './reader.ts';
import { allowedText, asEnum, asPath, asText, invalid, quote, type Given } from './validators.ts';

/** The notification rows of the flag table, in `--help` order. */
export function notifyFlags(): readonly ControllerFlagSpec[] {
  return [
    flag({
      name: 'notify-webhook-url',
      extraEnv: ['ALERT_WEBHOOK_URL'],
      type: 'url',
      default: '',
      defaultText: 'none: no notifications',
      description:
        'Post a notification here for each restart (see --notify-on). The URL usually holds a token: prefer --notify-webhook-url-file; logs show only its origin.',
    }),
    flag({
      name: 'notify-webhook-url-file',
      type: 'path',
      default: '',
      defaultText: 'none',
      description: 'File holding the webhook URL (e.g. a mounted Secret key), instead of --notify-webhook-url.',
    }),
    flag({
      name: 'notify-sink',
      extraEnv: ['ALERT_SINK'],
      type: 'enum',
      values: NOTIFY_SINKS,
      default: '',
      defaultText: 'webhook; raw when the URL comes from ALERT_WEBHOOK_URL, as Reloader',
      description:
        'The receiver: slack, teams, gchat (their incoming webhooks), webhook (Driftless JSON, schema driftless.dev/notification/v1) or raw (plain text, as Reloader\'s webhook sink). ALERT_SINK=webhook means raw, as in Reloader.',
    }),
    flag({
      name: 'notify-on',
      extraEnv: ['ALERT_ON_RELOAD'],
      type: 'event-list',
      default: '',
      defaultText: 'started,finished,blocked,skipped; with ALERT_WEBHOOK_URL, only what ALERT_ON_RELOAD turns on',
      description:
        'What is notified: comma-separated started, finished, blocked, skipped, or none. Reloader\'s ALERT_ON_RELOAD=true means started (its alert after each reload); any other value, none.',
    }),
    flag({
      name: 'notify-additional-info',
      extraEnv: ['ALERT_ADDITIONAL_INFO'],
      type: 'text',
      default: '',
      defaultText: 'none',
      description: 'Text put before every notification as "<text> : <notification>", as Reloader does, e.g. the cluster\'s name.',
    }),
  ];
}

type NotifySettings = Pick<ControllerConfig, 'notifyWebhookUrl' | 'notifyWebhookUrlFile' | 'notifySink' | 'notifyOn' | 'notifyAdditionalInfo'>;

/**
 * The notification flags, with Reloader's meaning where its variables are used: a URL from
 * `ALERT_WEBHOOK_URL` alerts only when `ALERT_ON_RELOAD=true` and defaults to the plain-text sink.
 */
export function readNotifySettings({ readOptional, provenance }: FlagReader): NotifySettings {
  const notifyWebhookUrl = readOptional('notify-webhook-url', asWebhookUrl);
  const notifyWebhookUrlFile = readOptional('notify-webhook-url-file', asPath);
  const fromReloader = provenance['notify-webhook-url'] === 'ALERT_WEBHOOK_URL';
  if (notifyWebhookUrl !== undefined && notifyWebhookUrlFile !== undefined) {
    throw new UsageError(`--notify-webhook-url (from ${provenance['notify-webhook-url']}) and --notify-webhook-url-file (from ${provenance['notify-webhook-url-file']}) both name the webhook: give one`);
  }
  const notifySink = readOptional('notify-sink', asNotifySink) ?? (fromReloader ? 'raw' : 'webhook');
  const notifyOn = readOptional('notify-on', asNotifyEvents) ?? (fromReloader ? [] : NOTIFY_EVENTS);
  const notifyAdditionalInfo = readOptional('notify-additional-info', asText);
  if (notifyWebhookUrl === undefined && notifyWebhookUrlFile === undefined) {
    // Asked for notifications but said nowhere to send them: fail now rather than stay silent at the first restart.
    // Reloader's ALERT_SINK and ALERT_ADDITIONAL_INFO alone are left over from a disabled alert, as Reloader treats them.
    const asked = ['notify-sink', 'notify-additional-info'].find((name) => provenance[name] !== 'default' && !provenance[name]?.startsWith('ALERT_'))
      ?? (provenance['notify-on'] !== 'default' && notifyOn.length > 0 ? 'notify-on' : undefined);
    if (asked !== undefined) {
      throw new UsageError(`--${asked} (from ${provenance[asked]}) needs --notify-webhook-url or --notify-webhook-url-file: notifications need somewhere to go`);
    }
  }
  return { notifyWebhookUrl, notifyWebhookUrlFile, notifySink, notifyOn, notifyAdditionalInfo };
}

/** Never quotes the value: a webhook URL usually carries its token in the path or query. */
function asWebhookUrl(given: Given, spec: ControllerFlagSpec): WebhookUrl {
  const parsed = parseWebhookUrl(given.text);
  if (typeof parsed !== 'string') return parsed;
  const source = given.from === `flag ${spec.flag}` ? '' : ` (from ${given.from})`;
  throw new UsageError(`invalid value for ${spec.flag}${source} (not shown: it may hold a token): ${parsed}; expected ${allowedText(spec)}`);
}

/** Reloader sends anything but slack, teams and gchat as plain text, and documents that as `webhook`. */
function asNotifySink(given: Given, spec: ControllerFlagSpec): NotifySink {
  const sink = asEnum(given, spec) as NotifySink;
  return given.from === 'ALERT_SINK' && sink === 'webhook' ? 'raw' : sink;
}

function asNotifyEvents(given: Given, spec: ControllerFlagSpec): readonly NotifyEvent[] {
  // Reloader compares with "true" exactly; any other value leaves its alerts off.
  if (given.from === 'ALERT_ON_RELOAD') return given.text === 'true' ? ['started'] : [];
  if (given.text.trim() === 'none') return [];
  const items = given.text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (items.length === 0) throw invalid(given, spec, 'no event named');
  for (const item of items) {
    if (!(NOTIFY_EVENTS as readonly string[]).includes(item)) throw invalid(given, spec, `${quote(item)} is not an event`);
  }
  return NOTIFY_EVENTS.filter((event) => items.includes(event));
}
