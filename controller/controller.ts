/**
 * The controller's composition root. The process-wide parts come first — the
 * metrics, the leader election and its write fence, the Event recorder with
 * its notifications, the Git write-back — then the cluster's pipeline
 * (wiring/pipeline.ts: cache, limits, writes, queue, reconciler, reflectors),
 * or in hub mode one per cluster Argo CD deploys to (hub/hub.ts, ADR 0019),
 * each part built after the parts it uses. Reflectors fill the cache, their
 * handlers only enqueue workload keys (wiring/watches.ts), and nothing is
 * reconciled before every first list has completed and this replica leads
 * (wiring/lifecycle.ts).
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { HashKey } from '../core/index.ts';
import type { Clock } from './clock.ts';
import type { ControllerConfig } from './config/model.ts';
import { createEventRecorder } from './events.ts';
import type { HealthSources } from './http.ts';
import { loadKubeConfig } from './kube/client.ts';
import type { ControllerMetrics } from './metrics.ts';
import { setUpNotifications } from './notify/setup.ts';
import type { WebhookUrl } from './notify/url.ts';
import type { WriteBack } from './writeback/engine.ts';
import { connectArgoCdHub } from './wiring/argocd-hub.ts';
import { connectCluster, userAgentOf } from './wiring/cluster-client.ts';
import { startHub } from './hub/hub.ts';
import { ownedByTheLeader, sharedOnLeases } from './hub/ownership.ts';
import { createElection } from './wiring/election.ts';
import { createShards } from './wiring/shards.ts';
import { GaugeSources, createProcessMetrics } from './wiring/metrics.ts';
import { startSingleCluster } from './wiring/single.ts';
import { createGitWriteBack } from './wiring/write-back.ts';
import type { WritesOverride } from './wiring/writes.ts';

/**
 * How long `stop()` waits for in-flight reconciles before it abandons them: with the notifications' 3 s and
 * the Lease release (at most --retry-period), shutdown stays inside the pod's default 30 s grace period.
 */
export const DRAIN_BUDGET_MS = 15_000;

/** How long the last restarts' notifications get at stop, well inside a pod's termination grace period. */
const NOTIFY_GRACE_MS = 3000;

/** What the controller needs from its shell (main.ts, or a test). */
export interface ControllerDeps {
  readonly log: Logger;
  readonly clock: Clock;
  readonly hashKey: HashKey | undefined;
  /** Replaces the API writes (tests); given the fence the real writes would consult. */
  readonly writes?: WritesOverride;
  /** This replica's identity for leader election (pod name, else host name and a random suffix). */
  readonly identity: string;
  /** The Lease's namespace when `--leader-election-namespace` is not given (the pod's own). */
  readonly defaultLeaseNamespace: string;
  /** Leadership was lost: the process must stop (its caches may be behind the new leader's writes). */
  readonly onLostLeadership: () => void;
  /** The webhook URL read from `--notify-webhook-url-file` (main reads files, not the controller). */
  readonly notifyWebhookUrl?: WebhookUrl;
  /** The OS temporary directory, where write-backs clone without `--write-back-work-dir` (main reads it). */
  readonly tmpdir: string;
}

/** A running controller. */
export interface RunningController {
  /** Resolves when every first list has completed (and, under `--leader-elect`, this replica leads). */
  readonly synced: Promise<void>;
  readonly metrics: ControllerMetrics;
  /** The Git write-back (strategy git, ADR 0014): closed by `stop()` and the moment leadership is lost. */
  readonly writeBack: WriteBack;
  readonly health: HealthSources;
  /** Stops taking work, waits for in-flight reconciles, stops the watches. */
  stop(): Promise<void>;
}

