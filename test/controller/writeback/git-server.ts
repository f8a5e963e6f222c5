/**
 * Real Git on loopback for the write-back tests: bare repositories served by
 * `git http-backend` (the CGI program git ships) behind a small Node HTTP
 * server on 127.0.0.1 that demands HTTP basic auth, as a Git host does.
 * Wrong or missing credentials get 401, so git's own auth path runs. A test
 * can hold a push at the server (`beforeReceivePack`) to land another push
 * first: a real race, on the server, at a chosen moment.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** git's environment for the test's own git commands: no user or system config. */
export function isolatedGitEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'],
    HOME: home,
    XDG_CONFIG_HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'someone else',
    GIT_AUTHOR_EMAIL: 'someone@example.invalid',
    GIT_COMMITTER_NAME: 'someone else',
    GIT_COMMITTER_EMAIL: 'someone@example.invalid',
    LANG: 'C',
    LC_ALL: 'C',
  };
}

/** A place for bare repositories and scratch clones, removed by `dispose`. */
export interface GitPlayground {
  readonly root: string;
  readonly home: string;
  /** Runs git with the isolated environment; resolves stdout. */
  git(args: readonly string[], cwd?: string): Promise<string>;
  /** Creates `<name>.git` with `branch` as its default branch and the given files in one commit on it. */
  createRepo(name: string, branch: string, files: Readonly<Record<string, string>>): Promise<string>;
  /** Adds a branch starting at another. */
  createBranch(repo: string, branch: string, from: string): Promise<void>;
  /** Commits `files` onto `branch` from a fresh clone and pushes (directly, not through HTTP): "someone else". */
  pushAsSomeoneElse(repo: string, branch: string, files: Readonly<Record<string, string>>, message: string): Promise<void>;
  /** A file's content on a branch, or undefined. */
  show(repo: string, branch: string, file: string): Promise<string | undefined>;
  /** The number of commits on a branch. */
  commitCount(repo: string, branch: string): Promise<number>;
  /** The full message of a branch's head commit. */
  headMessage(repo: string, branch: string): Promise<string>;
  headSha(repo: string, branch: string): Promise<string>;
  /** Installs an executable hook script. */
  hook(repo: string, name: string, script: string): Promise<void>;
  dispose(): Promise<void>;
}

