import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inspect } from 'node:util';
import { controllerUsageText } from '../../controller/config/help.ts';
import type { ControllerConfig } from '../../controller/config/model.ts';
import { parseControllerConfig } from '../../controller/config/parse.ts';
import { UsageError } from '../../cli/errors.ts';

type Env = Record<string, string | undefined>;
const TOKEN = 'XXXXsecrettokenXXXX';
const SLACK = `https://hooks.slack.com/services/T0/B0/${TOKEN}`;

function parse(argv: readonly string[], env: Env = {}): ControllerConfig {
  const result = parseControllerConfig(argv, env);
  assert.equal(result.command, 'run');
  return result;
}

function rejects(argv: readonly string[], env: Env, ...fragments: string[]): UsageError {
  let caught: UsageError | undefined;
  assert.throws(() => parseControllerConfig(argv, env), (error: unknown) => {
    assert.ok(error instanceof UsageError, `expected UsageError, got ${String(error)}`);
    for (const fragment of fragments) assert.ok(error.message.includes(fragment), `${JSON.stringify(error.message)} lacks ${JSON.stringify(fragment)}`);
    caught = error;
    return true;
  });
  assert.ok(caught !== undefined);
  return caught;
}

describe('notification flags: Reloader\'s ALERT_* variables', () => {
  it('reads a Reloader alert setup as Reloader means it: a Slack alert after each reload, prefixed with the additional info', () => {
    const config = parse([], { ALERT_ON_RELOAD: 'true', ALERT_SINK: 'slack', ALERT_WEBHOOK_URL: SLACK, ALERT_ADDITIONAL_INFO: 'prod-eu' });
    assert.equal(config.notifySink, 'slack');
    assert.deepEqual(config.notifyOn, ['started']);
    assert.equal(config.notifyAdditionalInfo, 'prod-eu');
    assert.equal(config.notifyWebhookUrl?.reveal(), SLACK);
    assert.deepEqual(
      [config.provenance['notify-sink'], config.provenance['notify-on'], config.provenance['notify-webhook-url'], config.provenance['notify-additional-info']],
      ['ALERT_SINK', 'ALERT_ON_RELOAD', 'ALERT_WEBHOOK_URL', 'ALERT_ADDITIONAL_INFO'],
    );
    for (const sink of ['teams', 'gchat']) assert.equal(parse([], { ALERT_SINK: sink, ALERT_WEBHOOK_URL: SLACK }).notifySink, sink);
  });

  it('alerts from ALERT_WEBHOOK_URL only when ALERT_ON_RELOAD is exactly "true", and defaults its sink to plain text', () => {
    const plain = parse([], { ALERT_WEBHOOK_URL: SLACK });
    assert.deepEqual(plain.notifyOn, []);
    assert.equal(plain.notifySink, 'raw');
    assert.deepEqual(parse([], { ALERT_WEBHOOK_URL: SLACK, ALERT_ON_RELOAD: 'True' }).notifyOn, []);
    assert.deepEqual(parse([], { ALERT_WEBHOOK_URL: SLACK, ALERT_ON_RELOAD: 'false' }).notifyOn, []);
    assert.equal(parse([], { ALERT_WEBHOOK_URL: SLACK, ALERT_SINK: 'webhook' }).notifySink, 'raw', 'Reloader\'s "webhook" is its plain-text sink');
    rejects([], { ALERT_WEBHOOK_URL: SLACK, ALERT_SINK: 'discord' }, 'invalid value "discord" for --notify-sink (from ALERT_SINK)');
  });

  it('lets flags and DRIFTLESS_* win over ALERT_*', () => {
    const config = parse(['--notify-sink', 'webhook', '--notify-on', 'finished,started'], { ALERT_SINK: 'slack', ALERT_ON_RELOAD: 'true', ALERT_WEBHOOK_URL: SLACK, DRIFTLESS_NOTIFY_ADDITIONAL_INFO: 'ours', ALERT_ADDITIONAL_INFO: 'theirs' });
    assert.equal(config.notifySink, 'webhook');
    assert.deepEqual(config.notifyOn, ['started', 'finished']);
    assert.equal(config.notifyAdditionalInfo, 'ours');
    assert.equal(parse([], { DRIFTLESS_NOTIFY_WEBHOOK_URL: 'https://a.example/x', ALERT_WEBHOOK_URL: SLACK }).notifyWebhookUrl?.reveal(), 'https://a.example/x');
  });

  it('with Driftless\'s own flags, notifies everything to the JSON webhook by default', () => {
    const config = parse(['--notify-webhook-url', 'http://127.0.0.1:9/hook']);
    assert.equal(config.notifySink, 'webhook');
    assert.deepEqual(config.notifyOn, ['started', 'finished', 'blocked', 'skipped']);
    assert.deepEqual(parse(['--notify-webhook-url-file', '/etc/hook/url']).notifyOn, ['started', 'finished', 'blocked', 'skipped']);
    assert.deepEqual(parse(['--notify-webhook-url-file', '/etc/hook/url', '--notify-on', 'none']).notifyOn, []);
    assert.deepEqual(parse(['--notify-webhook-url-file', '/u', '--notify-on', ' skipped , blocked,,']).notifyOn, ['blocked', 'skipped']);
  });
});

