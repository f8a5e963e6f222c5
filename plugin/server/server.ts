/**
 * `driftless serve`: the render server. Argo CD's cmp-server starts a new
 * `driftless generate` for every render, and most of a small render's time is
 * that process's start — Node's own, loading the modules, and running them
 * cold before the JIT has seen them. The server is one warm process in its own
 * container of the repo-server pod; `generate` hands it the request (server/client.ts)
 * and relays the answer. Each request runs `invoke`, exactly as a process would:
 * its own argv, environment, working directory, time budget and renderers;
 * nothing is kept from one request to the next (ADR 0012).
 */
import { lstat, mkdir, chmod, unlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { dirname, isAbsolute } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgv, type FlagRow } from '../../cli/flags.ts';
import { UsageError } from '../errors.ts';
import { invoke } from '../invoke.ts';
import type { InvocationIo } from '../invoke.ts';
import { decodeRequest, encodeChunked, encodeFrame, FRAME, FrameReader, ProtocolError, SOCKET_VARIABLE } from './protocol.ts';
import type { Frame } from './protocol.ts';
import { connectTo, writeAll } from './streams.ts';

/** sun_path holds 108 bytes with the terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;
/** A client sends its request at once; a connection that has not within this long is closed, so none can hold a slot forever. */
const REQUEST_DEADLINE_MS = 10_000;

/**
 * Renders at once by default. They share one thread, so beyond a couple the later ones only wait, and
 * each holds its render in memory several times over (the renderer's output, its text, the output and
 * its bytes). Measured on a server that had rendered the 5,000-document stream before: two 12 MB
 * CRD-heavy charts at once peaked at ~380 MB resident, four at ~430 MB, against the shipped 512 MiB
 * limit. A request beyond it is handed back and rendered by its own process, on another core.
 */
const DEFAULT_MAX_RENDERS = 2;

/** How `driftless serve` was asked to run. Frozen. */
export interface ServeConfig {
  readonly socketPath: string;
  /** Renders under way at most; a request beyond them is handed back to its client. */
  readonly maxRenders: number;
}

/** The server could not start listening. Exit 1. */
export class ServerStartError extends Error {
  override readonly name = 'ServerStartError';
}

/** `driftless serve --help`. */
export function serveUsageText(): string {
  return [
    'Usage: driftless serve [--socket PATH] [--max-renders N]',
    '',
    'Runs the render server, the plugin sidecar\'s second container: a warm process that `driftless generate`',
    `hands its render to when ${SOCKET_VARIABLE} names the socket, so a render does not pay for a cold start.`,
    'Beyond N renders at once a render is handed back to its own process. Stops on SIGTERM or SIGINT after',
    'the renders under way have answered.',
    '',
    `  --socket PATH       the unix socket to listen on, an absolute path (default: ${SOCKET_VARIABLE})`,
    `  --max-renders N     renders at once, 1 to 9999 (default: ${DEFAULT_MAX_RENDERS})`,
    '',
    'Exit codes: 0 stopped by a signal, 1 other failure, 2 usage (flags, socket path).',
    '',
  ].join('\n');
}

/** The flags of `driftless serve`, read by the argv reader every command shares (cli/flags.ts). */
const SERVE_FLAGS: readonly FlagRow[] = Object.freeze([{ name: 'socket' }, { name: 'max-renders' }]);

