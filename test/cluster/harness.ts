/**
 * Starts a real Kubernetes control plane on loopback for tests and local runs:
 * etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from
 * their Go modules, kwok as the kubelet of fake nodes, and the pinned CRDs.
 *
 * Each component is its own process on a free port with its log in the
 * cluster's temp dir. Everything is torn down by `stop()`, on process exit,
 * on SIGINT/SIGTERM, and by the kernel if this process dies abruptly.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { appendFile, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createApiClient, type ApiClient, type ApiCredentials, type KubeObject } from './api.ts';
import { auditFlags, filterAudit, readAuditLog, renderAuditPolicy, serviceAccountUser, type AuditEvent, type AuditFilter } from './audit.ts';
import { ensureClusterBinaries, type CachedCrd } from './build.ts';
import { bindKubectl, type Kubectl } from './kubectl.ts';
import { fakeNodeAnnotation, renderKwokStages } from './kwok-stages.ts';
import { startComponent, tailLog, type Component, type ComponentSpec } from './processes.ts';
import { freePorts } from './ports.ts';
import { createStateDir, removeAbandonedStateDirs } from './state-dirs.ts';
import { waitFor } from '../support/wait.ts';
import { makeCertificateAuthority, makeClientCertificate, type CertificateAndKey } from '../support/x509.ts';

export { readinessAnnotation, readyDelayAnnotation } from './kwok-stages.ts';

/** The common name of the client CA made when a cluster trusts client certificates. */
const CLIENT_CA_NAME = 'driftless-test-client-ca';

/** Options of `startCluster`. All optional. */
export interface ClusterOptions {
  /** Number of fake nodes (default 1). */
  readonly nodes?: number;
  /** Binding → Running/Ready delay of the fake kubelet, in ms (default 300). */
  readonly podReadyDelayMs?: number;
  /** Running → Succeeded delay for Job pods, in ms (default 1000). */
  readonly jobCompleteDelayMs?: number;
  /**
   * Serve lists and watches from the API server's watch cache (default true, as in
   * every real cluster). With false, watches go straight to etcd, so a watch from any
   * uncompacted resourceVersion resumes even across an API server restart; with the
   * cache, a restarted server answers 410 Expired for versions older than its cache.
   */
  readonly watchCache?: boolean;
  /**
   * The API server's WatchList feature (default true, as in Kubernetes 1.34+): with false it refuses a streaming
   * list (`sendInitialEvents`, 422), as an API server with the feature off does, so a client's fallback to paged
   * lists meets the real refusal.
   */
  readonly watchList?: boolean;
  /**
   * Write the API server's audit log (default false): every write at Metadata level with
   * its user, read with `cluster.audit()`. See `audit.ts`.
   */
  readonly auditLog?: boolean;
  /**
   * Trust client certificates signed by a CA made for this cluster (default false), so a test can
   * authenticate with a certificate: `cluster.clientCertFor(user, groups)`.
   */
  readonly clientCertificates?: boolean;
  /** Also run the real Argo Rollouts controller (default false). */
  readonly rolloutsController?: boolean;
  /**
   * kube-controller-manager's client rate limit, requests per second (default 200; the burst is twice
   * that). A benchmark that fills the cluster with tens of thousands of objects raises it, so the
   * controllers' status writes after the fill are not paced by the test cluster's own setting.
   */
  readonly controllerManagerQps?: number;
  /** Keep the temp dir (state and logs) after `stop()` (default: only if DRIFTLESS_KEEP_CLUSTER is set). */
  readonly keepStateDir?: boolean;
  /**
   * Stop on SIGINT/SIGTERM and re-raise the signal (default true). A caller that runs more
   * than the cluster (the demo: Argo CD, the controller) turns it off and stops everything
   * itself, in order: the cluster must outlive what runs on it.
   */
  readonly handleSignals?: boolean;
}

