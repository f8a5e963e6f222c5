/**
 * Running the kubectl built into the cluster's `k8s` multi-call binary against
 * one cluster, for tests that want kubectl's own behaviour (apply, diff)
 * rather than a re-implementation of it.
 */
import { spawn } from 'node:child_process';
import { CommandError } from './exec.ts';

/** How a kubectl run ended. A non-zero `code` is not an error here: `kubectl diff` exits 1 for "differences". */
export interface KubectlResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of one kubectl run. */
export interface KubectlOptions {
  /** Written to kubectl's standard input (for `-f -`). */
  readonly stdin?: string;
  /** Kill kubectl after this long (default 60 s), so a hung call fails the test instead of its timeout. */
  readonly timeoutMs?: number;
}

/** Runs kubectl; bound to one cluster by `bindKubectl`. */
export type Kubectl = (args: readonly string[], options?: KubectlOptions) => Promise<KubectlResult>;

/** Where a cluster's kubectl finds its binary, credentials and caches. */
export interface KubectlSetup {
  /** The `k8s` multi-call binary. */
  readonly binary: string;
  readonly kubeconfigPath: string;
  /** Discovery and HTTP cache, per cluster: a reused port must never serve another cluster's discovery. */
  readonly cacheDir: string;
}

/**
 * The environment of every run. Nothing from the caller's kubectl setup leaks in
 * (KUBECONFIG, KUBECTL_EXTERNAL_DIFF, a locale that changes diff's messages), so
 * the output depends on the cluster alone.
 */
function kubectlEnvironment(setup: KubectlSetup): NodeJS.ProcessEnv {
  const { KUBECONFIG: _kubeconfig, KUBECTL_EXTERNAL_DIFF: _diff, KUBECACHEDIR: _cache, ...rest } = process.env;
  return {
    ...rest,
    KUBECONFIG: setup.kubeconfigPath,
    KUBECACHEDIR: setup.cacheDir,
    // kubectl's default, named explicitly: unified output, absent files as empty.
    KUBECTL_EXTERNAL_DIFF: 'diff -u -N',
    LC_ALL: 'C',
  };
}

/**
 * A kubectl bound to one cluster.
 * @returns a function that resolves with the exit code and output of every run that exits.
 * @throws {CommandError} (from the returned function) when kubectl cannot start, or is killed (e.g. by the timeout).
 */
export function bindKubectl(setup: KubectlSetup): Kubectl {
  const env = kubectlEnvironment(setup);
  return (args, options = {}) => {
    const commandLine = ['kubectl', ...args].join(' ');
    return new Promise((resolve, reject) => {
      const child = spawn(setup.binary, ['kubectl', ...args], {
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
        timeout: options.timeoutMs ?? 60_000,
      });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      child.on('error', (error) => reject(new CommandError(commandLine, null, String(error), { cause: error })));
      child.on('close', (code, signal) => {
        const result = { stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString() };
        if (code === null) reject(new CommandError(commandLine, null, `killed by ${signal ?? 'a signal'}\n${result.stderr}`));
        else resolve({ code, ...result });
      });
      // kubectl may exit before reading all of stdin (a usage error); that is reported by its exit code.
      child.stdin.on('error', () => {});
      child.stdin.end(options.stdin ?? '');
    });
  };
}
