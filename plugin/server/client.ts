/**
 * `driftless generate` as a client of the render server (server/server.ts):
 * send the argv, environment and working directory, stream stdin if the render
 * asks for it, relay a stop signal, and write the answer. Loads nothing but
 * `node:net` and the wire format, so the process that Argo CD starts per render
 * is Node's start and little more.
 */
import type { Invocation } from '../invoke.ts';
import { encodeFrame, FRAME, FrameReader, PROTOCOL_VERSION } from './protocol.ts';
import type { Frame, RenderRequest } from './protocol.ts';
import { connectTo, writeAll } from './streams.ts';

/** The process's streams, as ports. */
export interface ClientIo {
  readonly stdin: AsyncIterable<Buffer | string>;
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/** Exit code when the server went away mid-render (README "Exit codes": other failure). */
const EXIT_FAILURE = 1;
/** How long a stopped client waits for the server's answer: its 3 s grace for the renderers, and a margin; under Argo CD's 5 s to SIGKILL. */
const STOP_ANSWER_MS = 4000;

/**
 * Renders through the server at `socketPath` and resolves with the exit code
 * to exit with, or with `undefined` when the server could not take the render
 * (nothing listens there, or it went away before answering or reading stdin):
 * the caller then renders in-process, which gives the same answer. stdout is
 * written only once the server reported success, so a lost server never leaves
 * half a render behind.
 */
export async function renderThroughServer(socketPath: string, invocation: Invocation, io: ClientIo, stop: AbortSignal): Promise<number | undefined> {
  // Nothing takes the connection: the caller renders in-process instead.
  const socket = await connectTo(socketPath);
  if (socket === undefined) return undefined;
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(invocation.env)) if (value !== undefined) env[name] = value;
  const request: RenderRequest = { version: PROTOCOL_VERSION, argv: invocation.argv, env, cwd: invocation.cwd };
  socket.write(Buffer.concat(encodeFrame(FRAME.request, JSON.stringify(request))));

  const reader = new FrameReader();
  const stdout: Buffer[] = [];
  let stderrWritten = false;
  let stdinSent = false;
  let writing = Promise.resolve();
  const exit = Promise.withResolvers<number | undefined>();
  let settled = false;
  const finish = (code: number | undefined): void => {
    if (settled) return;
    settled = true;
    exit.resolve(code);
  };

  const sendStdin = async (): Promise<void> => {
    stdinSent = true;
    try {
      for await (const chunk of io.stdin) {
        const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        if (!socket.write(Buffer.concat(encodeFrame(FRAME.stdinData, bytes)))) await new Promise((resolve) => socket.once('drain', resolve));
      }
    } catch (error) {
      // The render reports a stdin it cannot read as it would in-process, with the reader's message.
      socket.write(Buffer.concat(encodeFrame(FRAME.stdinError, error instanceof Error ? error.message : String(error))));
      return;
    }
    socket.write(Buffer.concat(encodeFrame(FRAME.stdinEnd)));
  };
  const onFrame = (frame: Frame): void => {
    switch (frame.type) {
      case FRAME.stdinWanted:
        // Only a write to a socket that is gone gets here; its 'close' settles the request.
        sendStdin().catch(() => undefined);
        return;
      case FRAME.stderr:
        stderrWritten = true;
        writing = writing.then(() => writeAll(io.stderr, [frame.payload]));
        return;
      case FRAME.stdout:
        stdout.push(frame.payload);
        return;
      case FRAME.exit: {
        const text = frame.payload.toString('utf8');
        if (/^[0-9]{1,3}$/.test(text)) finish(Number(text));
        else finish(lost('sent a broken exit code'));
        return;
      }
      default:
        finish(lost(`sent an unknown frame type ${frame.type}`));
    }
  };
  const lost = (what: string): number | undefined => {
    if (settled) return undefined;
    socket.destroy();
    // Nothing written and nothing read: the same render in-process gives the same answer.
    if (!stderrWritten && !stdinSent) return undefined;
    writing = writing.then(() => writeAll(io.stderr, [Buffer.from(`driftless: the render server on ${socketPath} ${what}; the render was not finished\n`)]));
    return EXIT_FAILURE;
  };
  let stopDeadline: NodeJS.Timeout | undefined;
  const onStop = (): void => {
    socket.write(Buffer.concat(encodeFrame(FRAME.stop, String(stop.reason))));
    // The server answers once the renderers have stopped (its grace is 3 s); a server too busy to answer
    // in time must not keep us past the SIGKILL that follows Argo CD's SIGTERM.
    stopDeadline = setTimeout(() => {
      if (settled) return;
      socket.destroy();
      writing = writing.then(() => writeAll(io.stderr, [Buffer.from(`driftless: stopped by ${String(stop.reason)}; the render server did not confirm in time that the renderers were stopped\n`)]));
      finish(EXIT_FAILURE);
    }, STOP_ANSWER_MS);
  };
  if (stop.aborted) onStop();
  else stop.addEventListener('abort', onStop, { once: true });
  socket.on('data', (chunk: Buffer) => {
    try {
      for (const frame of reader.push(chunk)) onFrame(frame);
    } catch {
      finish(lost('sent a broken frame'));
    }
  });
  socket.on('error', () => undefined);
  socket.on('close', () => finish(lost('closed the connection')));

  const code = await exit.promise;
  stop.removeEventListener('abort', onStop);
  if (stopDeadline !== undefined) clearTimeout(stopDeadline);
  socket.destroy();
  try {
    await writing;
    if (code === 0) await writeAll(io.stdout, stdout);
  } catch {
    // stdout or stderr is closed: nobody is left to tell; the exit code says it.
    return EXIT_FAILURE;
  }
  return code;
}