/** Parses `driftless serve [--socket PATH] [--max-renders N]` (socket else DRIFTLESS_RENDER_SOCKET). Throws UsageError. */
export function parseServeConfig(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): ServeConfig {
  const { values } = parseArgv(argv, {
    flags: SERVE_FLAGS,
    helpCommand: 'driftless serve',
    expects: (row) => (row.name === 'socket' ? 'an absolute path' : 'a whole number from 1 to 9999'),
    refuseEmpty: true,
    onPositional: (arg) => {
      throw new UsageError(`serve: unexpected argument ${JSON.stringify(arg)}: serve takes only --socket PATH and --max-renders N (see driftless serve --help)`);
    },
  });
  const maxRendersText = values.get('max-renders')?.[0];
  if (maxRendersText !== undefined && !/^[1-9][0-9]{0,3}$/.test(maxRendersText)) {
    throw new UsageError(`serve: --max-renders ${JSON.stringify(maxRendersText)} is not a whole number from 1 to 9999`);
  }
  const maxRenders = maxRendersText === undefined ? DEFAULT_MAX_RENDERS : Number(maxRendersText);
  const socketPath = values.get('socket')?.[0] ?? env[SOCKET_VARIABLE];
  if (socketPath === undefined || socketPath === '') throw new UsageError(`serve: no socket: pass --socket PATH or set ${SOCKET_VARIABLE}`);
  if (!isAbsolute(socketPath)) throw new UsageError(`serve: the socket path ${JSON.stringify(socketPath)} is not absolute`);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    throw new UsageError(`serve: the socket path ${JSON.stringify(socketPath)} is over the ${MAX_SOCKET_PATH_BYTES} bytes a unix socket path may have`);
  }
  return Object.freeze({ socketPath, maxRenders });
}

/**
 * Listens on the socket until `stop` aborts, then stops accepting, stops the
 * renders under way (as a SIGTERM stops a process's), waits for their answers
 * and removes the socket. Rejects with ServerStartError when it cannot listen.
 */
export async function serve(config: ServeConfig, stop: AbortSignal, log: (line: string) => void): Promise<void> {
  await prepareSocketPath(config.socketPath);
  const active = new Set<Promise<void>>();
  const stopRequests = new AbortController();
  const server = createServer((socket) => {
    if (active.size >= config.maxRenders) {
      // Handed back: closed before anything is read, so the client renders it in-process, in parallel.
      socket.destroy();
      log(`a render handed back to its client: ${active.size} under way (--max-renders)`);
      return;
    }
    const handled = handleConnection(socket, stopRequests.signal, log);
    active.add(handled);
    void handled.finally(() => active.delete(handled));
  });
  await listen(server, config.socketPath);
  // After listening, a failure to accept one connection (EMFILE) is that connection's; the server goes on.
  server.on('error', (error) => log(`accepting a connection failed: ${error.message}`));
  // Only this UID (the pod's two containers share it) may hand the server a render.
  await chmod(config.socketPath, 0o600);
  log(`listening on ${config.socketPath}`);
  await new Promise<void>((resolve) => {
    if (stop.aborted) resolve();
    else stop.addEventListener('abort', () => resolve(), { once: true });
  });
  server.close();
  stopRequests.abort(String(stop.reason));
  await Promise.all(active);
  await unlink(config.socketPath).catch(() => undefined);
  log('stopped');
}

/** Creates the socket's directory and removes a socket left by a server that is gone; refuses anything else at the path. */
async function prepareSocketPath(socketPath: string): Promise<void> {
  await mkdir(dirname(socketPath), { recursive: true, mode: 0o700 });
  const existing = await lstat(socketPath).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ServerStartError(`cannot inspect ${socketPath}: ${(error as Error).message}`, { cause: error });
  });
  if (existing === undefined) return;
  if (!existing.isSocket()) throw new ServerStartError(`${socketPath} exists and is not a socket; refusing to replace it`);
  const probe = await connectTo(socketPath);
  probe?.destroy();
  if (probe !== undefined) throw new ServerStartError(`another render server is listening on ${socketPath}`);
  await unlink(socketPath);
}

function listen(server: Server, socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) => reject(new ServerStartError(`cannot listen on ${socketPath}: ${error.message}`, { cause: error })));
    server.listen(socketPath, () => resolve());
  });
}

function send(socket: Socket, frames: readonly Buffer[]): Promise<void> {
  return socket.destroyed ? Promise.reject(new Error('the client has gone')) : writeAll(socket, frames);
}

/**
 * One request: read the request frame, run it, answer with stderr, stdout and
 * the exit code. A client that goes away stops its render; a broken request is
 * answered with a message and exit code 1. Never rejects: one request cannot
 * take the server down.
 */
