/**
 * Turns `driftless controller [flags]` and the environment into one frozen,
 * validated `ControllerConfig`. This folder is the only place that reads
 * either; everything downstream takes the config.
 *
 * One table, `CONTROLLER_FLAGS` (flags.ts), drives parsing and `--help`
 * (help.ts), so the help text cannot drift from the parser. Where a value comes
 * from is reader.ts's: the flag, else its environment variables, else its default.
 * A config field is the flag name in camelCase (`--max-concurrent-restarts` → `maxConcurrentRestarts`).
 *
 * Values are validated here, not where they are used, so a bad value fails at
 * start with a UsageError (exit 2) naming the flag or environment variable,
 * never an hour later in a watch. Files are not read here: the hash key is
 * read by main, and no message ever quotes a file's content.
 */
import { readArgoCdHubSettings } from './argocd-hub.ts';
import { deepFreeze } from '../../cli/deep-freeze.ts';
import { UsageError } from '../../cli/errors.ts';
import { parseArgv as readArgv } from '../../cli/flags.ts';
import type { PolicyMode } from '../../core/index.ts';
import type { RestartStrategy } from '../model.ts';
import type { ControllerFlagSpec } from './flag-spec.ts';
import { CONTROLLER_FLAGS, findControllerFlag } from './flags.ts';
import { asLabelKey, asLabelSelector } from './label-selector.ts';
import type { ControllerConfig, ControllerHelp, LogLevel, TrackingMethod } from './model.ts';
import { readNotifySettings } from './notify.ts';
import { flagReader, type Env, type FlagReader } from './reader.ts';
import {
  allowedText,
  asAddress,
  asBoolean,
  asDuration,
  asEnum,
  asInteger,
  asKubeconfig,
  asNamespaceList,
  asNumber,
  asPath,
  asSingleNamespace,
  quote,
} from './validators.ts';
import { readWriteBackSettings } from './write-back.ts';

/**
 * Parses the arguments after `driftless controller` and the environment.
 * `--help` anywhere wins over everything else except a malformed command line.
 * Throws UsageError naming the flag or environment variable, what is wrong and what is allowed.
 */
export function parseControllerConfig(argv: readonly string[], env: Env): ControllerConfig | ControllerHelp {
  const cli = parseArgv(argv);
  if (cli.help) return Object.freeze({ command: 'help' });

  const reader = flagReader(cli.flags, env);
  const scope = readScope(reader);
  const lease = readLease(reader);
  const settings = readSettings(reader, scope, lease);
  return deepFreeze({
    command: 'run',
    ...scope,
    ...settings,
    ...readArgoCdHubSettings(reader, settings.argocdClusters),
    ...readNotifySettings(reader),
    ...readWriteBackSettings(reader),
    provenance: reader.provenance,
  } satisfies ControllerConfig);
}

type Scope = Pick<ControllerConfig, 'kubeconfig' | 'namespaces' | 'namespaceSelector' | 'ignoreNamespaces'>;
type Lease = Pick<ControllerConfig, 'leaseDuration' | 'renewDeadline'>;

/** Where the controller looks: the API server and the namespaces (watched, selected, ignored). */
function readScope({ readOptional, provenance }: FlagReader): Scope {
  const kubeconfig = readOptional('kubeconfig', asKubeconfig) ?? [];
  const namespaces = readOptional('namespaces', asNamespaceList);
  const namespaceSelector = readOptional('namespace-selector', asLabelSelector);
  const ignoreNamespaces = readOptional('ignore-namespaces', asNamespaceList) ?? [];
  const overlap = ignoreNamespaces.filter((name) => namespaces?.includes(name));
  if (overlap.length > 0) {
    throw new UsageError(
      `${overlap.map((name) => quote(name)).join(', ')} ${overlap.length === 1 ? 'is' : 'are'} in both --namespaces (from ${provenance['namespaces']}) and --ignore-namespaces (from ${provenance['ignore-namespaces']}): a namespace is either watched or ignored`,
    );
  }
  return { kubeconfig, namespaces, namespaceSelector, ignoreNamespaces };
}

/** The Lease timing, checked together: a leader must stop leading before another may take over. */
function readLease({ read, provenance }: FlagReader): Lease {
  const leaseDuration = read('lease-duration', asDuration);
  const renewDeadline = read('renew-deadline', asDuration);
  if (renewDeadline.ms >= leaseDuration.ms) {
    throw new UsageError(`--renew-deadline (${renewDeadline.text}, from ${provenance['renew-deadline']}) must be less than --lease-duration (${leaseDuration.text}, from ${provenance['lease-duration']}): a leader must stop leading before another may take over`);
  }
  return { leaseDuration, renewDeadline };
}

