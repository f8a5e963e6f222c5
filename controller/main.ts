/**
 * The `driftless controller` process: parse the configuration once, read the
 * hash key, run until SIGTERM/SIGINT, then stop taking work, let in-flight
 * reconciles finish (within a bounded drain) and close the watches. A lost
 * Lease is different: the fence has already aborted every write in flight,
 * and the process exits at once without draining (controller-runtime does the
 * same), so nothing of the old leader's work outlives its leadership. The only
 * `process.exit` of the controller is here. Exit codes: 0 stopped by a signal,
 * 2 usage, 1 anything else (a lost Lease included).
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { UsageError } from '../cli/errors.ts';
import { HashKeyFileError, readHashKeyFile } from '../cli/hash-key.ts';
import { systemClock } from './clock.ts';
import { controllerUsageText } from './config/help.ts';
import { parseControllerConfig } from './config/parse.ts';
import { startController } from './controller.ts';
import { startHttpServer } from './http.ts';
import { KubeConfigError } from './kube/errors.ts';
import { createLogger } from './log.ts';
import { parseWebhookUrl, type WebhookUrl } from './notify/url.ts';

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
      hashKey = await readHashKeyFile(config.hashKeyFile);
    } catch (error) {
      // The message names the file and the problem (ENOENT, empty), never its content.
      if (!(error instanceof HashKeyFileError)) throw error;
      process.stderr.write(`driftless controller: ${error.message}\n`);
      return 2;
    }
  } else {
    log.warn('no --hash-key-file: config digests on workloads are plain SHA-256, which anyone who can read a workload could brute-force for a short Secret');
  }
  let notifyWebhookUrl: WebhookUrl | undefined;
  if (config.notifyWebhookUrlFile !== undefined) {
    const file = config.notifyWebhookUrlFile;
    const text = await readFile(file, 'utf8').catch((error: unknown) => ({ code: (error as NodeJS.ErrnoException).code ?? 'error' }));
    // Messages name the file and the problem, never its content: the URL holds the token.
    if (typeof text !== 'string') {
      process.stderr.write(`driftless controller: --notify-webhook-url-file ${file}: cannot be read (${text.code})\n`);
      return 2;
    }
    const parsed = parseWebhookUrl(text);
    if (typeof parsed === 'string') {
      process.stderr.write(`driftless controller: --notify-webhook-url-file ${file}: ${parsed} (content not shown)\n`);
      return 2;
    }
    notifyWebhookUrl = parsed;
  }
  // The pod's namespace, for the Lease: POD_NAMESPACE (the downward API), else the service account's, else `default`.
  const podNamespace = process.env['POD_NAMESPACE']
    || (await readFile('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').catch(() => '')).trim()
    || 'default';
  let lostLeadership = false;
  const stopSignal = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  let onLost: () => void = () => undefined;
  const lost = new Promise<string>((resolve) => {
    onLost = () => resolve('lost leadership');
  });
  let controller;
  try {
    controller = startController(config, {
      log,
      clock: systemClock(),
      hashKey,
      identity: process.env['POD_NAME'] || `${hostname()}_${randomBytes(4).toString('hex')}`,
      defaultLeaseNamespace: podNamespace,
      notifyWebhookUrl,
      tmpdir: tmpdir(),
      onLostLeadership: () => {
        lostLeadership = true;
        onLost();
      },
    });
  } catch (error) {
    if (error instanceof KubeConfigError) {
      process.stderr.write(`driftless controller: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  let http;
  try {
    http = await startHttpServer(config.httpAddr, controller.health, controller.metrics.registry);
  } catch (error) {
    process.stderr.write(`driftless controller: --http-addr ${config.httpAddr}: cannot listen (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})\n`);
    await controller.stop();
    return 2;
  }
  log.info({ namespaces: config.namespaces ?? 'all', mode: config.mode, strategy: config.restartStrategy, http: `${config.httpAddr.replace(/:\d+$/, '')}:${http.port}`, leaderElect: config.leaderElect, dryRun: config.dryRun }, 'started');
  const reason = await Promise.race([stopSignal, lost]);
  if (lostLeadership) {
    // No drain, no release (the Lease is not ours), no notification flush: exit, and restart as a standby.
    log.error('lost leadership: exiting without draining');
    return 1;
  }
  log.info({ reason }, 'stopping: finishing in-flight work');
  await controller.stop();
  await http.close();
  log.info('stopped');
  return 0;
}

process.exitCode = await main(process.argv.slice(3)).catch((error: unknown) => {
  process.stderr.write(`driftless controller: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
});
// Watches and timers are closed by stop(); exit explicitly so a stuck socket cannot keep the process alive.
process.exit();
