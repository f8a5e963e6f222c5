/**
 * Hub mode's wiring (`--argocd-clusters`, ADR 0019): the controller runs
 * beside Argo CD and manages every cluster Argo CD deploys to. Two watches of
 * its own, in `--argocd-namespace` of the cluster it runs in — Argo CD's
 * cluster Secrets (reduced by the parser, cluster-secret.ts) and argocd-cm
 * (only `cluster.inClusterEnabled`) — feed the registry, which runs one
 * pipeline per destination (cluster.ts). Their handlers only ask for a
 * sync, which brings the registry to what the watches hold; under
 * `--leader-elect` only the clusters whose Lease this replica holds run here
 * (ownership.ts, ADR 0023).
 *
 * Readiness: the hub is ready once its own two watches have listed. A
 * destination never makes the process unready or unhealthy — a restart of
 * the controller would not mend a spoke, and it would stop every other
 * cluster — it shows in `driftless_cluster_up{cluster}` instead, and past
 * `--cluster-down-warning` in a Warning Event in the hub (outage-events.ts,
 * ADR 0027).
 */
import type { ControllerConfig } from '../config/model.ts';
import type { HealthSources } from '../http.ts';
import type { KubeClient } from '../kube/client.ts';
import { Reachability, Reflector, type ReflectorTiming } from '../kube/reflector.ts';
import { collectionPath, OTHER_RESOURCES } from '../kube/resources.ts';
import { silentWatch } from '../wiring/reflectors.ts';
import { forgetCluster } from '../wiring/metrics.ts';
import type { RunningPipelines } from '../wiring/single.ts';
import { startClusterPipeline, type SharedParts } from './cluster.ts';
import { readClusterSecret, sameConnection } from './cluster-secret.ts';
import { desiredClusters, sameDestination, type Refusal, type WatchedClusterSecret } from './destinations.ts';
import { registerHubMetrics } from './hub-metrics.ts';
import type { ClusterOwnership } from './ownership.ts';
import { recordHubEvent, type HubObject } from './hub-event.ts';
import { startOutageEvents } from './outage-events.ts';
import { recordRefusal } from './refusal-event.ts';
import { ClusterRegistry } from './registry.ts';

/** The label of Argo CD's cluster Secrets. */
export const CLUSTER_SECRET_SELECTOR = 'argocd.argoproj.io/secret-type=cluster';

/** What the hub is handed: the process-wide parts, with the hub's client and who owns which cluster. */
export type HubParts = Omit<SharedParts, 'leading'> & { readonly hubClient: KubeClient; readonly ownership: ClusterOwnership };

/** argocd-cm as the hub keeps it: its uid (for the in-cluster destination's Events) and its say on that destination. */
interface ArgoCdConfig {
  readonly uid: string | undefined;
  readonly inClusterEnabled: boolean;
}

/** argocd-cm's say on the in-cluster destination: on unless `cluster.inClusterEnabled` is exactly "false", as Argo CD reads it. */
function reduceArgoCdConfig(raw: unknown): ArgoCdConfig {
  const object = raw as { data?: Record<string, unknown>; metadata?: { uid?: unknown } } | null;
  const value = (object?.data ?? {})['cluster.inClusterEnabled'];
  const uid = object?.metadata?.uid;
  return Object.freeze({ uid: typeof uid === 'string' ? uid : undefined, inClusterEnabled: value !== 'false' });
}

/** A cluster Secret reduced: the parser's result (the connection, credentials included: kept, never logged) and its identity. */
function reduceClusterSecret(raw: unknown): WatchedClusterSecret {
  const metadata = (raw as { metadata?: { uid?: unknown; resourceVersion?: unknown } } | null)?.metadata ?? {};
  return Object.freeze({
    result: readClusterSecret(raw),
    uid: typeof metadata.uid === 'string' ? metadata.uid : undefined,
    resourceVersion: typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : '',
  });
}

function hubReflectors(config: ControllerConfig, parts: HubParts, onChange: () => void): { secrets: Reflector<WatchedClusterSecret>; argocdCm: Reflector<ArgoCdConfig> } {
  const timing: ReflectorTiming = { silenceMs: config.watchSilenceTimeout.ms, relistMs: config.relistPeriod.ms, backoffBaseMs: 500, backoffMaxMs: 30_000 };
  const common = { client: parts.hubClient, timing, clock: parts.clock, log: parts.log, onChange, reachability: new Reachability() };
  const secrets = new Reflector<WatchedClusterSecret>({
    name: `cluster secrets in ${config.argocdNamespace}`,
    path: collectionPath(OTHER_RESOURCES.secrets, config.argocdNamespace),
    labelSelector: CLUSTER_SECRET_SELECTOR,
    pageSize: config.listPageSize,
    streamingList: config.streamingList,
    reduce: reduceClusterSecret,
  }, common);
  const argocdCm = new Reflector<ArgoCdConfig>({
    name: `argocd-cm in ${config.argocdNamespace}`,
    path: collectionPath(OTHER_RESOURCES.configMaps, config.argocdNamespace),
    fieldSelector: 'metadata.name=argocd-cm',
    pageSize: 1,
    streamingList: config.streamingList,
    // Without the permission the in-cluster destination stays on, as it is without argocd-cm.
    offWhenForbidden: true,
    reduce: reduceArgoCdConfig,
  }, common);
  return { secrets, argocdCm };
}

