/**
 * `driftless serve` and `driftless generate` through it, as real processes
 * with the real, pinned helm and kustomize: the answer is the in-process
 * answer byte for byte (stdout, stderr, exit code), each request gets its own
 * environment, stops reach the renderer, and a missing server costs nothing
 * but speed. Every render that should have gone through the server is checked
 * in its log, so a silent fallback cannot pass for the server.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseServeConfig } from '../../../plugin/server/server.ts';
import { encodeFrame, FRAME, FrameReader, MAX_CHUNK_BYTES } from '../../../plugin/server/protocol.ts';
import { UsageError } from '../../../plugin/errors.ts';
import { ensureTools } from '../../tools.ts';
import { BIN, REPO, argocdEnv, runCli } from '../cli.ts';
import type { CliOptions, CliResult } from '../cli.ts';
import { fakeTool, isAlive } from '../source-support.ts';
import { LOCAL_WAIT, waitFor } from '../../support/wait.ts';

/** A running `driftless serve`, its stderr kept line by line. */
interface Server {
  readonly child: ChildProcess;
  readonly socket: string;
  readonly log: string[];
  readonly exited: Promise<number | null>;
}

async function startServer(socket: string, args: readonly string[] = ['--socket', socket]): Promise<Server> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env['PATH'] ?? '' } });
  const log: string[] = [];
  let buffered = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    log.push(...lines);
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const server = { child, socket, log, exited };
  await waitFor('the render server to listen', () => log.some((line) => line.includes('listening on')) || child.exitCode !== null, LOCAL_WAIT);
  return server;
}

const served = (server: Server): number => server.log.filter((line) => /^driftless serve: generate exit \d+ in \d+ ms$/.test(line)).length;

let root = '';
let binDir = '';
let server: Server;
before(async () => {
  binDir = (await ensureTools()).binDir;
  root = await mkdtemp(join(tmpdir(), 'driftless-serve-'));
  // Room for the concurrent requests below: the default (2) would hand some back, and they must be served.
  const socket = join(root, 'run', 'render.sock');
  server = await startServer(socket, ['--socket', socket, '--max-renders', '8']);
});
after(async () => {
  if (server.child.exitCode === null) server.child.kill('SIGTERM');
  await server.exited;
  await rm(root, { recursive: true, force: true });
});

/** Runs the CLI in-process and through the server; asserts the server answered the second. */
async function both(args: readonly string[], options: CliOptions): Promise<{ local: CliResult; remote: CliResult }> {
  const local = await runCli(args, options);
  const before = served(server);
  const remote = await runCli(args, { ...options, env: { ...options.env, DRIFTLESS_RENDER_SOCKET: server.socket } });
  assert.equal(served(server), before + 1, `the server answered ${args.join(' ')} (log:\n${server.log.join('\n')})`);
  return { local, remote };
}

describe('render server: the same answer as a process', () => {
  for (const example of ['directory', 'helm', 'kustomize']) {
    it(`generates examples/${example} byte for byte`, async () => {
      const { local, remote } = await both(['generate'], { cwd: join(REPO, 'examples', example), binDir });
      assert.equal(local.code, 0, local.stderr);
      assert.deepEqual(remote, local);
    });
  }

  it('reads stdin only when the render does, and relays warnings on stderr', async () => {
    const stdin = readFileSync(join(REPO, 'examples', 'directory', 'deployment.yaml'), 'utf8') +
      '---\napiVersion: v1\nkind: Secret\nmetadata: {name: web-tls}\nstringData: {tls.key: x}\n';
    const { local, remote } = await both(['generate', '-'], { cwd: root, stdin });
    assert.equal(local.code, 0, local.stderr);
    assert.match(local.stderr, /warning/);
    assert.deepEqual(remote, local);
  });
});

