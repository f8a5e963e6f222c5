/**
 * Builds the test cluster's binaries from the Go modules in `test/cluster/go/`
 * and extracts the pinned CRDs from module zips, into a cache outside the clone.
 *
 * Each artifact lives in its own directory keyed by a hash of everything that
 * determines it (its Go module's files, the Go version, the link flags, the
 * pinned versions), so editing the small kwok wrapper does not rebuild the
 * 15-minute Kubernetes binary, and a stale artifact can never be reused.
 */
import { createHash } from 'node:crypto';
import { chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { acquireLock } from '../support/build-lock.ts';
import { CommandError, runCommand } from './exec.ts';
import {
  argoCdModule,
  argoCdToolchain,
  argoCdVersion,
  argoRolloutsVersion,
  argoCdSource,
  crdSources,
  kubernetesVersion,
  type CrdFile,
  type CrdSource,
} from './versions.ts';

/** Paths of everything a cluster start needs, all inside the cache. */
export interface ClusterBinaries {
  /** Multi-call binary: `k8s kube-apiserver|kube-controller-manager|kube-scheduler|kubectl`. */
  readonly k8s: string;
  readonly etcd: string;
  /** kwok's controller, standing in for the kubelet. */
  readonly kwok: string;
  /** The real Argo Rollouts controller; absent when not asked for. */
  readonly rolloutsController?: string;
  /** The pinned CRDs, as JSON files, in `crdSources` order. */
  readonly crds: readonly CachedCrd[];
}

/** One CRD in the cache. */
export interface CachedCrd extends CrdFile {
  /** The CRD as JSON (parsing the big YAML files at every start would take seconds). */
  readonly file: string;
}

/** Building a binary or fetching a CRD failed. */
export class ClusterBuildError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ClusterBuildError';
  }
}

/** How one binary is built from one wrapper module. */
interface GoBinarySpec {
  readonly name: 'k8s' | 'etcd' | 'kwok' | 'rollouts-controller' | 'argocd' | 'redis';
  /** Directory of the wrapper module under test/cluster/go. */
  readonly module: string;
  /** Package to build, relative to the module (`.`) or a `tool` package path. */
  readonly pkg: string;
  readonly ldflags: readonly string[];
  /**
   * GOTOOLCHAIN for a module that needs a newer Go than the local one; the go
   * command fetches it from the module proxy. Default `local`.
   */
  readonly toolchain?: string;
  /** How long the first build takes, for the progress line. */
  readonly coldBuild?: string;
}

const goModulesDir = join(import.meta.dirname, 'go');

/** Stamps the release into the binaries, so /version and --version tell the truth. */
function kubernetesVersionFlags(): string[] {
  const [major, minor] = kubernetesVersion.replace(/^v/, '').split('.');
  return [
    `-X k8s.io/component-base/version.gitVersion=${kubernetesVersion}`,
    `-X k8s.io/component-base/version.gitMajor=${major}`,
    `-X k8s.io/component-base/version.gitMinor=${minor}`,
    '-X k8s.io/component-base/version.gitTreeState=clean',
    `-X k8s.io/client-go/pkg/version.gitVersion=${kubernetesVersion}`,
  ];
}

/** Small builds first, so a broken environment fails in seconds, not after the big one. */
const binarySpecs: readonly GoBinarySpec[] = [
  { name: 'etcd', module: 'etcd', pkg: 'go.etcd.io/etcd/server/v3', ldflags: [] },
  { name: 'k8s', module: 'k8s', pkg: '.', ldflags: kubernetesVersionFlags(), coldBuild: '~15-25 min on 2 cores' },
  // From the Kubernetes module, after it: the same client-go, api and apimachinery, so it comes from the build cache.
  { name: 'kwok', module: 'k8s', pkg: 'sigs.k8s.io/kwok/cmd/kwok', ldflags: [] },
  {
    name: 'rollouts-controller',
    module: 'rollouts',
    pkg: 'github.com/argoproj/argo-rollouts/cmd/rollouts-controller',
    // Without it the controller calls itself v99.99.99.
    ldflags: [`-X github.com/argoproj/argo-rollouts/utils/version.version=${argoRolloutsVersion.replace(/^v/, '')}`],
  },
];

/** Built only for the tests that run Argo CD (`ensureArgoCdBinaries`); the helper first, it takes seconds. */
const argoCdSpecs: readonly GoBinarySpec[] = [
  { name: 'redis', module: 'redis', pkg: '.', ldflags: [] },
  {
    name: 'argocd',
    module: 'argocd',
    pkg: `${argoCdModule}/cmd`,
    // Without it every component calls itself v99.99.99+unknown. Argo CD prefixes the `v` itself,
    // and appends `+unknown` without a git commit, which a module zip does not record.
    ldflags: [`-X ${argoCdModule}/common.version=${argoCdVersion.replace(/^v/, '')}`],
    // Argo CD v3.6 declares go 1.27.0.
    toolchain: argoCdToolchain,
    coldBuild: '~15-30 min and ~2.4 GB of memory on 2 cores',
  },
];

