/**
 * Runs a renderer (kustomize, helm) as a child process: an argv array, never a
 * shell, so no user string can become shell code. stdout is the result
 * (bounded); stderr is kept only as a tail for the error message.
 */
import { spawn } from 'node:child_process';
import { BudgetExceededError, RenderError } from '../errors.ts';
import { appendToTail, redactTail, redactionForms, rollingKeepBytes } from './redact.ts';
import type { RollingTail } from './redact.ts';

/** Largest stdout accepted from a renderer; far above any real app, low enough to fail clearly instead of exhausting memory. */
export const MAX_RENDER_BYTES = 256 * 1024 * 1024;

/** How much of a renderer's stderr is kept for the error message. */
const STDERR_TAIL_BYTES = 4096;

/** Time a renderer gets between SIGTERM and SIGKILL; short, because Argo CD's cmp-server SIGKILLs us 5 s after its SIGTERM. */
const KILL_GRACE_MS = 2000;

export interface RunOptions {
  /** The tool's name for messages and the hint when it is missing (`helm`). */
  readonly tool: string;
  /** The executable: a name looked up on `env.PATH`, or a path. */
  readonly command: string;
  readonly args: readonly string[];
  /**
   * How the command is named in messages, e.g. `helm template`. Never the full
   * argv: `--set` values are user data and error messages go to Argo CD's UI.
   */
  readonly display: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  /** Written to the child's stdin, then closed. Without it stdin is /dev/null. */
  readonly stdin?: string;
  readonly signal: AbortSignal;
  readonly maxStdoutBytes?: number;
  readonly killGraceMs?: number;
  /** Which environment variable overrides `command`, for the not-installed hint. */
  readonly overrideVariable?: string;
  /**
   * Secret values the renderer was handed (or may echo): each occurrence in the
   * stderr tail becomes `[redacted]`, as do its base64 and JSON-escaped forms.
   * Strings shorter than `MIN_REDACT_LENGTH` are ignored (see redact.ts).
   */
  readonly redact?: readonly string[];
  /** Called once the child is starting (spawn returned; a failure to start still rejects the result). */
  readonly onSpawn?: () => void;
}

/**
 * Runs the command and resolves with its stdout, as bytes (decode.ts makes them text), when it exits 0.
 * Rejects with RenderError on a non-zero exit, a missing executable or too much
 * output, and with BudgetExceededError when `signal` aborts; in both of the
 * last cases the child's whole process group is stopped first.
 */
export function runProcess(options: RunOptions): Promise<Buffer> {
  const maxStdout = options.maxStdoutBytes ?? MAX_RENDER_BYTES;
  const grace = options.killGraceMs ?? KILL_GRACE_MS;
  const { signal } = options;
  if (signal.aborted) return Promise.reject(stopped(options, signal.reason));

  return new Promise<Buffer>((resolve, reject) => {
    // detached: the child leads its own process group, so stopping it also
    // stops whatever it started (helm plugins, kustomize's helm).
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(options.command, options.args, {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      });
    } catch (error) {
      // Node throws (rather than emits) some spawn failures, E2BIG among them.
      reject(startFailure(options, error as NodeJS.ErrnoException));
      return;
    }
    // Not on the 'spawn' event: it comes a turn of the event loop later, and the caller only needs to know that the child is starting.
    options.onSpawn?.();

    const forms = redactionForms(options.redact ?? []);
    const keep = rollingKeepBytes(forms, STDERR_TAIL_BYTES);
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr: RollingTail = { bytes: Buffer.alloc(0), truncated: false };
    let failure: Error | undefined;
    let killTimer: NodeJS.Timeout | undefined;

    const stopGroup = (reason: Error): void => {
      if (failure !== undefined) return;
      failure = reason;
      signalGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => signalGroup(child.pid, 'SIGKILL'), grace);
      killTimer.unref();
    };
    const onAbort = (): void => stopGroup(stopped(options, signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });

    // Both are pipes (stdio above), so neither is null.
    (child.stdout as NodeJS.ReadableStream).on('data', (chunk: Buffer) => {
      if (failure !== undefined) return;
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxStdout) {
        stopGroup(new RenderError(`${options.display} produced more than ${formatBytes(maxStdout)} of output; refusing to read more`));
        return;
      }
      stdout.push(chunk);
    });
    (child.stderr as NodeJS.ReadableStream).on('data', (chunk: Buffer) => {
      stderr = appendToTail(stderr, chunk, keep);
    });
    if (options.stdin !== undefined && child.stdin !== null) {
      // EPIPE when the child exits without reading stdin is not our error; its exit status is.
      child.stdin.on('error', () => {});
      child.stdin.end(options.stdin);
    }

    child.on('error', (error: NodeJS.ErrnoException) => {
      signal.removeEventListener('abort', onAbort);
      if (killTimer !== undefined) clearTimeout(killTimer);
      reject(startFailure(options, error));
    });

    child.on('close', (code, exitSignal) => {
      signal.removeEventListener('abort', onAbort);
      if (killTimer !== undefined) clearTimeout(killTimer);
      if (failure !== undefined) {
        reject(failure);
        return;
      }
      if (code === 0) {
        resolve(Buffer.concat(stdout));
        return;
      }
      const status = code === null ? `was killed by ${exitSignal}` : `failed with exit code ${code}`;
      reject(new RenderError(`${options.display} ${status}`, tailText(stderr.bytes, stderr.truncated, forms)));
    });
  });
}

function startFailure(options: RunOptions, error: NodeJS.ErrnoException): RenderError {
  switch (error.code) {
    case 'ENOENT': {
      const hint = options.overrideVariable === undefined ? '' : ` or set ${options.overrideVariable} to its full path`;
      return new RenderError(`${options.tool} is not installed or not on PATH (looked for ${JSON.stringify(options.command)}); install it${hint}`, '', { cause: error });
    }
    case 'EACCES':
      return new RenderError(`${options.tool} (${JSON.stringify(options.command)}) is not executable`, '', { cause: error });
    case 'E2BIG':
      return new RenderError(
        `${options.display} could not be started: its arguments and environment exceed the system limit (E2BIG; KUBE_API_VERSIONS on a cluster with very many CRDs?)`,
        '',
        { cause: error },
      );
    default:
      return new RenderError(`${options.display} could not be started: ${error.message}`, '', { cause: error });
  }
}

function stopped(options: RunOptions, reason: unknown): BudgetExceededError {
  const why = reason instanceof Error && reason.message !== '' ? reason.message : 'the command was stopped';
  return new BudgetExceededError(`${options.display} was stopped: ${why}`, { cause: reason });
}

function signalGroup(pid: number | undefined, name: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, name);
  } catch {
    // Already gone: nothing to stop.
  }
}

/**
 * The last lines of stderr, trimmed, valid UTF-8 (a cut multi-byte character is
 * dropped), with every redaction form replaced. Exported for tests.
 */
export function tailText(bytes: Buffer, truncated: boolean, forms: readonly Buffer[] = [], tailBytes = STDERR_TAIL_BYTES): string {
  const { text, cut } = redactTail(bytes, truncated, forms, tailBytes);
  // Start at a whole line, marked as cut.
  return (cut ? `…${text.slice(text.indexOf('\n') + 1)}` : text).trim();
}

function formatBytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}
