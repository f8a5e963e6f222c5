/**
 * The write layer and the kube client over real HTTP (a local server that
 * answers as the API server does, Status bodies included): the fence keeps a
 * write off the wire, aborts one in flight, every request has a deadline, the
 * Eviction API's 409s are told apart by their details, and a refused write is
 * reported with the start token given back.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/client.ts';
import { loopbackClient } from './support/loopback-client.ts';
import { KubeApiError, KubeTransportError } from '../../controller/kube/errors.ts';
import { FencedError, type Fence } from '../../controller/kube/fence.ts';
import { createWrites, reportRejectedWrites, type RejectedWrite } from '../../controller/kube/writes.ts';
import type { PodSummary, WorkloadSummary } from '../../controller/model.ts';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

let handler: Handler = (_request, response) => response.end('{}');
const received: string[] = [];
const server = createServer((request, response) => {
  received.push(`${request.method} ${request.url}`);
  handler(request, response);
});
let client: KubeClient;

before(async () => {
  client = await loopbackClient(server, { requestTimeoutMs: 2000 });
});
after(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A fence a test opens, closes and aborts by hand. */
function manualFence(): Fence & { open: boolean; lose(): void } {
  const controller = new AbortController();
  return {
    open: true,
    signal: controller.signal,
    check(what) {
      if (!this.open || controller.signal.aborted) throw new FencedError(`${what}: not sent`);
    },
    lose() {
      controller.abort(new FencedError('lost'));
    },
  };
}

function status(response: ServerResponse, code: number, reason: string, message: string, details?: object): void {
  response.writeHead(code, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message, ...(details === undefined ? {} : { details }) }));
}

const POD = { name: 'web-1', namespace: 'prod', uid: 'uid-1' } as unknown as PodSummary;
const WORKLOAD = { kind: 'Deployment', apiVersion: 'apps/v1', name: 'web', namespace: 'prod', uid: 'w-uid', annotations: {}, resourceVersion: '5' } as unknown as WorkloadSummary;

describe('fenced writes over HTTP', () => {
  it('a closed fence keeps the write off the wire', async () => {
    const fence = manualFence();
    fence.open = false;
    const writes = createWrites(client, { fence, timeoutMs: 2000 });
    received.length = 0;
    await assert.rejects(writes.evict(POD), FencedError);
    await assert.rejects(writes.patchRestartAt({ ...WORKLOAD, kind: 'Rollout' }, Date.UTC(2026, 11, 2)), FencedError);
    await assert.rejects(writes.applyOwnFields(WORKLOAD, { restartedFor: '{}', restartAt: undefined, templateRestartedAt: undefined }), FencedError);
    assert.deepEqual(received, [], 'the server saw nothing');
  });

  it('the fence is checked again as the request goes on the wire: a Lease lost while the connection was made sends nothing', async () => {
    // Open for the client's own check, closed by the time undici writes on the socket: a connection made slowly
    // (TLS on a starved machine) gives the Lease time to pass to another replica in between.
    const checks: string[] = [];
    const fence: Fence = {
      signal: new AbortController().signal,
      check(what) {
        checks.push(what);
        if (checks.length > 1) throw new FencedError(`${what}: not sent, the Lease was lost`);
      },
    };
    received.length = 0;
    await assert.rejects(createWrites(client, { fence, timeoutMs: 2000 }).evict(POD), (error: unknown) => error instanceof FencedError && /the Lease was lost/.test(error.message));
    assert.equal(checks.length, 2, checks.join(', '));
    assert.deepEqual(received, [], 'the server saw nothing');
    handler = (_request, response) => response.end('{}');
    await createWrites(client, { timeoutMs: 2000 }).evict(POD);
    assert.equal(received.length, 1, 'an unfenced write still goes out on the same connection pool');
  });

  it('losing leadership aborts a write in flight', async () => {
    const fence = manualFence();
    let arrived: () => void = () => undefined;
    const arrival = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    handler = () => arrived(); // never answers
    const writes = createWrites(client, { fence, timeoutMs: 60_000 });
    const eviction = writes.evict(POD);
    await arrival;
    fence.lose();
    await assert.rejects(eviction, FencedError);
  });

  it('every request has a deadline, and writes send theirs to the server as `timeout`', async () => {
    handler = () => undefined; // never answers
    await assert.rejects(client.request('GET', '/api/v1/namespaces/prod/pods/x', { timeoutMs: 200 }), KubeTransportError);
    received.length = 0;
    handler = (_request, response) => response.end('{}');
    await createWrites(client, { timeoutMs: 4500 }).evict(POD);
    assert.match(received[0] ?? '', /\/api\/v1\/namespaces\/prod\/pods\/web-1\/eviction\?timeout=4s$/);
  });

  it('a 409 is "gone" only when the UID precondition failed; a conflict on the PodDisruptionBudget is retried', async () => {
    const writes = createWrites(client, { timeoutMs: 2000 });
    handler = (_request, response) => status(response, 409, 'Conflict', 'Operation cannot be fulfilled on Pod "web-1": Precondition failed: UID in precondition: uid-1, UID in object meta: uid-2', { name: 'web-1', kind: 'pods' });
    assert.deepEqual(await writes.evict(POD), { outcome: 'gone', message: '' });
    handler = (_request, response) => status(response, 409, 'Conflict', 'Operation cannot be fulfilled on poddisruptionbudgets.policy "web": the object has been modified; please apply your changes to the latest version and try again', { name: 'web', group: 'policy', kind: 'poddisruptionbudgets' });
    await assert.rejects(writes.evict(POD), (error: unknown) => error instanceof KubeApiError && error.status === 409);
    handler = (_request, response) => status(response, 409, 'Conflict', 'Operation cannot be fulfilled on pods "web-1": the object has been modified; please apply your changes to the latest version and try again', { name: 'web-1', kind: 'pods' });
    await assert.rejects(writes.evict(POD), (error: unknown) => error instanceof KubeApiError && error.status === 409, 'a conflict on the pod update is not "gone" either');
  });

  it('a write refused by an admission webhook (403) or validation (422) is reported once, a refused start flagged for its token', async () => {
    const reports: RejectedWrite[] = [];
    const writes = reportRejectedWrites(createWrites(client, { timeoutMs: 2000 }), (rejected) => reports.push(rejected));
    handler = (_request, response) => status(response, 403, 'Forbidden', 'admission webhook "policy.example.com" denied the request: annotations are frozen');
    await assert.rejects(writes.applyOwnFields(WORKLOAD, { restartedFor: '{}', restartAt: '2026-12-02T00:00:01.000Z', templateRestartedAt: undefined }), KubeApiError);
    handler = (_request, response) => status(response, 422, 'Invalid', 'Rollout.argoproj.io "web" is invalid: spec.restartAt: Invalid value');
    await assert.rejects(writes.patchRestartAt({ ...WORKLOAD, kind: 'Rollout' }, Date.UTC(2026, 11, 2)), KubeApiError);
    handler = (_request, response) => status(response, 500, 'InternalError', 'etcd timeout');
    await assert.rejects(writes.patchRestartAt({ ...WORKLOAD, kind: 'Rollout' }, Date.UTC(2026, 11, 2)), KubeApiError);
    assert.deepEqual(reports.map((r) => [r.operation, r.status, r.startedRestart, r.workload?.name]), [
      ['apply', 403, true, 'web'],
      ['restart-at', 422, false, 'web'],
    ], 'a 500 is not a refusal: it is retried');
    assert.match(reports[0]?.message ?? '', /denied the request/);
  });
});
