/**
 * Leader election and the write fence on a fake clock, against a scripted
 * Lease API (an in-memory Lease with resourceVersions, per-call latency on
 * the fake clock that honours the abort signal, scripted 409s and failures).
 * The real-cluster path (two replicas, a leader killed) is in production.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { FakeClock, settle } from '../support/fake-clock.ts';
import type { KubeClient, RequestOptions } from '../../controller/kube/client.ts';
import { KubeApiError, KubeTransportError } from '../../controller/kube/errors.ts';
import { FencedError } from '../../controller/kube/fence.ts';
import { LeaderElector } from '../../controller/leader.ts';

const LEASE_MS = 15_000;
const RENEW_DEADLINE_MS = 10_000;
const RETRY_MS = 2_000;

interface LeaseObject {
  metadata: { name: string; namespace: string; resourceVersion: string };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string; acquireTime?: string; leaseTransitions?: number };
}

/** An in-memory Lease API on the fake clock. */
class ScriptedLeaseApi implements KubeClient {
  readonly server = 'https://scripted.invalid';
  lease: LeaseObject | undefined;
  /** Fake milliseconds every call takes before it is answered (the server is slow). */
  latencyMs = 0;
  /** Every PUT answers 409 while true. */
  conflictOnPut = false;
  /** Every call fails with a 500 while true. */
  failing = false;
  /** Monotonic times of successful PUT/POST by `identity`, as the server committed them. */
  readonly commits: { readonly holder: string; readonly at: number }[] = [];
  aborted = 0;
  #version = 1;
  readonly #clock: FakeClock;

  constructor(clock: FakeClock) {
    this.#clock = clock;
  }

