import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freePorts, reservePorts } from './ports.ts';

const scratch = mkdtempSync(join(tmpdir(), 'driftless-ports-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs `script` (ESM, with `freePorts` imported) in another node process; resolves with its stdout once it exits. */
function inAnotherProcess(script: string): Promise<{ stdout: string; pid: number }> {
  const ports = new URL('./ports.ts', import.meta.url).href;
  const child = spawn(process.execPath, ['--input-type=module', '-e', `import { freePorts } from ${JSON.stringify(ports)};\n${script}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve({ stdout, pid: child.pid as number }) : reject(new Error(`child exited ${code}`))));
  });
}

test('ports come from below the ephemeral range, distinct, and are never handed out twice in a process', async () => {
  const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  const first = await freePorts(20);
  const second = await freePorts(20);
  const all = [...first, ...second];
  assert.equal(new Set(all).size, 40);
  for (const port of all) assert.ok(port >= 20_000 && port < (low as number), `${port} is outside [20000, ${low})`);
});

test('two processes asking at once get disjoint ports, and their reservations go with them', async () => {
  const held = await freePorts(30);
  const script = 'const ports = await freePorts(300); process.stdout.write(JSON.stringify(ports));';
  const [one, two] = await Promise.all([inAnotherProcess(script), inAnotherProcess(script)]);
  const a = JSON.parse(one.stdout) as number[];
  const b = JSON.parse(two.stdout) as number[];
  assert.equal(new Set([...held, ...a, ...b]).size, 630, 'a port was handed to two processes');
  const shared = join(tmpdir(), 'driftless-test-ports');
  assert.deepEqual([...a, ...b].filter((port) => existsSync(join(shared, String(port)))), [], 'an exited process left reservations');
  for (const port of held) assert.equal(readFileSync(join(shared, String(port)), 'utf8'), String(process.pid));
});

test('a reservation of a live process is respected, one of a dead process is taken over', async () => {
  // Candidates this process holds in the shared directory, so no other test process binds them meanwhile.
  const [stale, live, spare] = (await freePorts(3)) as [number, number, number];
  const dir = join(scratch, 'reservations');
  const dead = await inAnotherProcess('');
  const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, String(stale)), String(dead.pid));
    writeFileSync(join(dir, String(live)), String(sleeper.pid));
    assert.deepEqual(await reservePorts(2, [stale, live, spare], dir), [stale, spare]);
    assert.equal(readFileSync(join(dir, String(stale)), 'utf8'), String(process.pid));
    assert.equal(readFileSync(join(dir, String(live)), 'utf8'), String(sleeper.pid));
    await assert.rejects(reservePorts(1, [live], dir), /no 1 free ports on 127\.0\.0\.1 among 1/);
  } finally {
    sleeper.kill();
  }
});

test('a port something else listens on is skipped and its reservation given back', async () => {
  const [busy, spare] = (await freePorts(2)) as [number, number];
  const dir = join(scratch, 'busy');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(busy, '127.0.0.1', resolve));
  try {
    assert.deepEqual(await reservePorts(1, [busy, spare], dir), [spare]);
    assert.equal(existsSync(join(dir, String(busy))), false);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
