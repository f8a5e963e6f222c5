/**
 * Local Git repositories for Argo CD tests: a bare repository that Argo CD
 * reads through a `file://` URL (no git daemon, no Repository Secret), and a
 * working clone beside it that tests commit to.
 *
 * Every git command runs with an isolated environment (no user or system
 * config, a fixed identity, no signing), so a developer's ~/.gitconfig can
 * neither break a test nor leak into a commit.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { runCommand } from './exec.ts';

/** A repository Argo CD can read, and the means to change it. */
export interface GitRepo {
  /** `file:///…/name.git`, for `spec.source.repoURL`. */
  readonly url: string;
  /** The branch every commit goes to. */
  readonly branch: string;
  /** The working clone, whose files are those of the last commit (e.g. to render an app locally). */
  readonly workDir: string;
  /**
   * Writes (string) or deletes (null) files, relative to the repository root,
   * commits them and pushes to the bare repository.
   * @returns the new commit's SHA.
   */
  commit(files: Readonly<Record<string, string | null>>, message: string): Promise<string>;
  /** The content of a file at the branch head, as the last commit left it. */
  read(path: string): Promise<string>;
}

/** Environment that makes git ignore every config file outside the repository. */
function gitEnvironment(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'Driftless Test',
    GIT_AUTHOR_EMAIL: 'test@driftless.invalid',
    GIT_COMMITTER_NAME: 'Driftless Test',
    GIT_COMMITTER_EMAIL: 'test@driftless.invalid',
    LC_ALL: 'C',
  };
}

/**
 * Creates `<parentDir>/<name>.git` (bare, branch `main`) and a working clone
 * `<parentDir>/<name>.work`. The repository starts empty: the first `commit`
 * creates the branch.
 */
export async function createGitRepo(parentDir: string, name: string): Promise<GitRepo> {
  const bare = join(parentDir, `${name}.git`);
  const work = join(parentDir, `${name}.work`);
  const branch = 'main';
  const env = gitEnvironment(parentDir);
  const git = async (cwd: string, ...args: string[]): Promise<string> => (await runCommand('git', args, { cwd, env })).stdout;
  await mkdir(parentDir, { recursive: true });
  await git(parentDir, 'init', '--quiet', '--bare', `--initial-branch=${branch}`, bare);
  await git(parentDir, 'init', '--quiet', `--initial-branch=${branch}`, work);
  await git(work, 'remote', 'add', 'origin', bare);

  return {
    url: `file://${bare}`,
    branch,
    workDir: work,
    async commit(files, message) {
      for (const [path, content] of Object.entries(files)) {
        const target = join(work, path);
        if (relative(work, target).startsWith('..')) throw new Error(`${path} is outside the repository`);
        if (content === null) {
          await rm(target, { recursive: true, force: true });
        } else {
          await mkdir(dirname(target), { recursive: true });
          await writeFile(target, content);
        }
      }
      await git(work, 'add', '--all');
      await git(work, '-c', 'commit.gpgsign=false', 'commit', '--quiet', '--allow-empty', '-m', message);
      await git(work, 'push', '--quiet', 'origin', branch);
      return (await git(work, 'rev-parse', 'HEAD')).trim();
    },
    read(path) {
      return readFile(join(work, path), 'utf8');
    },
  };
}

/**
 * Every file under `dir`, keyed by `prefix/<path relative to dir>`, for
 * committing an example app into a repository.
 */
export async function filesOf(dir: string, prefix: string): Promise<Record<string, string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const paths = entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  const files: Record<string, string> = {};
  for (const file of paths) files[join(prefix, relative(dir, file))] = await readFile(file, 'utf8');
  return files;
}
