/**
 * Long-lived cluster components as child processes: each in its own process
 * group (so a stop reaches anything it forks), each with its output in a log
 * file, and each tied to this Node process by a parent-death signal, so a
 * crashed or SIGKILLed test run leaves no orphaned apiserver behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { openSync, closeSync, existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** A component exited when it should not have, or could not be started. */
export class ComponentError extends Error {
  readonly component: string;

  constructor(component: string, message: string, options?: ErrorOptions) {
    super(`${component}: ${message}`, options);
    this.name = 'ComponentError';
    this.component = component;
  }
}

/** What to run and where its output goes. */
export interface ComponentSpec {
  /** Short name used in logs and errors, e.g. `kube-apiserver`. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  /** File that receives stdout and stderr (appended, so restarts keep history). */
  readonly logFile: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** A running component. */
export interface Component {
  readonly name: string;
  readonly logFile: string;
  readonly pid: number;
  /** True once the process has exited, for whatever reason. */
  exited(): boolean;
  /** Terminates the process group: SIGTERM, then SIGKILL after `graceMs`. Idempotent. */
  stop(graceMs?: number): Promise<void>;
  /** Kills the process group at once; safe to call from a synchronous `exit` handler. */
  killNow(): void;
}

// setpriv (util-linux) sets PR_SET_PDEATHSIG and then execs the component, so
// the kernel kills it if this Node process dies without running its handlers.
const deathSignalWrapper = '/usr/bin/setpriv';

/**
 * The argv that runs `command` so that the kernel kills it when this Node
 * process dies (where setpriv exists; the command as it is elsewhere). The
 * wrapper execs the command, so the child's pid is the command's.
 * @returns the file to spawn and its arguments.
 */
export function tiedToThisProcess(command: string, args: readonly string[]): [string, string[]] {
  return existsSync(deathSignalWrapper) ? [deathSignalWrapper, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, [...args]];
}

/** Starts a component in its own process group with its output in `spec.logFile`. */
export function startComponent(spec: ComponentSpec): Component {
  const [file, args] = tiedToThisProcess(spec.command, spec.args);
  const logFd = openSync(spec.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(file, args, {
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: spec.env ?? process.env,
    });
  } finally {
    // The child holds its own copy of the descriptor.
    closeSync(logFd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new ComponentError(spec.name, `could not start ${spec.command}`);
  let hasExited = false;
  const exit = once(child, 'exit').then(() => {
    hasExited = true;
  });
  // Without a listener, a spawn error would crash the test process instead of failing a check.
  child.on('error', () => {
    hasExited = true;
  });

  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  };

  return {
    name: spec.name,
    logFile: spec.logFile,
    pid,
    exited: () => hasExited,
    killNow: () => signalGroup('SIGKILL'),
    async stop(graceMs = 5000) {
      if (hasExited) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** The last `lines` lines of a log file, or a note that it is missing. */
export async function tailLog(logFile: string, lines = 60): Promise<string> {
  try {
    const text = await readFile(logFile, 'utf8');
    return text.split('\n').slice(-lines).join('\n');
  } catch (error) {
    return `(no log at ${logFile}: ${String(error)})`;
  }
}
