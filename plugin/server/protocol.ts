/**
 * The render server's wire format, spoken over a unix socket between
 * `driftless generate` (the client) and `driftless serve`: frames of one type
 * byte, a 4-byte big-endian payload length and the payload. Both sides are the
 * same build of the same image (two containers of one pod), so there is one
 * version, checked in the request.
 *
 * client → server: `request` (JSON, first and once), `stdinData`… then
 * `stdinEnd` or `stdinError` (its message; only after the server asked),
 * `stop` (the cause, e.g. `SIGTERM`).
 * server → client: `stdinWanted`, `stderr`…, `stdout`…, `exit` (the code, decimal), in that order.
 */

/** The variable that names the socket, for the server and (in the cmp-server's container) for `generate`. */
export const SOCKET_VARIABLE = 'DRIFTLESS_RENDER_SOCKET';

/** Bumped whenever a frame changes meaning. */
export const PROTOCOL_VERSION = 1;

/** Frame types, one ASCII letter each so that a captured stream reads in a hex dump. */
export const FRAME = Object.freeze({
  request: 0x71, // q
  stdinData: 0x64, // d
  stdinEnd: 0x44, // D
  stdinError: 0x45, // E
  stop: 0x73, // s
  stdinWanted: 0x77, // w
  stderr: 0x65, // e
  stdout: 0x6f, // o
  exit: 0x78, // x
});

/** What the client sends first: everything a process gets from its parent. */
export interface RenderRequest {
  readonly version: number;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
}

/** One decoded frame. */
export interface Frame {
  readonly type: number;
  readonly payload: Buffer;
}

const HEADER_BYTES = 5;
/** Output is sent in pieces of at most this size, so neither side holds a second copy of a large render in one buffer. */
export const MAX_CHUNK_BYTES = 1024 * 1024;
/** Far above any frame either side writes (stdin arrives in pipe-sized chunks); a larger length is a broken peer. */
const MAX_FRAME_BYTES = 4 * MAX_CHUNK_BYTES;

/** The peer sent something this protocol does not allow. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
}

/** Encodes one frame (header and payload as separate buffers, to write without copying the payload). */
export function encodeFrame(type: number, payload: Buffer | string = ''): [Buffer, Buffer] {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header[0] = type;
  header.writeUInt32BE(body.length, 1);
  return [header, body];
}

/** Splits a text into frames of at most MAX_CHUNK_BYTES each, at byte boundaries (the reader joins the bytes back). */
export function encodeChunked(type: number, text: string): Buffer[] {
  const bytes = Buffer.from(text, 'utf8');
  const frames: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += MAX_CHUNK_BYTES) {
    frames.push(...encodeFrame(type, bytes.subarray(start, start + MAX_CHUNK_BYTES)));
  }
  return frames;
}

/** Reassembles frames from the chunks a socket delivers, whatever their boundaries. */
export class FrameReader {
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  /** Adds a chunk and returns every frame it completes, in order. Throws ProtocolError for an oversized frame. */
  push(chunk: Buffer): Frame[] {
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    const frames: Frame[] = [];
    while (this.#pendingBytes >= HEADER_BYTES) {
      const head = this.#peek(HEADER_BYTES);
      const length = head.readUInt32BE(1);
      if (length > MAX_FRAME_BYTES) throw new ProtocolError(`a frame of ${length} bytes is over the limit of ${MAX_FRAME_BYTES}`);
      if (this.#pendingBytes < HEADER_BYTES + length) break;
      const whole = this.#take(HEADER_BYTES + length);
      frames.push({ type: head[0] as number, payload: whole.subarray(HEADER_BYTES) });
    }
    return frames;
  }

  /** Whether a frame was begun and not finished: a peer that closes now has cut it off. */
  get partial(): boolean {
    return this.#pendingBytes > 0;
  }

  #peek(bytes: number): Buffer {
    const first = this.#pending[0] as Buffer;
    if (first.length >= bytes) return first;
    const joined = Buffer.concat(this.#pending);
    this.#pending = [joined];
    return joined;
  }

  #take(bytes: number): Buffer {
    const joined = this.#peek(bytes);
    this.#pending = joined.length === bytes ? [] : [joined.subarray(bytes)];
    this.#pendingBytes -= bytes;
    return joined.subarray(0, bytes);
  }
}

/** Reads and checks a request frame's payload. Throws ProtocolError naming what is wrong (never a value: the environment holds secrets). */
export function decodeRequest(payload: Buffer): RenderRequest {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch (error) {
    throw new ProtocolError('the request is not JSON', { cause: error });
  }
  if (typeof value !== 'object' || value === null) throw new ProtocolError('the request is not an object');
  const request = value as Record<string, unknown>;
  if (request['version'] !== PROTOCOL_VERSION) {
    throw new ProtocolError(`the request speaks protocol version ${JSON.stringify(request['version'])}, this server ${PROTOCOL_VERSION}: the client and the server are different builds`);
  }
  const { argv, env, cwd } = request;
  if (!Array.isArray(argv) || !argv.every((arg) => typeof arg === 'string')) throw new ProtocolError('the request\'s argv is not a list of strings');
  if (typeof env !== 'object' || env === null || !Object.values(env).every((v) => typeof v === 'string')) {
    throw new ProtocolError('the request\'s env is not a map of strings');
  }
  if (typeof cwd !== 'string' || !cwd.startsWith('/')) throw new ProtocolError('the request\'s cwd is not an absolute path');
  return { version: PROTOCOL_VERSION, argv, env: env as Record<string, string>, cwd };
}