describe('render server: the same failure as a process', () => {
  it('fails the same way: invalid manifests (4), a bad parameter (2), a failing renderer (3)', async () => {
    const broken = await both(['generate', '-'], { cwd: root, stdin: 'kind: [\n' });
    assert.equal(broken.local.code, 4);
    assert.deepEqual(broken.remote, broken.local);
    const usage = await both(['generate', '--source-type', 'nonsense'], { cwd: root });
    assert.equal(usage.local.code, 2);
    assert.deepEqual(usage.remote, usage.local);
    const app = join(root, 'failing');
    await writeFile(join(await mkdirp(app), 'kustomization.yaml'), 'resources: []\n');
    const kustomize = await fakeTool(join(root, 'tools'), 'failing-kustomize', 'echo "Error: accumulating resources: boom" >&2\nexit 1');
    const render = await both(['generate'], { cwd: app, env: { DRIFTLESS_KUSTOMIZE: kustomize } });
    assert.equal(render.local.code, 3);
    assert.deepEqual(render.remote, render.local);
  });

  it('refuses a hash key file of only a newline as a process does (2), naming the file', async () => {
    const key = join(root, 'blank-hash-key');
    await writeFile(key, '\n');
    const stdin = readFileSync(join(REPO, 'examples', 'directory', 'deployment.yaml'), 'utf8');
    const { local, remote } = await both(['generate', '-', '--hash-key-file', key], { cwd: root, stdin });
    assert.equal(local.code, 2, local.stderr);
    assert.match(local.stderr, new RegExp(`hash-key-file ${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: the key file holds only whitespace \\(1 byte;`));
    assert.deepEqual(remote, local);
  });

  it('relays output far larger than one frame, byte for byte', async () => {
    const documents: string[] = [];
    for (let i = 0; i < 1500; i++) {
      documents.push(`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings-${i}}\ndata:\n  blob: "${'x'.repeat(600)}"\n`);
      documents.push(`apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app-${i}}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          envFrom:\n            - configMapRef: {name: settings-${i}}\n`);
    }
    const { local, remote } = await both(['generate', '-'], { cwd: root, stdin: documents.join('---\n') });
    assert.equal(local.code, 0, local.stderr);
    assert.ok(local.stdout.length > MAX_CHUNK_BYTES, `${local.stdout.length} bytes: more than one frame`);
    assert.deepEqual(remote, local);
  });

  it('reports a stdin that cannot be read as a process does', async () => {
    // stdin opened for writing only: reading it fails (EBADF) in whichever process reads it.
    const unreadable = join(root, 'write-only-stdin');
    await writeFile(unreadable, '');
    const run = (env: Record<string, string>): Promise<CliResult> => new Promise((resolve, reject) => {
      const fd = openSync(unreadable, 'w');
      const child = spawn(process.execPath, [BIN, 'generate', '-'], { cwd: root, env: argocdEnv(env), stdio: [fd, 'pipe', 'pipe'] });
      closeSync(fd);
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    });
    const local = await run({});
    assert.equal(local.code, 3, local.stderr);
    assert.match(local.stderr, /cannot read stdin/);
    const before = served(server);
    const remote = await run({ DRIFTLESS_RENDER_SOCKET: server.socket });
    assert.equal(served(server), before + 1);
    assert.deepEqual(remote, local);
  });

  it('gives each of several requests at once its own environment and working directory', async () => {
    const cwd = join(REPO, 'examples', 'helm');
    const namespaces = ['alpha', 'beta', 'gamma', 'delta'];
    const local = await Promise.all(namespaces.map((ns) => runCli(['generate'], { cwd, binDir, env: { ARGOCD_APP_NAMESPACE: ns, ARGOCD_ENV_RELEASE_NAME: `r-${ns}` } })));
    const before = served(server);
    const remote = await Promise.all(namespaces.map((ns) =>
      runCli(['generate'], { cwd, binDir, env: { ARGOCD_APP_NAMESPACE: ns, ARGOCD_ENV_RELEASE_NAME: `r-${ns}`, DRIFTLESS_RENDER_SOCKET: server.socket } })));
    assert.equal(served(server), before + namespaces.length);
    assert.equal(new Set(local.map((r) => r.stdout)).size, namespaces.length, 'the renders differ by namespace and release');
    assert.deepEqual(remote, local);
  });
});

async function mkdirp(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  return dir;
}

