/**
 * Turns `driftless controller [flags]` and the environment into one frozen,
 * validated `ControllerConfig`. This is the only place that reads either;
 * everything downstream takes the config.
 *
 * One table, `CONTROLLER_FLAGS`, drives parsing and `--help`, so the help text
 * cannot drift from the parser. Where a value comes from, first match wins:
 *   1. the flag (`--name value` or `--name=value`);
 *   2. the environment variables of its row, in order (`DRIFTLESS_<NAME>`, and
 *      for `kubeconfig` also kubectl's `KUBECONFIG`, for the notification flags
 *      Reloader's `ALERT_*`); an empty value counts as unset, as manifests often
 *      render `value: ""`;
 *   3. the row's default.
 * A config field is the flag name in camelCase (`--max-concurrent-restarts` → `maxConcurrentRestarts`).
 *
 * Values are validated here, not where they are used, so a bad value fails at
 * start with a UsageError (exit 2) naming the flag or environment variable,
 * never an hour later in a watch. Files are not read here: the hash key is
 * read by main, and no message ever quotes a file's content.
 */
import path from 'node:path';
import { parseGoDuration, type PolicyMode } from '../core/index.ts';
import { UsageError } from '../cli/errors.ts';
import { envName, helpRow, parseArgv as readArgv, parseBoolean } from '../cli/flags.ts';
import type { RestartStrategy } from './model.ts';
import { NOTIFY_EVENTS, NOTIFY_SINKS, type NotifyEvent, type NotifySink } from './notify/message.ts';
import { parseWebhookUrl, type WebhookUrl } from './notify/url.ts';
import { DEFAULT_MESSAGE_TEMPLATE } from './writeback/message.ts';

// ---------------------------------------------------------------------------
// the configuration

/** A duration flag: milliseconds for timers, and the text as written for messages (`2s`, `1m30s`). */
export interface DurationSetting {
  readonly ms: number;
  readonly text: string;
}

/** Argo CD's `application.resourceTrackingMethod`. */
export type TrackingMethod = (typeof TRACKING_METHODS)[number];

/** The log levels the controller's logger accepts. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * A label-selector requirement, as Kubernetes parses one: `key` (Exists), `!key`
 * (DoesNotExist), `key=value` / `key==value` (Equals), `key!=value` (NotEquals,
 * which also matches objects without the label), `key in (a,b)`, `key notin (a,b)`.
 */
export interface LabelRequirement {
  readonly key: string;
  readonly operator: 'Exists' | 'DoesNotExist' | 'Equals' | 'NotEquals' | 'In' | 'NotIn';
  /** `[]` for Exists/DoesNotExist, one value for Equals/NotEquals, sorted and unique for In/NotIn. */
  readonly values: readonly string[];
}

/** A validated label selector. */
export interface LabelSelector {
  /** The canonical text, for the API's `labelSelector` parameter and for logs. */
  readonly text: string;
  /** Every requirement must hold (Kubernetes ANDs them). */
  readonly requirements: readonly LabelRequirement[];
}

/** Where one flag's value came from, for messages: `flag --workers`, `DRIFTLESS_WORKERS`, `KUBECONFIG`, `default`. */
export type Provenance = string;

/** Everything `driftless controller` needs, parsed once. Deeply frozen. */
export interface ControllerConfig {
  readonly command: 'run';
  /**
   * Kubeconfig files to load, merged in order as kubectl does (`KUBECONFIG`
   * may list several, separated by `path.delimiter`); `[]` = in-cluster config.
   * Paths as given: relative ones resolve against the working directory.
   */
  readonly kubeconfig: readonly string[];
  /**
   * Only these namespaces, sorted and unique; `undefined` = all namespaces.
   * With a list, only namespaced list/watch calls are made, so a namespaced Role suffices.
   */
  readonly namespaces: readonly string[] | undefined;
  /** Only namespaces whose labels match; `undefined` = no filter. */
  readonly namespaceSelector: LabelSelector | undefined;
  /** Namespaces never acted on, sorted and unique; `[]` = none. Disjoint from `namespaces`. */
  readonly ignoreNamespaces: readonly string[];
  /** Only ConfigMaps and Secrets whose labels match are considered; `undefined` = all. */
  readonly resourceLabelSelector: LabelSelector | undefined;
  /** Which workloads are eligible, with the plugin's meaning. */
  readonly mode: PolicyMode;
  /** The HMAC key file for config digests, as given; `undefined` = plain SHA-256. Read by main, never here. */
  readonly hashKeyFile: string | undefined;
  /** The strategy of workloads without `driftless.dev/restart-strategy`. */
  readonly restartStrategy: RestartStrategy;
  /** Changes to one workload's configs within this window give one restart (0 = none). */
  readonly debounce: DurationSetting;
  /** Reconcile workers (concurrent workload keys). */
  readonly workers: number;
  /** Global cap on workloads restarting at once. */
  readonly maxConcurrentRestarts: number;
  /** Restart starts per second, fleet-wide (a token bucket on top of the concurrency cap). */
  readonly restartRate: number;
  /** Restart starts allowed in a burst above `restartRate`. */
  readonly restartBurst: number;
  /** Per workload, the least time between two restart starts (0 = none). */
  readonly minRestartInterval: DurationSetting;
  /** Per workload, further restarts wait this long after one (Reloader's pause period; the annotation wins; 0 = none). */
  readonly pausePeriod: DurationSetting;
  /** A restart's replacement pods must be Ready this long after their creation, or the workload's restarts halt (0 = no gate). */
  readonly healthGateTimeout: DurationSetting;
  /** This many halted restarts within `breakerWindow`, fleet-wide, pause every restart. */
  readonly breakerThreshold: number;
  readonly breakerWindow: DurationSetting;
  /** Client-side rate limit on every API request: sustained requests per second. */
  readonly kubeQps: number;
  /** Client-side rate limit: burst size. */
  readonly kubeBurst: number;
  /** Periodic relist, a backstop for missed watch events. */
  readonly resyncPeriod: DurationSetting;
  /** `--relist-period`: 0 = only at the start and after 410. */
  readonly relistPeriod: DurationSetting;
  /** `--kube-request-timeout`. */
  readonly kubeRequestTimeout: DurationSetting;
  /** A watch that delivers nothing, not even a bookmark, for this long is restarted. */
  readonly watchSilenceTimeout: DurationSetting;
  /** A restart blocked (PodDisruptionBudget, 429) longer than this gets a Warning Event. */
  readonly evictionBlockedWarning: DurationSetting;
  /** A repeated Event's rising count is written at most this often. */
  readonly eventSeriesInterval: DurationSetting;
  /** How often restarts in progress are rechecked. */
  readonly restartCheckInterval: DurationSetting;
  /** A warning when this clock seems further than this from the API server's. */
  readonly maxClockSkew: DurationSetting;
  /** A restart without progress this long is halted and gives its slot back; 0: never. */
  readonly restartProgressDeadline: DurationSetting;
  /** How Argo CD tracks its objects, to tell in-band configs from out-of-band ones. */
  readonly argocdTrackingMethod: TrackingMethod;
  /** The label key of Argo CD's label tracking (`application.instanceLabelKey`). */
  readonly argocdTrackingLabel: string;
  /** Where Argo CD's Applications are watched, to hold a restart its pending sync performs anyway (ADR 0011). */
  readonly argocdNamespace: string;
  /** The longest a restart holds, from T, for Argo CD's pending sync; 0 = never. */
  readonly argocdSyncWait: DurationSetting;
  /** In-cluster restarts honour the AppProject sync windows of the workload's Application (issue 15 §8). */
  readonly argocdSyncWindows: boolean;
  readonly logLevel: LogLevel;
  /** Page size of ConfigMap and Secret lists (`limit`), so a list never holds a namespace's payload at once. */
  readonly listPageSize: number;
  /** Where /healthz, /readyz and /metrics listen (port 0: any free port). */
  readonly httpAddr: string;
  /** Campaign for a Lease; only the leader writes. */
  readonly leaderElect: boolean;
  /** The Lease's namespace (default: the pod's namespace from the service account, else `default`). */
  readonly leaderElectionNamespace: string | undefined;
  readonly leaderElectionId: string;
  readonly leaseDuration: DurationSetting;
  readonly renewDeadline: DurationSetting;
  readonly retryPeriod: DurationSetting;
  /** Decide and report (logs, Events, metrics) without writing to workloads or evicting. */
  readonly dryRun: boolean;
  /** Where notifications are posted; `undefined` = not given here (see `notifyWebhookUrlFile`). Shows only its origin when printed. */
  readonly notifyWebhookUrl: WebhookUrl | undefined;
  /** A file holding the webhook URL, as given; read by main, never here. Exclusive with `notifyWebhookUrl`. */
  readonly notifyWebhookUrlFile: string | undefined;
  /** The receiver's format. */
  readonly notifySink: NotifySink;
  /** What is notified, in NOTIFY_EVENTS order; `[]` = nothing. Notifications are on when this and a URL are both given. */
  readonly notifyOn: readonly NotifyEvent[];
  /** Text put before every notification (`"<info> : <text>"`, as Reloader), e.g. the cluster's name. */
  readonly notifyAdditionalInfo: string | undefined;
  // The Git write-back (controller/writeback/, ADR 0014) of the git restart strategy (controller/restart/git.ts, ADR 0016).
  /** Commit author (and committer) of write-backs. */
  readonly writeBackAuthorName: string;
  readonly writeBackAuthorEmail: string;
  /** The commit message template: `{applications}`, `{configs}`, `{workloads}`, `{count}`. */
  readonly writeBackMessage: string;
  /** Submissions for one repository and branch within this window become one commit. */
  readonly writeBackBatchWindow: DurationSetting;
  /** Parent of the private clones; `undefined` = the OS temporary directory. */
  readonly writeBackWorkDir: string | undefined;
  /** Push attempts in all when others keep pushing first (non-fast-forward). */
  readonly writeBackPushAttempts: number;
  /** Wait before the second push attempt, doubled for each further one (capped at 16 times). */
  readonly writeBackRetryBackoff: DurationSetting;
  /** A git command silent for this long is killed. */
  readonly writeBackGitTimeout: DurationSetting;
  /** A Secret in `argocdNamespace` with the Git credentials, instead of Argo CD's repository Secrets. */
  readonly writeBackCredentialsSecret: string | undefined;
  /** Namespaces whose workloads default to the `git` strategy (sorted, unique). */
  readonly writeBackNamespaces: readonly string[];
  /** Applications (`name` or `namespace/name`) whose workloads default to the `git` strategy (sorted, unique). */
  readonly writeBackApplications: readonly string[];
  /** `plugin.name` values that mark the source the plugin renders (where the file is written). */
  readonly writeBackPluginNames: readonly string[];
  /** A Secret in `argocdNamespace` whose `sshSigningKey` or `gpgSigningKey` signs write-back commits; `undefined` = unsigned. */
  readonly writeBackSigningSecret: string | undefined;
  /** How long a write-back may keep failing (from the change) before the fallback. */
  readonly writeBackFallbackAfter: DurationSetting;
  /** What a change whose write-back failed for `writeBackFallbackAfter` gets: an in-cluster restart, or nothing. */
  readonly writeBackFallback: WriteBackFallback;
  /** For each flag name, where its value came from. */
  readonly provenance: Readonly<Record<string, Provenance>>;
}

