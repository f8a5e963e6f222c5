/**
 * The real `driftless controller` pointed at an API server that is not there (a
 * closed loopback port): every reflector and the leader election retry, each
 * failure is one JSON line at warn naming its class and cause, and no line
 * carries a stack unless --log-level=debug asks for it. No cluster needed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { tiedToThisProcess } from '../cluster/processes.ts';
import { waitFor } from '../support/wait.ts';

const bin = join(import.meta.dirname, '..', '..', 'bin', 'driftless.js');

type LogLine = Readonly<Record<string, unknown>>;

/** A loopback port nothing listens on: one the kernel just gave out, closed again. */
async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Runs the controller until `enough` holds of its log lines, then stops it with SIGTERM; its stdout as it came. */
async function runUntil(args: readonly string[], description: string, enough: (lines: readonly LogLine[]) => boolean): Promise<{ raw: string; lines: LogLine[] }> {
  const [file, argv] = tiedToThisProcess(process.execPath, [bin, 'controller', '--http-addr=127.0.0.1:0', ...args]);
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '', POD_NAMESPACE: 'driftless' } });
  let raw = '';
  let stderr = '';
  const lines: LogLine[] = [];
  child.stdout.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  createInterface({ input: child.stdout }).on('line', (line) => lines.push(JSON.parse(line) as LogLine));
  let code: number | null | undefined;
  const closed = once(child, 'close').then(([exitCode]) => (code = exitCode as number | null));
  try {
    await waitFor(description, () => enough(lines), {
      timeoutMs: 60_000,
      intervalMs: 50,
      abortIf: () => {
        if (code !== undefined) throw new Error(`the controller exited with ${String(code)}: ${stderr}`);
      },
    });
  } finally {
    if (code === undefined) child.kill('SIGTERM');
    await closed;
  }
  assert.equal(code, 0, stderr);
  return { raw, lines };
}

const RETRY = 'list/watch failed; retrying after a backoff';
const LEASE = 'could not read the Lease';

function failures(lines: readonly LogLine[], msg: string): LogLine[] {
  return lines.filter((line) => line['msg'] === msg);
}

/** Each failure line: warn, one cause naming the refused connection, and the stack only when `stack`. */
function assertOneLineFailures(raw: string, lines: readonly LogLine[], msg: string, stack: boolean): void {
  const found = failures(lines, msg);
  assert.ok(found.length >= 2, `at least two ${msg} lines`);
  for (const line of found) {
    assert.equal(line['level'], 40, JSON.stringify(line));
    const err = line['err'] as Record<string, unknown>;
    assert.equal(err['type'], 'KubeTransportError', JSON.stringify(line));
    assert.match(String(err['message']), /no answer from the API server/);
    assert.ok(Array.isArray(err['causes']) && err['causes'].some((cause) => /^Error ECONNREFUSED: connect ECONNREFUSED 127\.0\.0\.1:\d+$/.test(String(cause))), JSON.stringify(err));
    assert.equal('stack' in err, stack, JSON.stringify(err));
  }
  // No frame anywhere in what it said, failure lines or any other.
  if (!stack) assert.doesNotMatch(raw, /\\n\s+at /);
}

describe('an API server that is not there: one line per failure, no stack', () => {
  let dir: string;
  let kubeconfig: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-retry-log-'));
    kubeconfig = join(dir, 'kubeconfig');
    const server = `https://127.0.0.1:${await closedPort()}`;
    await writeFile(kubeconfig, [
      'apiVersion: v1', 'kind: Config',
      'clusters: [{name: c, cluster: {server: "' + server + '", insecure-skip-tls-verify: true}}]',
      'users: [{name: u, user: {token: not-a-real-token}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x', '',
    ].join('\n'), { mode: 0o600 });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('every reflector retries with a warn line of class and cause, without a stack', async () => {
    // Two attempts of one reflector: the backoff repeats, and each repeat is one line.
    const { raw, lines } = await runUntil([`--kubeconfig=${kubeconfig}`, '--log-level=info'], 'a reflector failing twice', (seen) =>
      failures(seen, RETRY).some((line) => Number(line['attempt']) >= 2));
    assertOneLineFailures(raw, lines, RETRY, false);
    assert.ok(new Set(failures(lines, RETRY).map((line) => line['reflector'])).size > 1, 'every reflector logs its own failures');
  });

  it('the leader election retries with a warn line of class and cause, without a stack', async () => {
    const { raw, lines } = await runUntil([`--kubeconfig=${kubeconfig}`, '--log-level=info', '--leader-elect', '--retry-period=200ms'], 'two failed Lease reads', (seen) =>
      failures(seen, LEASE).length >= 2);
    assertOneLineFailures(raw, lines, LEASE, false);
  });

  it('--log-level=debug keeps the stack of each failure', async () => {
    const { raw, lines } = await runUntil([`--kubeconfig=${kubeconfig}`, '--log-level=debug'], 'a reflector failing twice', (seen) =>
      failures(seen, RETRY).some((line) => Number(line['attempt']) >= 2));
    assertOneLineFailures(raw, lines, RETRY, true);
    assert.match(String((failures(lines, RETRY)[0]?.['err'] as Record<string, unknown> | undefined)?.['stack']), /^KubeTransportError: [^\n]*\n\s+at [\s\S]*\ncaused by: Error: connect ECONNREFUSED/);
  });
});
