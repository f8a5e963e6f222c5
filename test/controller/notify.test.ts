import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { afterEach, describe, it } from 'node:test';
import { inspect } from 'node:util';
import { reduceConfig } from '../../controller/cache/reduce.ts';
import { systemClock } from '../../controller/clock.ts';
import { FakeClock } from '../support/fake-clock.ts';
import type { ControllerConfig } from '../../controller/config/model.ts';
import { parseControllerConfig } from '../../controller/config/parse.ts';
import { eventMessage, normalEvent, warningEvent, type EventRecorder } from '../../controller/events.ts';
import { createLogger } from '../../controller/log.ts';
import type { WorkloadSummary } from '../../controller/model.ts';
import { NOTIFY_SINKS, renderNotification, type Notification, type NotifySink } from '../../controller/notify/message.ts';
import { notifyingRecorder } from '../../controller/notify/recorder.ts';
import { Notifier, type NotifierOptions } from '../../controller/notify/sender.ts';
import { setUpNotifications } from '../../controller/notify/setup.ts';
import { parseWebhookUrl, WebhookUrl } from '../../controller/notify/url.ts';
import { ANNOTATION_TRACKING, workload } from './support/summaries.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { LOCAL_WAIT, waitFor } from '../support/wait.ts';

/** The token a real webhook URL carries in its path and query: it must never reach a log. */
const TOKEN = 'T000-B000-XXXXsecrettoken';
/** A Secret's value: it must never reach a payload or a log. */
const SECRET_VALUE = 'hunter2-correct-horse';

function captureLog() {
  const lines: Record<string, unknown>[] = [];
  let raw = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      raw += chunk.toString('utf8');
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger('debug', stream), lines, text: () => raw };
}

function urlOf(receiver: Receiver, path = `/hooks/${TOKEN}?token=${TOKEN}`): WebhookUrl {
  const url = parseWebhookUrl(`${receiver.origin}${path}`);
  assert.ok(url instanceof WebhookUrl);
  return url;
}

const AT = Date.UTC(2026, 8, 1, 12, 0, 0);
const DB = Object.freeze({ kind: 'Secret', name: 'db' } as const);

function notification(overrides: Partial<Notification> = {}): Notification {
  return {
    event: 'started',
    workload: { kind: 'Deployment', namespace: 'prod', name: 'api' },
    changed: [{ kind: 'Secret', name: 'db' }, { kind: 'ConfigMap', name: 'app' }],
    strategy: 'evict',
    at: AT,
    detail: 'Secret db, ConfigMap app changed: replacing the pods created before 2026-09-01T12:00:00Z (paced evictions)',
    dryRun: false,
    ...overrides,
  };
}

const receivers: Receiver[] = [];
const notifiers: Notifier[] = [];
async function receiver(options: Parameters<typeof startReceiver>[0] = {}): Promise<Receiver> {
  const started = await startReceiver(options);
  receivers.push(started);
  return started;
}
function notifier(options: Partial<NotifierOptions> & Pick<NotifierOptions, 'url'>, deps: ConstructorParameters<typeof Notifier>[1]): Notifier {
  const created = new Notifier({ sink: 'webhook', additionalInfo: undefined, ...options }, deps);
  notifiers.push(created);
  return created;
}
afterEach(async () => {
  for (const n of notifiers.splice(0)) await n.close(0);
  for (const r of receivers.splice(0)) await r.close();
});