/** `--help` / `-h`: print `controllerUsageText()`; nothing else was read. */
export interface ControllerHelp {
  readonly command: 'help';
}

// ---------------------------------------------------------------------------
// the flag table

/** How a flag's value is read and validated. */
export type ControllerFlagType =
  /** A file path, as given. */
  | 'path'
  /** Comma-separated namespace names (DNS-1123 labels); empty items are dropped. */
  | 'namespace-list'
  /** One namespace name (a DNS-1123 label). */
  | 'namespace'
  /** A Kubernetes label selector. */
  | 'label-selector'
  /** A Kubernetes label key (`[prefix/]name`). */
  | 'label-key'
  | 'enum'
  /** A Go duration (`2s`, `5m`, `1m30s`), as the plugin's timeout. */
  | 'duration'
  /** A whole number in decimal digits. */
  | 'integer'
  /** A decimal number (`20`, `7.5`). */
  | 'number'
  /** `true` or `false`; the bare flag means `true`. */
  | 'boolean'
  /** A listen address: `host:port`, `:port` or `[v6]:port`. */
  | 'address'
  /** An absolute http(s) URL; never quoted in a message (it may hold a token). */
  | 'url'
  /** Comma-separated notification events, or `none`. */
  | 'event-list'
  /** Free text. */
  | 'text'
  /** A Kubernetes object name (a DNS-1123 subdomain). */
  | 'object-name'
  /** Comma-separated object names, each optionally `namespace/name`. */
  | 'name-list';

/** Inclusive bounds, except `min` when `minExclusive` (e.g. a rate `> 0`). Durations are bounded in milliseconds. */
export interface FlagRange {
  readonly min: number;
  readonly minExclusive?: boolean;
  readonly max?: number;
}

/** One row of the flag table. */
export interface ControllerFlagSpec {
  /** The flag without dashes; also the provenance key. */
  readonly name: string;
  /** `--<name>`. */
  readonly flag: string;
  /** Environment variables read when the flag is not given, in order: `DRIFTLESS_<NAME>` first. */
  readonly env: readonly string[];
  readonly type: ControllerFlagType;
  /** The allowed values of an `enum`. */
  readonly values?: readonly string[];
  /** Bounds of an `integer`, `number` or `duration`. */
  readonly range?: FlagRange;
  /** The default as a flag value would be written; `''` = none (the field is undefined, or derived, see `defaultText`). */
  readonly default: string;
  /** What `--help` shows as the default when `default` is `''`. */
  readonly defaultText?: string;
  /** One line for `--help`. */
  readonly description: string;
}

/** The most a timer can wait in Node (2^31 - 1 ms); longer durations are capped well below it. */
const MAX_DURATION_MS = 24 * 3_600_000;
const MAX_DURATION_TEXT = '24h';