/** A running cluster. */
export interface Cluster {
  /** Admin kubeconfig (user `admin` in group `system:masters`) as YAML. */
  readonly kubeconfig: string;
  /** Path of the same kubeconfig on disk. */
  readonly kubeconfigPath: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** PEM of the certificate authority for the API server's serving certificate. */
  readonly ca: string;
  /** `http://127.0.0.1:<port>`: etcd's client URL, for tests that act on the store itself (a compaction). */
  readonly etcdUrl: string;
  /** Client with admin rights. */
  readonly admin: ApiClient;
  /** Temp dir holding state, certificates and `logs/`. */
  readonly stateDir: string;
  /**
   * Runs kubectl (from the `k8s` binary) as admin against this cluster; resolves with any exit
   * code, since `kubectl diff` exits 1 for "differences". See `kubectl.ts`.
   */
  readonly kubectl: Kubectl;
  /** Mints a token for a ServiceAccount through the TokenRequest API (for least-privilege tests). */
  tokenFor(namespace: string, serviceAccount: string, expirationSeconds?: number): Promise<string>;
  /** A client authenticated as a ServiceAccount; create the account first. */
  clientFor(namespace: string, serviceAccount: string): Promise<ApiClient>;
  /** A kubeconfig (YAML) for a ServiceAccount, for code under test that reads kubeconfigs. */
  kubeconfigFor(namespace: string, serviceAccount: string): Promise<string>;
  /**
   * A client certificate and key (PEM) for `user` in `groups` (CN and O), which the API server trusts.
   * @throws {Error} when the cluster was started without `clientCertificates: true`.
   */
  clientCertFor(user: string, groups?: readonly string[]): CertificateAndKey;
  /** Creates a fresh namespace and waits until its `default` ServiceAccount exists (pods need it). */
  newNamespace(prefix?: string): Promise<string>;
  /**
   * Creates a ServiceAccount bound cluster-wide to `clusterRole` (default `cluster-admin`), so a
   * process under test runs as its own identity (its writes tell apart in the audit log).
   * @returns its username, `system:serviceaccount:<namespace>:<name>`.
   */
  createServiceAccount(namespace: string, name: string, clusterRole?: string): Promise<string>;
  /** Path of the audit log, when started with `auditLog: true`. */
  readonly auditLogPath: string | undefined;
  /**
   * The audit log's complete entries matching `filter`, in log order.
   * @throws {Error} when the cluster was started without `auditLog: true`.
   */
  audit(filter?: AuditFilter): Promise<AuditEvent[]>;
  /** Stops and restarts kube-apiserver on the same port and data, for watch-resume tests. */
  restartApiServer(): Promise<void>;
  /** Stops kube-apiserver (etcd and the rest keep running): the cluster is unreachable until `startApiServer`. */
  stopApiServer(): Promise<void>;
  /** Starts a stopped kube-apiserver again on the same port and data; resolves once it is ready. */
  startApiServer(): Promise<void>;
  /**
   * Stops kube-controller-manager until `startControllerManager()`. A benchmark that creates pods
   * already owned by their ReplicaSets, StatefulSets and DaemonSets does so while it is stopped:
   * running, it would create pods of its own for every owner whose pods are not all there yet.
   */
  stopControllerManager(): Promise<void>;
  /** Starts kube-controller-manager again after `stopControllerManager()` (no-op while it runs). */
  startControllerManager(): Promise<void>;
  /** The last lines of every component's log, for a failing test to print. */
  logs(lines?: number): Promise<string>;
  /** Stops every component and removes the temp dir. Idempotent. */
  stop(): Promise<void>;
}

/** The cluster could not be started. Its message includes the failing component's log tail. */
export class ClusterStartError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ClusterStartError';
  }
}

const startTimeoutMs = 90_000;

/** Controllers the tests (and Driftless) rely on, plus what keeps namespaces and pods tidy. */
const controllers = [
  'deployment-controller',
  'replicaset-controller',
  'statefulset-controller',
  'daemonset-controller',
  'job-controller',
  'cronjob-controller',
  'disruption-controller',
  'garbage-collector-controller',
  'namespace-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'pod-garbage-collector-controller',
  'ttl-after-finished-controller',
  'endpoints-controller',
  'endpointslice-controller',
  'resourcequota-controller',
  'clusterrole-aggregation-controller',
];

