/**
 * The `driftless` process: parse the configuration once, run one command
 * under the time budget, write its whole output at once, and map every
 * failure to the documented exit code. The only `process.exit` is here.
 */
import { parseConfig, usageText } from './config.ts';
import type { PluginConfig } from './config.ts';
import type { CommandResult } from './commands/generate.ts';
import { BudgetExceededError, EXIT, exitCodeFor } from './errors.ts';
import type { Render } from './pipeline.ts';

/** Longer than the render stage's SIGTERM→SIGKILL grace, shorter than Argo CD's 5 s before it SIGKILLs us. */
const STOP_GRACE_MS = 3000;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function run(config: PluginConfig, signal: AbortSignal): Promise<CommandResult> {
  if (config.command === 'help') return { stdout: usageText(), stderr: [] };
  // Reads an Application, renders nothing.
  if (config.command === 'migrate-app') return (await import('./commands/migrate-app.ts')).migrateAppCommand(config);
  // Start the renderer before loading the rest of the plugin (the reader, core,
  // the command), and load that only once kustomize or helm has been spawned
  // (or the render is over): loaded side by side, the two module graphs would
  // delay the spawn by the time the second one takes. Then the modules compile
  // on one core while the renderer runs on the other. The render is awaited
  // where it always was, after the key is read, so errors are classified and
  // ordered as before.
  const started = Promise.withResolvers<void>();
  const rendering = import('./source/index.ts').then((source) =>
    source.renderSource(config, signal, { stdin: process.stdin, onRendererStarted: started.resolve }),
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

function write(stream: NodeJS.WriteStream, text: string): Promise<void> {
  if (text === '') return Promise.resolve();
  return new Promise((resolve, reject) => stream.write(text, (error) => (error ? reject(error) : resolve())));
}

/** `driftless: <message>`; an unexpected error says so, without a stack (it could quote input). */
function describe(error: unknown): string {
  if (error instanceof Error) {
    const known = exitCodeFor(error) !== EXIT.failure || error instanceof BudgetExceededError || error.name === 'StampVerificationError';
    return known ? error.message : `internal error: ${error.message}`;
  }
  return `internal error: ${String(error)}`;
}

async function main(): Promise<number> {
  const controller = new AbortController();
  const stop = (signalName: string) => () =>
    controller.abort(new BudgetExceededError(`stopped by ${signalName}; renderers were terminated, nothing was written`));
  process.once('SIGTERM', stop('SIGTERM'));
  process.once('SIGINT', stop('SIGINT'));
  let timer: NodeJS.Timeout | undefined;
  try {
    const config = parseConfig(process.argv.slice(2), process.env, process.cwd());
    timer = setTimeout(
      () => controller.abort(new BudgetExceededError(`exceeded the time budget of ${config.timeoutText} (timeout / ARGOCD_EXEC_TIMEOUT); renderers were terminated, nothing was written`)),
      config.timeoutMs,
    );
    const work = run(config, controller.signal);
    const result = await Promise.race([work, whenAborted(controller.signal)]).catch(async (error: unknown) => {
      // Aborted: give the render stage a moment to stop its children (SIGTERM, then SIGKILL) before we exit.
      if (controller.signal.aborted) await Promise.race([work.catch(() => undefined), delay(STOP_GRACE_MS)]);
      throw error;
    });
    controller.signal.throwIfAborted();
    for (const line of result.stderr) await write(process.stderr, `driftless: ${line}\n`);
    await write(process.stdout, result.stdout);
    return EXIT.ok;
  } catch (error) {
    // Let renderers still running (a stage that lost the race) see the abort and stop.
    if (!controller.signal.aborted) controller.abort(error);
    await write(process.stderr, `driftless: ${describe(error)}\n`);
    return exitCodeFor(error);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

process.exit(await main());