/** A range bound as a user writes it: `0`, `24h`, `10m`, `1s`, else milliseconds. */
function durationBound(ms: number): string {
  if (ms === 0) return '0';
  if (ms === MAX_DURATION_MS) return MAX_DURATION_TEXT;
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** Argo CD's tracking methods, in its documentation's order. */
export const TRACKING_METHODS = Object.freeze(['annotation', 'label', 'annotation+label'] as const);

/** The log levels, most verbose first. */
export const LOG_LEVELS = Object.freeze(['trace', 'debug', 'info', 'warn', 'error'] as const);

/** What a change whose write-back keeps failing gets (`--write-back-fallback`). */
export type WriteBackFallback = 'restart' | 'none';
const WRITE_BACK_FALLBACKS = Object.freeze(['restart', 'none'] as const satisfies readonly WriteBackFallback[]);

const RESTART_STRATEGIES = Object.freeze(['evict', 'rollout', 'none'] as const satisfies readonly RestartStrategy[]);
const MODES = Object.freeze(['annotated', 'all'] as const satisfies readonly PolicyMode[]);

function flag(spec: Omit<ControllerFlagSpec, 'flag' | 'env'> & { readonly extraEnv?: readonly string[] }): ControllerFlagSpec {
  const { extraEnv = [], ...rest } = spec;
  return Object.freeze({ ...rest, flag: `--${spec.name}`, env: Object.freeze([`DRIFTLESS_${envName(spec.name)}`, ...extraEnv]) });
}

const positiveDuration: FlagRange = Object.freeze({ min: 0, minExclusive: true, max: MAX_DURATION_MS });

/** Every flag of `driftless controller`, in `--help` order. */
export const CONTROLLER_FLAGS: readonly ControllerFlagSpec[] = Object.freeze([
  flag({
    name: 'kubeconfig',
    extraEnv: ['KUBECONFIG'],
    type: 'path',
    default: '',
    defaultText: 'KUBECONFIG, else in-cluster',
    description:
      'Kubeconfig file for API access. KUBECONFIG may list several files (merged as kubectl does); without either the in-cluster service account is used.',
  }),
  flag({
    name: 'namespaces',
    type: 'namespace-list',
    default: '',
    defaultText: 'all',
    description:
      'Comma-separated namespaces to watch. With a list only namespaced list/watch calls are made, so a namespaced Role per namespace suffices.',
  }),
  flag({
    name: 'namespace-selector',
    type: 'label-selector',
    default: '',
    defaultText: 'none',
    description: 'Only act in namespaces whose labels match this label selector (e.g. "team=web,env notin (dev)").',
  }),
  flag({
    name: 'ignore-namespaces',
    type: 'namespace-list',
    default: '',
    defaultText: 'none',
    description: 'Comma-separated namespaces never acted on (must not overlap --namespaces).',
  }),
  flag({
    name: 'resource-label-selector',
    type: 'label-selector',
    default: '',
    defaultText: 'none',
    description: 'Only ConfigMaps and Secrets whose labels match this label selector are listed, watched and considered.',
  }),
  flag({
    name: 'mode',
    type: 'enum',
    values: MODES,
    default: 'annotated',
    description:
      'Which workloads are restarted, with the plugin\'s meaning: annotated (only those with Reloader annotations; a live restart is never a surprise) or all.',
  }),
  flag({
    name: 'hash-key-file',
    type: 'path',
    default: '',
    defaultText: 'none',
    description: 'File whose bytes are the HMAC key of config digests, as the plugin\'s. Without one digests are plain SHA-256.',
  }),
  flag({
    name: 'restart-strategy',
    type: 'enum',
    values: RESTART_STRATEGIES,
    default: 'evict',
    description:
      'Restart strategy of workloads without a driftless.dev/restart-strategy annotation: evict (paced evictions, no spec change), rollout (a pod-template annotation), none.',
  }),
  flag({
    name: 'debounce',
    type: 'duration',
    range: { min: 0, max: MAX_DURATION_MS },
    default: '2s',
    description: 'Changes to one workload\'s configs within this window give one restart (0 restarts at once).',
  }),
  flag({
    name: 'workers',
    type: 'integer',
    range: { min: 1 },
    default: '4',
    description: 'Reconcile workers: how many workloads are decided on at once.',
  }),
  flag({
    name: 'max-concurrent-restarts',
    type: 'integer',
    range: { min: 1 },
    default: '10',
    description: 'Global cap on workloads restarting at once, so one Secret used by many workloads cannot flood the cluster.',
  }),
  flag({
    name: 'restart-rate',
    type: 'number',
    range: { min: 0, minExclusive: true },
    default: '1',
    description: 'Restart starts per second, fleet-wide (a token bucket on top of --max-concurrent-restarts); a workload that must wait is requeued.',
  }),
  flag({
    name: 'restart-burst',
    type: 'integer',
    range: { min: 1 },
    default: '10',
    description: 'Restart starts allowed at once above --restart-rate.',
  }),
  flag({
    name: 'min-restart-interval',
    type: 'duration',
    range: { min: 0, max: MAX_DURATION_MS },
    default: '1m',
    description: 'Least time between two restarts of one workload: a config that flips repeatedly gives at most one restart per interval and a Warning Event (0 = none).',
  }),
  flag({
    name: 'pause-period',
    type: 'duration',
    range: { min: 0, max: MAX_DURATION_MS },
    default: '0',
    description: 'After a restart, further restarts of the workload wait this long (Reloader\'s pause period; the deployment.reloader.stakater.com/pause-period annotation wins; 0 = none).',
  }),
  flag({
    name: 'health-gate-timeout',
    type: 'duration',
    range: { min: 0, max: MAX_DURATION_MS },
    default: '5m',
    description: 'A restart\'s replacement pods must be Ready this long after their creation, else the workload\'s restarts halt (driftless.dev/restart-halted; 0 = no gate).',
  }),
  flag({
    name: 'breaker-threshold',
    type: 'integer',
    range: { min: 1 },
    default: '3',
    description: 'This many halted restarts within --breaker-window, fleet-wide, pause every restart until an operator removes the driftless.dev/restart-halted annotations.',
  }),
  flag({
    name: 'breaker-window',
    type: 'duration',
    range: positiveDuration,
    default: '10m',
    description: 'The window of --breaker-threshold.',
  }),
  flag({
    name: 'kube-qps',
    type: 'number',
    range: { min: 0, minExclusive: true },
    default: '20',
    description: 'Client-side rate limit on every API request: sustained requests per second.',
  }),
  flag({
    name: 'kube-burst',
    type: 'integer',
    range: { min: 1 },
    default: '40',
    description: 'Client-side rate limit on every API request: requests allowed in a burst above --kube-qps.',
  }),
  flag({
    name: 'resync-period',
    type: 'duration',
    range: positiveDuration,
    default: '10m',
    description: 'Every cached workload is reconciled again this often, from the caches (no API request): the level-triggered backstop.',
  }),
  flag({
    name: 'relist-period',
    type: 'duration',
    range: { min: 0, max: MAX_DURATION_MS },
    default: '0',
    description: 'Full relist of every watched resource from the API server this often, an opt-in backstop for missed watch events (0, the default: relist only at the start and after 410 Expired, as client-go does).',
  }),
  flag({
    name: 'kube-request-timeout',
    type: 'duration',
    range: positiveDuration,
    default: '30s',
    description: 'Deadline of every API request but a watch. Writes get min(this, --lease-duration minus --renew-deadline) under --leader-elect, so a write that passed the leadership fence is over before a standby can lead.',
  }),
  flag({
    name: 'watch-silence-timeout',
    type: 'duration',
    range: positiveDuration,
    default: '5m',
    description:
      'A watch that delivers nothing, not even a bookmark, for this long is restarted (the API server sends bookmarks about every minute).',
  }),
  flag({
    name: 'eviction-blocked-warning',
    type: 'duration',
    range: positiveDuration,
    default: '5m',
    description: 'A restart blocked by a PodDisruptionBudget (429) for longer than this gets a Warning Event.',
  }),
  flag({
    name: 'event-series-interval',
    type: 'duration',
    range: { min: 1000, max: 10 * 60_000 },
    default: '1m',
    description:
      'A repeated Event (same object, reason and message) is counted on the first one, not written again; its rising count is written at most this often (client-go\'s event series uses a minute).',
  }),
  flag({
    name: 'restart-progress-deadline',
    type: 'duration',
    range: { min: 0, max: MAX_DURATION_MS },
    default: '10m',
    description:
      'A restart whose pods do not move for this long while it waits on the workload (its rollout, unschedulable replacements, a Rollout\'s status.restartedAt) is halted with a Warning Event and gives its --max-concurrent-restarts slot back (0 = never).',
  }),
  flag({
    name: 'max-clock-skew',
    type: 'duration',
    range: positiveDuration,
    default: '2s',
    description:
      'A warning is logged when this clock seems further than this from the API server\'s (learnt from the times of fresh writes; driftless_clock_offset_seconds). Restarts use the API server\'s clock either way.',
  }),
  flag({
    name: 'restart-check-interval',
    type: 'duration',
    range: positiveDuration,
    default: '5s',
    description: 'How often restarts in progress are rechecked (replacement pods Ready, next eviction due).',
  }),
  flag({
    name: 'argocd-tracking-method',
    type: 'enum',
    values: TRACKING_METHODS,
    default: 'annotation',
    description: "How Argo CD tracks resources, as its application.resourceTrackingMethod: tells configs Argo CD syncs from out-of-band ones.",
  }),
  flag({
    name: 'argocd-tracking-label',
    type: 'label-key',
    default: 'app.kubernetes.io/instance',
    description: "The label of Argo CD's label tracking, as its application.instanceLabelKey.",
  }),
  flag({
    name: 'argocd-namespace',
    type: 'namespace',
    default: 'argocd',
    description: "Namespace of Argo CD's Applications, watched (list/watch applications.argoproj.io) to know of a pending sync; without the CRD or the permission the wait is off.",
  }),
  flag({
    name: 'argocd-sync-wait',
    type: 'duration',
    range: { min: 0, max: MAX_DURATION_MS },
    default: '60s',
    description: "A restart holds at most this long after T while the workload's Application has a sync running, a refresh requested, or automated sync and the workload OutOfSync: the sync rolls it anyway (0 never waits).",
  }),
  flag({
    name: 'argocd-sync-windows',
    type: 'boolean',
    default: 'true',
    description: "An in-cluster restart (eviction, spec.restartAt) waits while the sync windows of its Application's AppProject (list/watch appprojects.argoproj.io in --argocd-namespace) do not allow an automated sync; without the CRD or the permission nothing waits.",
  }),
  flag({
    name: 'log-level',
    type: 'enum',
    values: LOG_LEVELS,
    default: 'info',
    description: 'Least severe level logged (JSON lines on stdout).',
  }),
  flag({
    name: 'list-page-size',
    type: 'integer',
    range: { min: 1, max: 5000 },
    default: '100',
    description: 'ConfigMaps and Secrets are listed in pages of this many objects, so memory does not grow with a namespace\'s payload.',
  }),
  flag({
    name: 'http-addr',
    type: 'address',
    default: '',
    defaultText: '127.0.0.1:8080 with a kubeconfig (a local run), :8080 in a cluster',
    description: 'Where /healthz, /readyz and /metrics listen (nothing else is served).',
  }),
  flag({
    name: 'leader-elect',
    type: 'boolean',
    default: 'false',
    description: 'Campaign for a coordination.k8s.io Lease: standbys keep their caches warm, only the leader writes.',
  }),
  flag({
    name: 'leader-election-namespace',
    type: 'namespace',
    default: '',
    defaultText: 'POD_NAMESPACE, else the service account\'s namespace, else default',
    description: 'Namespace of the leader-election Lease.',
  }),
  flag({
    name: 'leader-election-id',
    type: 'label-key',
    default: 'driftless-controller',
    description: 'Name of the leader-election Lease.',
  }),
  flag({
    name: 'lease-duration',
    type: 'duration',
    range: positiveDuration,
    default: '15s',
    description: 'How long a Lease holder that stops renewing keeps it; failover happens within this.',
  }),
  flag({
    name: 'renew-deadline',
    type: 'duration',
    range: positiveDuration,
    default: '10s',
    description: 'A leader that cannot renew within this stops leading (must be less than --lease-duration).',
  }),
  flag({
    name: 'retry-period',
    type: 'duration',
    range: positiveDuration,
    default: '2s',
    description: 'How often candidates try to take the Lease and the leader renews it.',
  }),
  flag({
    name: 'dry-run',
    type: 'boolean',
    default: 'false',
    description: 'Decide and report (logs, Events, metrics) without writing to workloads or evicting pods.',
  }),
  flag({
    name: 'notify-webhook-url',
    extraEnv: ['ALERT_WEBHOOK_URL'],
    type: 'url',
    default: '',
    defaultText: 'none: no notifications',
    description:
      'Post a notification here for each restart (see --notify-on). The URL usually holds a token: prefer --notify-webhook-url-file; logs show only its origin.',
  }),
  flag({
    name: 'notify-webhook-url-file',
    type: 'path',
    default: '',
    defaultText: 'none',
    description: 'File holding the webhook URL (e.g. a mounted Secret key), instead of --notify-webhook-url.',
  }),
  flag({
    name: 'notify-sink',
    extraEnv: ['ALERT_SINK'],
    type: 'enum',
    values: NOTIFY_SINKS,
    default: '',
    defaultText: 'webhook; raw when the URL comes from ALERT_WEBHOOK_URL, as Reloader',
    description:
      'The receiver: slack, teams, gchat (their incoming webhooks), webhook (Driftless JSON, schema driftless.dev/notification/v1) or raw (plain text, as Reloader\'s webhook sink). ALERT_SINK=webhook means raw, as in Reloader.',
  }),
  flag({
    name: 'notify-on',
    extraEnv: ['ALERT_ON_RELOAD'],
    type: 'event-list',
    default: '',
    defaultText: 'started,finished,blocked,skipped; with ALERT_WEBHOOK_URL, only what ALERT_ON_RELOAD turns on',
    description:
      'What is notified: comma-separated started, finished, blocked, skipped, or none. Reloader\'s ALERT_ON_RELOAD=true means started (its alert after each reload); any other value, none.',
  }),
  flag({
    name: 'notify-additional-info',
    extraEnv: ['ALERT_ADDITIONAL_INFO'],
    type: 'text',
    default: '',
    defaultText: 'none',
    description: 'Text put before every notification as "<text> : <notification>", as Reloader does, e.g. the cluster\'s name.',
  }),
  ...writeBackFlags(),
]);

/** Looks a flag up by name (without dashes). */
export function findControllerFlag(name: string): ControllerFlagSpec | undefined {
  return CONTROLLER_FLAGS.find((spec) => spec.name === name);
}

// ---------------------------------------------------------------------------
// parsing

type Env = Readonly<Record<string, string | undefined>>;

/** A value before typing, and where it came from. */
interface Given {
  readonly text: string;
  readonly from: Provenance;
}

/**
 * Parses the arguments after `driftless controller` and the environment.
 * `--help` anywhere wins over everything else except a malformed command line.
 * Throws UsageError naming the flag or environment variable, what is wrong and what is allowed.
 */
export function parseControllerConfig(argv: readonly string[], env: Env): ControllerConfig | ControllerHelp {
  const cli = parseArgv(argv);
  if (cli.help) return Object.freeze({ command: 'help' });

  const provenance: Record<string, Provenance> = {};
  const lookup = (name: string): { spec: ControllerFlagSpec; given: Given | undefined } => {
    const spec = findControllerFlag(name);
    if (spec === undefined) throw new Error(`internal: unknown controller flag ${name}`);
    const fromFlag = cli.flags.get(name);
    if (fromFlag !== undefined) return { spec, given: { text: fromFlag, from: `flag ${spec.flag}` } };
    for (const variable of spec.env) {
      const value = env[variable];
      if (value !== undefined && value !== '') return { spec, given: { text: value, from: variable } };
    }
    return { spec, given: undefined };
  };
  /** A flag with a default: the default text goes through the same converter, so table and value cannot disagree. */
  const read = <T>(name: string, convert: (given: Given, spec: ControllerFlagSpec) => T): T => {
    const { spec, given } = lookup(name);
    provenance[name] = given?.from ?? 'default';
    if (spec.default === '') throw new Error(`internal: controller flag ${name} has no default`);
    return convert(given ?? { text: spec.default, from: 'default' }, spec);
  };
  /** A flag without a default: `undefined` when not given. */
  const readOptional = <T>(name: string, convert: (given: Given, spec: ControllerFlagSpec) => T): T | undefined => {
    const { spec, given } = lookup(name);
    provenance[name] = given?.from ?? 'default';
    return given === undefined ? undefined : convert(given, spec);
  };

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

  const leaseDuration = read('lease-duration', asDuration);
  const renewDeadline = read('renew-deadline', asDuration);
  if (renewDeadline.ms >= leaseDuration.ms) {
    throw new UsageError(`--renew-deadline (${renewDeadline.text}, from ${provenance['renew-deadline']}) must be less than --lease-duration (${leaseDuration.text}, from ${provenance['lease-duration']}): a leader must stop leading before another may take over`);
  }

  return deepFreeze({
    command: 'run',
    kubeconfig,
    namespaces,
    namespaceSelector,
    ignoreNamespaces,
    resourceLabelSelector: readOptional('resource-label-selector', asLabelSelector),
    mode: read('mode', asEnum) as PolicyMode,
    hashKeyFile: readOptional('hash-key-file', asPath),
    restartStrategy: read('restart-strategy', asEnum) as RestartStrategy,
    debounce: read('debounce', asDuration),
    workers: read('workers', asInteger),
    maxConcurrentRestarts: read('max-concurrent-restarts', asInteger),
    restartRate: read('restart-rate', asNumber),
    restartBurst: read('restart-burst', asInteger),
    minRestartInterval: read('min-restart-interval', asDuration),
    pausePeriod: read('pause-period', asDuration),
    healthGateTimeout: read('health-gate-timeout', asDuration),
    breakerThreshold: read('breaker-threshold', asInteger),
    breakerWindow: read('breaker-window', asDuration),
    kubeQps: read('kube-qps', asNumber),
    kubeBurst: read('kube-burst', asInteger),
    resyncPeriod: read('resync-period', asDuration),
    relistPeriod: read('relist-period', asDuration),
    kubeRequestTimeout: read('kube-request-timeout', asDuration),
    watchSilenceTimeout: read('watch-silence-timeout', asDuration),
    evictionBlockedWarning: read('eviction-blocked-warning', asDuration),
    eventSeriesInterval: read('event-series-interval', asDuration),
    restartCheckInterval: read('restart-check-interval', asDuration),
    restartProgressDeadline: read('restart-progress-deadline', asDuration),
    maxClockSkew: read('max-clock-skew', asDuration),
    argocdTrackingMethod: read('argocd-tracking-method', asEnum) as TrackingMethod,
    argocdTrackingLabel: read('argocd-tracking-label', asLabelKey),
    argocdNamespace: read('argocd-namespace', asSingleNamespace),
    argocdSyncWait: read('argocd-sync-wait', asDuration),
    argocdSyncWindows: read('argocd-sync-windows', asBoolean),
    logLevel: read('log-level', asEnum) as LogLevel,
    listPageSize: read('list-page-size', asInteger),
    httpAddr: readOptional('http-addr', asAddress) ?? (kubeconfig.length > 0 ? '127.0.0.1:8080' : ':8080'),
    leaderElect: read('leader-elect', asBoolean),
    leaderElectionNamespace: readOptional('leader-election-namespace', asSingleNamespace),
    leaderElectionId: read('leader-election-id', asLabelKey),
    leaseDuration,
    renewDeadline,
    retryPeriod: read('retry-period', asDuration),
    dryRun: read('dry-run', asBoolean),
    ...readNotifySettings(readOptional, provenance),
    ...readWriteBackSettings(read, readOptional),
    provenance,
  } satisfies ControllerConfig);
}

type ReadOptional = <T>(name: string, convert: (given: Given, spec: ControllerFlagSpec) => T) => T | undefined;
type NotifySettings = Pick<ControllerConfig, 'notifyWebhookUrl' | 'notifyWebhookUrlFile' | 'notifySink' | 'notifyOn' | 'notifyAdditionalInfo'>;

/**
 * The notification flags, with Reloader's meaning where its variables are used: a URL from
 * `ALERT_WEBHOOK_URL` alerts only when `ALERT_ON_RELOAD=true` and defaults to the plain-text sink.
 */
function readNotifySettings(readOptional: ReadOptional, provenance: Record<string, Provenance>): NotifySettings {
  const notifyWebhookUrl = readOptional('notify-webhook-url', asWebhookUrl);
  const notifyWebhookUrlFile = readOptional('notify-webhook-url-file', asPath);
  const fromReloader = provenance['notify-webhook-url'] === 'ALERT_WEBHOOK_URL';
  if (notifyWebhookUrl !== undefined && notifyWebhookUrlFile !== undefined) {
    throw new UsageError(`--notify-webhook-url (from ${provenance['notify-webhook-url']}) and --notify-webhook-url-file (from ${provenance['notify-webhook-url-file']}) both name the webhook: give one`);
  }
  const notifySink = readOptional('notify-sink', asNotifySink) ?? (fromReloader ? 'raw' : 'webhook');
  const notifyOn = readOptional('notify-on', asNotifyEvents) ?? (fromReloader ? [] : NOTIFY_EVENTS);
  const notifyAdditionalInfo = readOptional('notify-additional-info', asText);
  if (notifyWebhookUrl === undefined && notifyWebhookUrlFile === undefined) {
    // Asked for notifications but said nowhere to send them: fail now rather than stay silent at the first restart.
    // Reloader's ALERT_SINK and ALERT_ADDITIONAL_INFO alone are left over from a disabled alert, as Reloader treats them.
    const asked = ['notify-sink', 'notify-additional-info'].find((name) => provenance[name] !== 'default' && !provenance[name]?.startsWith('ALERT_'))
      ?? (provenance['notify-on'] !== 'default' && notifyOn.length > 0 ? 'notify-on' : undefined);
    if (asked !== undefined) {
      throw new UsageError(`--${asked} (from ${provenance[asked]}) needs --notify-webhook-url or --notify-webhook-url-file: notifications need somewhere to go`);
    }
  }
  return { notifyWebhookUrl, notifyWebhookUrlFile, notifySink, notifyOn, notifyAdditionalInfo };
}

// ---------------------------------------------------------------------------
// the Git write-back's flags (kept together so they move as one block)

/** The write-back's rows of the flag table, appended at its end. */
function writeBackFlags(): readonly ControllerFlagSpec[] {
  return [
    flag({ name: 'write-back-author-name', type: 'text', default: 'driftless', description: 'Author and committer name of write-back commits (strategy git).' }),
    flag({ name: 'write-back-author-email', type: 'text', default: 'driftless@noreply.invalid', description: 'Author and committer e-mail of write-back commits.' }),
    flag({
      name: 'write-back-message',
      type: 'text',
      default: '',
      defaultText: JSON.stringify(DEFAULT_MESSAGE_TEMPLATE),
      description: 'Commit message template of write-backs: {applications}, {configs}, {workloads}, {count}; \\n is a line break. Never holds a value or digest.',
    }),
    flag({
      name: 'write-back-batch-window',
      type: 'duration',
      range: { min: 0, max: MAX_DURATION_MS },
      default: '5s',
      description: 'Write-backs to one repository and branch within this window become one commit (several Applications of a monorepo included).',
    }),
    flag({ name: 'write-back-work-dir', type: 'path', default: '', defaultText: 'the OS temporary directory', description: 'Where write-backs clone, each into a private (0700) directory removed afterwards.' }),
    flag({
      name: 'write-back-push-attempts',
      type: 'integer',
      range: { min: 1, max: 20 },
      default: '5',
      description: 'Push attempts of one write-back when others push first (re-fetch, re-apply, retry); then it fails as non-fast-forward.',
    }),
    flag({ name: 'write-back-retry-backoff', type: 'duration', range: { min: 0, max: 60_000 }, default: '500ms', description: 'Wait before the second push attempt, doubled for each further one (at most 16 times this).' }),
    flag({ name: 'write-back-git-timeout', type: 'duration', range: positiveDuration, default: '60s', description: 'A git command of a write-back that is silent for this long is killed.' }),
    flag({
      name: 'write-back-credentials-secret',
      type: 'object-name',
      default: '',
      defaultText: "none: Argo CD's repository Secrets",
      description: "A Secret in --argocd-namespace holding the write-back's Git credentials (url, and username/password or sshPrivateKey), instead of Argo CD's repository-write, repo-write-creds, repository and repo-creds Secrets; given only to repositories its url covers (exact or prefix).",
    }),
    flag({ name: 'write-back-namespaces', type: 'namespace-list', default: '', defaultText: 'none', description: 'Workloads in these namespaces default to the git strategy (the driftless.dev/restart-strategy annotation wins).' }),
    flag({ name: 'write-back-applications', type: 'name-list', default: '', defaultText: 'none', description: 'Workloads of these Argo CD Applications (name, or namespace/name) default to the git strategy.' }),
    flag({
      name: 'write-back-signing-secret',
      type: 'object-name',
      default: '',
      defaultText: 'none: commits are not signed',
      description: 'A Secret in --argocd-namespace whose sshSigningKey (an OpenSSH private key) or gpgSigningKey (an ASCII-armoured OpenPGP secret key), without passphrase, signs write-back commits.',
    }),
    flag({
      name: 'write-back-fallback-after',
      type: 'duration',
      range: positiveDuration,
      default: '10m',
      description: 'A write-back still failing (bad credentials, protected branch) or unanswered this long after the change: a Warning Event, the driftless_writeback_fallbacks_total metric, and --write-back-fallback (a refused source, such as a Helm chart, falls back at once). A commit Argo CD has not synced this long after it: a Warning, and the restart stops waiting (nothing restarted in the cluster).',
    }),
    flag({
      name: 'write-back-fallback',
      type: 'enum',
      values: WRITE_BACK_FALLBACKS,
      default: 'restart',
      description: "What a change whose write-back keeps failing gets: restart (the workload's in-cluster strategy: evictions, or a Rollout's spec.restartAt) or none (recorded only).",
    }),
    flag({ name: 'write-back-plugin-names', type: 'name-list', default: 'driftless-v1', description: "plugin.name values marking the Application source the plugin renders: the out-of-band file is written to that source's path." }),
  ];
}

type Read = <T>(name: string, convert: (given: Given, spec: ControllerFlagSpec) => T) => T;
type WriteBackSettings = Pick<
  ControllerConfig,
  | 'writeBackAuthorName'
  | 'writeBackAuthorEmail'
  | 'writeBackMessage'
  | 'writeBackBatchWindow'
  | 'writeBackWorkDir'
  | 'writeBackPushAttempts'
  | 'writeBackRetryBackoff'
  | 'writeBackGitTimeout'
  | 'writeBackCredentialsSecret'
  | 'writeBackNamespaces'
  | 'writeBackApplications'
  | 'writeBackPluginNames'
  | 'writeBackSigningSecret'
  | 'writeBackFallbackAfter'
  | 'writeBackFallback'
>;

function readWriteBackSettings(read: Read, readOptional: ReadOptional): WriteBackSettings {
  return {
    writeBackAuthorName: read('write-back-author-name', asNonEmptyLine),
    writeBackAuthorEmail: read('write-back-author-email', asNonEmptyLine),
    writeBackMessage: readOptional('write-back-message', asMessageTemplate) ?? DEFAULT_MESSAGE_TEMPLATE,
    writeBackBatchWindow: read('write-back-batch-window', asDuration),
    writeBackWorkDir: readOptional('write-back-work-dir', asPath),
    writeBackPushAttempts: read('write-back-push-attempts', asInteger),
    writeBackRetryBackoff: read('write-back-retry-backoff', asDuration),
    writeBackGitTimeout: read('write-back-git-timeout', asDuration),
    writeBackCredentialsSecret: readOptional('write-back-credentials-secret', asObjectName),
    writeBackNamespaces: readOptional('write-back-namespaces', asNamespaceList) ?? [],
    writeBackApplications: readOptional('write-back-applications', asNameList) ?? [],
    writeBackPluginNames: read('write-back-plugin-names', asNameList),
    writeBackSigningSecret: readOptional('write-back-signing-secret', asObjectName),
    writeBackFallbackAfter: read('write-back-fallback-after', asDuration),
    writeBackFallback: read('write-back-fallback', asEnum) as WriteBackFallback,
  };
}

/** One line of text, not empty (a name or e-mail for git, which refuses an empty ident). */
function asNonEmptyLine(given: Given, spec: ControllerFlagSpec): string {
  const text = given.text.trim();
  if (text === '' || /[\n<>]/.test(text)) throw invalid(given, spec, 'one non-empty line without < or >');
  return text;
}

/** A message template; `\n` (backslash, n) is a line break, so a flag or env value can hold several lines. */
function asMessageTemplate(given: Given, spec: ControllerFlagSpec): string {
  const text = given.text.replace(/\\n/g, '\n');
  if (text.trim() === '') throw invalid(given, spec, 'an empty message');
  return text;
}

function asObjectName(given: Given, spec: ControllerFlagSpec): string {
  if (given.text.length > 253 || !DNS1123_SUBDOMAIN.test(given.text)) throw invalid(given, spec);
  return given.text;
}

function asNameList(given: Given, spec: ControllerFlagSpec): readonly string[] {
  const items = given.text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (items.length === 0) throw invalid(given, spec, 'no name given');
  for (const item of items) {
    const [first, second, extra] = item.split('/');
    const ok = extra === undefined && [first, second].every((part) => part === undefined || (part.length <= 253 && DNS1123_SUBDOMAIN.test(part)));
    if (!ok) throw invalid(given, spec, `${quote(item)} is not a name`);
  }
  return [...new Set(items)].sort();
}

// ---------------------------------------------------------------------------
// argv

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

// ---------------------------------------------------------------------------
// converters: each names the flag, the source of a bad value, and what is allowed

/** Quotes a piece of a value for a message, cut short: a message is for finding the typo, not for echoing input. */
function quote(text: string): string {
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text);
}

