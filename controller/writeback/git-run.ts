/**
 * One write-back operation on one repository and branch, with simple-git:
 * resolve the branch, shallow-clone it alone into a private directory, edit
 * the out-of-band files, commit once, push; when someone pushed first, fetch
 * the new head, apply the same edits again and retry, with bounded
 * exponential backoff. The directory (clone and credentials) is removed
 * afterwards, whatever happened.
 */
import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import { OUT_OF_BAND_FILE, OutOfBandFileError } from '../../core/index.ts';
import { sleep, type Clock } from '../clock.ts';
import type { GitCredentials } from './credentials.ts';
import { editOutOfBandFile } from './edit.ts';
import { WriteBackError, gitFailure, redactUrl } from './errors.ts';
import { GIT_ENV_KEYS, materialiseCredentials } from './materialise.ts';
import type { ConfigDigest } from './model.ts';
import { prepareSigning, SigningKeyError, type PreparedSigning, type SigningKey } from './signing.ts';

/** The plugin reads at most this much of the file; so does the writer. */
const MAX_FILE_BYTES = 1024 * 1024;

/** The edits of one directory. */
export interface PathEdit {
  /** Relative to the repository root, normalised (`''` = root). */
  readonly path: string;
  readonly configs: readonly ConfigDigest[];
}

/** What to do. */
export interface GitJob {
  readonly repoURL: string;
  /** `undefined` = the remote's default branch. */
  readonly baseBranch: string | undefined;
  /** `undefined` = the base branch. */
  readonly writeBranch: string | undefined;
  readonly edits: readonly PathEdit[];
  /** The commit message, given which configs of which paths actually changed. */
  message(changed: ReadonlyMap<string, readonly ConfigDigest[]>): string;
}

/** How. */
export interface GitRunSettings {
  /** Parent of the private work directories. */
  readonly workDir: string;
  /** The name prefix of this process's work directories (`workDirPrefix`); default `wb-`. */
  readonly workPrefix?: string;
  readonly authorName: string;
  readonly authorEmail: string;
  /** Push attempts in all (≥ 1). */
  readonly pushAttempts: number;
  /** Backoff before the second attempt; doubled each time, capped at `retryMaxMs`. */
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** A git command silent for this long is killed. */
  readonly commandTimeoutMs: number;
  readonly clock: Clock;
  readonly signal: AbortSignal;
  readonly credentials: GitCredentials;
  readonly knownHosts: string | undefined;
  /** The key commits are signed with (OpenSSH or OpenPGP, no passphrase); undefined = unsigned. */
  readonly signingKey: SigningKey | undefined;
}

/** The outcome: per path, the configs changed or why that path failed; the commit if one was pushed. */
export interface GitRunResult {
  readonly branch: string;
  readonly sha: string | undefined;
  readonly attempts: number;
  readonly changed: ReadonlyMap<string, readonly ConfigDigest[]>;
  readonly failed: ReadonlyMap<string, WriteBackError>;
}

