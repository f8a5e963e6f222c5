/**
 * The controller's flag table: one row per flag, in `--help` order. It drives
 * both the parser (parse.ts) and `--help` (help.ts), so neither can drift from
 * the other. The notification and Git write-back rows live with their readers
 * (notify.ts, write-back.ts) and are appended at the end.
 */
import type { PolicyMode } from '../../core/index.ts';
import type { RestartStrategy } from '../model.ts';
import { MAX_DURATION_MS, flag, positiveDuration, type ControllerFlagSpec } from './flag-spec.ts';
import { argocdHubFlags } from './argocd-hub.ts';
import { LOG_LEVELS, TRACKING_METHODS } from './model.ts';
import { notifyFlags } from './notify.ts';
import { writeBackFlags } from './write-back.ts';

const RESTART_STRATEGIES = Object.freeze(['evict', 'rollout', 'none'] as const satisfies readonly RestartStrategy[]);
const MODES = Object.freeze(['annotated', 'all'] as const satisfies readonly PolicyMode[]);

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
    description: "Namespace of Argo CD's Applications, watched (list/watch applications.argoproj.io) to know of a pending sync; without the CRD or the permission the wait is off. In the cluster of --argocd-kubeconfig when it is given.",
  }),
  flag({
    name: 'argocd-clusters',
    type: 'boolean',
    default: 'false',
    description: "Hub mode (ADR 0019): run beside Argo CD and manage every cluster it deploys to, each registered as a cluster Secret in --argocd-namespace (list/watch secrets there), plus the in-cluster destination unless argocd-cm says cluster.inClusterEnabled: \"false\". Each cluster has its own watches, queue, limits and breaker; its restart records stay in this cluster.",
  }),
  ...argocdHubFlags(),
  flag({
    name: 'cluster-down-warning',
    type: 'duration',
    range: { min: 0, max: MAX_DURATION_MS },
    default: '15s',
    description: 'Hub mode: a cluster that cannot be listed or watched for longer than this gets a Warning Event ClusterUnreachable on its cluster Secret (argocd-cm for the in-cluster destination without one), once per outage, and a Normal ClusterReachable once it has been up again for as long (ADR 0027).',
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
    description: 'Where a collection is listed in pages (see --streaming-list), pages of at most this many objects, and of about 512 KB, so memory does not grow with a namespace\'s payload.',
  }),
  flag({
    name: 'streaming-list',
    type: 'boolean',
    default: 'true',
    description: 'Each collection\'s first list (and a relist after 410) is a streaming one: a watch with sendInitialEvents (KEP-3157, as client-go\'s WatchListClient), one request whose objects the API server sends one by one from its watch cache, instead of a LIST page per --list-page-size under --kube-qps. An API server that refuses it (the WatchList feature off) is listed in pages.',
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
  ...notifyFlags(),
  ...writeBackFlags(),
]);

/** Looks a flag up by name (without dashes). */
export function findControllerFlag(name: string): ControllerFlagSpec | undefined {
  return CONTROLLER_FLAGS.find((spec) => spec.name === name);
}