function invalid(given: Given, spec: ControllerFlagSpec, problem?: string): UsageError {
  const source = given.from === `flag ${spec.flag}` ? '' : ` (from ${given.from})`;
  return new UsageError(`invalid value ${quote(given.text)} for ${spec.flag}${source}: ${problem === undefined ? '' : `${problem}; `}expected ${allowedText(spec)}`);
}

function asPath(given: Given): string {
  return given.text;
}

function asText(given: Given): string {
  return given.text;
}

/** Never quotes the value: a webhook URL usually carries its token in the path or query. */
function asWebhookUrl(given: Given, spec: ControllerFlagSpec): WebhookUrl {
  const parsed = parseWebhookUrl(given.text);
  if (typeof parsed !== 'string') return parsed;
  const source = given.from === `flag ${spec.flag}` ? '' : ` (from ${given.from})`;
  throw new UsageError(`invalid value for ${spec.flag}${source} (not shown: it may hold a token): ${parsed}; expected ${allowedText(spec)}`);
}

/** Reloader sends anything but slack, teams and gchat as plain text, and documents that as `webhook`. */
function asNotifySink(given: Given, spec: ControllerFlagSpec): NotifySink {
  const sink = asEnum(given, spec) as NotifySink;
  return given.from === 'ALERT_SINK' && sink === 'webhook' ? 'raw' : sink;
}