export { freePorts } from './ports.ts';

/**
 * Starts several clusters at once. If any fails, the others are stopped before the first error is thrown: a
 * cluster left running keeps its test process alive, so one failed start would hang the file instead of failing it.
 */
export async function startClusters(options: readonly ClusterOptions[]): Promise<Cluster[]> {
  const results = await Promise.allSettled(options.map((one) => startCluster(one)));
  const failed = results.find((result) => result.status === 'rejected');
  if (failed === undefined) return results.map((result) => (result as PromiseFulfilledResult<Cluster>).value);
  await Promise.all(results.flatMap((result) => (result.status === 'fulfilled' ? [result.value.stop()] : [])));
  throw failed.reason;
}

function kubeconfigYaml(server: string, ca: string, user: string, token: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'driftless-test', cluster: { server, 'certificate-authority-data': Buffer.from(ca).toString('base64') } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'driftless-test', context: { cluster: 'driftless-test', user } }],
    'current-context': 'driftless-test',
  });
}

/** Waits until an object exists; 404 means "not yet". */
async function exists(client: ApiClient, path: string): Promise<boolean> {
  return (await client.send('GET', path)).status === 200;
}

/** The API server's flags for the options about how it serves lists and watches. */
function storageFlags(options: Pick<ClusterOptions, 'watchCache' | 'watchList'>): string[] {
  return [...(options.watchCache === false ? ['--watch-cache=false'] : []), ...(options.watchList === false ? ['--feature-gates=WatchList=false'] : [])];
}

