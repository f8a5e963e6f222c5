/**
 * The real Argo CD (v3.6, built from its Go module) on a running test cluster:
 * an in-memory Redis, argocd-repo-server, argocd-application-controller, and
 * the Driftless sidecars exactly as `manifests/plugin/` installs them —
 * argocd-cmp-server reading the shipped `plugin.yaml`, and the render server
 * its `driftless generate` hands renders to, each with the command, args and
 * environment of its container in the shipped patch (see `argocd-sidecar.ts`).
 *
 * Separate from `startCluster`, so that only the test files that need Argo CD
 * pay for it. Everything listens on 127.0.0.1 except the application
 * controller's metrics server, which Argo CD always binds to 0.0.0.0 (a free
 * port, picked per start).
 */
import { randomBytes } from 'node:crypto';
import { chmod, copyFile, link, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { KubeObject } from './api.ts';
import { ensureArgoCdBinaries, type CachedCrd } from './build.ts';
import { freePorts, type Cluster } from './harness.ts';
import { sidecarFromPatch, type SidecarContainer } from './argocd-sidecar.ts';
import { rootfsCommandLine } from '../image/rootfs.ts';
import { createGitRepo, type GitRepo } from './git-repo.ts';
import { startComponent, tailLog, type Component, type ComponentSpec } from './processes.ts';
import { waitFor, type WaitOptions } from '../support/wait.ts';
import { ensureTools } from '../tools.ts';

/** Where Argo CD lives in the cluster, as in a stock install. */
export const argoCdNamespace = 'argocd';

/** The plugin name Applications select: `<metadata.name>-<spec.version>` of plugin.yaml. */
export const pluginName = 'driftless-v1';

const repoRoot = join(import.meta.dirname, '..', '..');
/** The shipped plugin directory: the sidecar reads plugin.yaml from here, never from a copy. */
const pluginManifestsDir = join(repoRoot, 'manifests', 'plugin');
const sidecarPatch = join(pluginManifestsDir, 'argocd-repo-server.patch.yaml');
const applicationsPath = `/apis/argoproj.io/v1alpha1/namespaces/${argoCdNamespace}/applications`;
const startTimeoutMs = 120_000;
/** The kernel's limit for a unix socket path (sun_path), including the terminating NUL. */
const maxSocketPathBytes = 108;

/** Argo CD could not be started. Its message includes the components' log tails. */
export class ArgoCdStartError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ArgoCdStartError';
  }
}

/** The parts of an Application's status the tests read. */
export interface ApplicationStatus {
  readonly sync?: { readonly status?: string; readonly revision?: string };
  readonly health?: { readonly status?: string; readonly message?: string };
  readonly conditions?: readonly { readonly type: string; readonly message: string }[];
  readonly operationState?: {
    readonly phase?: string;
    readonly message?: string;
    readonly syncResult?: { readonly revision?: string };
  };
  readonly resources?: readonly { readonly kind: string; readonly name: string; readonly status?: string }[];
  /** The syncs done, oldest first: what `argocd app rollback` picks from by `id`. */
  readonly history?: readonly { readonly id: number; readonly revision?: string }[];
}

/** An Application as the API server returns it. */
export interface Application extends KubeObject {
  operation?: unknown;
}

/** The status of an Application, typed (KubeObject's `status` is a bag of unknowns). */
export function applicationStatus(app: Application): ApplicationStatus {
  return app.status ?? {};
}

/** Options of a sync operation. */
export interface SyncOptions {
  /** Commit to sync to; default the Application's target revision. */
  readonly revision?: string;
  readonly prune?: boolean;
  /** e.g. `ServerSideApply=true`. */
  readonly syncOptions?: readonly string[];
}

/** What to start besides the repo server, the sidecar and the application controller. */
export interface ArgoCdOptions {
  /**
   * Also run argocd-server (its API), on 127.0.0.1 only, plaintext and without authentication, for
   * `manifests`: what the repo server renders for an Application, whichever its source type.
   */
  readonly apiServer?: boolean;
  /**
   * Run the sidecar (argocd-cmp-server) and the render server from this root filesystem of the
   * plugin image (test/image/build.ts) as the patch's containers run: its user, a read-only root,
   * its volumes at their mount paths, its env over the image's. Default: from the checkout, on the
   * Node the tests run on, with the patch's paths mapped to local directories.
   */
  readonly pluginImage?: PluginImageRoot;
  /**
   * More config-management plugins beside Driftless, each in an argocd-cmp-server of its own on the same
   * sockets volume, as another sidecar would be (a benchmark's floor: a plugin whose generate is `cat`).
   */
  readonly extraPlugins?: readonly ExtraPlugin[];
}