function asNotifyEvents(given: Given, spec: ControllerFlagSpec): readonly NotifyEvent[] {
  // Reloader compares with "true" exactly; any other value leaves its alerts off.
  if (given.from === 'ALERT_ON_RELOAD') return given.text === 'true' ? ['started'] : [];
  if (given.text.trim() === 'none') return [];
  const items = given.text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (items.length === 0) throw invalid(given, spec, 'no event named');
  for (const item of items) {
    if (!(NOTIFY_EVENTS as readonly string[]).includes(item)) throw invalid(given, spec, `${quote(item)} is not an event`);
  }
  return NOTIFY_EVENTS.filter((event) => items.includes(event));
}

/** The flag and `DRIFTLESS_KUBECONFIG` name one file (as kubectl's flag); `KUBECONFIG` is a list (as kubectl reads it). */
function asKubeconfig(given: Given): readonly string[] {
  if (given.from !== 'KUBECONFIG') return [given.text];
  return given.text.split(path.delimiter).filter((file) => file !== '');
}

/** As the plugin reads booleans (cli/flags.ts): true or false in any case, spaces around ignored. */
function asBoolean(given: Given, spec: ControllerFlagSpec): boolean {
  const value = parseBoolean(given.text);
  if (value === undefined) throw invalid(given, spec);
  return value;
}