/** Every other setting but the notification and write-back ones, in ControllerConfig's order. */
function readSettings(reader: FlagReader, scope: Scope, lease: Lease) {
  return {
    resourceLabelSelector: reader.readOptional('resource-label-selector', asLabelSelector),
    mode: reader.read('mode', asEnum) as PolicyMode,
    hashKeyFile: reader.readOptional('hash-key-file', asPath),
    restartStrategy: reader.read('restart-strategy', asEnum) as RestartStrategy,
    debounce: reader.read('debounce', asDuration),
    workers: reader.read('workers', asInteger),
    maxConcurrentRestarts: reader.read('max-concurrent-restarts', asInteger),
    restartRate: reader.read('restart-rate', asNumber),
    restartBurst: reader.read('restart-burst', asInteger),
    minRestartInterval: reader.read('min-restart-interval', asDuration),
    pausePeriod: reader.read('pause-period', asDuration),
    healthGateTimeout: reader.read('health-gate-timeout', asDuration),
    breakerThreshold: reader.read('breaker-threshold', asInteger),
    breakerWindow: reader.read('breaker-window', asDuration),
    kubeQps: reader.read('kube-qps', asNumber),
    kubeBurst: reader.read('kube-burst', asInteger),
    resyncPeriod: reader.read('resync-period', asDuration),
    relistPeriod: reader.read('relist-period', asDuration),
    kubeRequestTimeout: reader.read('kube-request-timeout', asDuration),
    watchSilenceTimeout: reader.read('watch-silence-timeout', asDuration),
    evictionBlockedWarning: reader.read('eviction-blocked-warning', asDuration),
    eventSeriesInterval: reader.read('event-series-interval', asDuration),
    restartCheckInterval: reader.read('restart-check-interval', asDuration),
    restartProgressDeadline: reader.read('restart-progress-deadline', asDuration),
    maxClockSkew: reader.read('max-clock-skew', asDuration),
    argocdTrackingMethod: reader.read('argocd-tracking-method', asEnum) as TrackingMethod,
    argocdTrackingLabel: reader.read('argocd-tracking-label', asLabelKey),
    argocdNamespace: reader.read('argocd-namespace', asSingleNamespace),
    argocdClusters: reader.read('argocd-clusters', asBoolean),
    clusterDownWarning: reader.read('cluster-down-warning', asDuration),
    argocdSyncWait: reader.read('argocd-sync-wait', asDuration),
    argocdSyncWindows: reader.read('argocd-sync-windows', asBoolean),
    logLevel: reader.read('log-level', asEnum) as LogLevel,
    listPageSize: reader.read('list-page-size', asInteger),
    streamingList: reader.read('streaming-list', asBoolean),
    httpAddr: reader.readOptional('http-addr', asAddress) ?? (scope.kubeconfig.length > 0 ? '127.0.0.1:8080' : ':8080'),
    leaderElect: reader.read('leader-elect', asBoolean),
    leaderElectionNamespace: reader.readOptional('leader-election-namespace', asSingleNamespace),
    leaderElectionId: reader.read('leader-election-id', asLabelKey),
    leaseDuration: lease.leaseDuration,
    renewDeadline: lease.renewDeadline,
    retryPeriod: reader.read('retry-period', asDuration),
    dryRun: reader.read('dry-run', asBoolean),
  };
}

/** The command line as read: whether help was asked for, and each flag's value. */
interface Cli {
  readonly help: boolean;
  /** Flag name → value as given. */
  readonly flags: ReadonlyMap<string, string>;
}

function parseArgv(argv: readonly string[]): Cli {
  const given = readArgv(argv, {
    flags: CONTROLLER_FLAGS.map((spec) => ({ name: spec.name, boolean: spec.type === 'boolean' })),
    onPositional: (arg) => {
      throw new UsageError(`unexpected argument ${quote(arg)}: driftless controller takes only flags (see driftless controller --help)`);
    },
    helpCommand: 'driftless controller',
    expects: (row) => allowedText(findControllerFlag(row.name) as ControllerFlagSpec),
    // Unlike an environment variable, an empty flag is never a rendering accident: say so rather than fall back.
    refuseEmpty: true,
  });
  const flags = new Map<string, string>();
  for (const [name, values] of given.values) flags.set(name, values[0] as string);
  return { help: given.help, flags };
}