/** An app whose stand-in kustomize writes its pid and then sleeps, so a test can stop the render midway. */
async function hangingApp(name: string): Promise<{ cwd: string; env: Record<string, string>; pidFile: string }> {
  const cwd = await mkdirp(join(root, name));
  await writeFile(join(cwd, 'kustomization.yaml'), 'resources: []\n');
  const pidFile = join(cwd, 'renderer.pid');
  const kustomize = await fakeTool(join(root, 'tools'), `${name}-kustomize`, `echo $$ > "${pidFile}.tmp" && mv "${pidFile}.tmp" "${pidFile}"\nexec sleep 60`);
  return { cwd, env: { DRIFTLESS_KUSTOMIZE: kustomize, DRIFTLESS_RENDER_SOCKET: server.socket }, pidFile };
}

const rendererPid = (pidFile: string): number => Number(readFileSync(pidFile, 'utf8').trim());

/** Runs `generate` in a hanging app and sends its client `signal` once the renderer runs. */
function signalledWhileRendering(app: Awaited<ReturnType<typeof hangingApp>>, signal: NodeJS.Signals): Promise<CliResult> {
  return runCli(['generate'], {
    ...app,
    onSpawn: (child) => {
      void waitFor('the renderer to start', () => existsSync(app.pidFile), LOCAL_WAIT).then(() => child.kill(signal));
    },
  });
}

describe('render server: stops', () => {
  it('relays SIGTERM: the renderer is stopped, the answer says so, nothing reaches stdout', async () => {
    const app = await hangingApp('sigterm');
    const before = served(server);
    const result = await signalledWhileRendering(app, 'SIGTERM');
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^driftless: stopped by SIGTERM; renderers were terminated, nothing was written\n$/);
    await waitFor('the renderer to be stopped', () => !isAlive(rendererPid(app.pidFile)), LOCAL_WAIT);
    assert.equal(served(server), before + 1, 'the server stopped the render, not an in-process fallback');
  });

  it('stops the render of a client that is killed outright, and goes on serving', async () => {
    const app = await hangingApp('sigkill');
    const before = served(server);
    const result = await signalledWhileRendering(app, 'SIGKILL');
    assert.equal(result.signal, 'SIGKILL');
    await waitFor('the renderer to be stopped', () => !isAlive(rendererPid(app.pidFile)), LOCAL_WAIT);
    await waitFor('the server to finish the request', () => served(server) === before + 1, LOCAL_WAIT);
    const next = await runCli(['generate'], { cwd: join(REPO, 'examples', 'directory'), env: { DRIFTLESS_RENDER_SOCKET: server.socket } });
    assert.equal(next.code, 0, next.stderr);
    assert.equal(served(server), before + 2);
  });

  it('hands a render under way back to the client when the server is stopped, which then renders it itself', async () => {
    const own = await startServer(join(root, 'stopping', 'render.sock'));
    const cwd = await mkdirp(join(root, 'handed-back'));
    await writeFile(join(cwd, 'kustomization.yaml'), 'resources: []\n');
    const pidFile = join(cwd, 'renderer.pid');
    const marker = join(cwd, 'started-once');
    // The first run (the server's) hangs until stopped; the second (the client's own) renders.
    const kustomize = await fakeTool(join(root, 'tools'), 'once-hanging-kustomize', [
      `if [ -e "${marker}" ]; then printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: handed-back}\\n'; exit 0; fi`,
      `touch "${marker}" && echo $$ > "${pidFile}.tmp" && mv "${pidFile}.tmp" "${pidFile}"`,
      'exec sleep 60',
    ].join('\n'));
    const result = await runCli(['generate'], {
      cwd,
      env: { DRIFTLESS_KUSTOMIZE: kustomize, DRIFTLESS_RENDER_SOCKET: own.socket },
      onSpawn: () => {
        void waitFor('the server\'s renderer to start', () => existsSync(pidFile), LOCAL_WAIT).then(() => own.child.kill('SIGTERM'));
      },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /name: handed-back/);
    // The same answer as rendering in-process from the start (the marker now makes kustomize answer at once).
    assert.deepEqual(result, await runCli(['generate'], { cwd, env: { DRIFTLESS_KUSTOMIZE: kustomize } }));
    assert.equal(await own.exited, 0);
    assert.ok(own.log.includes('driftless serve: generate handed back to the client: the server is stopping'), own.log.join('\n'));
    assert.equal(isAlive(rendererPid(pidFile)), false, 'the server stopped its renderer');
  });

  it('hands back a render beyond --max-renders, which its client then renders itself', async () => {
    const own = await startServer(join(root, 'busy', 'render.sock'), ['--socket', join(root, 'busy', 'render.sock'), '--max-renders', '1']);
    const hanging = await hangingApp('busy');
    let busyClient: ChildProcess | undefined;
    const busy = runCli(['generate'], { ...hanging, env: { ...hanging.env, DRIFTLESS_RENDER_SOCKET: own.socket }, onSpawn: (child) => (busyClient = child) });
    await waitFor('the first render to start', () => existsSync(hanging.pidFile), LOCAL_WAIT);
    const cwd = join(REPO, 'examples', 'directory');
    const second = await runCli(['generate'], { cwd, env: { DRIFTLESS_RENDER_SOCKET: own.socket } });
    assert.deepEqual(second, await runCli(['generate'], { cwd }));
    assert.ok(own.log.includes('driftless serve: a render handed back to its client: 1 under way (--max-renders)'), own.log.join('\n'));
    busyClient?.kill('SIGKILL');
    await busy;
    own.child.kill('SIGTERM');
    assert.equal(await own.exited, 0);
  });

  it('answers a broken request with exit 1 and a message, and goes on serving', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = createConnection(server.socket);
      const reader = new FrameReader();
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        for (const frame of reader.push(chunk)) text += `${String.fromCharCode(frame.type)}:${frame.payload.toString()}`;
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
      socket.write(Buffer.concat(encodeFrame(FRAME.request, '{"version":1,"argv":"generate"}')));
    });
    assert.equal(answer, 'e:driftless: render server: the request\'s argv is not a list of strings\nx:1');
    const next = await runCli(['generate'], { cwd: join(REPO, 'examples', 'directory'), env: { DRIFTLESS_RENDER_SOCKET: server.socket } });
    assert.equal(next.code, 0, next.stderr);
  });
});