/**
 * Starts a cluster, building the binaries first if the cache lacks them.
 * @throws {ClusterStartError} with the failing component's log tail.
 */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const binaries = await ensureClusterBinaries({ rolloutsController: options.rolloutsController ?? false });
  await removeAbandonedStateDirs();
  const stateDir = await createStateDir();
  const logDir = join(stateDir, 'logs');
  await mkdir(logDir);
  const components = new Map<string, Component>();
  const keepStateDir = options.keepStateDir ?? Boolean(process.env['DRIFTLESS_KEEP_CLUSTER']);

  const killAll = (): void => {
    for (const component of components.values()) component.killNow();
  };
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      process.off('exit', killAll);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      // Reverse start order: clients first, the store last.
      for (const component of [...components.values()].reverse()) await component.stop();
      admin?.close();
      if (!keepStateDir) await rm(stateDir, { recursive: true, force: true });
    })();
    return stopped;
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    void stop().finally(() => process.kill(process.pid, signal));
  };
  process.on('exit', killAll);
  if (options.handleSignals ?? true) {
    // `once`: after our cleanup the re-raised signal takes its default action.
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }

  const run = (spec: Omit<ComponentSpec, 'logFile'>): Component => {
    const component = startComponent({ ...spec, logFile: join(logDir, `${spec.name}.log`) });
    components.set(spec.name, component);
    return component;
  };
  /** Stops waiting as soon as a component we depend on has died. */
  const alive = (...names: string[]) => (): void => {
    for (const name of names) {
      if (components.get(name)?.exited()) throw new ClusterStartError(`${name} exited during start-up`);
    }
  };
  const startedAt = Date.now();
  const harnessLog = join(logDir, 'harness.log');
  /** Start-up milestones with elapsed time, so a slow or failed start shows where it stood. */
  const milestone = async (what: string): Promise<void> => {
    await appendFile(harnessLog, `${((Date.now() - startedAt) / 1000).toFixed(1)} s: ${what}\n`);
  };
  const logs = async (lines = 40): Promise<string> => {
    const parts = [`----- harness (${harnessLog}) -----\n${await tailLog(harnessLog, lines)}`];
    for (const component of components.values()) {
      parts.push(`----- ${component.name} (${component.logFile}) -----\n${await tailLog(component.logFile, lines)}`);
    }
    return parts.join('\n');
  };

  let admin: ApiClient | undefined;
  try {
    const [etcdClientPort, etcdPeerPort, apiPort] = await freePorts(3);
    const adminToken = randomBytes(24).toString('hex');
    const saKeyFile = join(stateDir, 'sa.key');
    const tokenFile = join(stateDir, 'tokens.csv');
    const certDir = join(stateDir, 'pki');
    const kubeconfigPath = join(stateDir, 'admin.kubeconfig');
    const auditPolicyPath = join(stateDir, 'audit-policy.yaml');
    const auditLogPath = options.auditLog === true ? join(logDir, 'audit.log') : undefined;
    if (auditLogPath !== undefined) await writeFile(auditPolicyPath, renderAuditPolicy());
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    await writeFile(saKeyFile, privateKey, { mode: 0o600 });
    await writeFile(tokenFile, `${adminToken},admin,admin,"system:masters"\n`, { mode: 0o600 });
    const clientCa = options.clientCertificates === true ? makeCertificateAuthority(CLIENT_CA_NAME) : undefined;
    const clientCaFile = join(stateDir, 'client-ca.crt');
    if (clientCa !== undefined) await writeFile(clientCaFile, clientCa.certPem);

    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    run({
      name: 'etcd',
      command: binaries.etcd,
      args: [
        '--name=driftless',
        `--data-dir=${join(stateDir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=driftless=${peerUrl}`,
        // Test data is disposable; fsync on every write would dominate start-up and test time.
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
    });
    await waitFor('etcd /readyz', async () => (await fetch(`${etcdUrl}/readyz`)).ok, {
      timeoutMs: startTimeoutMs,
      abortIf: alive('etcd'),
    });
    await milestone('etcd ready');

    const apiServerSpec = {
      name: 'kube-apiserver',
      command: binaries.k8s,
      args: [
        'kube-apiserver',
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        // No --tls-cert-file: the apiserver writes a self-signed CA and certificate here on first start.
        `--cert-dir=${certDir}`,
        `--token-auth-file=${tokenFile}`,
        ...(clientCa === undefined ? [] : [`--client-ca-file=${clientCaFile}`]),
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${saKeyFile}`,
        `--service-account-signing-key-file=${saKeyFile}`,
        '--service-cluster-ip-range=10.96.0.0/16',
        // The `kubernetes` Service cannot point at a loopback address.
        '--endpoint-reconciler-type=none',
        '--allow-privileged=true',
        '--profiling=false',
        ...storageFlags(options),
        // Appended across restarts: the same file holds the whole run.
        ...(auditLogPath === undefined ? [] : auditFlags(auditPolicyPath, auditLogPath)),
      ],
    };
    run(apiServerSpec);
    const ca = await waitFor('the apiserver serving certificate', () => readFile(join(certDir, 'apiserver.crt'), 'utf8'), {
      timeoutMs: startTimeoutMs,
      abortIf: alive('kube-apiserver'),
    });
    const credentials: ApiCredentials = { server: `https://127.0.0.1:${apiPort}`, ca, token: adminToken };
    admin = createApiClient(credentials);
    const adminClient = admin;
    const apiServerReady = (): Promise<boolean> =>
      waitFor('kube-apiserver /readyz', async () => (await adminClient.send('GET', '/readyz')).status === 200, {
        timeoutMs: startTimeoutMs,
        abortIf: alive('kube-apiserver'),
      });
    await apiServerReady();
    await milestone('kube-apiserver ready');

    const kubeconfig = kubeconfigYaml(credentials.server, ca, 'admin', adminToken);
    await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });

    // The CRDs install while the scheduler, kwok and the nodes come up (they do not
    // depend on each other); the controller manager starts only after the CRDs, so
    // the garbage collector's first discovery already sees them (it re-reads every 30 s).
    const crdsInstalled = installCrds(
      admin,
      binaries.crds.filter((crd) => options.rolloutsController || !crd.onlyForRolloutsController),
    );
    // Handled below; this only keeps an early failure from being reported as unhandled.
    crdsInstalled.catch(() => {});
    run({
      name: 'kube-scheduler',
      command: binaries.k8s,
      args: ['kube-scheduler', `--kubeconfig=${kubeconfigPath}`, '--leader-elect=false', '--secure-port=0'],
    });
    const stagesFile = join(stateDir, 'kwok-stages.yaml');
    await writeFile(
      stagesFile,
      renderKwokStages({
        podReadyDelayMs: options.podReadyDelayMs ?? 300,
        jobCompleteDelayMs: options.jobCompleteDelayMs ?? 1000,
      }),
    );
    run({
      name: 'kwok',
      command: binaries.kwok,
      args: [
        `--kubeconfig=${kubeconfigPath}`,
        `--config=${stagesFile}`,
        `--manage-nodes-with-annotation-selector=${fakeNodeAnnotation}=fake`,
        '--node-ip=10.0.0.1',
        '--cidr=10.244.0.0/16',
      ],
    });
    for (let index = 0; index < (options.nodes ?? 1); index++) await createFakeNode(admin, `fake-node-${index}`);
    await milestone('scheduler and kwok started, nodes created');
    await crdsInstalled;
    await milestone('CRDs established');
    const controllerManagerQps = options.controllerManagerQps ?? 200;
    const controllerManagerSpec = {
      name: 'kube-controller-manager',
      command: binaries.k8s,
      args: [
        'kube-controller-manager',
        `--kubeconfig=${kubeconfigPath}`,
        '--leader-elect=false',
        // 0: no health/metrics endpoint, so parallel clusters never fight over a port.
        '--secure-port=0',
        `--controllers=${controllers.join(',')}`,
        `--service-account-private-key-file=${saKeyFile}`,
        `--root-ca-file=${join(certDir, 'apiserver.crt')}`,
        '--use-service-account-credentials=false',
        `--kube-api-qps=${controllerManagerQps}`,
        `--kube-api-burst=${2 * controllerManagerQps}`,
        // Pods from terminated Jobs and deleted owners go quickly in tests.
        '--terminated-pod-gc-threshold=100',
      ],
    };
    run(controllerManagerSpec);
    await waitFor(
      'the fake nodes to become Ready',
      async () => {
        const nodes = await adminClient.request<{ items: KubeObject[] }>('GET', '/api/v1/nodes');
        return nodes.items.length === (options.nodes ?? 1) && nodes.items.every(isReady);
      },
      { timeoutMs: startTimeoutMs, abortIf: alive('kwok', 'kube-apiserver') },
    );
    await milestone('nodes Ready');
    await waitFor('the default ServiceAccount', () => exists(adminClient, '/api/v1/namespaces/default/serviceaccounts/default'), {
      timeoutMs: startTimeoutMs,
      abortIf: alive('kube-controller-manager'),
    });
    await milestone('default ServiceAccount exists: cluster ready');
    if (binaries.rolloutsController) {
      const [healthzPort, metricsPort] = await freePorts(2);
      run({
        name: 'argo-rollouts',
        command: binaries.rolloutsController,
        // It has no bind-address flag; free ports keep parallel clusters apart.
        args: [
          `--kubeconfig=${kubeconfigPath}`,
          '--leader-elect=false',
          `--healthzPort=${healthzPort}`,
          `--metricsPort=${metricsPort}`,
        ],
      });
    }

    const tokenFor = async (namespace: string, serviceAccount: string, expirationSeconds = 3600): Promise<string> => {
      const response = await adminClient.request<{ status: { token: string } }>(
        'POST',
        `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`,
        { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds } },
      );
      return response.status.token;
    };

    return {
      kubeconfig,
      kubeconfigPath,
      server: credentials.server,
      etcdUrl,
      ca,
      admin,
      stateDir,
      kubectl: bindKubectl({ binary: binaries.k8s, kubeconfigPath, cacheDir: join(stateDir, 'kubectl-cache') }),
      tokenFor,
      async clientFor(namespace, serviceAccount) {
        return createApiClient({ ...credentials, token: await tokenFor(namespace, serviceAccount) });
      },
      async kubeconfigFor(namespace, serviceAccount) {
        return kubeconfigYaml(credentials.server, ca, `${namespace}-${serviceAccount}`, await tokenFor(namespace, serviceAccount));
      },
      clientCertFor(user, groups = []) {
        if (clientCa === undefined) throw new Error('start the cluster with clientCertificates: true to get client certificates');
        return makeClientCertificate(clientCa, CLIENT_CA_NAME, user, groups);
      },
      async newNamespace(prefix = 'test') {
        const namespace = await adminClient.request('POST', '/api/v1/namespaces', {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: { generateName: `${prefix}-` },
        });
        const name = namespace.metadata?.name ?? '';
        await waitFor(`ServiceAccount ${name}/default`, () =>
          exists(adminClient, `/api/v1/namespaces/${name}/serviceaccounts/default`),
        );
        return name;
      },
      async createServiceAccount(namespace, name, clusterRole = 'cluster-admin') {
        await adminClient.request('POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name },
        });
        await adminClient.request('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: `driftless-test:${namespace}:${name}` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
          subjects: [{ kind: 'ServiceAccount', namespace, name }],
        });
        return serviceAccountUser(namespace, name);
      },
      auditLogPath,
      async audit(filter = {}) {
        if (auditLogPath === undefined) throw new Error('the cluster was started without auditLog: true');
        return filterAudit(await readAuditLog(auditLogPath), filter);
      },
      async restartApiServer() {
        await components.get('kube-apiserver')?.stop();
        run(apiServerSpec);
        await apiServerReady();
      },
      async stopApiServer() {
        await components.get('kube-apiserver')?.stop();
      },
      async startApiServer() {
        run(apiServerSpec);
        await apiServerReady();
      },
      async stopControllerManager() {
        await components.get('kube-controller-manager')?.stop();
      },
      async startControllerManager() {
        if (components.get('kube-controller-manager')?.exited() === false) return;
        run(controllerManagerSpec);
      },
      logs,
      stop,
    };
  } catch (error) {
    const detail = await logs();
    await stop();
    throw new ClusterStartError(`starting the test cluster failed: ${String(error)}\n${detail}`, { cause: error });
  }
}