/** A plugin of `extraPlugins`: Applications name it `<name>-v1`. */
export interface ExtraPlugin {
  readonly name: string;
  /** Its `generate.command`, run in the Application's source directory. */
  readonly generate: readonly string[];
}

/** The plugin image's root filesystem and the environment its config sets. */
export interface PluginImageRoot {
  readonly rootfs: string;
  readonly env: Readonly<Record<string, string>>;
}

/** A running Argo CD. */
export interface ArgoCD {
  /** The file holding the per-installation hash key, configured as the sidecar patch configures it. */
  readonly hashKeyFile: string;
  /** The environment the sidecar runs `driftless` with (before Argo CD adds its ARGOCD_* variables). */
  readonly pluginEnvironment: Readonly<Record<string, string>>;
  /**
   * What the render server (`driftless serve`, the patch's driftless-render-server) has logged since
   * this start: one `driftless serve: generate exit N in M ms` line per render it did.
   */
  renderServerLog(): Promise<string>;
  /** A new bare Git repository (file://) with a working clone; the first commit creates `main`. */
  createRepo(name: string): Promise<GitRepo>;
  /**
   * Creates an Application in `argocd`; `spec.project` defaults to `default`. Annotations (e.g.
   * `argocd.argoproj.io/compare-options`) are set at creation, so the first comparison already uses them.
   */
  createApplication(
    name: string,
    spec: Readonly<Record<string, unknown>>,
    options?: { readonly annotations?: Readonly<Record<string, string>> },
  ): Promise<Application>;
  getApplication(name: string): Promise<Application>;
  /** The process id of a running component (`argocd-cmp-server`, `driftless-render-server`, `argocd-repo-server`, …), for a benchmark's readings. */
  pidOf(name: string): number | undefined;
  /** Every Application in `argocd`. */
  listApplications(): Promise<Application[]>;
  /** Asks the controller to re-read Git (`hard` also bypasses the manifest cache). */
  refresh(name: string, type?: 'normal' | 'hard'): Promise<void>;
  /** Starts a sync operation, as `argocd app sync` does. */
  sync(name: string, options?: SyncOptions): Promise<void>;
  /** Polls the Application until `check` holds; returns it. */
  waitForApplication(
    name: string,
    description: string,
    check: (status: ApplicationStatus, app: Application) => boolean,
    options?: WaitOptions,
  ): Promise<Application>;
  /** Waits until the app is Synced (to `revision`, when given) and Healthy, with no operation running. */
  waitForSyncedAndHealthy(name: string, revision?: string, options?: WaitOptions): Promise<Application>;
  /**
   * The manifests Argo CD renders for an Application at `revision` (default its target), as
   * `argocd app manifests --source git` gets them: the API server asks the repo server, bypassing its cache.
   * Needs `apiServer` in the options.
   */
  manifests(name: string, revision?: string): Promise<KubeObject[]>;
  /**
   * `argocd app rollback name id`: the API server's rollback to the history entry `id` (a sync operation to
   * that entry's revision and source; refused while auto-sync is on). Needs `apiServer` in the options.
   */
  rollback(name: string, id: number): Promise<void>;
  /** Deletes an Application (no finalizer: its resources stay). */
  deleteApplication(name: string): Promise<void>;
  /** Log tails of every Argo CD component and the status of every Application, for a failing test. */
  logs(lines?: number): Promise<string>;
  /** Stops every component (the cluster keeps running). Idempotent. */
  stop(): Promise<void>;
}

/**
 * The environment of an Argo CD component that talks to the cluster (the
 * application controller, the API server): KUBECONFIG, and
 * `ARGOCD_FAKE_IN_CLUSTER`, so that https://kubernetes.default.svc (the
 * in-cluster destination) is the cluster of KUBECONFIG.
 */
function clusterClientEnvironment(cluster: Cluster, home: string): NodeJS.ProcessEnv {
  return { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home, KUBECONFIG: cluster.kubeconfigPath, ARGOCD_FAKE_IN_CLUSTER: 'true' };
}

/** True once something accepts TCP connections on 127.0.0.1:port. */
function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function httpOk(url: string): Promise<boolean> {
  return (await fetch(url)).ok;
}

