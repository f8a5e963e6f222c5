import { open, realpath } from 'node:fs/promises';
import path from 'node:path';
import { OUT_OF_BAND_FILE, OutOfBandFileError, parseOutOfBandFile } from '../core/index.ts';
import type { OutOfBandIndex } from '../core/index.ts';
import { isInside } from './config.ts';
import type { PluginConfig } from './config.ts';
import { InvalidInputError, RenderError } from './errors.ts';

/**
 * Reads the app's out-of-band file (ADR 0013) from the commit being
 * rendered: `.driftless/out-of-band` in the app directory. No file is the
 * usual case and changes nothing. Parsing and validation are core's; this
 * module only finds and reads the bytes.
 */

/** The file is small by construction (one short entry per config); more than this is not ours. */
export const MAX_OUT_OF_BAND_BYTES = 1024 * 1024;

/**
 * The parsed file, or `undefined` when the app has none. Throws
 * InvalidInputError (exit 4) naming the file and line for a bad file, and
 * RenderError (exit 3) when it exists but cannot be read, is a symlink that
 * leaves the repository, or is too large.
 */
export async function readOutOfBand(config: PluginConfig): Promise<OutOfBandIndex | undefined> {
  const file = path.join(config.appDir, OUT_OF_BAND_FILE);
  let real: string;
  try {
    real = await realpath(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new RenderError(`cannot read ${OUT_OF_BAND_FILE}: ${code ?? 'error'}`, '', { cause: error });
  }
  // As for manifest files: a symlink may point elsewhere in the repository, never out of it.
  const root = await realpath(config.repoRoot).catch(() => config.repoRoot);
  if (!isInside(real, root)) throw new RenderError(`${OUT_OF_BAND_FILE} is a symlink to a file outside the repository`);
  let text: string;
  const handle = await open(real, 'r').catch((error: unknown) => {
    throw new RenderError(`cannot read ${OUT_OF_BAND_FILE}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, '', { cause: error });
  });
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new RenderError(`${OUT_OF_BAND_FILE} is not a regular file`);
    if (info.size > MAX_OUT_OF_BAND_BYTES) throw new RenderError(`${OUT_OF_BAND_FILE} is larger than ${MAX_OUT_OF_BAND_BYTES / 1024} KiB; refusing to read it`);
    text = new TextDecoder('utf-8', { fatal: true }).decode(await handle.readFile());
  } catch (error) {
    if (error instanceof RenderError) throw error;
    if (error instanceof TypeError) throw new InvalidInputError({ file: OUT_OF_BAND_FILE }, 'is not valid UTF-8', { cause: error });
    throw new RenderError(`cannot read ${OUT_OF_BAND_FILE}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, '', { cause: error });
  } finally {
    await handle.close();
  }
  try {
    return parseOutOfBandFile(text, OUT_OF_BAND_FILE);
  } catch (error) {
    if (error instanceof OutOfBandFileError) throw new InvalidInputError({ file: OUT_OF_BAND_FILE }, `line ${error.line}: ${error.problem}`, { cause: error });
    throw error;
  }
}
