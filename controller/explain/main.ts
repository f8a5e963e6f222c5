/**
 * The `driftless explain --live` process: parse, read the hash key, list once,
 * print, exit. bin/driftless.js routes here before the plugin loads, so the
 * plugin's cold start never loads client-node. Exit codes: 0 explained,
 * 2 usage (flags, kubeconfig, hash key file), 1 anything else (not found, API errors).
 */
import { UsageError } from '../../cli/errors.ts';
import { HashKeyFileError, readHashKeyFile } from '../../cli/hash-key.ts';
import { systemClock } from '../clock.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ControllerConfig } from '../config/model.ts';
import { createKubeClient, loadKubeConfig } from '../kube/client.ts';
import { KubeConfigError } from '../kube/errors.ts';
import { TokenBucket } from '../token-bucket.ts';
import { liveExplainUsageText, parseLiveExplainArgs } from './args.ts';
import { collectLive, LiveTargetNotFoundError } from './collect.ts';
import { formatLiveTable } from './format.ts';
import { buildLiveReport } from './report.ts';

const PREFIX = 'driftless explain --live';

/**
 * The cluster's kubeconfig and, with the spoke option (ADR 0025), the hub's, where Argo CD's Applications and
 * AppProjects are read through a client of their own.
 * @throws {KubeConfigError} naming the file (and the flag, for the hub's), never its content.
 */
function loadKubeConfigs(config: ControllerConfig): { readonly kubeConfig: KubeConfig; readonly argocdKubeConfig: KubeConfig | undefined } {
  const kubeConfig = loadKubeConfig({ kubeconfig: config.kubeconfig });
  if (config.argocdKubeconfig === undefined) return { kubeConfig, argocdKubeConfig: undefined };
  try {
    return { kubeConfig, argocdKubeConfig: loadKubeConfig({ kubeconfig: [config.argocdKubeconfig] }) };
  } catch (error) {
    if (error instanceof KubeConfigError) throw new KubeConfigError(`--argocd-kubeconfig: ${error.message}`, { cause: error });
    throw error;
  }
}

/**
 * What a failed explanation prints and its exit code: a kubeconfig whose credentials could not be obtained
 * (an exec plugin failed) 2; a target not found, an API or transport error 1 (their messages carry the
 * method, path and the server's Status message, never a value). Anything else is rethrown.
 */
function reportFailure(error: unknown): number {
  if (!(error instanceof Error)) throw error;
  const code = error instanceof KubeConfigError ? 2
    : error instanceof LiveTargetNotFoundError || error.name === 'KubeApiError' || error.name === 'KubeTransportError' ? 1
    : undefined;
  if (code === undefined) throw error;
  process.stderr.write(`${PREFIX}: ${error.message}\n`);
  return code;
}

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
  let kubeConfigs;
  try {
    kubeConfigs = loadKubeConfigs(config);
  } catch (error) {
    if (error instanceof KubeConfigError) {
      process.stderr.write(`${PREFIX}: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const { kubeConfig, argocdKubeConfig } = kubeConfigs;
  const namespace = options.namespace ?? (kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace || 'default');
  const clock = systemClock();
  const client = createKubeClient(kubeConfig, new TokenBucket({ ratePerSecond: config.kubeQps, burst: config.kubeBurst, clock }));
  const argocd = argocdKubeConfig === undefined ? undefined : {
    client: createKubeClient(argocdKubeConfig, new TokenBucket({ ratePerSecond: config.kubeQps, burst: config.kubeBurst, clock })),
    destination: { id: undefined, server: config.argocdDestinationServer ?? '', name: config.argocdDestinationName ?? '' },
  };
  try {
    const snapshot = await collectLive(client, {
      namespace,
      target: options.target,
      hashKey,
      tracking: { method: config.argocdTrackingMethod, label: config.argocdTrackingLabel },
      pageSize: config.listPageSize,
      configLabelSelector: config.resourceLabelSelector?.text,
      argocdNamespace: config.argocdNamespace,
      ...(argocd === undefined ? {} : { argocd }),
      now: clock.now(),
    });
    const report = buildLiveReport(snapshot, { mode: config.mode, restartStrategy: config.restartStrategy, argocdSyncWaitMs: config.argocdSyncWait.ms, keyed: hashKey !== undefined, target: options.target, writeBackDefaults: { namespaces: config.writeBackNamespaces, applications: config.writeBackApplications } });
    process.stdout.write(options.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatLiveTable(report));
    return 0;
  } catch (error) {
    return reportFailure(error);
  } finally {
    await client.close();
    await argocd?.client.close();
  }
}

// argv: node, bin/driftless.js, explain, …
process.exitCode = await main(process.argv.slice(3)).catch((error: unknown) => {
  process.stderr.write(`${PREFIX}: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
});
// A kept-alive connection must not hold a one-shot command open.
process.exit();