/** The repo server leaves its clones at mode 000 between uses; restore access so the state dir can be removed. */
async function makeRemovable(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => {});
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) if (entry.isDirectory()) await makeRemovable(join(dir, entry.name));
}

function statusSummary(app: Application): string {
  const status = applicationStatus(app);
  const conditions = (status.conditions ?? []).map((condition) => `\n    ${condition.type}: ${condition.message}`).join('');
  return (
    `${app.metadata?.name}: sync=${status.sync?.status} revision=${status.sync?.revision} ` +
    `health=${status.health?.status} operation=${status.operationState?.phase ?? '-'} ${status.operationState?.message ?? ''}` +
    conditions
  );
}

/**
 * Starts Argo CD on `cluster`: CRDs, the `argocd` namespace and the objects its
 * components read, then Redis, the render server, the sidecar, the repo server and the
 * application controller, each waited for before the next. The binaries are
 * built first if the cache lacks them (`npm test` builds them in test/setup.ts).
 * @throws {ArgoCdStartError} with the components' log tails.
 */
export async function startArgoCD(cluster: Cluster, options: ArgoCdOptions = {}): Promise<ArgoCD> {
  const [binaries, tools] = await Promise.all([ensureArgoCdBinaries(), ensureTools()]);
  const admin = cluster.admin;
  const baseDir = join(cluster.stateDir, 'argocd');
  const dir = (...parts: string[]): string => join(baseDir, ...parts);
  const logDir = join(cluster.stateDir, 'logs');
  const socketsDir = dir('plugins');
  const socketPath = join(socketsDir, `${pluginName}.sock`);
  if (Buffer.byteLength(socketPath) >= maxSocketPathBytes) {
    throw new ArgoCdStartError(`the plugin socket path ${socketPath} is too long for a unix socket; use a shorter TMPDIR`);
  }
  for (const sub of ['bin', 'sidecar-bin', 'plugins', 'sidecar-tmp', 'hash-key', 'repo-server-tmp', 'home', 'tls', 'ssh', 'repos', 'sidecar-image', 'var-files']) {
    await mkdir(dir(sub), { recursive: true });
  }

  const components: Component[] = [];
  const killAll = (): void => {
    for (const component of components) component.killNow();
  };
  process.on('exit', killAll);
  const run = (spec: Omit<ComponentSpec, 'logFile'>): Component => {
    const component = startComponent({ ...spec, logFile: join(logDir, `${spec.name}.log`) });
    components.push(component);
    return component;
  };
  const alive = (component: Component) => (): void => {
    if (component.exited()) throw new ArgoCdStartError(`${component.name} exited during start-up`);
  };
  const listApplications = async (): Promise<Application[]> =>
    (await admin.request<{ items: Application[] }>('GET', applicationsPath)).items;
  const logs = async (lines = 60): Promise<string> => {
    const parts: string[] = [];
    for (const component of components) {
      parts.push(`----- ${component.name} (${component.logFile}) -----\n${await tailLog(component.logFile, lines)}`);
    }
    const apps = await listApplications().catch((error: unknown) => [`(listing Applications failed: ${String(error)})`]);
    parts.push(`----- Applications -----\n${apps.map((app) => (typeof app === 'string' ? app : statusSummary(app))).join('\n')}`);
    return parts.join('\n');
  };
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      process.off('exit', killAll);
      // Reverse start order (the render server after the cmp-server that uses it; it exits on SIGTERM).
      // The CMP server removes its socket on SIGTERM but never exits: no grace.
      for (const component of [...components].reverse()) await component.stop(component.name.startsWith('argocd-cmp-server') ? 0 : 5000);
      await makeRemovable(dir('repo-server-tmp'));
    })();
    return stopped;
  };

  try {
    // One multi-call binary: the role comes from the name it is started under.
    for (const role of ['argocd-application-controller', 'argocd-repo-server', 'argocd-cmp-server', 'argocd-server']) {
      await symlink(binaries.argocd, dir('bin', role));
    }
    // `driftless` as the image has it on PATH, run by the Node the tests run on.
    await writeFile(
      dir('sidecar-bin', 'driftless'),
      `#!/bin/sh\nexec '${process.execPath}' '${join(repoRoot, 'bin', 'driftless.js')}' "$@"\n`,
      { mode: 0o755 },
    );
    // The Secret `driftless-hash-key` of the install instructions, key `key`.
    await writeFile(dir('hash-key', 'key'), randomBytes(32).toString('hex'), { mode: 0o600 });

    await installCrds(cluster, binaries.crds);
    await installArgoCdObjects(cluster);

    const [redisPort, repoServerPort, repoMetricsPort, controllerMetricsPort] = await freePorts(4);
    const redisAddress = `127.0.0.1:${redisPort}`;
    const redis = run({ name: 'redis', command: binaries.redis, args: [`--addr=${redisAddress}`] });
    await waitFor('redis to accept connections', () => acceptsConnections(redisPort ?? 0), {
      timeoutMs: startTimeoutMs,
      abortIf: alive(redis),
    });

    const image = options.pluginImage;
    if (image !== undefined) await prepareImageVolumes(dir, binaries.argocd);
    const podVolumes = {
      // From the image, the cmp-server runs inside its root: a copy, as Argo CD's copyutil init container makes, not a link out of it.
      'var-files': image === undefined ? dir('bin') : dir('var-files'),
      plugins: socketsDir,
      'driftless-plugin': pluginManifestsDir,
      'driftless-tmp': dir('sidecar-tmp'),
      'driftless-hash-key': dir('hash-key'),
    };
    // The image's own directory (the compile cache it primes); here it starts empty, as a cold cache.
    const imageDirs = { '/opt/driftless': dir('sidecar-image') };
    // Both containers through the same volumes: the server reads the request's paths as the sidecar names them.
    const sidecar = await sidecarFromPatch(sidecarPatch, 'driftless', podVolumes, imageDirs);
    const renderServerName = 'driftless-render-server';
    const renderServerSpec = await sidecarFromPatch(sidecarPatch, renderServerName, podVolumes, imageDirs);
    // The image's PATH: driftless, kustomize and helm, and a shell for the wrapper; no git.
    const imagePath = [dir('sidecar-bin'), tools.binDir, '/usr/bin', '/bin'].join(':');

    const renderSocket = renderServerSpec.env['DRIFTLESS_RENDER_SOCKET'];
    if (renderSocket === undefined || renderSocket !== sidecar.env['DRIFTLESS_RENDER_SOCKET']) {
      throw new ArgoCdStartError(
        `${sidecarPatch}: driftless and ${renderServerName} must name the same DRIFTLESS_RENDER_SOCKET ` +
          `(${sidecar.env['DRIFTLESS_RENDER_SOCKET']} and ${renderSocket})`,
      );
    }
    if (Buffer.byteLength(renderSocket) >= maxSocketPathBytes) {
      throw new ArgoCdStartError(`the render server's socket path ${renderSocket} is too long for a unix socket; use a shorter TMPDIR`);
    }
    // Log files are appended to across starts: only what this server writes counts.
    const renderServerLogStart = await stat(join(logDir, `${renderServerName}.log`)).then((stats) => stats.size, () => 0);
    const renderServer = run({
      name: renderServerName,
      ...(image === undefined
        ? { command: renderServerSpec.command, args: renderServerSpec.args, env: { PATH: imagePath, ...renderServerSpec.env } }
        : fromImage(image, renderServerSpec.container)),
    });
    const renderServerLog = async (): Promise<string> =>
      (await readFile(renderServer.logFile)).subarray(renderServerLogStart).toString('utf8');
    // Before the cmp-server, so that no render of the tests falls back to rendering in-process.
    // From the image, the server names the socket by its path inside the container.
    const listening = `driftless serve: listening on ${image === undefined ? renderSocket : renderServerSpec.container.env['DRIFTLESS_RENDER_SOCKET']}`;
    await waitFor(`the render server to log "${listening}"`, async () => (await renderServerLog()).includes(listening), {
      timeoutMs: startTimeoutMs,
      abortIf: alive(renderServer),
    });

    const pluginEnvironment = {
      PATH: imagePath,
      ...sidecar.env,
      // The CMP server's default socket directory, on the shared `plugins` volume.
      ARGOCD_PLUGINSOCKFILEPATH: sidecar.localPath('/home/argocd/cmp-server/plugins'),
    };
    const cmpServer = run({
      name: 'argocd-cmp-server',
      ...(image === undefined
        ? {
          command: sidecar.command,
          // Its default config dir, where the patch mounts plugin.yaml.
          args: [...sidecar.args, `--config-dir-path=${sidecar.localPath('/home/argocd/cmp-server/config')}`],
          env: pluginEnvironment,
        }
        : fromImage(image, sidecar.container)),
    });
    await waitFor(`the plugin socket ${socketPath}`, () => readdir(socketsDir).then((names) => names.includes(`${pluginName}.sock`)), {
      timeoutMs: startTimeoutMs,
      abortIf: alive(cmpServer),
    });

    for (const extra of options.extraPlugins ?? []) await startExtraPlugin(run, alive, dir, extra, socketsDir);

    const repoServer = run({
      name: 'argocd-repo-server',
      command: dir('bin', 'argocd-repo-server'),
      args: [
        '--address=127.0.0.1',
        `--port=${repoServerPort}`,
        '--metrics-address=127.0.0.1',
        `--metrics-port=${repoMetricsPort}`,
        `--redis=${redisAddress}`,
        '--logformat=text',
      ],
      env: {
        // git from the system; git-verify-wrapper.sh, without which every request fails with "permission denied";
        // the plugin's pinned helm and kustomize, so that native Helm and Kustomize sources render with the same ones.
        PATH: `${binaries.scriptsDir}:${tools.binDir}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
        HOME: dir('home'),
        TMPDIR: dir('repo-server-tmp'),
        GIT_CONFIG_NOSYSTEM: '1',
        ARGOCD_GPG_ENABLED: 'false',
        ARGOCD_PLUGINSOCKFILEPATH: socketsDir,
        ARGOCD_ASK_PASS_SOCK: dir('askpass.sock'),
        ARGOCD_TLS_DATA_PATH: dir('tls'),
        ARGOCD_SSH_DATA_PATH: dir('ssh'),
      },
    });
    await waitFor('argocd-repo-server /healthz', () => httpOk(`http://127.0.0.1:${repoMetricsPort}/healthz?full=true`), {
      timeoutMs: startTimeoutMs,
      abortIf: alive(repoServer),
    });

    const controller = run({
      name: 'argocd-application-controller',
      command: dir('bin', 'argocd-application-controller'),
      args: [
        `--kubeconfig=${cluster.kubeconfigPath}`,
        `--namespace=${argoCdNamespace}`,
        `--repo-server=127.0.0.1:${repoServerPort}`,
        `--redis=${redisAddress}`,
        `--metrics-port=${controllerMetricsPort}`,
        '--logformat=text',
      ],
      env: clusterClientEnvironment(cluster, dir('home')),
    });
    await waitFor('argocd-application-controller /healthz', () => httpOk(`http://127.0.0.1:${controllerMetricsPort}/healthz`), {
      timeoutMs: startTimeoutMs,
      abortIf: alive(controller),
    });

    const apiServerUrl = options.apiServer === true
      ? await startApiServer(run, alive, dir, cluster, { repoServer: `127.0.0.1:${repoServerPort}`, redis: redisAddress })
      : undefined;

    const getApplication = (name: string): Promise<Application> => admin.request<Application>('GET', `${applicationsPath}/${name}`);
    const patchApplication = async (name: string, patch: unknown): Promise<void> => {
      await admin.request('PATCH', `${applicationsPath}/${name}`, patch, { contentType: 'application/merge-patch+json' });
    };
    const waitForApplication: ArgoCD['waitForApplication'] = (name, description, check, options = {}) =>
      waitFor(
        `Application ${name}: ${description}`,
        async () => {
          const app = await getApplication(name);
          return check(applicationStatus(app), app) ? app : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 250, abortIf: alive(controller), ...options },
      );

    return {
      hashKeyFile: dir('hash-key', 'key'),
      pluginEnvironment,
      renderServerLog,
      createRepo: (name) => createGitRepo(dir('repos'), name),
      async createApplication(name, spec, options = {}) {
        return admin.request<Application>('POST', applicationsPath, {
          apiVersion: 'argoproj.io/v1alpha1',
          kind: 'Application',
          metadata: { name, namespace: argoCdNamespace, ...(options.annotations === undefined ? {} : { annotations: options.annotations }) },
          spec: { project: 'default', ...spec },
        });
      },
      getApplication,
      listApplications,
      async refresh(name, type = 'normal') {
        await patchApplication(name, { metadata: { annotations: { 'argocd.argoproj.io/refresh': type } } });
      },
      async sync(name, options = {}) {
        await patchApplication(name, {
          operation: {
            initiatedBy: { username: 'driftless-test' },
            sync: {
              ...(options.revision === undefined ? {} : { revision: options.revision }),
              prune: options.prune ?? true,
              ...(options.syncOptions === undefined ? {} : { syncOptions: options.syncOptions }),
            },
          },
        });
      },
      waitForApplication,
      waitForSyncedAndHealthy(name, revision, options) {
        return waitForApplication(
          name,
          `Synced${revision ? ` to ${revision}` : ''} and Healthy`,
          (status, app) =>
            status.sync?.status === 'Synced' &&
            (revision === undefined || status.sync.revision === revision) &&
            status.health?.status === 'Healthy' &&
            app.operation === undefined &&
            status.operationState?.phase !== 'Running',
          options,
        );
      },
      async manifests(name, revision) {
        if (apiServerUrl === undefined) throw new Error('manifests needs startArgoCD(cluster, { apiServer: true })');
        const query = new URLSearchParams({ noCache: 'true', ...(revision === undefined ? {} : { revision }) });
        const response = await fetch(`${apiServerUrl}/api/v1/applications/${encodeURIComponent(name)}/manifests?${query.toString()}`);
        const body = await response.text();
        if (!response.ok) throw new Error(`GET manifests of ${name}: HTTP ${response.status}: ${body.slice(0, 2000)}`);
        const { manifests = [] } = JSON.parse(body) as { manifests?: string[] };
        return manifests.map((manifest) => JSON.parse(manifest) as KubeObject);
      },
      async rollback(name, id) {
        if (apiServerUrl === undefined) throw new Error('rollback needs startArgoCD(cluster, { apiServer: true })');
        const response = await fetch(`${apiServerUrl}/api/v1/applications/${encodeURIComponent(name)}/rollback`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name, id, prune: true }),
        });
        if (!response.ok) throw new Error(`POST rollback of ${name} to ${id}: HTTP ${response.status}: ${(await response.text()).slice(0, 2000)}`);
      },
      async deleteApplication(name) {
        await admin.send('DELETE', `${applicationsPath}/${name}`);
      },
      pidOf: (name) => components.find((component) => component.name === name && !component.exited())?.pid,
      logs,
      stop,
    };
  } catch (error) {
    const detail = await logs();
    await stop();
    throw new ArgoCdStartError(`starting Argo CD failed: ${String(error)}\n${detail}`, { cause: error });
  }
}

