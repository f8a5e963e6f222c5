/**
 * Wires the controller: reflectors fill the cache, their handlers only
 * enqueue workload keys, the workqueue runs the reconciler with bounded
 * concurrency and per-key exclusivity. Nothing is reconciled before every
 * first list has completed, so a restart of the controller sees the whole
 * cluster before it decides anything.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { HashKey } from '../core/index.ts';
import { ClusterView, workloadKey } from './cache/cluster-view.ts';
import { reduceAppProject, reduceApplication, reduceConfig, reducePod, reduceProviderPodStatus, reduceReplicaSet, reduceWorkload, type TrackingOptions } from './cache/reduce.ts';
import type { Clock } from './clock.ts';
import type { ControllerConfig } from './config.ts';
import { createEventRecorder, warningEvent } from './events.ts';
import { createFleetMetrics, type FleetMetrics } from './fleet/metrics.ts';
import { createKubeClient, loadKubeConfig, type KubeClient } from './kube/client.ts';
import { sleep } from './clock.ts';
import { Reflector, type ReflectorSpec } from './kube/reflector.ts';
import { OTHER_RESOURCES, WORKLOAD_RESOURCES, collectionPath, type ResourceSpec } from './kube/resources.ts';
import { unfenced, type Fence } from './kube/fence.ts';
import { createWrites, dryRunWrites, reportRejectedWrites, type Writes } from './kube/writes.ts';
import type { HealthSources } from './http.ts';
import { LeaderElector } from './leader.ts';
import { ClockSkew } from './clock-skew.ts';
import { RECORD_LABEL, isRecord, reduceRecord } from './record/record.ts';
import { RecordCache, createRecordStore } from './record/store.ts';
import { createMetrics, createWorkqueueMetrics, type ControllerMetrics, type WorkqueueHooks } from './metrics.ts';
import { setUpNotifications } from './notify/setup.ts';
import type { WebhookUrl } from './notify/url.ts';
import type { ConfigSummary, WorkloadKindName } from './model.ts';
import { WorkQueue } from './queue.ts';
import { Reconciler } from './reconciler.ts';
import { createScope } from './scope.ts';
import { TokenBucket } from './token-bucket.ts';
import { argoCdSecrets } from './writeback/argocd-secrets.ts';
import { createWriteBack, type WriteBack } from './writeback/engine.ts';
import { createWriteBackMetrics, type WriteBackMetrics } from './writeback/metrics.ts';
import { writeBackSettingsFrom } from './writeback/settings.ts';

/**
 * How long `stop()` waits for in-flight reconciles before it abandons them: with the notifications' 3 s and
 * the Lease release (at most --retry-period), shutdown stays inside the pod's default 30 s grace period.
 */
export const DRAIN_BUDGET_MS = 15_000;

/** How long a failed write-back waits before it is submitted again (until --write-back-fallback-after). */
const WRITE_BACK_RETRY_MS = 30_000;

/** The `name` label of the workqueue metrics. */
export const WORKQUEUE_NAME = 'workloads';

/** Helm keeps every release in a Secret of this type: large, numerous, and never mounted by a workload. */
const HELM_RELEASE_FIELD_SELECTOR = 'type!=helm.sh/release.v1';

function apiVersionOf(resource: ResourceSpec): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}