describe('notification flags: errors', () => {
  it('never quotes a webhook URL, which holds the token', () => {
    for (const bad of [`ftp://hooks.example/${TOKEN}`, `hooks.slack.com/${TOKEN}`, `https://user:${TOKEN}@hooks.example/x`]) {
      const error = rejects(['--notify-webhook-url', bad], {}, 'invalid value for --notify-webhook-url', 'not shown', 'an absolute https or http URL');
      assert.ok(!error.message.includes(TOKEN), error.message);
    }
    const fromEnv = rejects([], { ALERT_WEBHOOK_URL: `/relative/${TOKEN}` }, '--notify-webhook-url (from ALERT_WEBHOOK_URL)', 'not an absolute URL');
    assert.ok(!fromEnv.message.includes(TOKEN));
  });

  it('keeps the URL out of anything that prints the config', () => {
    const config = parse(['--notify-webhook-url', SLACK]);
    assert.ok(!JSON.stringify(config).includes(TOKEN));
    assert.ok(!inspect(config, { depth: 5 }).includes(TOKEN));
    assert.ok(Object.isFrozen(config.notifyWebhookUrl));
  });

  it('refuses two URLs, and notifications asked for with nowhere to go', () => {
    rejects(['--notify-webhook-url', SLACK, '--notify-webhook-url-file', '/u'], {}, '--notify-webhook-url (from flag --notify-webhook-url) and --notify-webhook-url-file', 'give one');
    rejects(['--notify-on', 'started'], {}, '--notify-on (from flag --notify-on) needs --notify-webhook-url or --notify-webhook-url-file');
    rejects(['--notify-sink', 'slack'], {}, '--notify-sink (from flag --notify-sink) needs');
    rejects([], { DRIFTLESS_NOTIFY_ADDITIONAL_INFO: 'x' }, '--notify-additional-info (from DRIFTLESS_NOTIFY_ADDITIONAL_INFO) needs');
    rejects([], { ALERT_ON_RELOAD: 'true' }, '--notify-on (from ALERT_ON_RELOAD) needs');
    // Reloader's leftovers of a disabled alert are harmless, as in Reloader.
    assert.equal(parse([], { ALERT_SINK: 'slack', ALERT_ADDITIONAL_INFO: 'x', ALERT_ON_RELOAD: 'false' }).notifyWebhookUrl, undefined);
  });

  it('checks the event list', () => {
    rejects(['--notify-webhook-url', SLACK, '--notify-on', 'started,reloaded'], {}, '"reloaded" is not an event', 'comma-separated started, finished, blocked or skipped, or none');
    rejects(['--notify-webhook-url', SLACK, '--notify-on', ','], {}, 'no event named');
  });

  it('documents the Reloader aliases in --help', () => {
    const text = controllerUsageText();
    for (const line of ['env: DRIFTLESS_NOTIFY_WEBHOOK_URL, ALERT_WEBHOOK_URL', 'env: DRIFTLESS_NOTIFY_SINK, ALERT_SINK', 'env: DRIFTLESS_NOTIFY_ON, ALERT_ON_RELOAD', 'env: DRIFTLESS_NOTIFY_ADDITIONAL_INFO, ALERT_ADDITIONAL_INFO']) {
      assert.ok(text.includes(line), line);
    }
  });
});