/** `${XDG_CACHE_HOME:-$HOME/.cache}/driftless/cluster`: outside the clone, shared by clones. */
export function clusterCacheDir(): string {
  const base = process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache');
  return join(base, 'driftless', 'cluster');
}

/**
 * Environment for every go command: no toolchain download (unless a spec names
 * its toolchain), static binaries, go.sum enforced.
 */
function goEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GOTOOLCHAIN: 'local',
    CGO_ENABLED: '0',
    // -mod=readonly: the committed go.sum is the only source of truth for hashes.
    GOFLAGS: '-mod=readonly -buildvcs=false',
    ...extra,
  };
}

async function pathExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Hashes every file of a wrapper module (go.mod, go.sum, *.go) by relative path and content. */
async function hashModule(hash: ReturnType<typeof createHash>, moduleDir: string): Promise<void> {
  const entries = await readdir(moduleDir, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  for (const file of files) {
    hash.update(file.slice(moduleDir.length)).update('\0').update(await readFile(file)).update('\0');
  }
}

/**
 * Moves a finished build into place. A concurrent builder may have won the race;
 * its result is equivalent, so ours is discarded.
 */
async function publish(stagingDir: string, finalDir: string): Promise<void> {
  try {
    await rename(stagingDir, finalDir);
  } catch (error) {
    if (!(await pathExists(finalDir))) throw error;
    await rm(stagingDir, { recursive: true, force: true });
  }
}

/** Older than any build can take: such a staging dir belongs to a build that was killed. */
const abandonedAfterMs = 3 * 60 * 60_000;

/** Removes staging directories left behind by builds that were killed mid-way. */
async function removeAbandonedStagingDirs(): Promise<void> {
  const entries = await readdir(clusterCacheDir()).catch(() => []);
  for (const name of entries) {
    if (!/^\..+-building-/.test(name)) continue;
    const dir = join(clusterCacheDir(), name);
    // Gone since the listing: another build (npm test sets up two lanes at once) just published it.
    const info = await stat(dir).catch(() => undefined);
    if (info !== undefined && Date.now() - info.mtimeMs > abandonedAfterMs) await rm(dir, { recursive: true, force: true });
  }
}

function log(line: string): void {
  process.stderr.write(`[test cluster] ${line}\n`);
}

async function ensureGoBinary(spec: GoBinarySpec, goVersion: string): Promise<string> {
  const moduleDir = join(goModulesDir, spec.module);
  // A pinned toolchain is the compiler, whatever the local Go is.
  const compiler = spec.toolchain ?? goVersion;
  const hash = createHash('sha256').update(`${spec.name}\0${spec.pkg}\0${compiler}\0${spec.ldflags.join(' ')}\0`);
  await hashModule(hash, moduleDir);
  const finalDir = join(clusterCacheDir(), `${spec.name}-${hash.digest('hex').slice(0, 16)}`);
  const binary = join(finalDir, spec.name);
  if (await pathExists(binary)) return binary;

  await mkdir(clusterCacheDir(), { recursive: true });
  const release = await acquireLock(join(clusterCacheDir(), `.${spec.name}.lock`), (holder) =>
    log(`waiting for process ${holder}, which is building ${spec.name}`),
  );
  try {
    // The process we waited for may have built exactly this.
    if (await pathExists(binary)) return binary;
    await buildGoBinary(spec, moduleDir, finalDir);
  } finally {
    await release();
  }
  return binary;
}

async function buildGoBinary(spec: GoBinarySpec, moduleDir: string, finalDir: string): Promise<void> {
  const stagingDir = await mkdtemp(join(clusterCacheDir(), `.${spec.name}-building-`));
  const started = Date.now();
  log(`building ${spec.name} from ${moduleDir}${spec.coldBuild ? ` (the first build takes ${spec.coldBuild})` : ''}`);
  try {
    await runCommand(
      'go',
      ['build', '-trimpath', '-ldflags', ['-s', '-w', ...spec.ldflags].join(' '), '-o', join(stagingDir, spec.name), spec.pkg],
      { cwd: moduleDir, env: goEnvironment(spec.toolchain ? { GOTOOLCHAIN: spec.toolchain } : {}) },
    );
    await publish(stagingDir, finalDir);
  } catch (error) {
    await rm(stagingDir, { recursive: true, force: true });
    throw new ClusterBuildError(`building ${spec.name} failed`, { cause: error });
  }
  log(`built ${spec.name} in ${Math.round((Date.now() - started) / 1000)} s`);
}

/** `go mod download -json` output fields we use. */
interface DownloadedModule {
  readonly Dir?: string;
  readonly Sum?: string;
  readonly Error?: string;
}

/** Downloads one module zip (or finds it in the module cache) and checks its hash. */
async function downloadModule(source: CrdSource, scratchDir: string): Promise<string> {
  const extraEnv: NodeJS.ProcessEnv = {
    ...(source.notInChecksumDatabase ? { GONOSUMDB: source.module } : {}),
    ...(source.toolchain ? { GOTOOLCHAIN: source.toolchain } : {}),
  };
  let output: string;
  try {
    // Run outside any module (scratchDir is empty), so no go.mod constrains or records it.
    output = (
      await runCommand('go', ['mod', 'download', '-json', `${source.module}@${source.version}`], {
        cwd: scratchDir,
        env: goEnvironment({ ...extraEnv, GOFLAGS: '-mod=mod' }),
      })
    ).stdout;
  } catch (error) {
    const detail = error instanceof CommandError ? error.stderr : '';
    throw new ClusterBuildError(`downloading ${source.module}@${source.version} failed ${detail}`, { cause: error });
  }
  const downloaded = JSON.parse(output) as DownloadedModule;
  if (downloaded.Error || !downloaded.Dir) {
    throw new ClusterBuildError(`downloading ${source.module}@${source.version}: ${downloaded.Error ?? 'no Dir'}`);
  }
  if (downloaded.Sum !== source.sum) {
    throw new ClusterBuildError(
      `${source.module}@${source.version} has hash ${downloaded.Sum}, but versions.ts pins ${source.sum}`,
    );
  }
  return downloaded.Dir;
}

/** Reads one module's CRDs into `stagingDir` as JSON, checking each is the CRD it should be. */
async function extractCrds(source: CrdSource, moduleDir: string, stagingDir: string): Promise<void> {
  for (const { path, name } of source.crds) {
    const file = join(moduleDir, path);
    const crd = parseYaml(await readFile(file, 'utf8')) as { kind?: string; metadata?: { name?: string } };
    if (crd.kind !== 'CustomResourceDefinition' || crd.metadata?.name !== name) {
      throw new ClusterBuildError(`${source.module}@${source.version}/${path} is not the CRD ${name}`);
    }
    await writeFile(join(stagingDir, `${name}.json`), JSON.stringify(crd));
  }
}

/**
 * Fills a cache directory named `${prefix}-<hash of key>` from module zips, once:
 * `fill` writes into a staging directory that is renamed into place when complete.
 */
async function ensureExtracted(
  prefix: string,
  key: string,
  fill: (stagingDir: string, scratchDir: string) => Promise<void>,
): Promise<string> {
  const finalDir = join(clusterCacheDir(), `${prefix}-${createHash('sha256').update(key).digest('hex').slice(0, 16)}`);
  if (await pathExists(finalDir)) return finalDir;
  log(`extracting ${prefix} from module zips`);
  await mkdir(clusterCacheDir(), { recursive: true });
  const stagingDir = await mkdtemp(join(clusterCacheDir(), `.${prefix}-building-`));
  const scratchDir = await mkdtemp(join(tmpdir(), `driftless-${prefix}-`));
  try {
    await fill(stagingDir, scratchDir);
    await publish(stagingDir, finalDir);
  } catch (error) {
    await rm(stagingDir, { recursive: true, force: true });
    throw error instanceof ClusterBuildError ? error : new ClusterBuildError(`extracting ${prefix} failed`, { cause: error });
  } finally {
    await rm(scratchDir, { recursive: true, force: true });
  }
  return finalDir;
}

async function ensureCrds(): Promise<CachedCrd[]> {
  // "json": the cached form. YAML parsing of the large Argo CRDs takes seconds, so they
  // are converted once here and every cluster start reads JSON.
  const finalDir = await ensureExtracted('crds', `json\0${JSON.stringify(crdSources)}`, async (stagingDir, scratchDir) => {
    for (const source of crdSources) await extractCrds(source, await downloadModule(source, scratchDir), stagingDir);
  });
  return crdSources.flatMap((source) => source.crds.map((crd) => ({ ...crd, file: join(finalDir, `${crd.name}.json`) })));
}

async function goVersion(): Promise<string> {
  try {
    return (await runCommand('go', ['env', 'GOVERSION'], { cwd: goModulesDir, env: goEnvironment() })).stdout.trim();
  } catch (error) {
    throw new ClusterBuildError('the cluster tests need Go (1.26) on PATH to build Kubernetes', { cause: error });
  }
}

/** Which optional artifacts `ensureClusterBinaries` should build. */
export interface EnsureOptions {
  /** Build the Argo Rollouts controller too (default true, so `npm test` has everything). */
  readonly rolloutsController?: boolean;
}

/**
 * Builds every cluster binary and extracts every CRD that is not yet in the
 * cache; a no-op (a few hashes) when all are present. Builds run one at a time:
 * the machine has 2 cores and the Kubernetes build alone saturates them.
 * Progress goes to stderr.
 * @returns the cached paths.
 * @throws {ClusterBuildError} when Go is missing, a build fails or a CRD hash differs.
 */
export async function ensureClusterBinaries(options: EnsureOptions = {}): Promise<ClusterBinaries> {
  const version = await goVersion();
  await removeAbandonedStagingDirs();
  const crds = await ensureCrds();
  const wanted = binarySpecs.filter((spec) => spec.name !== 'rollouts-controller' || options.rolloutsController !== false);
  const paths = new Map<GoBinarySpec['name'], string>();
  for (const spec of wanted) paths.set(spec.name, await ensureGoBinary(spec, version));
  const path = (name: GoBinarySpec['name']): string => {
    const found = paths.get(name);
    if (!found) throw new ClusterBuildError(`no binary ${name}`);
    return found;
  };
  const rolloutsController = paths.get('rollouts-controller');
  return {
    k8s: path('k8s'),
    etcd: path('etcd'),
    kwok: path('kwok'),
    ...(rolloutsController ? { rolloutsController } : {}),
    crds,
  };
}

/**
 * Builds only the Argo Rollouts controller (a no-op when cached), so `npm run setup` can build it in the
 * Argo CD lane while the other lane builds Kubernetes: `ensureClusterBinaries({ rolloutsController: false })`
 * and this together are `ensureClusterBinaries()`.
 * @returns the cached path.
 * @throws {ClusterBuildError} when Go is missing or the build fails.
 */
export async function ensureRolloutsControllerBinary(): Promise<string> {
  const spec = binarySpecs.find((candidate) => candidate.name === 'rollouts-controller');
  if (!spec) throw new ClusterBuildError('no rollouts-controller spec');
  return ensureGoBinary(spec, await goVersion());
}

/** Paths of everything `startArgoCD` needs, all inside the cache. */
export interface ArgoCdBinaries {
  /** Argo CD's multi-call binary: the role comes from the name it is started under. */
  readonly argocd: string;
  /** The in-memory Redis helper (`redis --addr 127.0.0.1:PORT`). */
  readonly redis: string;
  /** Application and AppProject CRDs, as JSON. */
  readonly crds: readonly CachedCrd[];
  /** Directory holding `git-verify-wrapper.sh` (executable), for the repo server's PATH. */
  readonly scriptsDir: string;
}

/**
 * Builds Argo CD v3.6 and the Redis helper and extracts Argo CD's CRDs and
 * scripts, whatever is not yet in the cache; a no-op (a few hashes) when all
 * are present. Separate from `ensureClusterBinaries` so that cluster tests
 * without Argo CD never wait for its build; `npm test` runs both up front.
 * @throws {ClusterBuildError} when Go is missing, a build fails or a hash differs.
 */
export async function ensureArgoCdBinaries(): Promise<ArgoCdBinaries> {
  const version = await goVersion();
  await removeAbandonedStagingDirs();
  const filesDir = await ensureExtracted('argocd-files', `json\0${JSON.stringify(argoCdSource)}`, async (stagingDir, scratchDir) => {
    const moduleDir = await downloadModule(argoCdSource, scratchDir);
    await extractCrds(argoCdSource, moduleDir, stagingDir);
    await mkdir(join(stagingDir, 'bin'));
    for (const script of argoCdSource.scripts) {
      const target = join(stagingDir, 'bin', script.slice(script.lastIndexOf('/') + 1));
      await copyFile(join(moduleDir, script), target);
      // Files in the module cache are read-only; the copy must be executable.
      await chmod(target, 0o755);
    }
  });
  const paths = new Map<GoBinarySpec['name'], string>();
  for (const spec of argoCdSpecs) paths.set(spec.name, await ensureGoBinary(spec, version));
  const [redis, argocd] = [paths.get('redis'), paths.get('argocd')];
  if (!redis || !argocd) throw new ClusterBuildError('no Argo CD binaries');
  return {
    argocd,
    redis,
    crds: argoCdSource.crds.map((crd) => ({ ...crd, file: join(filesDir, `${crd.name}.json`) })),
    scriptsDir: join(filesDir, 'bin'),
  };
}