describe('render server: without one', () => {
  it('renders in-process when nothing listens on the socket', async () => {
    const cwd = join(REPO, 'examples', 'directory');
    const local = await runCli(['generate'], { cwd });
    const missing = await runCli(['generate'], { cwd, env: { DRIFTLESS_RENDER_SOCKET: join(root, 'no-such.sock') } });
    assert.deepEqual(missing, local);
    // A socket left behind by a server that was killed: connecting is refused.
    const stale = await startServer(join(root, 'stale', 'render.sock'));
    stale.child.kill('SIGKILL');
    await stale.exited;
    assert.ok((await stat(stale.socket)).isSocket(), 'the killed server left its socket');
    const refused = await runCli(['generate'], { cwd, env: { DRIFTLESS_RENDER_SOCKET: stale.socket } });
    assert.deepEqual(refused, local);
    // A new server replaces the stale socket.
    const replacing = await startServer(stale.socket);
    const through = await runCli(['generate'], { cwd, env: { DRIFTLESS_RENDER_SOCKET: stale.socket } });
    assert.deepEqual(through, local);
    assert.equal(served(replacing), 1);
    replacing.child.kill('SIGTERM');
    assert.equal(await replacing.exited, 0);
    assert.equal(existsSync(stale.socket), false, 'a stopped server removes its socket');
  });
});