/** Runs the job. Throws WriteBackError when the repository as a whole fails (auth, network, push refused…). */
export async function runGitJob(job: GitJob, settings: GitRunSettings): Promise<GitRunResult> {
  const repo = redactUrl(job.repoURL);
  await mkdir(settings.workDir, { recursive: true, mode: 0o700 });
  const top = await mkdtemp(path.join(settings.workDir, settings.workPrefix ?? 'wb-'));
  let signing: PreparedSigning | undefined;
  try {
    // The credentials, and a signing key beside them: one private directory, removed with `top`.
    const authDir = path.join(top, 'auth');
    const auth = await materialiseCredentials(settings.credentials, settings.knownHosts, authDir).catch((error: unknown) => {
      throw new WriteBackError('auth', repo, 'credentials', error instanceof Error ? error.message : 'unusable credentials');
    });
    const secrets = settings.signingKey === undefined ? auth.secrets : [...auth.secrets, settings.signingKey.key.trim()];
    if (settings.signingKey !== undefined) {
      signing = await prepareSigning(settings.signingKey, authDir, auth.env, settings.signal).catch((error: unknown) => {
        throw new WriteBackError('auth', repo, 'signing key', error instanceof SigningKeyError ? error.message : 'unusable signing key');
      });
    }
    const signingEnv = signing?.env ?? {};
    // Loaded on the first job: a controller that never writes back never loads it (ADR 0021).
    const { simpleGit } = await import('simple-git');
    const gitAt = (baseDir: string): SimpleGit =>
      simpleGit({
        baseDir,
        timeout: { block: settings.commandTimeoutMs },
        abort: settings.signal,
        allowEnvironment: [...GIT_ENV_KEYS],
        // Both name files this module wrote a moment ago, never input: see materialise.ts.
        unsafe: { allowUnsafeAskPass: true, allowUnsafeSshCommand: true },
      }).env({ ...auth.env, ...signingEnv });
    const run = async <T>(step: string, fn: () => Promise<T>): Promise<T> => {
      try {
        return await fn();
      } catch (error) {
        throw gitFailure(job.repoURL, step, error, secrets);
      }
    };

    const outside = gitAt(top);
    const heads = await run('ls-remote', () => outside.listRemote(['--symref', job.repoURL, 'HEAD', 'refs/heads/*']));
    const base = job.baseBranch ?? defaultBranch(heads);
    if (base === undefined) throw new WriteBackError('not-found', repo, 'ls-remote', 'the remote has no default branch (HEAD)');
    const branches = new Set(heads.split('\n').map((line) => /\trefs\/heads\/(.+)$/.exec(line)?.[1]).filter((b): b is string => b !== undefined));
    if (!branches.has(base)) throw new WriteBackError('not-found', repo, 'ls-remote', `no branch ${base} (a tag or a commit cannot be written to)`);
    const write = job.writeBranch ?? base;
    const cloneFrom = branches.has(write) ? write : base;

    const dir = path.join(top, 'repo');
    await run('clone', () => outside.clone(job.repoURL, dir, ['--depth', '1', '--single-branch', '--no-tags', '--branch', cloneFrom]));
    const git = gitAt(dir);
    await run('config', async () => {
      await git.addConfig('user.name', settings.authorName);
      await git.addConfig('user.email', settings.authorEmail);
      // git runs `ssh-keygen -Y sign` or `gpg` with a key that lives beside the credentials and goes with them.
      for (const [key, value] of signing?.config ?? [['commit.gpgsign', 'false']]) await git.addConfig(key, value);
    });
    if (cloneFrom !== write) await run('checkout', () => git.checkout(['-b', write]));

    for (let attempt = 1; ; attempt++) {
      const failed = new Map<string, WriteBackError>();
      const changed = new Map<string, readonly ConfigDigest[]>();
      const files: string[] = [];
      for (const edit of job.edits) {
        try {
          const result = await applyEdit(dir, edit, repo);
          if (result !== undefined) {
            changed.set(edit.path, result.changed);
            files.push(result.file);
          }
        } catch (error) {
          if (error instanceof WriteBackError) failed.set(edit.path, error);
          else throw error;
        }
      }
      if (files.length === 0) return { branch: write, sha: undefined, attempts: attempt, changed, failed };
      await run('commit', async () => {
        await git.add(files);
        await git.commit(job.message(changed));
      });
      const sha = (await run('rev-parse', () => git.revparse(['HEAD']))).trim();
      try {
        await git.push('origin', `HEAD:refs/heads/${write}`);
        return { branch: write, sha, attempts: attempt, changed, failed };
      } catch (error) {
        const failure = gitFailure(job.repoURL, 'push', error, secrets);
        if (failure.kind !== 'non-fast-forward' || attempt >= settings.pushAttempts || settings.signal.aborted) throw failure;
      }
      // Someone pushed first: wait, take their head, and apply the same edits on it.
      await sleep(settings.clock, Math.min(settings.retryMaxMs, settings.retryBaseMs * 2 ** (attempt - 1)), settings.signal);
      await run('fetch', async () => {
        try {
          await git.fetch(['--depth', '1', '--no-tags', 'origin', `refs/heads/${write}`]);
        } catch (error) {
          // A write branch we were about to create: someone else may not have created it; start again from the base.
          if (write === base) throw error;
          await git.fetch(['--depth', '1', '--no-tags', 'origin', `refs/heads/${base}`]);
        }
        await git.reset(['--hard', 'FETCH_HEAD']);
      });
    }
  } finally {
    await signing?.release();
    await rm(top, { recursive: true, force: true });
  }
}

