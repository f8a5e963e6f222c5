/**
 * The `driftless controller` process: parse the configuration once, read the
 * hash key, run until SIGTERM/SIGINT, then stop taking work, let in-flight
 * reconciles finish and close the watches. The only `process.exit` of the
 * controller is here. Exit codes: 0 stopped by a signal, 2 usage, 1 anything else.
 */
import { readFile } from 'node:fs/promises';
import { UsageError } from '../plugin/errors.ts';
import { systemClock } from './clock.ts';
import { controllerUsageText, parseControllerConfig } from './config.ts';
import { startController } from './controller.ts';
import { KubeConfigError } from './kube/errors.ts';
import { createLogger } from './log.ts';

async function main(argv: readonly string[]): Promise<number> {
  let config;
  try {
    config = parseControllerConfig(argv, process.env);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`driftless controller: ${error.message}\nRun 'driftless controller --help' for the flags.\n`);
      return 2;
    }
    throw error;
  }
  if (config.command === 'help') {
    process.stdout.write(controllerUsageText());
    return 0;
  }
  const log = createLogger(config.logLevel);
  let hashKey;
  if (config.hashKeyFile !== undefined) {
    try {
      hashKey = { bytes: new Uint8Array(await readFile(config.hashKeyFile)) };
    } catch (error) {
      // The message names the file and the reason (ENOENT, EACCES), never its content.
      process.stderr.write(`driftless controller: --hash-key-file ${config.hashKeyFile}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})\n`);
      return 2;
    }
  } else {
    log.warn('no --hash-key-file: config digests on workloads are plain SHA-256, which anyone who can read a workload could brute-force for a short Secret');
  }
  let controller;
  try {
    controller = startController(config, { log, clock: systemClock(), hashKey });
  } catch (error) {
    if (error instanceof KubeConfigError) {
      process.stderr.write(`driftless controller: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  log.info({ namespaces: config.namespaces ?? 'all', mode: config.mode, strategy: config.restartStrategy }, 'started');
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log.info({ signal }, 'stopping: finishing in-flight work');
  await controller.stop();
  log.info('stopped');
  return 0;
}

process.exitCode = await main(process.argv.slice(3)).catch((error: unknown) => {
  process.stderr.write(`driftless controller: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
});
// Watches and timers are closed by stop(); exit explicitly so a stuck socket cannot keep the process alive.
process.exit();
