/**
 * The two socket chores the render server and its client share: reaching a
 * server's socket, and writing bytes with the promise of their hand-over.
 */
import { connect } from 'node:net';
import type { Socket } from 'node:net';

/**
 * Connects to the unix socket at `socketPath`; `undefined` when nothing takes
 * the connection: ENOENT (no server yet), ECONNREFUSED (a socket left by a
 * server that is gone), EACCES.
 */
export function connectTo(socketPath: string): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', () => resolve(undefined));
  });
}

/** Writes `chunks` in order and resolves once the last is handed to the system (rejects with a write error). */
export function writeAll(stream: NodeJS.WritableStream, chunks: readonly Buffer[]): Promise<void> {
  if (chunks.length === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    for (let i = 0; i < chunks.length - 1; i++) stream.write(chunks[i] as Buffer);
    stream.write(chunks[chunks.length - 1] as Buffer, (error) => (error ? reject(error) : resolve()));
  });
}