/** What the controller needs from its shell (main.ts, or a test). */
export interface ControllerDeps {
  readonly log: Logger;
  readonly clock: Clock;
  readonly hashKey: HashKey | undefined;
  /** Replaces the API writes (tests); given the fence the real writes would consult. */
  readonly writes?: (client: KubeClient, fence: Fence) => Writes;
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
  /** Resolves when every first list has completed. */
  readonly synced: Promise<void>;
  readonly view: ClusterView;
  readonly reconciler: Reconciler;
  readonly queue: WorkQueue;
  readonly reflectors: readonly Reflector<unknown>[];
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
  const limiter = new TokenBucket({ ratePerSecond: config.kubeQps, burst: config.kubeBurst, clock });
  // Assigned below; the client's observer only runs once requests are made.
  let metrics: ControllerMetrics | undefined;
  const requestTimeoutMs = config.kubeRequestTimeout.ms;
  const client = createKubeClient(kubeConfig, limiter, (verb, code) => metrics?.apiRequests.inc({ verb, code: String(code) }), { requestTimeoutMs });
  const electionClients: KubeClient[] = [];
  let elector: LeaderElector | undefined;
  if (config.leaderElect) {
    // The Lease has a client of its own, outside --kube-qps: a renewal must never queue behind a relist.
    const electionClient = createKubeClient(kubeConfig, { take: () => Promise.resolve() }, undefined, { requestTimeoutMs });
    electionClients.push(electionClient);
    elector = new LeaderElector(electionClient, {
      namespace: config.leaderElectionNamespace ?? deps.defaultLeaseNamespace,
      name: config.leaderElectionId,
      identity: deps.identity,
      leaseDurationMs: config.leaseDuration.ms,
      renewDeadlineMs: config.renewDeadline.ms,
      retryPeriodMs: config.retryPeriod.ms,
    }, clock, log);
  }
  // Every write is fenced by the election (ADR 0008), and over before a standby can take the Lease.
  const fence = elector ?? unfenced();
  const writeTimeoutMs = config.leaderElect ? Math.min(requestTimeoutMs, config.leaseDuration.ms - config.renewDeadline.ms) : requestTimeoutMs;
  const view = new ClusterView();
  const namespaceLabels = new Map<string, Readonly<Record<string, string>>>();
  const inScope = createScope({ ignore: config.ignoreNamespaces, selector: config.namespaceSelector }, (ns) => namespaceLabels.get(ns));
  const tracking: TrackingOptions = { method: config.argocdTrackingMethod, label: config.argocdTrackingLabel };
  const recorder = createEventRecorder({ client, log, now: () => clock.now(), instance: deps.identity || hostname(), repeatMs: 10 * 60_000, seriesUpdateMs: config.eventSeriesInterval.ms });
  // Restart Events also go to the webhook, when one is configured; the reconciler only sees a recorder.
  const notifications = setUpNotifications(recorder, config, { clock, log, urlFromFile: deps.notifyWebhookUrl });
  const events = notifications.events;
  const restartStarts = new TokenBucket({ ratePerSecond: config.restartRate, burst: config.restartBurst, clock });
  const baseWrites = deps.writes?.(client, fence) ?? (config.dryRun ? dryRunWrites((what) => log.info({ dryRun: true }, what)) : createWrites(client, { fence, timeoutMs: writeTimeoutMs }));
  // A write refused for good (403 from an admission webhook, 422) is a Warning Event and a metric, and the
  // restart it would have started gives its --restart-rate token back.
  const writes = reportRejectedWrites(baseWrites, (rejected) => {
    metrics?.writeFailures.inc({ operation: rejected.operation, code: String(rejected.status) });
    if (rejected.startedRestart) restartStarts.refund();
    log.warn({ operation: rejected.operation, status: rejected.status, workload: rejected.workload === undefined ? undefined : `${rejected.workload.kind}/${rejected.workload.namespace}/${rejected.workload.name}` }, 'the API server refused a write');
    if (rejected.workload !== undefined) {
      void events.record(rejected.workload, warningEvent('WriteRejected', `the API server refused the ${rejected.operation} write (${rejected.status}): ${rejected.message}`));
    }
  });
  let fleetMetrics: FleetMetrics | undefined;
  // The API server's clock, learnt from the times it writes (ADR 0007): T and pod creation times are on it.
  const skew = new ClockSkew();
  let skewWarnedAt = Number.NEGATIVE_INFINITY;
  // Only writes the watches deliver after the first lists: a first list's objects are old, and with no fresh
  // sample yet the youngest of them would pass for the offset (a false warning, evictions seconds late).
  let sampling = false;
  const observeWrite = (apiTimeMs: number): void => {
    if (!sampling) return;
    const now = clock.now();
    skew.observe(apiTimeMs, now);
    const { offsetUpperMs } = skew.reading(now);
    // Above the bound in either direction, once per ten minutes: an upper bound below -bound is certainly behind.
    if (Math.abs(offsetUpperMs) > config.maxClockSkew.ms && now - skewWarnedAt >= 10 * 60_000) {
      skewWarnedAt = now;
      log.warn({ offsetMs: offsetUpperMs, bound: config.maxClockSkew.text }, offsetUpperMs > 0
        ? 'this clock may be ahead of the API server\'s (or every watch event arrives late): restarts wait for the API server\'s clock to reach T'
        : 'this clock is behind the API server\'s: restarts use the API server\'s clock');
    }
  };
  // Each workload's bookkeeping is copied to a record of its own, keyed by its UID, in the controller's
  // namespace, so that a Replace=true sync of the workload does not lose a restart (ADR 0007).
  const recordNamespace = config.leaderElectionNamespace ?? deps.defaultLeaseNamespace;
  const recordCache = new RecordCache();
  const records = config.dryRun ? undefined : createRecordStore({
    client, cache: recordCache, namespace: recordNamespace, log, fence, timeoutMs: writeTimeoutMs,
    // Another install may keep its records in the same namespace: only those of watched namespaces are ours.
    watches: (namespace) => config.namespaces === undefined || config.namespaces.includes(namespace),
  });
  // The Git write-back: credentials read on demand in Argo CD's namespace only, each request with the
  // client's deadline; nothing runs until the restart path submits. Its pushes are writes like any other:
  // a lost Lease aborts a running git command at once (close), before the process exits.
  let writeBackMetrics: WriteBackMetrics | undefined;
  const writeBack = createWriteBack(writeBackSettingsFrom(config, deps.tmpdir), {
    clock,
    ...argoCdSecrets(client, {
      namespace: config.argocdNamespace,
      credentialsSecret: config.writeBackCredentialsSecret,
      signingSecret: config.writeBackSigningSecret,
      timeoutMs: requestTimeoutMs,
    }),
    observe: (observation) => writeBackMetrics?.observe(observation),
  });
  const reconciler = new Reconciler({
    view,
    writes,
    events,
    clock,
    log,
    inScope,
    options: {
      mode: config.mode,
      defaultStrategy: config.restartStrategy,
      debounceMs: config.debounce.ms,
      checkIntervalMs: config.restartCheckInterval.ms,
      maxConcurrentRestarts: config.maxConcurrentRestarts,
      blockedWarningMs: config.evictionBlockedWarning.ms,
      progressDeadlineMs: config.restartProgressDeadline.ms,
      fleet: {
        minRestartIntervalMs: config.minRestartInterval.ms,
        pausePeriodMs: config.pausePeriod.ms,
        healthGateTimeoutMs: config.healthGateTimeout.ms,
        breakerThreshold: config.breakerThreshold,
        breakerWindowMs: config.breakerWindow.ms,
      },
      dryRun: config.dryRun,
      argocdSyncWaitMs: config.argocdSyncWait.ms,
      // The git strategy (ADR 0016); never under --dry-run, where a push would be a write.
      ...(config.dryRun ? {} : {
        writeBack: {
          defaults: { namespaces: config.writeBackNamespaces, applications: config.writeBackApplications },
          fallbackAfterMs: config.writeBackFallbackAfter.ms,
          fallback: config.writeBackFallback,
          retryMs: WRITE_BACK_RETRY_MS,
          keyed: deps.hashKey !== undefined,
        },
      }),
    },
    // A workload that finds no token is requeued for when the next one accrues: a worker never waits.
    startLimiter: { tryTake: () => restartStarts.tryTake(), retryAfterMs: Math.ceil(1000 / config.restartRate) },
    skew,
    writeBack,
    // A write-back's answer wakes its workload at once (the queue is created below; this runs only later).
    wake: (key) => queue.add(key),
    ...(records === undefined ? {} : { records }),
    get metrics() {
      return metrics;
    },
    get fleetMetrics() {
      return fleetMetrics;
    },
    get writeBackMetrics() {
      return writeBackMetrics;
    },
  });
  let inFlight = 0;
  // Assigned with the other metrics below; the queue calls these only once it runs.
  let queueMetrics: WorkqueueHooks | undefined;
  const queue = new WorkQueue({
    metrics: {
      added: () => queueMetrics?.added(),
      retried: () => queueMetrics?.retried(),
      started: (ms) => queueMetrics?.started(ms),
      finished: (ms) => queueMetrics?.finished(ms),
    },
    concurrency: config.workers,
    clock,
    process: async (key) => {
      inFlight++;
      const started = clock.now();
      let result = 'error';
      try {
        const outcome = await reconciler.reconcile(key);
        result = 'ok';
        return outcome;
      } finally {
        inFlight--;
        metrics?.reconcileSeconds.observe({ result }, (clock.now() - started) / 1000);
      }
    },
    onError: (key, error, attempt) => log.warn({ err: error, workload: key, attempt }, 'reconcile failed; retrying with backoff'),
  });
  const enqueue = (keys: Iterable<string>): void => {
    for (const key of keys) queue.add(key);
  };