/** Starts the controller; returns once the watches are started (not synced). */
export function startController(config: ControllerConfig, deps: ControllerDeps): RunningController {
  const { log, clock } = deps;
  const kubeConfig = loadKubeConfig({ kubeconfig: config.kubeconfig });
  // Process-wide, first: the metrics every other part reports to, and the election whose fence every write consults.
  const gauges = new GaugeSources(clock);
  const metrics = createProcessMetrics(gauges);
  // The spoke option (ADR 0025): Argo CD runs in another cluster, read through a client of its own.
  const argocdHub = connectArgoCdHub(config, { clock, apiRequests: metrics.controller.apiRequests });
  if (argocdHub !== undefined) log.info({ argocdNamespace: config.argocdNamespace, destinationServer: config.argocdDestinationServer, destinationName: config.argocdDestinationName }, "Argo CD's Applications and AppProjects are read from the cluster of --argocd-kubeconfig");
  const identity = deps.identity || hostname();
  const electionDeps = { clock, log, identity, defaultLeaseNamespace: deps.defaultLeaseNamespace };
  // In hub mode, --leader-elect shares the clusters out on a Lease each (ADR 0023) instead of one leader for all.
  const shards = config.argocdClusters && config.leaderElect ? createShards(kubeConfig, config, electionDeps) : undefined;
  const election = createElection(kubeConfig, { ...config, leaderElect: config.leaderElect && shards === undefined }, electionDeps);
  // The client of the cluster the controller runs in: its pipeline's, or in hub mode the hub's.
  const client = connectCluster(kubeConfig, config, { clock, apiRequests: metrics.controller.apiRequests, userAgent: userAgentOf(identity) });
  const recorder = createEventRecorder({ client, log, now: () => clock.now(), instance: identity, repeatMs: 10 * 60_000, seriesUpdateMs: config.eventSeriesInterval.ms, fence: election.fence });
  // Restart Events also go to the webhook, when one is configured; the reconciler only sees a recorder.
  const notifications = setUpNotifications(recorder, config, { clock, log, urlFromFile: deps.notifyWebhookUrl });
  // Argo CD's repository Secrets are where Argo CD runs: with the spoke option, in the hub.
  const writeBack = createGitWriteBack(config, { client: argocdHub?.client ?? client, clock, tmpdir: deps.tmpdir, metrics: metrics.writeBack });
  const parts = {
    client, fence: election.fence, writeTimeoutMs: election.writeTimeoutMs, events: notifications.events, writeBack, metrics, gauges,
    isLeader: election.isLeader, clock, log, hashKey: deps.hashKey, writes: deps.writes,
    // Each workload's bookkeeping is copied to a record in the controller's namespace (ADR 0007, in hub mode ADR 0019).
    recordNamespace: config.leaderElectionNamespace ?? deps.defaultLeaseNamespace,
  };
  // One cluster, or in hub mode every cluster Argo CD deploys to (ADR 0019).
  const running = config.argocdClusters
    ? startHub(config, {
      ...parts, hubClient: client, homeKubeConfig: kubeConfig, identity, config, notify: (events) => notifications.wrap(events),
      ...(shards === undefined ? { ownership: ownedByTheLeader(election) } : { ownership: sharedOnLeases(shards.coordinator, identity), writeTimeoutMs: shards.writeTimeoutMs }),
    })
    : startSingleCluster(config, { ...parts, hub: argocdHub });
  // Standbys keep their caches warm; only the leader (or the only replica) reconciles and writes.
  const synced = running.reconcileWhen(election.lead(() => {
    // close() aborts a running git command synchronously; its promise is not awaited: the process exits.
    void writeBack.close();
    deps.onLostLeadership();
  }));
  return {
    synced,
    metrics: metrics.controller,
    writeBack,
    health: running.health,
    async stop() {
      if (!await running.drain(DRAIN_BUDGET_MS)) log.warn({ budgetMs: DRAIN_BUDGET_MS }, 'in-flight reconciles did not finish within the drain budget; stopping anyway');
      // Open write-back batches resolve `stopped`, a running git command is aborted (its work dir removed).
      await writeBack.close();
      await notifications.close(NOTIFY_GRACE_MS);
      // Release the Lease after in-flight work, so the next leader starts from our last write.
      await election.release();
      await running.close();
      // In hub mode the hub's client is not a pipeline's: closed here, after its watches.
      if (config.argocdClusters) await client.close();
      await argocdHub?.client.close();
      await election.close();
      await shards?.close();
    },
  };
}