/** An argocd-cmp-server for one of `extraPlugins`, with its plugin.yaml in a config dir of its own; waits for its socket. */
async function startExtraPlugin(
  run: (spec: Omit<ComponentSpec, 'logFile'>) => Component,
  alive: (component: Component) => () => void,
  dir: (...parts: string[]) => string,
  plugin: ExtraPlugin,
  socketsDir: string,
): Promise<void> {
  const configDir = dir('extra-plugins', plugin.name);
  await mkdir(configDir, { recursive: true });
  const manifest = { apiVersion: 'argoproj.io/v1alpha1', kind: 'ConfigManagementPlugin', metadata: { name: plugin.name }, spec: { version: 'v1', generate: { command: plugin.generate } } };
  await writeFile(join(configDir, 'plugin.yaml'), JSON.stringify(manifest));
  const server = run({
    name: `argocd-cmp-server-${plugin.name}`,
    command: dir('bin', 'argocd-cmp-server'),
    args: [`--config-dir-path=${configDir}`, '--logformat=text'],
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ARGOCD_PLUGINSOCKFILEPATH: socketsDir, TMPDIR: dir('extra-plugins') },
  });
  await waitFor(`the plugin socket ${plugin.name}-v1.sock`, () => readdir(socketsDir).then((names) => names.includes(`${plugin.name}-v1.sock`)), {
    timeoutMs: startTimeoutMs,
    abortIf: alive(server),
  });
}