  /** Another candidate takes the Lease (a foreign holder). */
  takeBy(holder: string): void {
    const lease = this.lease ?? { metadata: { name: 'lead', namespace: 'ns', resourceVersion: '' }, spec: {} };
    lease.spec = { ...lease.spec, holderIdentity: holder, renewTime: new Date(this.#clock.now()).toISOString(), leaseDurationSeconds: LEASE_MS / 1000 };
    lease.metadata.resourceVersion = String(++this.#version);
    this.lease = lease;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    await this.#wait(options.signal, method, path);
    if (this.failing) throw new KubeApiError(method, path, 500, 'InternalError', 'scripted');
    if (method === 'GET') {
      if (this.lease === undefined) throw new KubeApiError(method, path, 404, 'NotFound', '');
      return structuredClone(this.lease) as T;
    }
    const body = options.body as LeaseObject;
    if (method === 'POST') {
      if (this.lease !== undefined) throw new KubeApiError(method, path, 409, 'AlreadyExists', '');
      this.lease = { metadata: { ...body.metadata, resourceVersion: String(++this.#version) }, spec: body.spec };
    } else {
      if (this.conflictOnPut || this.lease?.metadata.resourceVersion !== body.metadata.resourceVersion) throw new KubeApiError(method, path, 409, 'Conflict', '');
      this.lease = { metadata: { ...body.metadata, resourceVersion: String(++this.#version) }, spec: body.spec };
    }
    this.commits.push({ holder: body.spec.holderIdentity ?? '', at: this.#clock.monotonic() });
    return undefined as T;
  }

  watch(): never {
    throw new Error('not used');
  }

  async close(): Promise<void> {}

  #wait(signal: AbortSignal | undefined, method: string, path: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(new KubeTransportError(method, path, { cause: signal.reason }));
        return;
      }
      const onAbort = (): void => {
        timer.cancel();
        this.aborted++;
        reject(new KubeTransportError(method, path, { cause: signal?.reason }));
      };
      const timer = this.#clock.setTimer(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, this.latencyMs);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function elector(api: ScriptedLeaseApi, clock: FakeClock, identity = 'me') {
  const events: string[] = [];
  const le = new LeaderElector(api, { namespace: 'ns', name: 'lead', identity, leaseDurationMs: LEASE_MS, renewDeadlineMs: RENEW_DEADLINE_MS, retryPeriodMs: RETRY_MS }, clock, pino({ level: 'silent' }));
  let lostAt: number | undefined;
  le.start({
    onStartedLeading: () => events.push('started'),
    onStoppedLeading: () => {
      lostAt = clock.monotonic();
      events.push('stopped');
    },
  });
  return { le, events, lostAt: () => lostAt };
}

/** Advances fake time in small steps, letting promises settle, until `done()` or `limitMs` has passed. */
async function runUntil(clock: FakeClock, done: () => boolean, limitMs: number, stepMs = 100): Promise<void> {
  for (let spent = 0; spent < limitMs && !done(); spent += stepMs) await clock.advanceAsync(stepMs);
  await settle();
}

/** Stops an elector while fake time runs (its release needs the scripted API's timers). */
async function stopOn(clock: FakeClock, le: LeaderElector): Promise<void> {
  let stopped = false;
  void le.stop().then(() => {
    stopped = true;
  });
  await runUntil(clock, () => stopped, 10_000);
  assert.ok(stopped, 'stopped');
}

/** The monotonic start of the last successful renewal, from the server's commits and the latency. */
function lastProofStart(api: ScriptedLeaseApi, identity = 'me', latencyMs = 0): number {
  const mine = api.commits.filter((c) => c.holder === identity);
  assert.ok(mine.length > 0, 'the elector renewed at least once');
  // An attempt is a GET then a PUT, each `latencyMs` long; the PUT commits at the end of the attempt.
  return (mine.at(-1)?.at ?? 0) - 2 * latencyMs;
}

describe('leader election and the write fence (fake clock, scripted Lease API)', () => {
  it('acquires a free Lease, renews it, and the fence is open only while it leads', async () => {
    const clock = new FakeClock(1_000_000);
    const api = new ScriptedLeaseApi(clock);
    const { le, events } = elector(api, clock);
    assert.throws(() => le.check('POST eviction'), FencedError);
    await runUntil(clock, () => events.includes('started'), 1000);
    assert.deepEqual(events, ['started']);
    le.check('POST eviction');
    await runUntil(clock, () => false, 60_000);
    assert.deepEqual(events, ['started'], 'a healthy leader keeps leading');
    assert.ok(api.commits.length >= 25, `renewed every retry period (${api.commits.length} commits in 60 s)`);
    le.check('POST eviction');
    await stopOn(clock, le);
    assert.equal(api.lease?.spec.holderIdentity, '', 'released on stop');
    assert.throws(() => le.check('POST eviction'), FencedError);
    assert.deepEqual(events, ['started'], 'a stop is not a loss');
  });

  it('a slow API server: the whole renew cycle is bounded by the renew deadline, and in-flight requests are aborted', async () => {
    const clock = new FakeClock(1_000_000);
    const api = new ScriptedLeaseApi(clock);
    const { le, events, lostAt } = elector(api, clock);
    await runUntil(clock, () => events.includes('started'), 1000);
    await runUntil(clock, () => false, 5000);
    // Each call now takes 4 s: a GET plus a PUT (8 s) still fits in one retry cycle, two attempts do not.
    api.latencyMs = 6_000;
    const signalAborted = new Promise<number>((resolve) => le.signal.addEventListener('abort', () => resolve(clock.monotonic())));
    await runUntil(clock, () => events.includes('stopped'), 60_000);
    assert.deepEqual(events, ['started', 'stopped']);
    const proof = lastProofStart(api);
    const lost = lostAt() ?? Infinity;
    assert.ok(lost - proof <= RENEW_DEADLINE_MS, `lost ${lost - proof} ms after the last proof; the deadline is ${RENEW_DEADLINE_MS} ms`);
    assert.ok(lost < (api.commits.at(-1)?.at ?? 0) + LEASE_MS, 'stopped leading before a standby could take the Lease');
    assert.equal(await signalAborted, lost, 'the fence signal aborts at the loss');
    assert.ok(api.aborted >= 1, 'the renewal in flight was aborted');
    assert.throws(() => le.check('PATCH restartAt'), FencedError);
  });

  it('persistent 409s on the Lease: leadership holds until the deadline, not a moment longer', async () => {
    const clock = new FakeClock(1_000_000);
    const api = new ScriptedLeaseApi(clock);
    const { le, events, lostAt } = elector(api, clock);
    await runUntil(clock, () => events.includes('started'), 1000);
    await runUntil(clock, () => false, 3000);
    api.conflictOnPut = true;
    const proof = lastProofStart(api);
    await runUntil(clock, () => clock.monotonic() >= proof + RENEW_DEADLINE_MS - 100, 20_000, 50);
    le.check('POST eviction');
    assert.deepEqual(events, ['started'], 'a 409 alone is not a loss');
    await runUntil(clock, () => events.includes('stopped'), 5000, 50);
    assert.equal(lostAt(), proof + RENEW_DEADLINE_MS, 'lost exactly at the renew deadline after the last proof');
    assert.throws(() => le.check('POST eviction'), FencedError);
  });

  it('a foreign holder: the leader stops at its next look, before the deadline', async () => {
    const clock = new FakeClock(1_000_000);
    const api = new ScriptedLeaseApi(clock);
    const { le, events, lostAt } = elector(api, clock);
    await runUntil(clock, () => events.includes('started'), 1000);
    await runUntil(clock, () => false, 3000);
    const proof = lastProofStart(api);
    api.takeBy('other');
    await runUntil(clock, () => events.includes('stopped'), 5000, 50);
    assert.deepEqual(events, ['started', 'stopped']);
    assert.ok((lostAt() ?? Infinity) - proof <= RETRY_MS * 1.2 + RETRY_MS, 'lost at the next renewal attempt');
    assert.ok(le.signal.aborted);
    assert.throws(() => le.check('POST eviction'), FencedError);
    assert.equal(api.lease?.spec.holderIdentity, 'other', 'the loser does not touch the Lease');
  });

  it('a wall-clock step back does not extend leadership; a step forward does not let a standby take a live Lease', async () => {
    const clock = new FakeClock(1_000_000);
    const api = new ScriptedLeaseApi(clock);
    const { le, events, lostAt } = elector(api, clock);
    await runUntil(clock, () => events.includes('started'), 1000);
    await runUntil(clock, () => false, 3000);
    api.failing = true;
    const proof = lastProofStart(api);
    clock.jumpWallClock(-3_600_000);
    await runUntil(clock, () => events.includes('stopped'), 30_000, 50);
    assert.equal(lostAt(), proof + RENEW_DEADLINE_MS, 'the deadline is on the monotonic clock');
    assert.throws(() => le.check('POST eviction'), FencedError);

    // A standby watching a live Lease held by another: an hour's step forward must not make it look expired.
    const clock2 = new FakeClock(5_000_000);
    const api2 = new ScriptedLeaseApi(clock2);
    api2.takeBy('other');
    const standby = elector(api2, clock2, 'standby');
    await runUntil(clock2, () => false, 1000);
    const sawAt = clock2.monotonic();
    clock2.jumpWallClock(3_600_000);
    await runUntil(clock2, () => standby.events.includes('started'), 30_000, 50);
    assert.deepEqual(standby.events, ['started'], 'takes the Lease once it expired');
    const took = api2.commits.find((c) => c.holder === 'standby')?.at ?? 0;
    assert.ok(took >= sawAt - 1000 + LEASE_MS, `took the Lease ${took - sawAt} ms after first seeing it: not before the lease duration`);
    await stopOn(clock2, standby.le);
  });

  it('a standby times another holder\'s renewal from when its answer arrived, so a slow GET cannot age it', async (t) => {
    // No jitter, so the attempts fall on a known grid: a GET every 2 s + 1.5 s, answered at 1.5, 5, 8.5, 12, 15.5 s.
    t.mock.method(Math, 'random', () => 0);
    const clock = new FakeClock(1_000_000);
    const api = new ScriptedLeaseApi(clock);
    api.takeBy('other');
    api.latencyMs = 1_500;
    const standby = elector(api, clock, 'standby');
    // The standby's first GET is in flight; the holder renews just before it is answered.
    await clock.advanceAsync(1_400);
    api.takeBy('other');
    const renewedAt = clock.monotonic();
    await runUntil(clock, () => standby.events.includes('started'), 60_000, 50);
    const took = api.commits.find((c) => c.holder === 'standby')?.at ?? 0;
    // Its PUT commits one latency after it was sent. Timed from the GET's start, the answer at 15.5 s would
    // already count the lease as expired, 0.9 s before it is.
    assert.ok(took - api.latencyMs >= renewedAt + LEASE_MS, `sent its take-over ${took - api.latencyMs - renewedAt} ms after the holder's last renewal; the lease is ${LEASE_MS} ms`);
    await stopOn(clock, standby.le);
  });

  it('releasing the Lease on stop is bounded by the retry period when the API server hangs', async () => {
    const clock = new FakeClock(1_000_000);
    const api = new ScriptedLeaseApi(clock);
    const { le, events } = elector(api, clock);
    await runUntil(clock, () => events.includes('started'), 1000);
    api.latencyMs = 3_600_000;
    let stopped = false;
    const startedStop = clock.monotonic();
    void le.stop().then(() => {
      stopped = true;
    });
    await runUntil(clock, () => stopped, 60_000, 100);
    assert.ok(stopped);
    assert.ok(clock.monotonic() - startedStop <= RETRY_MS + 100, `stop took ${clock.monotonic() - startedStop} ms`);
  });
});