/** Who owns a work directory: a process id and a tag drawn at its start (a restarted container's process may get the same id). */
export interface WorkDirOwner {
  readonly pid: number;
  readonly tag: string;
}

const OWNED_WORK_DIR = /^wb-(\d+)-([0-9a-f]+)-/;

/** The name prefix of `owner`'s work directories: `wb-<pid>-<tag>-`. */
export function workDirPrefix(owner: WorkDirOwner): string {
  return `wb-${owner.pid}-${owner.tag}-`;
}

/**
 * Removes the work directories that a process killed mid-run left in `workDir` (SIGKILL, the OOM killer: its
 * `finally` never ran, so its clone and its credential files are still there, and an emptyDir outlives the
 * container): every `wb-<pid>-<tag>-…` whose process is not running, or that has our pid and another tag (an
 * earlier incarnation of a restarted container, which had our pid). A directory of a live process — another
 * controller sharing the directory — is left alone. Failures are ignored: the next start tries again.
 * @returns the names removed.
 */
export async function sweepWorkDir(workDir: string, own: WorkDirOwner, alive: (pid: number) => boolean): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(workDir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const match = OWNED_WORK_DIR.exec(name);
    if (match === null) continue;
    const pid = Number(match[1]);
    const dead = pid === own.pid ? match[2] !== own.tag : !alive(pid);
    if (!dead) continue;
    try {
      await rm(path.join(workDir, name), { recursive: true, force: true });
      removed.push(name);
    } catch {
      // Left for the next start.
    }
  }
  return removed;
}

/** `ref: refs/heads/main\tHEAD` in `ls-remote --symref` output → `main`. */
function defaultBranch(lsRemote: string): string | undefined {
  return /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(lsRemote)?.[1];
}

/** Edits one file in the clone; undefined when it already held every digest. */
async function applyEdit(dir: string, edit: PathEdit, repo: string): Promise<{ file: string; changed: readonly ConfigDigest[] } | undefined> {
  const relative = path.posix.join(edit.path === '' ? '.' : edit.path, OUT_OF_BAND_FILE);
  const file = path.join(dir, relative);
  await insideClone(dir, path.dirname(file), relative, repo);
  let existing: string | undefined;
  try {
    const stat = await lstat(file);
    if (!stat.isFile()) throw new WriteBackError('file', repo, 'edit', `${relative} is not a regular file`);
    if (stat.size > MAX_FILE_BYTES) throw new WriteBackError('file', repo, 'edit', `${relative} is larger than 1 MiB`);
    existing = await readFile(file, 'utf8');
  } catch (error) {
    if (error instanceof WriteBackError) throw error;
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new WriteBackError('file', repo, 'edit', `${relative} cannot be read`);
  }
  let result;
  try {
    result = editOutOfBandFile(existing, relative, edit.configs);
  } catch (error) {
    if (error instanceof OutOfBandFileError) throw new WriteBackError('file', repo, 'edit', `${error.message}; the file is left as it is`);
    throw error;
  }
  if (result.text === undefined) return undefined;
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, result.text);
  return { file: relative, changed: result.changed };
}

/** The directory (or its nearest existing ancestor) must resolve inside the clone: a symlink in Git must not redirect our write. */
async function insideClone(root: string, dir: string, relative: string, repo: string): Promise<void> {
  const realRoot = await realpath(root);
  let probe = dir;
  for (;;) {
    try {
      const real = await realpath(probe);
      if (real !== realRoot && !real.startsWith(`${realRoot}${path.sep}`)) throw new WriteBackError('file', repo, 'edit', `${relative} leads outside the repository (a symlink)`);
      if (path.relative(realRoot, real).split(path.sep).includes('.git')) throw new WriteBackError('file', repo, 'edit', `${relative} leads into .git`);
      return;
    } catch (error) {
      if (error instanceof WriteBackError) throw error;
      const parent = path.dirname(probe);
      if (parent === probe) return;
      probe = parent;
    }
  }
}