/**
 * What the pod gives the plugin's volumes, which the containers (UID 999) use from the image: emptyDirs
 * writable by all, the hash key Secret at its default mode 0644, and the cmp-server binary in var-files.
 */
async function prepareImageVolumes(dir: (...parts: string[]) => string, argocdBinary: string): Promise<void> {
  for (const emptyDir of ['plugins', 'sidecar-tmp']) await chmod(dir(emptyDir), 0o777);
  await chmod(dir('hash-key', 'key'), 0o644);
  const cmpServer = dir('var-files', 'argocd-cmp-server');
  // Argo CD's binary is ~200 MB: a hard link where the cache and the state dir share a file system.
  await link(argocdBinary, cmpServer).catch(() => copyFile(argocdBinary, cmpServer));
}

/** A container of the patch, run from the plugin image's root filesystem (test/image/rootfs.ts). */
function fromImage(image: PluginImageRoot, container: SidecarContainer): Omit<ComponentSpec, 'name' | 'logFile'> {
  if (!container.readOnlyRootFilesystem) throw new ArgoCdStartError(`the patch's ${container.command} container has no readOnlyRootFilesystem: true`);
  const [command, args] = rootfsCommandLine({
    rootfs: image.rootfs,
    mounts: container.mounts,
    user: container.user,
    env: { ...image.env, ...container.env },
    command: container.command,
    args: container.args,
  });
  // Only the tools that set up the mounts and the chroot come from the machine.
  return { command, args, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } };
}

