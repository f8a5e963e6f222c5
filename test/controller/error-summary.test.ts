import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { stackOf, summariseError } from '../../controller/error-summary.ts';
import { KubeApiError, KubeTransportError } from '../../controller/kube/errors.ts';
import { createLogger } from '../../controller/log.ts';

/** What Node's net module throws for a closed port. */
function connectionRefused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect', address: '127.0.0.1', port: 1 });
}

describe('summariseError', () => {
  it('says the class, own scalar fields, message and each cause on one line, without a stack', () => {
    const error = new KubeTransportError('GET', '/api/v1/secrets', { cause: connectionRefused() });
    const summary = summariseError(error);
    assert.deepEqual(summary, {
      method: 'GET',
      path: '/api/v1/secrets',
      type: 'KubeTransportError',
      message: 'GET /api/v1/secrets: no answer from the API server: connect ECONNREFUSED 127.0.0.1:1',
      causes: ['Error ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1'],
    });
    assert.doesNotMatch(JSON.stringify(summary), /\\n/);
  });

  it('gives an API error its status and reason, and leaves its object fields out', () => {
    const error = new KubeApiError('PUT', '/apis/coordination.k8s.io/v1/namespaces/d/leases/l', 503, 'ServiceUnavailable', 'etcd is down', { details: { name: 'l', kind: 'leases' } });
    const summary = summariseError(error);
    assert.equal(summary?.['status'], 503);
    assert.equal(summary?.['reason'], 'ServiceUnavailable');
    assert.equal(summary?.type, 'KubeApiError');
    assert.equal(summary?.['details'], undefined);
    assert.equal(summary?.causes, undefined);
    // A cause that is an API error is named by its status.
    assert.deepEqual(summariseError(new Error('write-back failed', { cause: error }))?.causes, [`KubeApiError 503: ${error.message}`]);
  });

  it('names every error of an AggregateError, and a cause that is not an error by its type', () => {
    const aggregate = new AggregateError([connectionRefused(), Object.assign(new Error('connect ENETUNREACH ::1:1'), { code: 'ENETUNREACH' })], 'fetch failed');
    assert.deepEqual(summariseError(new TypeError('request failed', { cause: aggregate }))?.causes, [
      'AggregateError: fetch failed',
      'Error ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1',
      'Error ENETUNREACH: connect ENETUNREACH ::1:1',
    ]);
    assert.deepEqual(summariseError(new Error('x', { cause: 'a string' }))?.causes, ['a string']);
    assert.deepEqual(summariseError(new Error('x', { cause: 42 }))?.causes, ['number']);
  });

  it('cuts a long chain after five causes and survives a circular one', () => {
    let error = new Error('level 0');
    for (let level = 1; level <= 8; level++) error = new Error(`level ${level}`, { cause: error });
    assert.deepEqual(summariseError(error)?.causes, ['Error: level 7', 'Error: level 6', 'Error: level 5', 'Error: level 4', 'Error: level 3', '…']);
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    assert.deepEqual(summariseError(a)?.causes, ['Error: b']);
  });

  it('adds the stack of the error and of its causes only when asked', () => {
    const error = new KubeTransportError('GET', '/api/v1/secrets', { cause: connectionRefused() });
    const stack = summariseError(error, { stack: true })?.stack;
    assert.equal(stack, stackOf(error));
    assert.match(stack ?? '', /^KubeTransportError: GET \/api\/v1\/secrets[^\n]*\n\s+at [\s\S]*\ncaused by: Error: connect ECONNREFUSED/);
  });

  it('leaves a value that is not an error to the logger', () => {
    assert.equal(summariseError('just a string'), undefined);
    assert.equal(summariseError({ code: 1 }), undefined);
    assert.equal(stackOf(undefined), undefined);
  });
});

describe('the controller logger', () => {
  function capture(level: 'info' | 'debug'): { log: ReturnType<typeof createLogger>; lines: () => Record<string, unknown>[]; raw: () => string } {
    let raw = '';
    // Written synchronously: pino writes to a stream it was given at the call.
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        raw += chunk.toString('utf8');
        done();
      },
    });
    return { log: createLogger(level, stream), raw: () => raw, lines: () => raw.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>) };
  }

  it('logs an error at warn on one line with its causes and no stack', () => {
    const { log, lines, raw } = capture('info');
    log.warn({ err: new KubeTransportError('GET', '/api/v1/secrets', { cause: connectionRefused() }), attempt: 3 }, 'list/watch failed; retrying after a backoff');
    assert.equal(raw().trim().split('\n').length, 1);
    assert.doesNotMatch(raw(), /\\n\s+at /);
    const [line] = lines();
    assert.deepEqual(line?.['err'], {
      method: 'GET',
      path: '/api/v1/secrets',
      type: 'KubeTransportError',
      message: 'GET /api/v1/secrets: no answer from the API server: connect ECONNREFUSED 127.0.0.1:1',
      causes: ['Error ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1'],
    });
  });

  it('adds the stack at --log-level=debug', () => {
    const { log, lines } = capture('debug');
    log.warn({ err: new KubeTransportError('GET', '/api/v1/secrets', { cause: connectionRefused() }) }, 'list/watch failed; retrying after a backoff');
    assert.match(String((lines()[0]?.['err'] as Record<string, unknown> | undefined)?.['stack']), /\n\s+at [\s\S]*caused by: Error: connect ECONNREFUSED/);
  });
});