async function handleConnection(socket: Socket, stopAll: AbortSignal, log: (line: string) => void): Promise<void> {
  const reader = new FrameReader();
  const stopThis = new AbortController();
  let stdinWanted = false;
  let answering = false;
  let handedBack = false;
  const onStopAll = (): void => {
    // The server is stopping. A render that has read nothing of the client's and written nothing back
    // is handed back (the connection closed without an answer): the client renders it in-process, as
    // after a crash, instead of failing it. One that has, is stopped and answered as a process would be.
    if (!stdinWanted && !answering) {
      handedBack = true;
      socket.destroy();
    }
    stopThis.abort(stopAll.reason);
  };
  stopAll.addEventListener('abort', onStopAll, { once: true });
  const stdin = new Readable({
    read() {
      // Asked for only when the render reads stdin (`generate -`), as a process reads it only then.
      if (stdinWanted) return;
      stdinWanted = true;
      send(socket, encodeFrame(FRAME.stdinWanted)).catch(() => undefined);
    },
  });
  const first = Promise.withResolvers<Frame>();
  const deadline = setTimeout(() => {
    first.reject(new ProtocolError(`no request within ${REQUEST_DEADLINE_MS / 1000} s`));
    socket.destroy();
  }, REQUEST_DEADLINE_MS);
  // Errors show as 'close' (which follows); without a listener they would be thrown.
  socket.on('error', () => undefined);
  socket.on('close', () => {
    clearTimeout(deadline);
    stopThis.abort('the client closing its connection');
    first.reject(new ProtocolError('the client closed the connection before its request'));
    stdin.destroy();
  });
  let gotRequest = false;
  socket.on('data', (chunk: Buffer) => {
    let frames: Frame[];
    try {
      frames = reader.push(chunk);
    } catch (error) {
      first.reject(error);
      socket.destroy();
      return;
    }
    for (const frame of frames) {
      if (!gotRequest) {
        gotRequest = true;
        clearTimeout(deadline);
        if (frame.type === FRAME.request) first.resolve(frame);
        else first.reject(new ProtocolError('the first frame is not a request'));
      } else if (frame.type === FRAME.stdinData && stdinWanted) stdin.push(frame.payload);
      else if (frame.type === FRAME.stdinEnd && stdinWanted) stdin.push(null);
      else if (frame.type === FRAME.stdinError && stdinWanted) stdin.destroy(new Error(frame.payload.toString('utf8')));
      else if (frame.type === FRAME.stop) stopThis.abort(frame.payload.toString('utf8'));
      else {
        first.reject(new ProtocolError(`unexpected frame type ${frame.type}`));
        socket.destroy();
      }
    }
  });

  const started = performance.now();
  try {
    const request = decodeRequest((await first.promise).payload);
    const io: InvocationIo = {
      stdin,
      writeStdout: (text) => {
        answering = true;
        return send(socket, encodeChunked(FRAME.stdout, text));
      },
      writeStderr: (text) => {
        answering = true;
        return send(socket, encodeChunked(FRAME.stderr, text));
      },
    };
    const code = await invoke({ ...request, startedAt: started }, io, stopThis.signal);
    const command = request.argv[0] ?? '(no command)';
    if (handedBack) log(`${command} handed back to the client: the server is stopping`);
    else log(`${command} exit ${code} in ${Math.round(performance.now() - started)} ms`);
    if (!socket.destroyed) socket.end(Buffer.concat(encodeFrame(FRAME.exit, String(code))));
  } catch (error) {
    // Only a broken request gets here (invoke never rejects); its message names no value.
    const message = error instanceof Error ? error.message : String(error);
    log(`request refused: ${message}`);
    if (!socket.destroyed) {
      socket.end(Buffer.concat([...encodeFrame(FRAME.stderr, `driftless: render server: ${message}\n`), ...encodeFrame(FRAME.exit, '1')]));
    }
  } finally {
    stopAll.removeEventListener('abort', onStopAll);
  }
}