/**
 * argocd-server on 127.0.0.1, plaintext (`--insecure`) and with `--disable-auth` (which also turns RBAC
 * enforcement off), talking to the repo server over its self-signed TLS as the controller does.
 * @returns its base URL, once /healthz answers.
 */
async function startApiServer(
  run: (spec: Omit<ComponentSpec, 'logFile'>) => Component,
  alive: (component: Component) => () => void,
  dir: (...parts: string[]) => string,
  cluster: Cluster,
  addresses: { readonly repoServer: string; readonly redis: string },
): Promise<string> {
  const [port, metricsPort] = await freePorts(2);
  const server = run({
    name: 'argocd-server',
    command: dir('bin', 'argocd-server'),
    args: [
      `--kubeconfig=${cluster.kubeconfigPath}`,
      `--namespace=${argoCdNamespace}`,
      '--address=127.0.0.1',
      `--port=${port}`,
      '--metrics-address=127.0.0.1',
      `--metrics-port=${metricsPort}`,
      `--repo-server=${addresses.repoServer}`,
      `--redis=${addresses.redis}`,
      '--dex-server=',
      '--insecure',
      '--disable-auth',
      `--staticassets=${dir('static')}`,
      '--logformat=text',
    ],
    env: clusterClientEnvironment(cluster, dir('home')),
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor('argocd-server /healthz', () => httpOk(`${url}/healthz`).catch(() => false), { timeoutMs: startTimeoutMs, abortIf: alive(server) });
  return url;
}

/** Installs Argo CD's CRDs into a test cluster without Argo CD: for tests of what reads Applications as they are. */
export async function installArgoCdCrds(cluster: Cluster): Promise<void> {
  await installCrds(cluster, (await ensureArgoCdBinaries()).crds);
}

/**
 * Server-side applies Argo CD's CRDs (the Application CRD is too big for the
 * last-applied annotation of a client-side apply) and waits until they are served.
 */
async function installCrds(cluster: Cluster, crds: readonly CachedCrd[]): Promise<void> {
  await Promise.all(
    crds.map(async ({ file, name }) => {
      const crd = await readFile(file, 'utf8');
      await cluster.admin.request(
        'PATCH',
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}?fieldManager=driftless-test&force=true`,
        crd,
        { contentType: 'application/apply-patch+yaml' },
      );
      await waitFor(`CRD ${name} to be Established`, async () => {
        const stored = await cluster.admin.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
        const conditions = (stored.status?.['conditions'] ?? []) as { type: string; status: string }[];
        return conditions.some((condition) => condition.type === 'Established' && condition.status === 'True');
      });
    }),
  );
}

/**
 * What a stock install puts in `argocd` and the components read: the two
 * settings objects (their informers select `app.kubernetes.io/part-of: argocd`)
 * and the `default` AppProject that argocd-server would otherwise create.
 */
async function installArgoCdObjects(cluster: Cluster): Promise<void> {
  const admin = cluster.admin;
  const labels = { 'app.kubernetes.io/part-of': 'argocd' };
  await admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: argoCdNamespace } });
  await admin.request('POST', `/api/v1/namespaces/${argoCdNamespace}/configmaps`, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-cm', labels },
    data: {},
  });
  await admin.request('POST', `/api/v1/namespaces/${argoCdNamespace}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'argocd-secret', labels },
    data: {},
  });
  await admin.request('POST', `/apis/argoproj.io/v1alpha1/namespaces/${argoCdNamespace}/appprojects`, {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name: 'default' },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      clusterResourceWhitelist: [{ group: '*', kind: '*' }],
    },
  });
}
