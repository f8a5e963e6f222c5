/**
 * Ports for the test components that must be told their port before they bind it (etcd, kube-apiserver, kwok,
 * redis, Argo CD's servers): a port is chosen here, closed, and bound by the component a moment later.
 *
 * Two things could take it in that moment, and both have happened with two test files running at once:
 * - another test process choosing the same port: the kernel hands a port just closed to the next bind(0), so two
 *   processes asking at once were given the same one (an API server of one file answered the other's tests);
 * - any process on the machine binding port 0 or opening an outgoing connection, which draws from the ephemeral
 *   range.
 * So ports come from below the ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`), where the kernel never
 * hands one out by itself, and each is reserved across processes by a file created exclusively in a directory
 * every test process shares (`driftless-test-ports` in the temp dir, across checkouts too). A reservation names its
 * process; it is removed when that process exits, and one whose process is gone (a killed run) is taken over.
 */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Where reservations live: one file per reserved port, holding the reserving process's pid. */
const RESERVATIONS = join(tmpdir(), 'driftless-test-ports');

/** The lowest port handed out: above the well-known and most registered services' ports. */
const LOWEST = 20_000;

/** Reservation files this process made; each port is handed out once and released when the process exits. */
const reserved = new Set<string>();

/**
 * `count` distinct ports on 127.0.0.1 that were free when asked for and that no other test process (of this
 * checkout or another) will be handed until this process exits.
 */
export function freePorts(count: number): Promise<number[]> {
  const [low, high] = portRange();
  const size = high - low;
  const start = Math.floor(Math.random() * size);
  const candidates = Array.from({ length: size }, (_, step) => low + ((start + step) % size));
  return reservePorts(count, candidates, RESERVATIONS);
}

/**
 * The first `count` of `candidates` that could be reserved in `directory` and bound; throws when fewer could.
 * `freePorts` with the shared directory and every port below the ephemeral range; tests give their own.
 */
export async function reservePorts(count: number, candidates: readonly number[], directory: string): Promise<number[]> {
  const ports: number[] = [];
  for (const port of candidates) {
    if (ports.length === count) break;
    const file = join(directory, String(port));
    if (reserved.has(file) || !reserve(file)) continue;
    if (await canBind(port)) {
      ports.push(port);
    } else {
      // Bound by something outside the tests: leave it alone.
      release(file);
    }
  }
  if (ports.length < count) throw new Error(`no ${count} free ports on 127.0.0.1 among ${candidates.length} (reservations in ${directory})`);
  return ports;
}

/** [low, high): the ports below the kernel's ephemeral range. */
function portRange(): [number, number] {
  let ephemeralLow = 32_768;
  try {
    const [first] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    const parsed = Number(first);
    if (Number.isInteger(parsed) && parsed > LOWEST + 1_000) ephemeralLow = parsed;
  } catch {
    // Not Linux: 32768 is the IANA ephemeral range's floor (49152) with room to spare.
  }
  return [LOWEST, ephemeralLow];
}

/** Takes a port's reservation `file` unless a live process holds it; one left by a dead process is taken over. */
function reserve(file: string): boolean {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(file, 'wx');
      try {
        writeSync(fd, String(process.pid));
      } finally {
        closeSync(fd);
      }
      if (reserved.size === 0) process.once('exit', releaseAll);
      reserved.add(file);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        mkdirSync(dirname(file), { recursive: true });
        continue;
      }
      if (code !== 'EEXIST' || isAlive(holder(file))) return false;
      // Its process is gone; a stale file is removed once, and the next attempt races fairly for it.
      try {
        unlinkSync(file);
      } catch {
        // Another process took it over first.
      }
    }
  }
  return false;
}

/** The pid in a reservation file, or undefined when it is unreadable or half-written (then it counts as held). */
function holder(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the process lives; an unknown holder counts as alive, so a file being written is never taken over. */
function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether 127.0.0.1:`port` can be listened on right now. */
function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function release(file: string): void {
  reserved.delete(file);
  try {
    unlinkSync(file);
  } catch {
    // Already gone.
  }
}

/** Removes this process's reservations as it exits (synchronously: nothing else runs then). */
function releaseAll(): void {
  for (const file of reserved) release(file);
}