describe('notification payloads, received by a loopback server', () => {
  const expected: Record<NotifySink, (body: string, contentType: string) => void> = {
    slack: (body, contentType) => {
      assert.match(contentType, /^application\/json/);
      const parsed = JSON.parse(body) as { attachments: { text: string; color: string; author_name: string }[] };
      assert.equal(parsed.attachments.length, 1);
      assert.deepEqual(Object.keys(parsed.attachments[0] ?? {}).sort(), ['author_name', 'color', 'text']);
      assert.equal(parsed.attachments[0]?.color, 'good');
      assert.equal(parsed.attachments[0]?.author_name, 'Driftless');
      assert.equal(parsed.attachments[0]?.text, 'cluster-eu-1 : Driftless detected a change in *Secret db*, *ConfigMap app*; restarting *Deployment api* in namespace *prod* (evict) at 2026-09-01T12:00:00Z');
    },
    teams: (body) => assert.deepEqual(Object.keys(JSON.parse(body) as object), ['text']),
    gchat: (body) => assert.deepEqual(Object.keys(JSON.parse(body) as object), ['text']),
    raw: (body, contentType) => {
      assert.match(contentType, /^text\/plain/);
      assert.equal(body, 'cluster-eu-1 : Driftless detected a change in Secret db, ConfigMap app; restarting Deployment api in namespace prod (evict) at 2026-09-01T12:00:00Z');
    },
    webhook: (body, contentType) => {
      assert.match(contentType, /^application\/json/);
      assert.deepEqual(JSON.parse(body), {
        schema: 'driftless.dev/notification/v1',
        event: 'started',
        severity: 'normal',
        workload: { kind: 'Deployment', namespace: 'prod', name: 'api' },
        changed: [{ kind: 'Secret', name: 'db' }, { kind: 'ConfigMap', name: 'app' }],
        strategy: 'evict',
        time: '2026-09-01T12:00:00Z',
        detail: 'Secret db, ConfigMap app changed: replacing the pods created before 2026-09-01T12:00:00Z (paced evictions)',
        dryRun: false,
        additionalInfo: 'cluster-eu-1',
        text: 'cluster-eu-1 : Driftless detected a change in Secret db, ConfigMap app; restarting Deployment api in namespace prod (evict) at 2026-09-01T12:00:00Z',
      });
    },
  };

  for (const sink of NOTIFY_SINKS) {
    it(`posts the ${sink} body to the webhook URL, path and query included`, async () => {
      const server = await receiver();
      const { log } = captureLog();
      const sender = notifier({ sink, url: urlOf(server), additionalInfo: 'cluster-eu-1' }, { clock: systemClock(), log });
      sender.notify(notification());
      await server.waitFor(1);
      const [request] = server.requests;
      assert.equal(request?.method, 'POST');
      assert.equal(request?.path, `/hooks/${TOKEN}?token=${TOKEN}`);
      expected[sink](request?.body ?? '', String(request?.headers['content-type']));
      if (sink === 'teams' || sink === 'gchat') {
        assert.equal((JSON.parse(request?.body ?? '{}') as { text: string }).text, 'cluster-eu-1 : Driftless detected a change in *Secret db*, *ConfigMap app*; restarting *Deployment api* in namespace *prod* (evict) at 2026-09-01T12:00:00Z');
      }
      await sender.whenIdle();
    });
  }

  it('colours and words what needs a look, and says when nothing was written', () => {
    const blocked = renderNotification('slack', notification({ event: 'blocked', detail: 'eviction of pod api-1 refused for 300s: Cannot evict pod as it would violate the pod\'s disruption budget.' }), undefined);
    const attachment = (JSON.parse(blocked.body) as { attachments: { text: string; color: string }[] }).attachments[0];
    assert.equal(attachment?.color, 'warning');
    assert.match(attachment?.text ?? '', /^Driftless cannot continue restarting \*Deployment api\* .*: eviction of pod api-1 refused for 300s/);
    const dry = JSON.parse(renderNotification('webhook', notification({ event: 'finished', dryRun: true, changed: [] }), undefined).body) as Record<string, unknown>;
    assert.equal(dry['severity'], 'normal');
    assert.equal(dry['dryRun'], true);
    assert.equal('additionalInfo' in dry, false);
    assert.equal(dry['text'], 'Driftless finished restarting Deployment api in namespace prod after a change in its configs (evict) at 2026-09-01T12:00:00Z (dry run: nothing was written)');
  });
});

