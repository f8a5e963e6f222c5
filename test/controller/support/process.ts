/**
 * Runs `driftless controller` as a real child process against the test
 * cluster — the same entry point, flags and logs a user gets — and collects
 * its JSON log lines so tests can wait on them and scan them for leaks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Cluster } from '../../cluster/harness.ts';
import { tiedToThisProcess } from '../../cluster/processes.ts';
import { rootfsCommandLine, type RootfsMount } from '../../image/rootfs.ts';
import { noteScratchDir } from '../../support/temp-dirs.ts';
import { waitFor } from '../../support/wait.ts';
import { LEAK_CANARY } from './fixtures.ts';
import { credentialsOfFiles, findLeak, gitCredentialsIn } from './leak.ts';

const bin = join(import.meta.dirname, '..', '..', '..', 'bin', 'driftless.js');

/** One parsed log line. */
export type LogLine = Readonly<Record<string, unknown>> & { readonly msg?: string };

/** A controller process. */
export interface ControllerProcess {
  /** The child's process id (benchmarks read its /proc/<pid>/status). */
  readonly pid: number;
  /** Every line so far, parsed (non-JSON lines are kept as `{ raw }`). */
  readonly lines: LogLine[];
  /** Everything written to stderr. */
  stderr(): string;
  /** Waits for a log line matching `predicate` (among all lines so far, or from `fromIndex`). */
  waitForLog(description: string, predicate: (line: LogLine) => boolean, options?: { timeoutMs?: number; fromIndex?: number }): Promise<LogLine>;
  /** Waits until every first list is done and the first reconcile pass has finished. */
  ready(): Promise<void>;
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: the controller dies mid-flight. */
  kill(): Promise<void>;
}

/** Options of a controller process. */
export interface ControllerProcessOptions {
  /** Extra flags. */
  readonly args?: readonly string[];
  /** A kubeconfig (YAML) to use instead of the admin one. */
  readonly kubeconfig?: string;
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Run `driftless controller` from this root filesystem of the controller image (test/image) as
   * its Deployment runs it: the image's user, a read-only root, a writable /tmp, the kubeconfig on a
   * read-only volume, no shell, only the image's env and `env`. Flags naming files must then name paths in
   * the container. Default: from the checkout, on the Node the tests run on.
   */
  readonly image?: ControllerImageRoot;
  /** With `image`: more volumes of the pod (a Secret's directory, say), bound at their paths in the container. */
  readonly volumes?: readonly RootfsMount[];
}

/** The controller image's root filesystem, its config's env and user. */
export interface ControllerImageRoot {
  readonly rootfs: string;
  readonly env: Readonly<Record<string, string>>;
  readonly user: string;
}

/** Where the kubeconfig volume is mounted in the container when the controller runs from the image. */
const IMAGE_KUBECONFIG_DIR = '/etc/driftless/kubeconfig';