  const timing = {
    silenceMs: config.watchSilenceTimeout.ms,
    relistMs: config.relistPeriod.ms,
    backoffBaseMs: 500,
    backoffMaxMs: 30_000,
  };
  const reflectors: Reflector<unknown>[] = [];
  const scopes: (string | undefined)[] = config.namespaces === undefined ? [undefined] : [...config.namespaces];
  function watch<S>(resource: ResourceSpec, namespace: string | undefined, spec: Omit<ReflectorSpec<S>, 'path' | 'name' | 'pageSize'>, onChange: (previous: S | undefined, next: S | undefined) => void): void {
    const name = `${resource.plural}${namespace === undefined ? '' : ` in ${namespace}`}`;
    const reflector = new Reflector<S>({ ...spec, name, path: collectionPath(resource, namespace), pageSize: config.listPageSize }, {
      client,
      timing,
      clock,
      log,
      onChange: (_key, previous, next) => onChange(previous, next),
      hooks: {
        onList: () => metrics?.relists.inc({ resource: resource.plural }),
        onWatch: () => metrics?.watchRestarts.inc({ resource: resource.plural }),
      },
    });
    reflectors.push(reflector as Reflector<unknown>);
  }

  watch(OTHER_RESOURCES.configMaps, recordNamespace, { labelSelector: RECORD_LABEL, reduce: (raw) => reduceRecord(raw), offWhenForbidden: true }, (previous, next) => {
    recordCache.changed(previous, next);
    // A record that arrives after its workload (or changed by hand) is read at the workload's next reconcile.
    const workload = next?.workload ?? previous?.workload;
    if (workload !== undefined) enqueue([workloadKey(workload.kind, workload.namespace, workload.name)]);
  });
  for (const namespace of scopes) {
    const configSelector = config.resourceLabelSelector?.text;
    for (const kind of ['ConfigMap', 'Secret'] as const) {
      watch<ConfigSummary>(kind === 'ConfigMap' ? OTHER_RESOURCES.configMaps : OTHER_RESOURCES.secrets, namespace, {
        labelSelector: configSelector,
        fieldSelector: kind === 'Secret' ? HELM_RELEASE_FIELD_SELECTOR : undefined,
        // The restart records are the controller's own, never a config a workload could select.
        reduce: (raw, previous) => (kind === 'ConfigMap' && isRecord(raw) ? undefined : reduceConfig(kind, raw, previous, { key: deps.hashKey, tracking, now: clock.now() })),
      }, (previous, next) => {
        // A content change the watch delivers now: its write time is a fresh sample of the API server's clock.
        if (previous !== undefined && next?.changedAt !== undefined && next.changedAt !== previous.changedAt) observeWrite(next.changedAt);
        enqueue(view.configChanged(previous, next));
      });
    }
    for (const kind of Object.keys(WORKLOAD_RESOURCES) as WorkloadKindName[]) {
      watch(WORKLOAD_RESOURCES[kind], namespace, { reduce: (raw) => reduceWorkload({ apiVersion: apiVersionOf(WORKLOAD_RESOURCES[kind]), kind }, raw, tracking) }, (previous, next) => enqueue(view.workloadChanged(previous, next)));
    }
    watch(OTHER_RESOURCES.replicaSets, namespace, { reduce: (raw) => reduceReplicaSet(raw) }, (previous, next) => view.replicaSetChanged(previous, next));
    watch(OTHER_RESOURCES.pods, namespace, { reduce: (raw) => reducePod(raw) }, (previous, next) => {
      const key = view.podChanged(previous, next);
      // A pod the API server just created (old pods of a first list only give larger samples, never a lower bound).
      if (previous === undefined && next !== undefined) observeWrite(next.createdAt);
      if (next === undefined && previous !== undefined) reconciler.podGone(previous.uid);
      // Pod events only matter to a restart in progress: they pace the next eviction.
      if (key !== undefined && reconciler.isRestarting(key)) queue.add(key);
    });
    watch(OTHER_RESOURCES.providerPodStatuses, namespace, { reduce: (raw) => reduceProviderPodStatus(raw, deps.hashKey) }, (previous, next) => {
      enqueue(view.providerStatusChanged(previous, next, clock.now()));
    });
  }
  // Argo CD's Applications, to hold a restart its pending sync performs anyway (ADR 0011), and to find their
  // AppProject's sync windows (issue 15 §8). Optional twice over: without the CRD the reflector sees an empty
  // collection, without the permission it turns itself off.
  if (config.argocdSyncWait.ms > 0 || config.argocdSyncWindows) {
    watch(OTHER_RESOURCES.applications, config.argocdNamespace, {
      reduce: (raw) => reduceApplication(raw, config.argocdNamespace),
      offWhenForbidden: true,
    }, (previous, next) => enqueue(view.applicationChanged(previous, next)));
  }
  // AppProjects live in Argo CD's namespace only, whatever namespace their Applications are in; only their
  // syncWindows are kept. Same least privilege as the Applications: list/watch there.
  if (config.argocdSyncWindows) {
    watch(OTHER_RESOURCES.appProjects, config.argocdNamespace, { reduce: (raw) => reduceAppProject(raw), offWhenForbidden: true }, (previous, next) => enqueue(view.projectChanged(previous, next)));
  }
  if (config.namespaceSelector !== undefined) {
    watch(OTHER_RESOURCES.namespaces, undefined, {
      reduce: (raw) => {
        const metadata = (raw as { metadata?: { name?: string; labels?: Record<string, string>; resourceVersion?: string } }).metadata ?? {};
        return Object.freeze({ name: metadata.name ?? '', resourceVersion: metadata.resourceVersion ?? '', labels: Object.freeze({ ...metadata.labels }) });
      },
    }, (previous, next) => {
      const name = (next ?? previous)?.name ?? '';
      if (next === undefined) namespaceLabels.delete(name);
      else namespaceLabels.set(name, next.labels);
      enqueue(view.workloadKeysIn(name));
    });
  }

