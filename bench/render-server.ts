/**
 * The render server (`driftless serve`) as the bench runs it: the shipped sidecar keeps one warm
 * process and `driftless generate` with DRIFTLESS_RENDER_SOCKET only relays to it, so the client's
 * own CPU is a small part of a render's cost. The server's CPU for a request (its own, and helm's or
 * kustomize's, which are its children then) is read from /proc/<pid>/stat around the request.
 */
import { execFileSync, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { readFile } from 'node:fs/promises';

/** The server did not start, stopped early, or did not log a request it was sent. */
export class RenderServerError extends Error {
  override readonly name = 'RenderServerError';
}

/** A running `driftless serve`. */
export interface RenderServer {
  /** The socket to put in DRIFTLESS_RENDER_SOCKET. */
  readonly socket: string;
  /**
   * Runs `request` (a client sent to this server) and returns its result with the server's CPU
   * milliseconds over it. It waits for the server's log line of the request before the second
   * reading, so the server's work after the client's exit is counted, and a client that fell back
   * to rendering in-process (nothing listening) fails instead of passing for a served render.
   */
  served<T>(request: () => Promise<T>): Promise<{ readonly result: T; readonly serverCpuMs: number }>;
  /** SIGTERM, then waits for the exit (SIGKILL if it does not come). */
  stop(): Promise<void>;
}

/** The server's `listening on` line and its per-request line (`driftless serve: generate exit 0 in 12 ms`). */
const LISTENING = /^driftless serve: listening on /;
const REQUEST_LINE = /^driftless serve: \S+ exit \d+ in /;
const START_TIMEOUT_MS = 30_000;
const REQUEST_LOG_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 10_000;

/**
 * utime + stime + cutime + cstime (fields 14–17 of /proc/<pid>/stat) in milliseconds. cutime and
 * cstime hold the children the server has waited for: the helm and kustomize processes it ran.
 */
async function processCpuMs(pid: number, msPerTick: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it, from field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = [14, 15, 16, 17].reduce((sum, field) => sum + Number(fields[field - 3]), 0);
  if (!Number.isFinite(ticks)) throw new RenderServerError(`unreadable /proc/${pid}/stat: ${stat}`);
  return ticks * msPerTick;
}

function clockTicksPerSecond(): number {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return ticks > 0 ? ticks : 100;
  } catch {
    return 100; // Linux's USER_HZ everywhere the bench runs
  }
}

/**
 * Starts `node <cli> serve --socket <socket>` with `env` and resolves once it prints its
 * `listening on` line.
 */
export async function startRenderServer(node: string, cli: string, socket: string, env: NodeJS.ProcessEnv): Promise<RenderServer> {
  const msPerTick = 1000 / clockTicksPerSecond();
  const child = spawn(node, [cli, 'serve', '--socket', socket], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const changed = new EventEmitter();
  let log = ''; // the end of stderr, for errors
  let partial = ''; // an unfinished last line
  let listening = false;
  let logged = 0; // request lines so far
  let exit: string | undefined;
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    log = (log + chunk).slice(-4000);
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (LISTENING.test(line)) listening = true;
      else if (REQUEST_LINE.test(line)) logged++;
    }
    changed.emit('change');
  });
  child.on('error', (error) => {
    exit = error.message;
    changed.emit('change');
  });
  child.on('exit', (code, signal) => {
    exit = signal ?? `code ${code}`;
    changed.emit('change');
  });

  /** Resolves when `ready()` holds; rejects when the server exits first or the deadline passes. */
  const until = (ready: () => boolean, what: string, timeoutMs: number, exitIsFailure = true): Promise<void> =>
    new Promise((resolve, reject) => {
      const settle = (): void => {
        if (ready()) finish();
        else if (exit !== undefined && exitIsFailure) finish(new RenderServerError(`driftless serve exited (${exit}) before ${what}:\n${log}`));
      };
      const timer = setTimeout(() => finish(new RenderServerError(`driftless serve: no ${what} within ${timeoutMs} ms:\n${log}`)), timeoutMs);
      const finish = (error?: Error): void => {
        clearTimeout(timer);
        changed.off('change', settle);
        if (error) reject(error);
        else resolve();
      };
      changed.on('change', settle);
      settle();
    });

  const stop = async (): Promise<void> => {
    if (exit !== undefined) return;
    child.kill('SIGTERM');
    try {
      await until(() => exit !== undefined, 'exit after SIGTERM', STOP_TIMEOUT_MS, false);
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    }
  };

  try {
    await until(() => listening, '`listening on` line', START_TIMEOUT_MS);
  } catch (error) {
    await stop().catch(() => undefined); // the start's failure is the one to report
    throw error;
  }
  const pid = child.pid as number;
  return {
    socket,
    async served<T>(request: () => Promise<T>) {
      const expected = logged + 1;
      const before = await processCpuMs(pid, msPerTick);
      const result = await request();
      await until(() => logged >= expected, 'log line for the request (did the client render in-process?)', REQUEST_LOG_TIMEOUT_MS);
      const after = await processCpuMs(pid, msPerTick);
      return { result, serverCpuMs: after - before };
    },
    stop,
  };
}
