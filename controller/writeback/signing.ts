/**
 * Commit signing for the write-back: an OpenSSH key (`gpg.format=ssh`, git
 * runs `ssh-keygen -Y sign`) or an OpenPGP key (`gpg.format=openpgp`, git runs
 * `gpg`). Either key is written into the operation's private directory, beside
 * the Git credentials, and goes with it; an OpenPGP key is imported into a
 * keyring of its own there (GNUPGHOME), never into the host's, and the
 * gpg-agent that the import starts is stopped before the directory is removed.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** A key commits are signed with (`--write-back-signing-secret`). */
export interface SigningKey {
  /** `ssh`: an OpenSSH private key; `openpgp`: an ASCII-armoured OpenPGP secret key. Neither with a passphrase. */
  readonly format: 'ssh' | 'openpgp';
  readonly key: string;
}

/** How git is to sign: its config, the environment its signer needs, and how to let go of it. */
export interface PreparedSigning {
  /** `git config` entries, in order. */
  readonly config: readonly (readonly [string, string])[];
  /** Added to git's environment (paths only). */
  readonly env: Readonly<Record<string, string>>;
  /** Stops what the preparation started (gpg-agent); idempotent, never throws. */
  release(): Promise<void>;
}

/** The signing key could not be used; the message never quotes the key. */
export class SigningKeyError extends Error {
  override readonly name = 'SigningKeyError';
}

/**
 * Writes the key into `dir` (a 0700 directory of the operation, removed by the
 * caller) and says how git signs with it. For OpenPGP, imports the key into
 * `dir/gnupg` and signs by its fingerprint. Throws SigningKeyError.
 */
export async function prepareSigning(signing: SigningKey, dir: string, baseEnv: Readonly<Record<string, string>>, signal: AbortSignal): Promise<PreparedSigning> {
  const keyFile = path.join(dir, 'signing-key');
  await writeFile(keyFile, signing.key.endsWith('\n') ? signing.key : `${signing.key}\n`, { mode: 0o600 });
  if (signing.format === 'ssh') {
    return { config: [['gpg.format', 'ssh'], ['user.signingkey', keyFile], ['commit.gpgsign', 'true']], env: {}, release: () => Promise.resolve() };
  }
  const home = path.join(dir, 'gnupg');
  await mkdir(home, { mode: 0o700 });
  const env = { ...baseEnv, GNUPGHOME: home };
  const gpg = async (args: readonly string[]): Promise<string> => (await execFileAsync('gpg', ['--batch', '--no-tty', ...args], { env, signal, encoding: 'utf8' })).stdout;
  const release = async (): Promise<void> => {
    await execFileAsync('gpgconf', ['--kill', 'gpg-agent'], { env }).catch(() => undefined);
  };
  try {
    await gpg(['--quiet', '--import', keyFile]);
    const listing = await gpg(['--with-colons', '--list-secret-keys']);
    const fingerprints = secretKeyFingerprints(listing);
    if (fingerprints.length !== 1) {
      throw new SigningKeyError(fingerprints.length === 0 ? 'the gpgSigningKey holds no OpenPGP secret key' : `the gpgSigningKey holds ${fingerprints.length} secret keys: give one`);
    }
    return { config: [['gpg.format', 'openpgp'], ['user.signingkey', fingerprints[0] as string], ['commit.gpgsign', 'true']], env: { GNUPGHOME: home }, release };
  } catch (error) {
    await release();
    if (error instanceof SigningKeyError) throw error;
    // gpg's stderr names the key's user ID at most, never key material; still, say only what failed.
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new SigningKeyError(missing ? 'gpg is not installed: an OpenPGP signing key needs it' : 'gpg could not import the gpgSigningKey (not an ASCII-armoured OpenPGP secret key?)', { cause: missing ? error : undefined });
  }
}

/** The primary fingerprints of the secret keys in `gpg --with-colons --list-secret-keys` output. */
export function secretKeyFingerprints(listing: string): string[] {
  const fingerprints: string[] = [];
  let wantPrimary = false;
  for (const line of listing.split('\n')) {
    const fields = line.split(':');
    if (fields[0] === 'sec') wantPrimary = true;
    else if (fields[0] === 'fpr' && wantPrimary) {
      fingerprints.push(fields[9] ?? '');
      wantPrimary = false;
    }
  }
  return fingerprints.filter((fingerprint) => /^[0-9A-F]{40,64}$/.test(fingerprint));
}