function asAddress(given: Given, spec: ControllerFlagSpec): string {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):(\d{1,5})$/.exec(given.text);
  const port = Number(match?.[2] ?? Number.NaN);
  if (match === null || !Number.isInteger(port) || port > 65535) throw invalid(given, spec);
  return given.text;
}

function asSingleNamespace(given: Given, spec: ControllerFlagSpec): string {
  const names = asNamespaceList(given, spec);
  if (names.length !== 1) throw invalid(given, spec, 'name exactly one namespace');
  return names[0] as string;
}

function asEnum(given: Given, spec: ControllerFlagSpec): string {
  if (!(spec.values ?? []).includes(given.text)) throw invalid(given, spec);
  return given.text;
}

const INTEGER = /^\d+$/;
const DECIMAL = /^(\d+(\.\d*)?|\.\d+)$/;

function asInteger(given: Given, spec: ControllerFlagSpec): number {
  const value = INTEGER.test(given.text) ? Number(given.text) : Number.NaN;
  if (!Number.isSafeInteger(value) || !inRange(value, spec)) throw invalid(given, spec);
  return value;
}

function asNumber(given: Given, spec: ControllerFlagSpec): number {
  const value = DECIMAL.test(given.text) ? Number(given.text) : Number.NaN;
  if (!Number.isFinite(value) || !inRange(value, spec)) throw invalid(given, spec);
  return value;
}