/** A stand-in server that reads the request, does `then` with the socket, and closes: a server that dies mid-render. */
async function dyingServer(name: string, then: (socket: Socket) => void): Promise<{ socket: string; close: () => Promise<void> }> {
  const socket = join(root, `${name}.sock`);
  const stand = createServer((connection) => {
    const reader = new FrameReader();
    connection.on('data', (chunk: Buffer) => {
      for (const frame of reader.push(chunk)) {
        if (frame.type === FRAME.request) then(connection);
        if (frame.type === FRAME.stdinEnd) connection.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => stand.listen(socket, resolve));
  return { socket, close: () => new Promise((resolve) => stand.close(() => resolve())) };
}

describe('render server: lost mid-render', () => {
  it('renders in-process when the server goes away before reading stdin or answering', async () => {
    const stand = await dyingServer('dies-at-once', (connection) => connection.destroy());
    const cwd = join(REPO, 'examples', 'directory');
    assert.deepEqual(await runCli(['generate'], { cwd, env: { DRIFTLESS_RENDER_SOCKET: stand.socket } }), await runCli(['generate'], { cwd }));
    await stand.close();
  });

  it('fails with exit 1 and says so when the server goes away after reading stdin, which cannot be read twice', async () => {
    const stand = await dyingServer('dies-after-stdin', (connection) => connection.write(Buffer.concat(encodeFrame(FRAME.stdinWanted))));
    const result = await runCli(['generate', '-'], { cwd: root, stdin: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n', env: { DRIFTLESS_RENDER_SOCKET: stand.socket } });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.equal(result.stderr, `driftless: the render server on ${stand.socket} closed the connection; the render was not finished\n`);
    await stand.close();
  });
});

describe('driftless serve', () => {
  it('listens on a socket only its own user may use', async () => {
    assert.equal((await stat(server.socket)).mode & 0o777, 0o600);
  });

  it('refuses to start beside another server, or over a file that is not a socket', async () => {
    const second = await startServer(server.socket);
    assert.equal(await second.exited, 1);
    assert.ok(second.log.some((line) => line === `driftless: another render server is listening on ${server.socket}`), second.log.join('\n'));
    const file = join(root, 'not-a-socket');
    await writeFile(file, 'data\n');
    const third = await startServer(file);
    assert.equal(await third.exited, 1);
    assert.ok(third.log.some((line) => line.includes('exists and is not a socket; refusing to replace it')), third.log.join('\n'));
    assert.equal(readFileSync(file, 'utf8'), 'data\n', 'the file is untouched');
  });

  it('takes the socket from --socket, else DRIFTLESS_RENDER_SOCKET, and --max-renders (default 2); refuses anything else with a usage error', () => {
    assert.deepEqual(parseServeConfig(['--socket', '/run/a.sock'], { DRIFTLESS_RENDER_SOCKET: '/run/b.sock' }), { socketPath: '/run/a.sock', maxRenders: 2 });
    assert.deepEqual(parseServeConfig(['--socket=/run/a.sock'], {}), { socketPath: '/run/a.sock', maxRenders: 2 });
    assert.deepEqual(parseServeConfig(['--max-renders', '2'], { DRIFTLESS_RENDER_SOCKET: '/run/b.sock' }), { socketPath: '/run/b.sock', maxRenders: 2 });
    for (const [argv, env, message] of [
      [[], {}, /no socket: pass --socket PATH or set DRIFTLESS_RENDER_SOCKET/],
      [['--socket'], {}, /--socket needs a value: an absolute path/],
      [['--socket', '--max-renders', '2'], {}, /--socket needs a value/],
      [['--socket='], {}, /--socket needs a value/],
      [['--socket', '/run/a.sock', '--socket', '/run/b.sock'], {}, /--socket given twice/],
      [['--socket', '/run/a.sock', 'extra'], {}, /unexpected argument "extra"/],
      [['--socket', 'relative.sock'], {}, /is not absolute/],
      [['--socket', `/${'x'.repeat(120)}`], {}, /over the 107 bytes/],
      [['--port', '8080'], {}, /unknown flag --port \(see driftless serve --help\)/],
      [['--socket', '/run/a.sock', '--max-renders', '0'], {}, /--max-renders "0" is not a whole number from 1 to 9999/],
      [['--socket', '/run/a.sock', '--max-renders=two'], {}, /--max-renders "two" is not a whole number/],
      [['--socket', '/run/a.sock', '--max-renders'], {}, /--max-renders needs a value: a whole number from 1 to 9999/],
    ] as const) {
      assert.throws(() => parseServeConfig(argv, env), (error: unknown) => error instanceof UsageError && message.test(error.message));
    }
  });

  it('exits 2 with the usage error when started without a socket', async () => {
    const child = spawn(process.execPath, [BIN, 'serve'], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env['PATH'] ?? '' } });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.on('close', resolve));
    assert.equal(code, 2);
    assert.equal(stderr, 'driftless: serve: no socket: pass --socket PATH or set DRIFTLESS_RENDER_SOCKET\n');
  });
});
