/**
 * The `driftless explain --live` process: parse, read the hash key, list once,
 * print, exit. bin/driftless.js routes here before the plugin loads, so the
 * plugin's cold start never loads client-node. Exit codes: 0 explained,
 * 2 usage (flags, kubeconfig, hash key file), 1 anything else (not found, API errors).
 */
import { UsageError } from '../../cli/errors.ts';
import { HashKeyFileError, readHashKeyFile } from '../../cli/hash-key.ts';
import { systemClock } from '../clock.ts';
import { createKubeClient, loadKubeConfig } from '../kube/client.ts';
import { KubeConfigError } from '../kube/errors.ts';
import { TokenBucket } from '../token-bucket.ts';
import { liveExplainUsageText, parseLiveExplainArgs } from './args.ts';
import { collectLive, LiveTargetNotFoundError } from './collect.ts';
import { formatLiveTable } from './format.ts';
import { buildLiveReport } from './report.ts';

const PREFIX = 'driftless explain --live';

async function main(argv: readonly string[]): Promise<number> {
  let options;
  try {
    options = parseLiveExplainArgs(argv, process.env);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${PREFIX}: ${error.message}\nRun 'driftless explain --live --help' for the flags.\n`);
      return 2;
    }
    throw error;
  }
  if (options.command === 'help') {
    process.stdout.write(liveExplainUsageText());
    return 0;
  }
  const config = options.controller;
  let hashKey;
  if (config.hashKeyFile !== undefined) {
    try {
      hashKey = await readHashKeyFile(config.hashKeyFile);
    } catch (error) {
      // The message names the file and the problem, never its content.
      if (!(error instanceof HashKeyFileError)) throw error;
      process.stderr.write(`${PREFIX}: ${error.message}\n`);
      return 2;
    }
  }
  let kubeConfig;
  try {
    kubeConfig = loadKubeConfig({ kubeconfig: config.kubeconfig });
  } catch (error) {
    if (error instanceof KubeConfigError) {
      process.stderr.write(`${PREFIX}: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const namespace = options.namespace ?? (kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace || 'default');
  const clock = systemClock();
  const client = createKubeClient(kubeConfig, new TokenBucket({ ratePerSecond: config.kubeQps, burst: config.kubeBurst, clock }));
  try {
    const snapshot = await collectLive(client, {
      namespace,
      target: options.target,
      hashKey,
      tracking: { method: config.argocdTrackingMethod, label: config.argocdTrackingLabel },
      pageSize: config.listPageSize,
      configLabelSelector: config.resourceLabelSelector?.text,
      argocdNamespace: config.argocdNamespace,
      now: clock.now(),
    });
    const report = buildLiveReport(snapshot, { mode: config.mode, restartStrategy: config.restartStrategy, argocdSyncWaitMs: config.argocdSyncWait.ms, keyed: hashKey !== undefined, target: options.target, writeBackDefaults: { namespaces: config.writeBackNamespaces, applications: config.writeBackApplications } });
    process.stdout.write(options.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatLiveTable(report));
    return 0;
  } catch (error) {
    // The kubeconfig's credentials could not be obtained (an exec plugin failed): a kubeconfig problem, exit 2.
    if (error instanceof KubeConfigError) {
      process.stderr.write(`${PREFIX}: ${error.message}\n`);
      return 2;
    }
    if (error instanceof LiveTargetNotFoundError) {
      process.stderr.write(`${PREFIX}: ${error.message}\n`);
      return 1;
    }
    // API and transport errors carry the method, path and the server's Status message: never a value.
    if (error instanceof Error && (error.name === 'KubeApiError' || error.name === 'KubeTransportError')) {
      process.stderr.write(`${PREFIX}: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    await client.close();
  }
}

// argv: node, bin/driftless.js, explain, …
process.exitCode = await main(process.argv.slice(3)).catch((error: unknown) => {
  process.stderr.write(`${PREFIX}: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
});
// A kept-alive connection must not hold a one-shot command open.
process.exit();