/** Starts `driftless controller` with test-friendly defaults (debounce 0.5s, recheck 0.5s, debug logs). */
export async function startControllerProcess(cluster: Cluster, options: ControllerProcessOptions = {}): Promise<ControllerProcess> {
  let kubeconfigPath = cluster.kubeconfigPath;
  if (options.kubeconfig !== undefined) {
    kubeconfigPath = join(cluster.stateDir, `controller-${process.hrtime.bigint()}.kubeconfig`);
    await writeFile(kubeconfigPath, options.kubeconfig, { mode: 0o600 });
  }
  const args = options.args ?? [];
  // The credentials of every file the controller reads, for the leak check at stop: as the canary, they must never be said.
  const flagFile = (name: string): string | undefined => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  // Run from the image, a flag names a path in the container: read it where its volume comes from.
  const onHost = (file: string | undefined): string | undefined => {
    const volume = options.image === undefined || file === undefined ? undefined : options.volumes?.find((v) => file.startsWith(`${v.target}/`));
    return volume === undefined || file === undefined ? file : join(volume.source, file.slice(volume.target.length));
  };
  // A work directory made directly in the temp dir is removed by nobody: the fixture's teardown checks it is gone.
  noteScratchDir(onHost(flagFile('write-back-work-dir')));
  const credentials = await credentialsOfFiles({
    kubeconfig: kubeconfigPath,
    // The spoke option's second kubeconfig, the hub's (ADR 0025).
    argocdKubeconfig: onHost(flagFile('argocd-kubeconfig')),
    hashKeyFile: onHost(flagFile('hash-key-file')),
    notifyUrlFile: onHost(flagFile('notify-webhook-url-file')),
  });
  // The Git credentials the write-back can read (Argo CD's repository Secrets, the Secrets named by flag): read
  // now and again at stop (a test may replace them meanwhile), each read bounded (a fault test may have stopped
  // the API server by then).
  const gitCredentials = new Set<string>();
  const readGitCredentials = async (): Promise<void> => {
    const list = (path: string) => cluster.admin.request<{ items?: unknown[] }>('GET', path, undefined, { signal: AbortSignal.timeout(5_000) });
    const named = ['write-back-credentials-secret', 'write-back-signing-secret'].map(flagFile).filter((name): name is string => name !== undefined);
    for (const needle of await gitCredentialsIn(list, flagFile('argocd-namespace') ?? 'argocd', named)) gitCredentials.add(needle);
  };
  await readGitCredentials();
  // Test-friendly defaults, each unless the test sets the flag itself.
  const defaults = ['--debounce=500ms', '--restart-check-interval=500ms', '--log-level=debug', '--http-addr=127.0.0.1:0']
    .filter((flag) => !args.some((arg) => arg.startsWith(`${flag.split('=')[0] as string}=`)));
  let command: [string, string[]] = [process.execPath, [bin, 'controller', `--kubeconfig=${kubeconfigPath}`, ...defaults, ...args]];
  let env: NodeJS.ProcessEnv = { ...process.env, KUBECONFIG: '', ...options.env };
  if (options.image !== undefined) {
    // The volumes of the pod: a Secret-like directory with the kubeconfig (0644, as a Secret volume's default mode) and an emptyDir /tmp.
    const volumes = await mkdtemp(join(cluster.stateDir, 'controller-image-'));
    await mkdir(join(volumes, 'kubeconfig'), { mode: 0o755 });
    await mkdir(join(volumes, 'tmp'));
    await chmod(join(volumes, 'tmp'), 0o1777);
    await writeFile(join(volumes, 'kubeconfig', 'config'), await readFile(kubeconfigPath), { mode: 0o644 });
    command = rootfsCommandLine({
      rootfs: options.image.rootfs,
      mounts: [
        { source: join(volumes, 'kubeconfig'), target: IMAGE_KUBECONFIG_DIR, readOnly: true },
        { source: join(volumes, 'tmp'), target: '/tmp' },
        ...(options.volumes ?? []),
        // It needs no shell: the image's shells are masked (an empty file cannot be executed).
        ...['/usr/bin/dash', '/usr/bin/bash'].filter((shell) => existsSync(join(options.image?.rootfs ?? '', shell))).map((shell) => ({ source: '/dev/null', target: shell, readOnly: true })),
      ],
      user: options.image.user,
      env: { ...options.image.env, ...options.env },
      // As the Deployment runs it (manifests/controller): `driftless controller` on the image's PATH.
      command: 'driftless',
      args: ['controller', `--kubeconfig=${IMAGE_KUBECONFIG_DIR}/config`, ...defaults, ...args],
    });
    env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };
  }
  // Tied to this process: a test run or a demo that is SIGKILLed leaves no controller behind.
  const [file, argv] = tiedToThisProcess(...command);
  const child: ChildProcess = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env });
  const lines: LogLine[] = [];
  let stderr = '';
  let exitCode: number | null | undefined;
  // 'close', not 'exit': 'exit' can come before the last lines of stdout are read,
  // and a wait that gives up on exit must have seen everything the process said.
  const exited = once(child, 'close').then(([code]) => {
    exitCode = code as number | null;
    return exitCode;
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      lines.push({ raw: line });
    }
  });
  (child.stderr as NodeJS.ReadableStream).on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const abortIf = (): void => {
    if (exitCode !== undefined) throw new Error(`the controller exited with ${String(exitCode)}: ${stderr}\n${lines.slice(-20).map((l) => JSON.stringify(l)).join('\n')}`);
  };
  /**
   * No Secret value written by the fixtures (they all carry the canary), no credential of a file it reads, no
   * Git credential of a Secret it may read, nor their base64, in anything the process said.
   */
  const assertNoLeak = async (): Promise<void> => {
    await readGitCredentials();
    const said = `${lines.map((line) => JSON.stringify(line)).join('\n')}\n${stderr}`;
    if (findLeak(said, LEAK_CANARY) !== undefined) {
      throw new Error(`the controller printed a Secret value (or its base64): ${JSON.stringify(findLeak(said, LEAK_CANARY))} found in its output`);
    }
    // Never quote a leaked credential in the failure itself: say which file it came from.
    if (findLeak(said, ...credentials) !== undefined) throw new Error('the controller printed a credential of its kubeconfig, hash key file or notification URL file (or its base64)');
    if (findLeak(said, ...gitCredentials) !== undefined) throw new Error('the controller printed a Git credential of a repository Secret (or its base64)');
  };
  const proc: ControllerProcess = {
    pid: child.pid as number,
    lines,
    stderr: () => stderr,
    async waitForLog(description, predicate, waitOptions = {}) {
      try {
        return await waitFor(`controller log: ${description}`, () => lines.slice(waitOptions.fromIndex ?? 0).find(predicate), {
          timeoutMs: waitOptions.timeoutMs ?? 60_000,
          intervalMs: 50,
          abortIf,
        });
      } catch (error) {
        throw new Error(`${(error as Error).message}\nlast controller lines:\n${lines.slice(-30).map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`, { cause: error });
      }
    },
    async ready() {
      await proc.waitForLog('initial reconcile finished', (line) => line.msg === 'initial reconcile finished');
    },
    async stop() {
      if (exitCode === undefined) child.kill('SIGTERM');
      const code = await exited;
      await assertNoLeak();
      return code;
    },
    async kill() {
      if (exitCode === undefined) child.kill('SIGKILL');
      await exited;
      await assertNoLeak();
    },
  };
  return proc;
}