/**
 * The Events about clusters down and back (ADR 0027), on the cluster's Secret, or on argocd-cm for the
 * in-cluster destination Argo CD has without one.
 */
function outageEvents(config: ControllerConfig, parts: HubParts, registry: ClusterRegistry, argocdCm: Reflector<ArgoCdConfig>): { stop(): void } {
  const namespace = config.argocdNamespace;
  const deps = { now: () => parts.clock.now(), log: parts.log, instance: parts.identity, timeoutMs: parts.writeTimeoutMs };
  return startOutageEvents({
    clusters: () => registry.health(),
    // The leader, or sharded (no process-wide election: always true) each replica for the clusters it runs.
    isLeader: parts.isLeader,
    about: (destination): HubObject => (destination.cluster.secret === ''
      ? { kind: 'ConfigMap', namespace, name: 'argocd-cm', uid: [...argocdCm.store.values()][0]?.uid }
      : { kind: 'Secret', namespace, name: destination.cluster.secret, uid: destination.secretUid }),
    write: (about, event) => recordHubEvent(parts.hubClient, about, event, deps),
    clock: parts.clock,
    log: parts.log,
    graceMs: config.clusterDownWarning.ms,
  });
}

/** Starts the hub's watches; clusters start once they have listed. */
export function startHub(config: ControllerConfig, parts: HubParts): RunningPipelines {
  const { log, clock, ownership } = parts;
  let becomeLeader: () => void = () => undefined;
  const leading = new Promise<void>((resolve) => {
    becomeLeader = resolve;
  });
  // The leader (or the first member, sharded) reports `driftless_leader` 1 and says what concerns the hub.
  const shared: SharedParts = { ...parts, leading, isLeader: () => ownership.hubDuties() };
  const registry = new ClusterRegistry({
    // Each cluster's writes are fenced by what proves this replica may write there (ownership.ts).
    start: (destination) => startClusterPipeline(destination, { ...shared, fence: ownership.fenceOf(destination.server) }),
    same: (a, b) => sameDestination(a, b, sameConnection),
    owns: (destination) => ownership.owns(destination.server),
    forget: (name) => forgetCluster(parts.metrics.controller.registry, name),
    log,
  });
  let refused: readonly Refusal[] = [];
  const reported = new Set<string>();
  let synced = false;
  // Each sync applies what the watches hold now; the registry orders the changes of each server, so a cluster
  // slow to stop holds up neither another's start nor the next sync.
  const sync = (): void => {
    if (!synced) return;
    const inClusterEnabled = [...reflectors.argocdCm.store.values()][0]?.inClusterEnabled ?? true;
    const desired = desiredClusters(reflectors.secrets.store.values(), inClusterEnabled);
    refused = desired.refused;
    reportRefusals(desired.refused);
    ownership.setClusters([...desired.destinations.values()]);
    void registry.update(desired.destinations);
  };
  // A refusal is said once per Secret version and reason, by the leader only (a standby's Event would repeat it).
  const reportRefusals = (refusals: readonly Refusal[]): void => {
    if (!ownership.hubDuties()) return;
    for (const refusal of refusals) {
      const key = `${refusal.secret}@${refusal.resourceVersion}:${refusal.reason}`;
      if (reported.has(key)) continue;
      reported.add(key);
      log.warn({ secret: `${config.argocdNamespace}/${refusal.secret}`, server: refusal.server, reason: refusal.reason, detail: refusal.detail }, 'cluster Secret refused');
      void recordRefusal(parts.hubClient, config.argocdNamespace, refusal, { now: () => clock.now(), log, instance: parts.identity, timeoutMs: parts.writeTimeoutMs });
    }
  };
  const reflectors = hubReflectors(config, parts, sync);
  const hubWatches = [reflectors.secrets, reflectors.argocdCm];
  registerHubMetrics(parts.metrics.controller.registry, {
    clusters: () => registry.states(),
    refused: () => refused.map((r) => ({ secret: `${config.argocdNamespace}/${r.secret}`, reason: r.reason })),
  });
  for (const reflector of hubWatches) reflector.start();
  ownership.start({ changed: sync, stop: (server, why) => registry.stopServer(server, why) });
  const outages = outageEvents(config, parts, registry, reflectors.argocdCm);
  const hubSynced = Promise.all(hubWatches.map((r) => r.whenSynced())).then(() => {
    synced = true;
    log.info({ clusterSecrets: reflectors.secrets.store.size }, 'cluster Secrets listed');
    sync();
  });
  const health: HealthSources = {
    ready: () => synced,
    unhealthy: () => silentWatch(hubWatches, clock.now(), 2 * config.watchSilenceTimeout.ms),
  };
  return {
    health,
    reconcileWhen: (lead) => {
      void lead.then(() => {
        becomeLeader();
        sync();
      });
      return Promise.all([hubSynced, lead]).then(() => undefined);
    },
    async drain() {
      outages.stop();
      // Sharded: every cluster handed over, each pipeline stopped before its Lease is released.
      await ownership.stop();
      await registry.close();
      return true;
    },
    async close() {
      await Promise.all(hubWatches.map((r) => r.stop()));
    },
  };
}