  metrics = createMetrics({
    queueDepth: () => queue.depth,
    queueOldestSeconds: () => queue.oldestWaitMs() / 1000,
    restartsInProgress: () => reconciler.restartingCount,
    cacheSizes: () => ({ workloads: view.workloadCount, configs: view.configCount, pods: view.podCount }),
    isLeader: () => elector === undefined || elector.isLeader,
    clockOffsetSeconds: () => skew.reading(clock.now()).offsetUpperMs / 1000,
  });
  fleetMetrics = createFleetMetrics(metrics.registry, () => reconciler.breakerOpen);
  writeBackMetrics = createWriteBackMetrics(metrics.registry);
  queueMetrics = createWorkqueueMetrics(metrics.registry, WORKQUEUE_NAME, {
    depth: () => queue.depth,
    unfinishedWorkSeconds: () => queue.unfinishedWorkSeconds(),
    longestRunningSeconds: () => queue.longestRunningSeconds(),
  });

  for (const reflector of reflectors) reflector.start();
  let resyncTimer: { cancel(): void } | undefined;
  let stopped = false;
  let allSynced = false;
  const cachesSynced = Promise.all(reflectors.map((r) => r.whenSynced())).then(() => {
    allSynced = !stopped;
    sampling = true;
    if (allSynced) log.info({ workloads: view.workloadCount, configs: view.configCount, pods: view.podCount }, 'caches synced');
  });
  // Standbys keep their caches warm; only the leader (or the only replica) reconciles and writes.
  const leading = new Promise<void>((resolve) => {
    if (elector === undefined) {
      resolve();
      return;
    }
    elector.start({
      onStartedLeading: resolve,
      onStoppedLeading: () => {
        // close() aborts a running git command synchronously; its promise is not awaited: the process exits.
        void writeBack.close();
        deps.onLostLeadership();
      },
    });
  });
  const synced = Promise.all([cachesSynced, leading]).then(() => {
    if (stopped) return;
    log.info('reconciling');
    queue.start();
    enqueue(view.workloadKeys());
    // Said once, for operators and tests: every workload has been looked at since the start.
    // Idle twice in a row, 50 ms apart: the queue may hand a key to a worker between two looks.
    let idleLooks = 0;
    const announce = (): void => {
      if (stopped) return;
      idleLooks = inFlight === 0 && queue.depth === 0 ? idleLooks + 1 : 0;
      if (idleLooks >= 2) log.info({ restarting: reconciler.restartingCount }, 'initial reconcile finished');
      else clock.setTimer(announce, 50);
    };
    clock.setTimer(announce, 50);
    // Level-triggered backstop: every workload is looked at again each resync period.
    const resync = (): void => {
      enqueue(view.workloadKeys());
      resyncTimer = clock.setTimer(resync, config.resyncPeriod.ms);
    };
    resyncTimer = clock.setTimer(resync, config.resyncPeriod.ms);
  });

