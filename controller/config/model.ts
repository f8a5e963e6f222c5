/**
 * The shape of the controller's configuration: what `parseControllerConfig`
 * (parse.ts) returns, deeply frozen, and every component downstream takes.
 */
import type { PolicyMode } from '../../core/index.ts';
import type { RestartStrategy } from '../model.ts';
import type { NotifyEvent, NotifySink } from '../notify/message.ts';
import type { WebhookUrl } from '../notify/url.ts';
import type { LabelSelector } from './label-selector.ts';

/** Argo CD's tracking methods, in its documentation's order. */
export const TRACKING_METHODS = Object.freeze(['annotation', 'label', 'annotation+label'] as const);

/** The log levels, most verbose first. */
export const LOG_LEVELS = Object.freeze(['trace', 'debug', 'info', 'warn', 'error'] as const);

/** A duration flag: milliseconds for timers, and the text as written for messages (`2s`, `1m30s`). */
export interface DurationSetting {
  readonly ms: number;
  readonly text: string;
}

/** Argo CD's `application.resourceTrackingMethod`. */
export type TrackingMethod = (typeof TRACKING_METHODS)[number];

/** The log levels the controller's logger accepts. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** What a change whose write-back keeps failing gets (`--write-back-fallback`). */
export type WriteBackFallback = 'restart' | 'none';

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
  /** Hub mode (ADR 0019): one pipeline per cluster Argo CD's cluster Secrets in `argocdNamespace` register. */
  readonly argocdClusters: boolean;
  /** Hub mode: how long a cluster is down before its Warning Event (ADR 0027). */
  readonly clusterDownWarning: DurationSetting;
  /**
   * The spoke option (ADR 0025): the kubeconfig file of the cluster Argo CD runs in (the hub), where its
   * Applications, AppProjects and repository Secrets are read; `undefined` = Argo CD runs in this cluster.
   * Set only with a destination below, never with `argocdClusters`.
   */
  readonly argocdKubeconfig: string | undefined;
  /** With `argocdKubeconfig`: this cluster's server URL in the hub's Argo CD, trailing slashes cut. */
  readonly argocdDestinationServer: string | undefined;
  /** With `argocdKubeconfig`: this cluster's name in the hub's Argo CD. */
  readonly argocdDestinationName: string | undefined;
  /** The longest a restart holds, from T, for Argo CD's pending sync; 0 = never. */
  readonly argocdSyncWait: DurationSetting;
  /** In-cluster restarts honour the AppProject sync windows of the workload's Application (issue 15 §8). */
  readonly argocdSyncWindows: boolean;
  readonly logLevel: LogLevel;
  /** Page size of ConfigMap and Secret lists (`limit`), so a list never holds a namespace's payload at once. */
  readonly listPageSize: number;
  /** Lists are streamed (a watch with `sendInitialEvents`) where the API server allows it; else paged. */
  readonly streamingList: boolean;
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