function isReady(object: KubeObject): boolean {
  const conditions = (object.status?.['conditions'] ?? []) as { type: string; status: string }[];
  return conditions.some((condition) => condition.type === 'Ready' && condition.status === 'True');
}

async function createFakeNode(admin: ApiClient, name: string): Promise<void> {
  await admin.request('POST', '/api/v1/nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [fakeNodeAnnotation]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
    },
    spec: {},
  });
  // Admission gives every new Node the taint node.kubernetes.io/not-ready; the node
  // lifecycle controller would lift it once the node is Ready, but it does not run here
  // (it would also evict pods whenever a heartbeat came late on a loaded machine).
  await admin.request('PATCH', `/api/v1/nodes/${name}`, { spec: { taints: null } }, { contentType: 'application/merge-patch+json' });
}

/** Creates every pinned CRD, all at once, and waits until the API server serves them. */
async function installCrds(admin: ApiClient, crds: readonly CachedCrd[]): Promise<void> {
  await Promise.all(
    crds.map(async ({ file }) => {
      const crd = JSON.parse(await readFile(file, 'utf8')) as KubeObject;
      const name = crd.metadata?.name ?? '';
      await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
      await waitFor(`CRD ${name} to be Established`, async () => {
        const stored = await admin.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
        const conditions = (stored.status?.['conditions'] ?? []) as { type: string; status: string }[];
        return conditions.some((condition) => condition.type === 'Established' && condition.status === 'True');
      });
    }),
  );
}