  return {
    synced,
    view,
    reconciler,
    queue,
    reflectors,
    metrics,
    writeBack,
    health: {
      ready: () => allSynced,
      unhealthy: () => {
        // A watch silent past its bound (twice the silence timeout: the reflector itself restarts it after one).
        const bound = 2 * config.watchSilenceTimeout.ms;
        const now = clock.now();
        const stale = reflectors.find((r) => r.synced && now - r.lastActivity > bound && !r.absent && !r.disabled);
        return stale === undefined ? undefined : `watch of ${stale.spec.name} silent for ${Math.round((now - stale.lastActivity) / 1000)}s`;
      },
    },
    async stop() {
      stopped = true;
      resyncTimer?.cancel();
      // In-flight reconciles get a bounded drain (every request has a deadline, but a reconcile makes several).
      const drainBound = new AbortController();
      const drained = await Promise.race([
        queue.shutdown().then(() => true),
        sleep(clock, DRAIN_BUDGET_MS, drainBound.signal).then(() => false),
      ]);
      drainBound.abort();
      if (!drained) log.warn({ budgetMs: DRAIN_BUDGET_MS }, 'in-flight reconciles did not finish within the drain budget; stopping anyway');
      // Open write-back batches resolve `stopped`, a running git command is aborted (its work dir removed).
      await writeBack.close();
      // The last restarts' notifications get a moment, bounded well inside a pod's termination grace period.
      await notifications.close(3000);
      // Release the Lease after in-flight work, so the next leader starts from our last write.
      await elector?.stop();
      await Promise.all(reflectors.map((r) => r.stop()));
      await client.close();
      for (const electionClient of electionClients) await electionClient.close();
    },
  };
}
