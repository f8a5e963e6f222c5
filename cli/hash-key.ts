/**
 * The one reader of `--hash-key-file` (`hash-key-file`, DRIFTLESS_HASH_KEY_FILE)
 * for every command that reads a key: the plugin's generate, explain and serve
 * renders, `driftless controller` and `driftless explain --live`. They must agree,
 * or the controller would run with a key the plugin refuses.
 *
 * The key is the file's bytes as they are (a trailing newline included, as the
 * plugin always read it), so no digest changes. A file that is empty or holds
 * only whitespace is refused: it is what a Secret mounted without its key, or a
 * key written with a bare `echo >`, gives, and a key everyone can guess makes the
 * digests as good as unkeyed. Messages name the file and the problem, never a
 * byte of the content.
 */
import { readFile } from 'node:fs/promises';
import type { HashKey } from '../core/index.ts';
import { UsageError } from './errors.ts';

/** Why a key file was refused. */
export type HashKeyFileProblem = 'unreadable' | 'empty' | 'blank';

/** A hash key file that cannot be used. A UsageError: every command exits 2. */
export class HashKeyFileError extends UsageError {
  /** The file as the caller gave it. */
  readonly file: string;
  readonly problem: HashKeyFileProblem;

  constructor(file: string, problem: HashKeyFileProblem, detail: string, options?: ErrorOptions) {
    super(`hash-key-file ${file}: ${detail}`, options);
    this.file = file;
    this.problem = problem;
  }
}

/** ASCII whitespace as editors, shells and YAML leave it: space, tab, LF, VT, FF, CR. */
function isBlank(bytes: Uint8Array): boolean {
  return bytes.every((byte) => byte === 0x20 || (byte >= 0x09 && byte <= 0x0d));
}

const MOUNTED_WITHOUT_KEY = 'a Secret mounted without its key?';

/**
 * Reads the HMAC key of config digests from `file`.
 * @throws {HashKeyFileError} when the file cannot be read (naming its errno code),
 * is empty, or holds only whitespace.
 */
export async function readHashKeyFile(file: string): Promise<HashKey> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? 'error';
    throw new HashKeyFileError(file, 'unreadable', `cannot read the key (${code})`, { cause });
  }
  if (bytes.length === 0) throw new HashKeyFileError(file, 'empty', `the key file is empty (${MOUNTED_WITHOUT_KEY})`);
  if (isBlank(bytes)) {
    const size = `${bytes.length} byte${bytes.length === 1 ? '' : 's'}`;
    throw new HashKeyFileError(file, 'blank', `the key file holds only whitespace (${size}; ${MOUNTED_WITHOUT_KEY})`);
  }
  return { bytes: new Uint8Array(bytes) };
}
