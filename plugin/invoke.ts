/**
 * One `driftless` command from its argv, environment and working directory to
 * its exit code: parse the configuration once, run the command under the time
 * budget, write its whole output at once, and map every failure to the
 * documented exit code. The streams are ports, so the same function serves the
 * process (main.ts) and each request of the render server (server/server.ts).
 */
import { parseConfig, usageText } from './config.ts';
import type { PluginConfig } from './config.ts';
import type { CommandResult } from './commands/generate.ts';
import { BudgetExceededError, EXIT, exitCodeFor } from './errors.ts';
import type { Render } from './pipeline.ts';
import type { SourceIo } from './source/index.ts';

/** Longer than the render stage's SIGTERM→SIGKILL grace, shorter than Argo CD's 5 s before it SIGKILLs us. */
const STOP_GRACE_MS = 3000;

/** What a command is run with: what a process gets from its parent. */
export interface Invocation {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /**
   * When the command started (`performance.now()` time; default: when invoke is called): the time
   * budget counts from here, so a render the render server handed back keeps only what is left of it.
   */
  readonly startedAt?: number;
}

/** Where a command reads stdin from and writes its output to. Each write resolves once the text is handed on. */
export interface InvocationIo {
  readonly stdin: SourceIo['stdin'];
  readonly writeStdout: (text: string) => Promise<void>;
  readonly writeStderr: (text: string) => Promise<void>;
}

/**
 * The error a stopped command fails with. `cause` names what stopped it: a
 * signal (`SIGTERM`), or for the render server the client going away.
 */
export function stoppedError(cause: string): BudgetExceededError {
  return new BudgetExceededError(`stopped by ${cause}; renderers were terminated, nothing was written`);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function run(config: PluginConfig, signal: AbortSignal, io: InvocationIo): Promise<CommandResult> {
  if (config.command === 'help') return { stdout: usageText(), stderr: [] };
  // Reads an Application, renders nothing.
  if (config.command === 'migrate-app') return (await import('./commands/migrate-app.ts')).migrateAppCommand(config, io.stdin);
  // Start the renderer before loading the rest of the plugin (the reader, core,
  // the command), and load that only once kustomize or helm has been spawned
  // (or the render is over): loaded side by side, the two module graphs would
  // delay the spawn by the time the second one takes. Then the modules compile
  // on one core while the renderer runs on the other. The render is awaited
  // where it always was, after the key is read, so errors are classified and
  // ordered as before.
  const started = Promise.withResolvers<void>();
  const rendering = import('./source/index.ts').then((source) =>
    source.renderSource(config, signal, { stdin: io.stdin, onRendererStarted: started.resolve }),
  );
  // A render that fails before the command awaits it must not count as an
  // unhandled rejection; the command still receives (and reports) the failure.
  rendering.then(() => started.resolve(), () => started.resolve());
  const render: Render = () => rendering;
  await started.promise;
  // Only the chosen command's code is loaded (explain's reporting is not on the generate path).
  switch (config.command) {
    case 'generate':
      return (await import('./commands/generate.ts')).generate(config, signal, render);
    case 'explain':
      return (await import('./commands/explain.ts')).explain(config, signal, render);
  }
}

/** Rejects with the abort reason as soon as `signal` fires, so a stage that ignores it cannot outlive the budget. */
function whenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** `driftless: <message>`; an unexpected error says so, without a stack (it could quote input). */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const known = exitCodeFor(error) !== EXIT.failure || error instanceof BudgetExceededError || error.name === 'StampVerificationError';
    return known ? error.message : `internal error: ${error.message}`;
  }
  return `internal error: ${String(error)}`;
}

/**
 * Runs one command and resolves with its exit code; never rejects. `stop`
 * aborting (its reason a string naming the cause, see `stoppedError`) stops the
 * renderers and fails the command, as the time budget does. Nothing reaches
 * stdout unless the command succeeded.
 */
export async function invoke(invocation: Invocation, io: InvocationIo, stop: AbortSignal): Promise<number> {
  const controller = new AbortController();
  const onStop = (): void => controller.abort(stoppedError(String(stop.reason)));
  if (stop.aborted) onStop();
  else stop.addEventListener('abort', onStop, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const startedAt = invocation.startedAt ?? performance.now();
  try {
    const config = parseConfig(invocation.argv, invocation.env, invocation.cwd);
    timer = setTimeout(
      () => controller.abort(new BudgetExceededError(`exceeded the time budget of ${config.timeoutText} (timeout / ARGOCD_EXEC_TIMEOUT); renderers were terminated, nothing was written`)),
      Math.max(0, config.timeoutMs - (performance.now() - startedAt)),
    );
    const work = run(config, controller.signal, io);
    const result = await Promise.race([work, whenAborted(controller.signal)]).catch(async (error: unknown) => {
      // Aborted: give the render stage a moment to stop its children (SIGTERM, then SIGKILL) before we exit.
      if (controller.signal.aborted) await Promise.race([work.catch(() => undefined), delay(STOP_GRACE_MS)]);
      throw error;
    });
    controller.signal.throwIfAborted();
    for (const line of result.stderr) await io.writeStderr(`driftless: ${line}\n`);
    await io.writeStdout(result.stdout);
    return EXIT.ok;
  } catch (error) {
    // Let renderers still running (a stage that lost the race) see the abort and stop.
    if (!controller.signal.aborted) controller.abort(error);
    await io.writeStderr(`driftless: ${describe(error)}\n`).catch(() => undefined);
    return exitCodeFor(error);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    stop.removeEventListener('abort', onStop);
  }
}