function asDuration(given: Given, spec: ControllerFlagSpec): DurationSetting {
  const ms = parseGoDuration(given.text);
  if (ms === undefined || !inRange(ms, spec)) throw invalid(given, spec);
  return { ms, text: given.text };
}

function inRange(value: number, spec: ControllerFlagSpec): boolean {
  const range = spec.range;
  if (range === undefined) return true;
  if (range.minExclusive === true ? value <= range.min : value < range.min) return false;
  return range.max === undefined || value <= range.max;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function asNamespaceList(given: Given, spec: ControllerFlagSpec): readonly string[] {
  const names = given.text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (names.length === 0) throw invalid(given, spec, 'no namespace named');
  for (const name of names) {
    if (name.length > 63 || !DNS1123_LABEL.test(name)) throw invalid(given, spec, `${quote(name)} is not a namespace name`);
  }
  return [...new Set(names)].sort();
}

function asLabelKey(given: Given, spec: ControllerFlagSpec): string {
  const problem = labelKeyProblem(given.text);
  if (problem !== undefined) throw invalid(given, spec, problem);
  return given.text;
}

function asLabelSelector(given: Given, spec: ControllerFlagSpec): LabelSelector {
  const parsed = parseLabelSelector(given.text);
  if (typeof parsed === 'string') throw invalid(given, spec, parsed);
  return parsed;
}

/** What `--help` and every error say is allowed. */
function allowedText(spec: ControllerFlagSpec): string {
  switch (spec.type) {
    case 'path':
      return 'a file path';
    case 'namespace-list':
      return 'comma-separated namespace names (lower-case DNS-1123 labels, e.g. "web,payments")';
    case 'namespace':
      return 'a namespace name (a lower-case DNS-1123 label, e.g. "argocd")';
    case 'label-selector':
      return 'a label selector: comma-separated requirements, each key, !key, key=value, key!=value, key in (v1,v2) or key notin (v1,v2)';
    case 'label-key':
      return 'a label key such as app.kubernetes.io/instance ([DNS subdomain/]name, the name at most 63 characters)';
    case 'enum':
      return joinAlternatives(spec.values ?? []);
    case 'duration':
      return `a Go duration such as 5s, 2m or 1m30s, ${rangeText(spec.range, durationBound)}`;
    case 'integer':
      return `an integer ${rangeText(spec.range, String)}`;
    case 'number':
      return `a number ${rangeText(spec.range, String)}`;
    case 'boolean':
      return 'true or false (the bare flag means true)';
    case 'address':
      return 'host:port, :port (every interface) or [ipv6]:port; port 0 picks a free one (logged at start)';
    case 'url':
      return 'an absolute https or http URL';
    case 'event-list':
      return `comma-separated ${joinAlternatives(NOTIFY_EVENTS)}, or none`;
    case 'text':
      return 'any text';
    case 'object-name':
      return 'an object name (a lower-case DNS-1123 subdomain, e.g. "git-write-creds")';
    case 'name-list':
      return 'comma-separated names or namespace/name pairs (lower-case DNS-1123 names)';
  }
}

function rangeText(range: FlagRange | undefined, show: (value: number) => string): string {
  if (range === undefined) return '';
  const lower = range.minExclusive === true ? `greater than ${show(range.min)}` : `of at least ${show(range.min)}`;
  if (range.max === undefined) return lower;
  if (range.minExclusive !== true) return `from ${show(range.min)} to ${show(range.max)}`;
  return `${lower} and at most ${show(range.max)}`;
}

function joinAlternatives(values: readonly string[]): string {
  if (values.length <= 1) return values.join('');
  return `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

// ---------------------------------------------------------------------------
// label selectors, with the grammar of Kubernetes' labels.Parse (without its
// rarely used `<` and `>`, which only compare integers)

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** Characters that end a key or value in Kubernetes' selector lexer. */
const TOKEN = String.raw`[^\s!=(),<>]+`;
const NOT_EXISTS = new RegExp(String.raw`^!\s*(${TOKEN})$`);
const SET = new RegExp(String.raw`^(${TOKEN})\s+(in|notin)\s*\((.*)\)$`, 's');
const EQUALITY = new RegExp(String.raw`^(${TOKEN})\s*(==|=|!=)\s*(${TOKEN})?$`);
const EXISTS = new RegExp(String.raw`^(${TOKEN})$`);

/** Returns the selector, or the problem with it as a phrase. */
function parseLabelSelector(text: string): LabelSelector | string {
  const parts = splitRequirements(text);
  if (typeof parts === 'string') return parts;
  const requirements: LabelRequirement[] = [];
  for (const [index, raw] of parts.entries()) {
    const part = raw.trim();
    const which = parts.length === 1 ? 'the requirement' : `requirement ${index + 1}`;
    if (part === '') return `${which} is empty (a leading, trailing or doubled comma)`;
    const requirement = parseRequirement(part);
    if (typeof requirement === 'string') return `${which} ${quote(part)}: ${requirement}`;
    requirements.push(requirement);
  }
  return { text: requirements.map(requirementText).join(','), requirements };
}

/** Splits on the commas outside parentheses (those inside separate the values of in/notin). */
function splitRequirements(text: string): string[] | string {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '(') {
      if (depth > 0) return 'nested parentheses';
      depth++;
    } else if (char === ')') {
      if (depth === 0) return 'a ")" without "("';
      depth--;
    } else if (char === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (depth > 0) return 'a "(" without ")"';
  parts.push(text.slice(start));
  return parts;
}

function parseRequirement(part: string): LabelRequirement | string {
  let match = NOT_EXISTS.exec(part);
  if (match !== null) return withKey(match[1] as string, 'DoesNotExist', []);
  match = SET.exec(part);
  if (match !== null) {
    const values = [...new Set((match[3] as string).split(',').map((value) => value.trim()))].sort();
    return withKey(match[1] as string, match[2] === 'in' ? 'In' : 'NotIn', values);
  }
  match = EQUALITY.exec(part);
  if (match !== null) return withKey(match[1] as string, match[2] === '!=' ? 'NotEquals' : 'Equals', [match[3] ?? '']);
  match = EXISTS.exec(part);
  if (match !== null) return withKey(match[1] as string, 'Exists', []);
  if (/[<>]/.test(part)) return '< and > are not supported';
  return 'not a requirement';
}

function withKey(key: string, operator: LabelRequirement['operator'], values: readonly string[]): LabelRequirement | string {
  const problem = labelKeyProblem(key);
  if (problem !== undefined) return problem;
  for (const value of values) {
    if (value !== '' && (value.length > 63 || !LABEL_NAME.test(value))) {
      return `${quote(value)} is not a label value (at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit)`;
    }
  }
  return { key, operator, values };
}

function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash === -1 ? undefined : key.slice(0, slash);
  const name = slash === -1 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix === '' || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
    return `${quote(key)} is not a label key: its prefix must be a lower-case DNS subdomain`;
  }
  if (name.length > 63 || !LABEL_NAME.test(name)) {
    const hint = name.includes(':') ? ' (Reloader\'s legacy "key:value" is written key=value here)' : '';
    return `${quote(key)} is not a label key: its name must be at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit${hint}`;
  }
  return undefined;
}

function requirementText(requirement: LabelRequirement): string {
  const { key, values } = requirement;
  switch (requirement.operator) {
    case 'Exists':
      return key;
    case 'DoesNotExist':
      return `!${key}`;
    case 'Equals':
      return `${key}=${values[0] ?? ''}`;
    case 'NotEquals':
      return `${key}!=${values[0] ?? ''}`;
    case 'In':
      return `${key} in (${values.join(',')})`;
    case 'NotIn':
      return `${key} notin (${values.join(',')})`;
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

// ---------------------------------------------------------------------------
// --help

const PLACEHOLDERS: Readonly<Record<ControllerFlagType, string>> = {
  path: 'FILE',
  'namespace-list': 'NS[,NS…]',
  namespace: 'NS',
  'label-selector': 'SELECTOR',
  'label-key': 'KEY',
  enum: '',
  duration: 'DURATION',
  integer: 'N',
  number: 'N',
  boolean: '[=true|false]',
  address: 'HOST:PORT',
  url: 'URL',
  'event-list': 'EVENT[,EVENT…]',
  text: 'TEXT',
  'object-name': 'NAME',
  'name-list': 'NAME[,NAME…]',
};

/** The `driftless controller --help` text, generated from CONTROLLER_FLAGS so it cannot drift from the parser. */
export function controllerUsageText(): string {
  const lines = [
    'Usage:',
    '  driftless controller [flags]   restart the workloads of config changes that never pass through Git,',
    '                                 without writing anything Argo CD renders',
    '  driftless controller --help',
    '',
    'Flags (flag > environment > default; --flag=value and --flag value both work; an empty environment value counts as unset):',
  ];
  for (const spec of CONTROLLER_FLAGS) {
    const placeholder = spec.type === 'enum' ? (spec.values ?? []).join('|') : PLACEHOLDERS[spec.type];
    const shownDefault = spec.default === '' ? spec.defaultText : spec.default;
    const allowed = spec.type === 'enum' || spec.type === 'path' ? '' : `; ${allowedText(spec)}`;
    lines.push(...helpRow({ synopsis: `${spec.flag} ${placeholder}`, shownDefault, description: spec.description, env: `${spec.env.join(', ')}${allowed}` }));
  }
  return `${lines.join('\n')}\n`;
}
