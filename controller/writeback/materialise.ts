/**
 * Credentials made usable by git for one operation, and removed after it.
 *
 * Nothing secret is ever in git's argv, in a URL or in an environment value:
 * - HTTPS: `GIT_ASKPASS` names a (Node) script in a 0700 directory that prints
 *   the user name or the password from 0600 files beside it (git asks for each);
 * - SSH: `GIT_SSH_COMMAND` names the key file and a known_hosts file written
 *   from Argo CD's `argocd-ssh-known-hosts-cm`, with strict host key checking.
 * `HOME` and `XDG_CONFIG_HOME` point into the same private directory and the
 * system config is off, so no credential helper of the host can store (or
 * offer) anything, and prompts on a terminal are disabled.
 */
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { GitCredentials } from './credentials.ts';

/** What git runs with, and the secret strings every message must be scrubbed of. */
export interface MaterialisedCredentials {
  /** Environment for git (paths only, never a value). */
  readonly env: Readonly<Record<string, string>>;
  /** The values to redact from any text that leaves the write-back. */
  readonly secrets: readonly string[];
  /** Removes the files; idempotent. */
  dispose(): Promise<void>;
}

/** Variables of the controller's environment git still sees: proxies and CA bundles, nothing of git's own config. */
const PASSED_THROUGH = Object.freeze(['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy', 'SSL_CERT_FILE', 'SSL_CERT_DIR']);

/** The environment variables git receives, as simple-git must be told to allow them. */
export const GIT_ENV_KEYS = Object.freeze(['GIT_ASKPASS', 'GIT_SSH_COMMAND', 'GIT_TERMINAL_PROMPT', 'GIT_CONFIG_NOSYSTEM', 'SSH_ASKPASS', 'GNUPGHOME']);

/**
 * Writes the credentials into `dir` (created 0700; must not exist or be empty)
 * and returns git's environment. `knownHosts` is required for SSH: without it
 * no host key could be checked, and an unchecked host would get our key's
 * signature and our push.
 */
export async function materialiseCredentials(credentials: GitCredentials, knownHosts: string | undefined, dir: string): Promise<MaterialisedCredentials> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const home = path.join(dir, 'home');
  await mkdir(home, { mode: 0o700 });
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    XDG_CONFIG_HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    LANG: 'C',
    LC_ALL: 'C',
  };
  // The host's proxy and CA settings still apply (a cluster behind a proxy reaches its Git host only through it).
  for (const name of PASSED_THROUGH) {
    const value = process.env[name];
    if (value !== undefined && value !== '') env[name] = value;
  }
  const secrets: string[] = [];
  const dispose = async (): Promise<void> => {
    await rm(dir, { recursive: true, force: true });
  };
  try {
    if (credentials.kind === 'https') {
      await writeFile(path.join(dir, 'username'), credentials.username, { mode: 0o600 });
      await writeFile(path.join(dir, 'password'), credentials.password, { mode: 0o600 });
      const script = path.join(dir, 'askpass');
      // git calls the script with its prompt ("Username for '…': " or "Password for '…': "). A Node script, run
      // by the Node running the controller: no shell is needed (the image needs none for HTTPS), and
      // getBuiltinModule works whether the nearest package.json says CommonJS or ESM.
      await writeFile(
        script,
        [
          `#!${process.execPath}`,
          "const { readFileSync } = process.getBuiltinModule('node:fs');",
          "const { dirname, join } = process.getBuiltinModule('node:path');",
          "const wanted = (process.argv[2] ?? '').startsWith('Username') ? 'username' : 'password';",
          'process.stdout.write(readFileSync(join(dirname(process.argv[1]), wanted)));',
          '',
        ].join('\n'),
        { mode: 0o700 },
      );
      env['GIT_ASKPASS'] = script;
      env['SSH_ASKPASS'] = script;
      secrets.push(credentials.password);
      // The user name is not secret as such, but a token used as a user name (Bitbucket, Azure) is.
      if (credentials.username.length >= 12) secrets.push(credentials.username);
    } else if (credentials.kind === 'ssh') {
      if (knownHosts === undefined) throw new Error('SSH credentials need known hosts (argocd-ssh-known-hosts-cm): none were found, and a host that is not checked would receive the push');
      const key = path.join(dir, 'key');
      const hosts = path.join(dir, 'known_hosts');
      await writeFile(key, credentials.privateKey, { mode: 0o600 });
      await writeFile(hosts, knownHosts.endsWith('\n') ? knownHosts : `${knownHosts}\n`, { mode: 0o600 });
      env['GIT_SSH_COMMAND'] = [
        'ssh',
        '-F /dev/null',
        `-i ${shellQuote(key)}`,
        '-o IdentitiesOnly=yes',
        `-o UserKnownHostsFile=${shellQuote(hosts)}`,
        '-o StrictHostKeyChecking=yes',
        '-o BatchMode=yes',
      ].join(' ');
      secrets.push(credentials.privateKey.trim());
    }
  } catch (error) {
    await dispose();
    throw error;
  }
  return { env: Object.freeze(env), secrets: Object.freeze(secrets), dispose };
}

/** Single-quotes a path for the shell git runs GIT_SSH_COMMAND with. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
