/**
 * The stdin source: another tool's output piped in (e.g. after
 * argocd-vault-plugin), read whole and bounded like a renderer's stdout.
 */
import { BudgetExceededError, RenderError } from '../errors.ts';
import { decodeSource } from './decode.ts';
import { MAX_RENDER_BYTES } from './process.ts';
import type { RenderedStream, SourceIo } from './types.ts';

export const STDIN_LABEL = '<stdin>';

/** Reads all of stdin. Bytes that are not UTF-8 are refused (InvalidInputError, decode.ts). */
export async function renderStdin(io: SourceIo, signal: AbortSignal, maxBytes = MAX_RENDER_BYTES): Promise<RenderedStream[]> {
  const chunks: Buffer[] = [];
  let total = 0;
  const stop = (): BudgetExceededError =>
    new BudgetExceededError(
      `reading stdin was stopped: ${signal.reason instanceof Error && signal.reason.message !== '' ? signal.reason.message : 'the command was stopped'}`,
      { cause: signal.reason },
    );
  if (signal.aborted) throw stop();

  // Iterating the stream never ends on abort by itself, so race it against the signal.
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(stop());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => {});
  const iterator = io.stdin[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next.done === true) break;
      const chunk = typeof next.value === 'string' ? Buffer.from(next.value) : next.value;
      total += chunk.length;
      if (total > maxBytes) {
        throw new RenderError(`stdin carries more than ${maxBytes / (1024 * 1024)} MiB; refusing to read more`);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof BudgetExceededError || error instanceof RenderError) throw error;
    throw new RenderError(`cannot read stdin: ${(error as Error).message}`, '', { cause: error });
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
  }
  return [await decodeSource(STDIN_LABEL, Buffer.concat(chunks), false)];
}