export async function createPlayground(): Promise<GitPlayground> {
  const root = await mkdtemp(path.join(tmpdir(), 'driftless-git-'));
  const home = path.join(root, 'home');
  await mkdir(home);
  const env = isolatedGitEnv(home);
  const git = async (args: readonly string[], cwd = root): Promise<string> => (await run('git', [...args], { cwd, env, maxBuffer: 16 * 1024 * 1024 })).stdout;
  const bare = (repo: string): string => path.join(root, 'repos', `${repo}.git`);
  let scratch = 0;
  const commitFiles = async (dir: string, files: Readonly<Record<string, string>>, message: string): Promise<void> => {
    for (const [file, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await writeFile(path.join(dir, file), content);
    }
    await git(['add', '-A'], dir);
    await git(['commit', '-q', '-m', message], dir);
  };
  return {
    root,
    home,
    git,
    async createRepo(name, branch, files) {
      await mkdir(path.join(root, 'repos'), { recursive: true });
      await git(['init', '-q', '--bare', '-b', branch, bare(name)]);
      const dir = path.join(root, `scratch-${scratch++}`);
      await git(['init', '-q', '-b', branch, dir]);
      await commitFiles(dir, files, 'initial');
      await git(['push', '-q', bare(name), `HEAD:refs/heads/${branch}`], dir);
      return bare(name);
    },
    async createBranch(repo, branch, from) {
      await git(['--git-dir', bare(repo), 'branch', branch, from]);
    },
    async pushAsSomeoneElse(repo, branch, files, message) {
      const dir = path.join(root, `scratch-${scratch++}`);
      await git(['clone', '-q', '--branch', branch, bare(repo), dir]);
      await commitFiles(dir, files, message);
      await git(['push', '-q', 'origin', `HEAD:refs/heads/${branch}`], dir);
    },
    async show(repo, branch, file) {
      try {
        return await git(['--git-dir', bare(repo), 'show', `${branch}:${file}`]);
      } catch {
        return undefined;
      }
    },
    async commitCount(repo, branch) {
      return Number((await git(['--git-dir', bare(repo), 'rev-list', '--count', branch])).trim());
    },
    async headMessage(repo, branch) {
      return git(['--git-dir', bare(repo), 'log', '-1', '--format=%B', branch]);
    },
    async headSha(repo, branch) {
      return (await git(['--git-dir', bare(repo), 'rev-parse', branch])).trim();
    },
    async hook(repo, name, script) {
      await writeFile(path.join(bare(repo), 'hooks', name), script, { mode: 0o755 });
    },
    async dispose() {
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** A request the server saw. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly status: number;
  /** Whether the request carried the expected basic-auth credentials. */
  readonly authorized: boolean;
  /** Whether it carried any Authorization header at all (git sends one only after a 401 and its askpass). */
  readonly sentCredentials: boolean;
}

/** The HTTP server. */
export interface GitHttpServer {
  /** `http://127.0.0.1:<port>/<name>.git` */
  url(name: string): string;
  readonly requests: SeenRequest[];
  /**
   * Called, and awaited, before a push reaches git: at `pack` (the POST holding our pack; git
   * receive-pack then finds the ref moved and refuses on the server) or at `advertise` (the GET of
   * the refs; the client then sees the ref moved and refuses itself, "fetch first"). Called once,
   * unless `every` is set.
   */
  beforeReceivePack: { readonly at: 'pack' | 'advertise'; readonly every?: boolean; readonly run: (repoPath: string) => Promise<void> } | undefined;
  close(): Promise<void>;
}

/** Serves `<playground.root>/repos` with basic auth `username:password`. */
export async function startGitHttpServer(playground: GitPlayground, username: string, password: string): Promise<GitHttpServer> {
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const requests: SeenRequest[] = [];
  const state: GitHttpServer = {
    url: () => '',
    requests,
    beforeReceivePack: undefined,
    close: async () => {},
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const authorized = req.headers.authorization === expected;
    const seen = (status: number): void => void requests.push({ method: req.method ?? '', path: url.pathname, query: url.search, status, authorized, sentCredentials: req.headers.authorization !== undefined });
    if (!authorized) {
      seen(401);
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="driftless test git"', 'Content-Type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    const hook = state.beforeReceivePack;
    const phase =
      req.method === 'POST' && url.pathname.endsWith('/git-receive-pack')
        ? 'pack'
        : req.method === 'GET' && url.pathname.endsWith('/info/refs') && url.searchParams.get('service') === 'git-receive-pack'
          ? 'advertise'
          : undefined;
    if (hook !== undefined && phase === hook.at) {
      if (hook.every !== true) state.beforeReceivePack = undefined;
      await hook.run(url.pathname);
    }
    const child = spawn('git', ['http-backend'], {
      env: {
        ...isolatedGitEnv(playground.home),
        GIT_PROJECT_ROOT: path.join(playground.root, 'repos'),
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.replace(/^\?/, ''),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-length'] === undefined ? {} : { CONTENT_LENGTH: req.headers['content-length'] }),
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        ...(typeof req.headers['git-protocol'] === 'string' ? { GIT_PROTOCOL: req.headers['git-protocol'] } : {}),
        REMOTE_USER: username,
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    req.pipe(child.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const text = head.toString('latin1');
      const end = text.search(/\r?\n\r?\n/);
      if (end === -1) return;
      const separator = /\r?\n\r?\n/.exec(text.slice(end))?.[0].length ?? 2;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of text.slice(0, end).split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon === -1) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else headers[name] = value;
      }
      headersDone = true;
      seen(status);
      res.writeHead(status, headers);
      res.write(head.subarray(Buffer.byteLength(text.slice(0, end), 'latin1') + separator));
    });
    await new Promise<void>((resolve) => child.on('close', () => resolve()));
    if (!headersDone) {
      seen(500);
      res.writeHead(500);
    }
    res.end();
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  state.url = (name: string) => `http://127.0.0.1:${port}/${name}.git`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