describe('Notifier: retries, backoff and drops', () => {
  it('retries a 500 with doubling backoff on the injected clock, then delivers', async () => {
    const server = await receiver({ statuses: [500, 503, 200] });
    const clock = new FakeClock(AT);
    const { log, lines } = captureLog();
    const sender = notifier({ url: urlOf(server), backoffBaseMs: 1000 }, { clock, log });
    sender.notify(notification());
    const retries = () => lines.filter((line) => line['msg'] === 'notification failed; retrying');

    await server.waitFor(1);
    await waitFor('the first retry to be scheduled', () => retries().length === 1, LOCAL_WAIT);
    assert.equal(retries()[0]?.['retryInMs'], 1000);
    assert.equal(retries()[0]?.['why'], 'HTTP 500');
    clock.advance(999);
    assert.equal(server.requests.length, 1, 'no second attempt before the backoff has passed');
    clock.advance(1);
    await server.waitFor(2);

    await waitFor('the second retry to be scheduled', () => retries().length === 2, LOCAL_WAIT);
    assert.equal(retries()[1]?.['retryInMs'], 2000);
    clock.advance(1999);
    assert.equal(server.requests.length, 2);
    clock.advance(1);
    await server.waitFor(3);
    await sender.whenIdle();
    assert.equal(server.requests.length, 3);
    assert.ok(lines.some((line) => line['msg'] === 'notification delivered' && line['attempt'] === 3));
    assert.ok(server.requests.every((request) => request.body === server.requests[0]?.body), 'every attempt sends the same body');
  });

  it('drops a notification after the last attempt, with a log line that never shows the token', async () => {
    const server = await receiver({ statuses: [500] });
    const clock = new FakeClock(AT);
    const { log, lines, text } = captureLog();
    const sender = notifier({ sink: 'slack', url: urlOf(server), maxAttempts: 3, backoffBaseMs: 100 }, { clock, log });
    sender.notify(notification());
    for (let attempt = 1; attempt <= 2; attempt++) {
      await server.waitFor(attempt);
      await waitFor(`retry ${attempt}`, () => clock.pendingTimers === 1 && lines.filter((l) => l['msg'] === 'notification failed; retrying').length === attempt, LOCAL_WAIT);
      clock.advance(100 * 2 ** (attempt - 1));
    }
    await server.waitFor(3);
    await sender.whenIdle();
    assert.equal(server.requests.length, 3);
    const dropped = lines.find((line) => line['msg'] === 'notification dropped: gave up after 3 attempts');
    assert.ok(dropped, 'a log line says the notification was dropped');
    assert.equal(dropped['level'], 40);
    assert.equal(dropped['workload'], 'Deployment/prod/api');
    assert.equal(dropped['target'], `${server.origin}/…`);
    assert.equal(clock.pendingTimers, 0);
    assert.ok(!text().includes(TOKEN), 'no log line holds the URL\'s path or query');
  });

  it('retries an unreachable receiver by its error code, and never follows a redirect or retries a 404', async () => {
    const closed = await receiver();
    const url = urlOf(closed);
    await closed.close();
    receivers.splice(receivers.indexOf(closed), 1);
    const { log, lines, text } = captureLog();
    const clock = new FakeClock(AT);
    const unreachable = notifier({ url, maxAttempts: 2, backoffBaseMs: 10 }, { clock, log });
    unreachable.notify(notification());
    await waitFor('a retry after ECONNREFUSED', () => clock.pendingTimers === 1 && lines.some((l) => l['msg'] === 'notification failed; retrying'), LOCAL_WAIT);
    assert.equal(lines.find((l) => l['msg'] === 'notification failed; retrying')?.['why'], 'ECONNREFUSED');
    clock.advance(10);
    await unreachable.whenIdle();
    assert.ok(lines.some((l) => l['msg'] === 'notification dropped: gave up after 2 attempts'));

    for (const status of [302, 404]) {
      const server = await receiver({ statuses: [status, 200] });
      const sender = notifier({ url: urlOf(server) }, { clock, log });
      sender.notify(notification());
      await server.waitFor(1);
      await sender.whenIdle();
      assert.equal(server.requests.length, 1, `HTTP ${status} is not retried`);
      assert.ok(lines.some((l) => l['msg'] === 'notification dropped: not retried' && String(l['why']).startsWith(`HTTP ${status}`)));
    }
    assert.ok(!text().includes(TOKEN));
  });

  it('waits at least a 429\'s Retry-After, capped by the longest backoff', async () => {
    const server = await receiver({ statuses: [429, 200], headers: { 'retry-after': '7' } });
    const clock = new FakeClock(AT);
    const { log, lines } = captureLog();
    const sender = notifier({ url: urlOf(server), backoffBaseMs: 1000, backoffMaxMs: 5000 }, { clock, log });
    sender.notify(notification());
    await waitFor('the retry after 429', () => clock.pendingTimers === 1 && lines.some((l) => l['msg'] === 'notification failed; retrying'), LOCAL_WAIT);
    assert.equal(lines.find((l) => l['msg'] === 'notification failed; retrying')?.['retryInMs'], 5000);
    clock.advance(4999);
    assert.equal(server.requests.length, 1);
    clock.advance(1);
    await server.waitFor(2);
    await sender.whenIdle();
  });

  it('never blocks the caller, and a full queue drops its oldest waiting notification with a log line', async () => {
    const server = await receiver({ hold: true });
    const { log, lines } = captureLog();
    const sender = notifier({ url: urlOf(server), queueSize: 2 }, { clock: systemClock(), log });
    const names = ['a', 'b', 'c', 'd'];
    sender.notify(notification({ workload: { kind: 'Deployment', namespace: 'prod', name: 'a' } }));
    await server.waitFor(1);
    for (const name of names.slice(1)) sender.notify(notification({ workload: { kind: 'Deployment', namespace: 'prod', name } }));
    assert.equal(sender.pending, 2);
    const drops = lines.filter((line) => line['msg'] === 'notification queue full: dropped the oldest notification');
    assert.deepEqual(drops.map((line) => line['workload']), ['Deployment/prod/b', 'Deployment/prod/c']);
    server.release();
    await server.waitFor(2);
    await sender.whenIdle();
    assert.deepEqual(server.requests.map((request) => (JSON.parse(request.body) as { workload: { name: string } }).workload.name), ['a', 'd']);
  });

  it('at close, gives the queue its grace period, then abandons the rest with one log line', async () => {
    const server = await receiver({ hold: true });
    const clock = new FakeClock(AT);
    const { log, lines } = captureLog();
    const sender = new Notifier({ sink: 'webhook', url: urlOf(server), additionalInfo: undefined }, { clock, log });
    sender.notify(notification());
    sender.notify(notification({ event: 'finished' }));
    await server.waitFor(1);
    const closing = sender.close(3000);
    sender.notify(notification({ event: 'skipped' }));
    clock.advance(3000);
    await closing;
    assert.equal(sender.pending, 0);
    assert.equal(lines.find((line) => line['msg'] === 'stopping: notifications not delivered')?.['abandoned'], 2);
    assert.equal(server.requests.length, 1);
    server.release();
  });
});

