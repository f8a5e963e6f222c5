/**
 * A webhook URL that keeps its secret. Slack, Teams and Google Chat put the
 * credential in the URL's path or query, so the URL is held privately and
 * every way it could reach a log, an error or a JSON dump (`String()`,
 * `JSON.stringify`, `util.inspect`) shows only its origin.
 */
import { inspect } from 'node:util';

/** A validated http(s) URL whose path and query are never shown. */
export class WebhookUrl {
  readonly #href: string;
  /** `https://hooks.slack.com/…`: what logs and messages may say. */
  readonly display: string;

  /** Use `parseWebhookUrl`, which validates. */
  constructor(url: URL) {
    this.#href = url.href;
    this.display = `${url.origin}/…`;
  }

  /** The full URL, for the request only. */
  reveal(): string {
    return this.#href;
  }

  /** The display form: a template string or concatenation never leaks the token. */
  toString(): string {
    return this.display;
  }

  /** The display form: a config dumped as JSON never leaks the token. */
  toJSON(): string {
    return this.display;
  }

  /** The display form for `console.log` and `util.inspect`. */
  [inspect.custom](): string {
    return `WebhookUrl(${this.display})`;
  }
}

/**
 * Parses an absolute http or https URL without credentials in its authority.
 * Returns the URL, or the problem as a phrase that never quotes the input.
 */
export function parseWebhookUrl(text: string): WebhookUrl | string {
  const trimmed = text.trim();
  if (!URL.canParse(trimmed)) return 'not an absolute URL';
  const url = new URL(trimmed);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `the scheme must be https or http, not ${url.protocol.replace(/:$/, '')}`;
  // fetch refuses URLs with credentials at send time; say so at start instead.
  if (url.username !== '' || url.password !== '') return 'credentials before the host are not supported (put the token where the receiver expects it, usually the path or query)';
  return new WebhookUrl(url);
}
