/**
 * Reading and filtering the API server's audit log (the pure part; the
 * cluster's own log is checked in fault-harness.test.ts): complete lines only,
 * only the final stage of each request, every filter field.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { describeAudit, filterAudit, readAuditLog, renderAuditPolicy, serviceAccountUser, type AuditEvent } from './audit.ts';

function entry(overrides: Partial<AuditEvent> & { at: string }): AuditEvent {
  return {
    auditID: overrides.at,
    stage: 'ResponseComplete',
    verb: 'create',
    requestURI: '/',
    user: { username: 'admin' },
    responseStatus: { code: 201 },
    requestReceivedTimestamp: overrides.at,
    stageTimestamp: overrides.at,
    ...overrides,
  };
}

const A = serviceAccountUser('ns', 'replica-a');
const EVENTS: AuditEvent[] = [
  entry({ at: '2026-12-02T01:00:00.000001Z', user: { username: A }, objectRef: { resource: 'pods', subresource: 'eviction', namespace: 'ns', name: 'p1' } }),
  entry({ at: '2026-12-02T01:00:01.000000Z', user: { username: A }, verb: 'update', objectRef: { resource: 'leases', namespace: 'ns', name: 'l' }, responseStatus: { code: 409 } }),
  entry({ at: '2026-12-02T01:00:02.000000Z', verb: 'patch', objectRef: { resource: 'pods', namespace: 'ns', name: 'p2' }, responseStatus: { code: 200 } }),
];

test('the policy logs writes at Metadata level and nothing else', () => {
  const policy = parse(renderAuditPolicy()) as { rules: { level: string; verbs?: string[] }[] };
  assert.deepEqual(policy.rules.map((rule) => rule.level), ['Metadata', 'None']);
  assert.deepEqual(policy.rules[0]?.verbs, ['create', 'update', 'patch', 'delete', 'deletecollection']);
});

test('filterAudit: every field narrows; since is inclusive, in the server clock', () => {
  assert.equal(serviceAccountUser('ns', 'replica-a'), 'system:serviceaccount:ns:replica-a');
  assert.deepEqual(filterAudit(EVENTS, { user: A }).length, 2);
  assert.deepEqual(filterAudit(EVENTS, { resource: 'pods', subresource: 'eviction' }).map((e) => e.objectRef?.name), ['p1']);
  assert.deepEqual(filterAudit(EVENTS, { resource: 'pods', subresource: '' }).map((e) => e.objectRef?.name), ['p2']);
  assert.deepEqual(filterAudit(EVENTS, { succeeded: false }).map((e) => e.verb), ['update']);
  assert.deepEqual(filterAudit(EVENTS, { succeeded: true, verbs: ['patch'] }).length, 1);
  assert.deepEqual(filterAudit(EVENTS, { since: Date.parse('2026-12-02T01:00:01Z') }).map((e) => e.verb), ['update', 'patch']);
  assert.deepEqual(filterAudit(EVENTS, { namespace: 'other' }), []);
  assert.match(describeAudit(EVENTS.slice(0, 1)), /^2026-12-02T01:00:00.000001Z system:serviceaccount:ns:replica-a create pods\/eviction ns\/p1 → 201$/);
});

test('readAuditLog: complete lines of the final stage only; a missing file is an empty log', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'audit-'));
  try {
    const path = join(dir, 'audit.log');
    assert.deepEqual(await readAuditLog(path), []);
    const started = { ...EVENTS[0], stage: 'ResponseStarted' };
    const lines = [JSON.stringify(EVENTS[0]), JSON.stringify(started), JSON.stringify(EVENTS[1])];
    // The server may be writing the last line: it has no newline yet.
    await writeFile(path, `${lines.join('\n')}\n${JSON.stringify(EVENTS[2]).slice(0, 40)}`);
    assert.deepEqual((await readAuditLog(path)).map((e) => e.auditID), [EVENTS[0]?.auditID, EVENTS[1]?.auditID]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