describe('notifyingRecorder: restart Events become notifications', () => {
  function fakeInner(): EventRecorder & { calls: string[] } {
    const calls: string[] = [];
    return {
      calls,
      record: async (w, event) => void calls.push(`${event.type} ${event.reason} ${w.name}`),
    };
  }

  it('the Event message is worded in one place from the Event\'s data', () => {
    assert.equal(eventMessage(normalEvent('RestartStarted', 'replacing the pods created before 2026-09-01T12:00:00Z (paced evictions)', [DB, { kind: 'ConfigMap', name: 'app.conf' }])), 'Secret db, ConfigMap app.conf changed: replacing the pods created before 2026-09-01T12:00:00Z (paced evictions)');
    assert.equal(eventMessage(normalEvent('RestartSkipped', 'restart-strategy none: recorded only', [{ kind: 'SecretProviderClass', name: 'vault' }])), 'SecretProviderClass vault changed; restart-strategy none: recorded only');
    assert.equal(eventMessage(normalEvent('RestartFinished', 'every pod created before 2026-09-01T12:00:00Z was replaced')), 'every pod created before 2026-09-01T12:00:00Z was replaced');
  });

  it('notifies the chosen events once per restart, names the configs on every one, and always calls the inner recorder', async () => {
    const sent: Notification[] = [];
    const inner = fakeInner();
    const { log } = captureLog();
    let now = AT;
    const events = notifyingRecorder(inner, { sink: { notify: (n) => sent.push(n) }, on: ['started', 'blocked', 'finished'], defaultStrategy: 'evict', now: () => now, dryRun: false, log });
    const api = workload('Deployment', 'api', { secrets: ['db'] });
    await events.record(api, normalEvent('RestartStarted', 'replacing the pods created before 2026-09-01T12:00:00Z (paced evictions)', [DB]));
    await events.record(api, warningEvent('RestartWarning', 'a single replica: a brief outage'));
    for (let check = 0; check < 3; check++) {
      now += 5000;
      await events.record(api, warningEvent('RestartBlocked', 'evictions refused: Cannot evict pod as it would violate the pod\'s disruption budget.'));
    }
    await events.record(api, normalEvent('RestartFinished', 'every pod created before 2026-09-01T12:00:00Z was replaced'));
    await events.record(api, normalEvent('RestartSkipped', 'restart-strategy none: recorded only', [DB]));
    assert.deepEqual(sent.map((n) => n.event), ['started', 'blocked', 'finished']);
    for (const n of sent) assert.deepEqual(n.changed, [{ kind: 'Secret', name: 'db' }]);
    assert.equal(sent[1]?.at, AT + 5000);
    assert.equal(inner.calls.length, 7, 'every Event still reaches Kubernetes');
  });

  it('names the strategy as resolved for the workload', async () => {
    const sent: Notification[] = [];
    const { log } = captureLog();
    const events = notifyingRecorder(fakeInner(), { sink: { notify: (n) => sent.push(n) }, on: ['started'], defaultStrategy: 'evict', now: () => AT, dryRun: true, log });
    await events.record(workload('Rollout', 'web'), normalEvent('RestartStarted', 'x', [{ kind: 'ConfigMap', name: 'app' }]));
    await events.record(workload('Deployment', 'api', { annotations: { 'driftless.dev/restart-strategy': 'rollout' } }), normalEvent('RestartStarted', 'x', [{ kind: 'ConfigMap', name: 'app' }]));
    assert.deepEqual(sent.map((n) => [n.strategy, n.dryRun]), [['restart-at', true], ['template', true]]);
  });

  it('a failing sink never fails the Event', async () => {
    const inner = fakeInner();
    const { log, lines } = captureLog();
    const events = notifyingRecorder(inner, { sink: { notify: () => { throw new Error('boom'); } }, on: ['started'], defaultStrategy: 'evict', now: () => AT, dryRun: false, log });
    await events.record(workload('Deployment', 'api'), normalEvent('RestartStarted', 'x', [DB]));
    assert.deepEqual(inner.calls, ['Normal RestartStarted api']);
    assert.ok(lines.some((line) => line['msg'] === 'could not queue a notification'));
  });
});

describe('wiring: the controller\'s recorder posts to the webhook', () => {
  function configFor(argv: readonly string[], env: Record<string, string> = {}): ControllerConfig {
    const parsed = parseControllerConfig(argv, env);
    assert.equal(parsed.command, 'run');
    return parsed;
  }

  it('a RestartStarted Event from the wrapped recorder produces a webhook POST without any config value', async () => {
    const server = await receiver();
    const { log, text } = captureLog();
    const config = configFor(['--notify-webhook-url', `${server.origin}/hook/${TOKEN}`, '--notify-additional-info', 'eu-1']);
    const recorded: string[] = [];
    const inner: EventRecorder = {
      record: async (_w, event) => void recorded.push(event.reason),
    };
    const notifications = setUpNotifications(inner, config, { clock: systemClock(), log });
    assert.ok(notifications.notifier !== undefined);
    // A Secret reduced as the controller reduces it: its digest and value must not travel.
    const secret = reduceConfig('Secret', {
      metadata: { name: 'db', namespace: 'prod', uid: 'uid-db', resourceVersion: '7' },
      data: { password: Buffer.from(SECRET_VALUE).toString('base64') },
    }, undefined, { key: undefined, tracking: ANNOTATION_TRACKING, now: AT });
    const api: WorkloadSummary = workload('Deployment', 'api', { secrets: ['db'] });
    await notifications.events.record(api, normalEvent('RestartStarted', 'replacing the pods created before 2026-09-01T12:00:00Z (paced evictions)', [DB]));
    assert.deepEqual(recorded, ['RestartStarted']);
    await server.waitFor(1);
    await notifications.close(1000);
    const [request] = server.requests;
    assert.equal(request?.path, `/hook/${TOKEN}`);
    const body = JSON.parse(request?.body ?? '{}') as Record<string, unknown>;
    assert.equal(body['schema'], 'driftless.dev/notification/v1');
    assert.equal(body['event'], 'started');
    assert.deepEqual(body['workload'], { kind: 'Deployment', namespace: 'prod', name: 'api' });
    assert.deepEqual(body['changed'], [{ kind: 'Secret', name: 'db' }]);
    assert.equal(body['strategy'], 'evict');
    assert.equal(body['additionalInfo'], 'eu-1');
    for (const forbidden of [SECRET_VALUE, Buffer.from(SECRET_VALUE).toString('base64'), secret.digest, secret.digest.replace(/^v1:/, '')]) {
      assert.ok(!(request?.body ?? '').includes(forbidden), `the payload holds ${forbidden}`);
    }
    assert.ok(!text().includes(TOKEN), 'the log never holds the token');
    assert.match(text(), /"msg":"notifications on"/);
  });

  it('leaves the recorder alone without a URL, or with nothing to notify', () => {
    const { log } = captureLog();
    const inner: EventRecorder = { record: async () => undefined };
    assert.equal(setUpNotifications(inner, configFor([]), { clock: systemClock(), log }).events, inner);
    const off = configFor(['--notify-webhook-url', 'https://hooks.example/x', '--notify-on', 'none']);
    assert.equal(setUpNotifications(inner, off, { clock: systemClock(), log }).notifier, undefined);
    // Reloader's variables alone alert only with ALERT_ON_RELOAD=true.
    const reloaderOff = configFor([], { ALERT_WEBHOOK_URL: 'https://hooks.example/x' });
    assert.equal(setUpNotifications(inner, reloaderOff, { clock: systemClock(), log }).notifier, undefined);
  });

  it('prints a webhook URL as its origin only', () => {
    const url = parseWebhookUrl(`https://hooks.slack.com/services/${TOKEN}?x=${TOKEN}`);
    assert.ok(url instanceof WebhookUrl);
    // oxlint-disable-next-line typescript/restrict-template-expressions -- the test checks what a template literal shows of it
    for (const shown of [String(url), `${url}`, JSON.stringify({ url }), inspect(url), inspect({ url })]) assert.ok(!shown.includes(TOKEN), shown);
    assert.equal(url.display, 'https://hooks.slack.com/…');
    assert.equal(url.reveal(), `https://hooks.slack.com/services/${TOKEN}?x=${TOKEN}`);
  });
});
