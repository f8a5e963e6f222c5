/**
 * Builds the repository's Dockerfile, unchanged, into its two images (`plugin`
 * and `controller`) with buildah, on a machine that reaches no container
 * registry: the Dockerfile's bases `golang:1.26` and `node:24.21.0-slim` are
 * stand-ins made here under those exact names (docs/adr/0017), from a Debian
 * bookworm `mmdebstrap --variant=minbase` root filesystem plus the machine's Go
 * toolchain, or plus the Node 24 binary of the npm `node` package the tests run
 * on and the machine's npm.
 *
 * Cheap enough for every CI run: the build runs with no network at all (in a
 * network namespace of its own), the tools stage compiles kustomize and helm
 * from the Go build and module caches the test setup already filled (mounted
 * for that stage only), and `npm ci` reads a cache of the production
 * dependencies filled once per lock file. The stand-in root filesystem, the
 * stand-in bases and the images are cached under ~/.cache/driftless/image,
 * keyed by what went into them, so a run whose inputs did not change builds
 * nothing and every image test of the run shares one build.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CommandError, runCommand } from '../cluster/exec.ts';
import { acquireLock } from '../support/build-lock.ts';

const repoRoot = join(import.meta.dirname, '..', '..');

/** The Debian packages the image check needs: buildah builds, mmdebstrap makes the stand-in root filesystem. */
export const IMAGE_PACKAGES = ['buildah', 'mmdebstrap'] as const;

/** What a developer without them is told to install. */
export const IMAGE_INSTALL_HINT =
  `the image check builds the Dockerfile with buildah as root; install Debian's ${IMAGE_PACKAGES.join(' and ')} ` +
  `(as root: apt-get update && apt-get install -y --no-install-recommends ${IMAGE_PACKAGES.join(' ')}) and run the tests as root`;

/** The image check cannot run here (no root, or buildah/mmdebstrap missing and not installable). */
export class ImageToolsMissingError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ImageToolsMissingError';
  }
}

/** A step of making the stand-ins or building the images failed. */
export class ImageBuildError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ImageBuildError';
  }
}

/** The Dockerfile's targets. */
export type ImageTarget = 'plugin' | 'controller';

/** One built image, with a root filesystem to run it from. */
export interface BuiltImage {
  readonly target: ImageTarget;
  /** `localhost/driftless-<target>:<key>`. */
  readonly name: string;
  readonly id: string;
  /** Uncompressed, as buildah reports it. */
  readonly sizeBytes: number;
  /** The image config's Env (PATH, NODE_VERSION). */
  readonly env: Readonly<Record<string, string>>;
  /** The image config's labels. */
  readonly labels: Readonly<Record<string, string>>;
  /** The image config's User. */
  readonly user: string;
  /**
   * The merged root filesystem of a buildah working container made from the
   * image (never written by the tests: they run it read-only, see rootfs.ts).
   */
  readonly rootfs: string;
}

/** Both images and how they came to be. */
export interface Images {
  readonly plugin: BuiltImage;
  readonly controller: BuiltImage;
  /** Seconds spent on each step this call took (empty when everything came from the cache). */
  readonly timings: Readonly<Record<string, number>>;
  /**
   * What the build's RUN steps left in /tmp (mounted from an empty directory, so that a
   * `docker build` would have committed it into a layer): must be nothing.
   */
  readonly leftInTmp: readonly string[];
}

/** The cache of the image check, outside any clone. */
export function imageCacheDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const cache = env['XDG_CACHE_HOME'] || join(env['HOME'] || homedir(), '.cache');
  return join(cache, 'driftless', 'image');
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

function onPath(name: string): boolean {
  return (process.env['PATH'] ?? '').split(':').some((dir) => dir !== '' && existsSync(join(dir, name)));
}

/**
 * Makes sure buildah and mmdebstrap are here: as root (CI machines run the tests as root,
 * with CI=true) they are installed from Debian's packages when missing.
 * @throws {ImageToolsMissingError} when not root, or the install fails.
 */
export async function ensureImagePackages(): Promise<void> {
  if (process.getuid?.() !== 0) throw new ImageToolsMissingError(`not root: ${IMAGE_INSTALL_HINT}`);
  const missing = IMAGE_PACKAGES.filter((name) => !onPath(name));
  if (missing.length === 0) return;
  process.stderr.write(`image: installing ${missing.join(' ')} with apt-get\n`);
  const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    await runCommand('apt-get', ['update'], { cwd: '/', env: aptEnv });
    await runCommand('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { cwd: '/', env: aptEnv });
  } catch (error) {
    throw new ImageToolsMissingError(`installing ${missing.join(' ')} with apt-get failed; ${IMAGE_INSTALL_HINT}`, { cause: error });
  }
  const still = IMAGE_PACKAGES.filter((name) => !onPath(name));
  if (still.length > 0) throw new ImageToolsMissingError(`apt-get ran but ${still.join(' ')} is not on PATH; ${IMAGE_INSTALL_HINT}`);
}

/** buildah with the check's own storage, so it never touches (or is touched by) other images on the machine. */
function buildahRunner(cache: string) {
  const storage = ['--root', join(cache, 'storage'), '--runroot', join(cache, 'run'), '--storage-driver', 'overlay'];
  const buildah = async (args: readonly string[], options: { cwd?: string; offline?: boolean } = {}): Promise<string> => {
    // --net: a network namespace of its own, with only a loopback that is down: the build cannot reach anything.
    const [file, argv] = options.offline === true ? ['unshare', ['--net', '--', 'buildah', ...storage, ...args]] : ['buildah', [...storage, ...args]];
    try {
      return (await runCommand(file, argv, { cwd: options.cwd ?? '/', env: { ...process.env, BUILDAH_ISOLATION: 'chroot' } })).stdout.trim();
    } catch (error) {
      throw new ImageBuildError(`buildah ${args.slice(0, 2).join(' ')} failed: ${error instanceof CommandError ? error.stderr.slice(-3000) : String(error)}`, { cause: error });
    }
  };
  const exists = (image: string): Promise<boolean> => buildah(['inspect', '--type', 'image', '--format', '{{.FromImageID}}', image]).then(() => true, () => false);
  return { buildah, exists };
}
type Buildah = ReturnType<typeof buildahRunner>;

const DEBIAN_MIRROR = 'http://deb.debian.org/debian';
/** Where Debian's bookworm images (and the node stand-in) keep their apt sources. */
const DEBIAN_SOURCES = '/etc/apt/sources.list.d/debian.sources';

/** The stand-in root filesystem (a tar), made once per suite, variant and mirror. */
async function ensureDebianRootfs(cache: string): Promise<string> {
  const recipe = { suite: 'bookworm', variant: 'minbase', mirror: DEBIAN_MIRROR };
  const tar = join(cache, `rootfs-${sha256(JSON.stringify(recipe)).slice(0, 16)}.tar`);
  if (existsSync(tar)) return tar;
  const partial = `${tar}.partial-${process.pid}`;
  try {
    await runCommand('mmdebstrap', [`--variant=${recipe.variant}`, '--quiet', recipe.suite, partial, recipe.mirror], { cwd: cache, env: process.env });
  } catch (error) {
    await rm(partial, { force: true });
    throw new ImageBuildError(`mmdebstrap of ${recipe.suite} failed`, { cause: error });
  }
  await rename(partial, tar);
  return tar;
}

/** The Go toolchain running the tests (the machine's), which the golang stand-in carries. */
async function goFacts(): Promise<{ goroot: string; version: string; gocache: string; gomodcache: string }> {
  const { stdout } = await runCommand('go', ['env', 'GOROOT', 'GOVERSION', 'GOCACHE', 'GOMODCACHE'], { cwd: '/', env: process.env });
  const [goroot, version, gocache, gomodcache] = stdout.trim().split('\n');
  if (!goroot || !version || !gocache || !gomodcache) throw new ImageBuildError(`go env printed ${JSON.stringify(stdout)}`);
  return { goroot, version, gocache, gomodcache };
}

/** The npm the machine has (the node stand-in carries it as the real image carries its bundled npm). */
async function npmFacts(): Promise<{ dir: string; version: string }> {
  const bin = (process.env['PATH'] ?? '').split(':').map((dir) => join(dir, 'npm')).find((path) => path !== 'npm' && existsSync(path));
  if (bin === undefined) throw new ImageBuildError('npm is not on PATH');
  // …/node_modules/npm/bin/npm-cli.js, whatever links lead there.
  const dir = dirname(dirname(await realpath(bin)));
  const { version } = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { version: string };
  return { dir, version };
}

const STAND_IN_REPO = 'localhost/driftless-stand-in';

/**
 * Tags `golang:1.26` and `node:24.21.0-slim` in the check's storage: made from
 * the root filesystem once per key (what went into them), else re-tagged.
 */
async function ensureStandIns(cache: string, { buildah, exists }: Buildah, timings: Record<string, number>): Promise<{ golang: string; node: string; nodeKey: string }> {
  const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
  const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1] as string).filter((base) => base.includes(':'));
  const golangBase = bases.find((base) => base.startsWith('golang:'));
  const nodeBase = bases.find((base) => base.startsWith('node:'));
  if (golangBase === undefined || nodeBase === undefined) throw new ImageBuildError(`the Dockerfile's bases are ${bases.join(', ')}: expected a golang and a node image`);
  let started = Date.now();
  const rootfs = await ensureDebianRootfs(cache);
  if (Date.now() - started > 1000) timings['stand-in rootfs (mmdebstrap)'] = (Date.now() - started) / 1000;
  const rootfsKey = rootfs.slice(rootfs.lastIndexOf('rootfs-'));
  const go = await goFacts();
  const npm = await npmFacts();
  const nodeBinary = process.execPath;
  const nodeVersion = process.versions.node;
  if (!nodeBase.startsWith(`node:${nodeVersion}-`)) throw new ImageBuildError(`the Dockerfile's ${nodeBase} is not the Node the tests run on (${nodeVersion})`);
  const nodeStat = await stat(nodeBinary);
  const goKey = sha256(JSON.stringify({ rootfsKey, base: golangBase, goroot: go.goroot, go: go.version, recipe: 1 })).slice(0, 16);
  const nodeKey = sha256(JSON.stringify({ rootfsKey, base: nodeBase, node: nodeVersion, size: nodeStat.size, mtime: nodeStat.mtimeMs, npm: npm.version, recipe: 2 })).slice(0, 16);
  const full = (base: string): string => `docker.io/library/${base}`;

  const make = async (name: string, key: string, steps: (container: string) => Promise<void>): Promise<void> => {
    const tag = `${STAND_IN_REPO}:${name}-${key}`;
    if (!(await exists(tag))) {
      started = Date.now();
      const container = await buildah(['from', '--pull=never', 'scratch']);
      try {
        await buildah(['add', container, rootfs, '/']);
        await steps(container);
        await buildah(['commit', '--rm', container, tag]);
      } catch (error) {
        await buildah(['rm', container]).catch(() => '');
        throw error;
      }
      timings[`stand-in ${name}`] = (Date.now() - started) / 1000;
    }
  };
  const run = (container: string, script: string): Promise<string> => buildah(['run', '--isolation', 'chroot', container, '--', 'sh', '-c', script]);
  const systemPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

  // As the real golang image lays it out: the toolchain in /usr/local/go, GOPATH /go.
  await make('golang', goKey, async (container) => {
    await buildah(['copy', container, go.goroot, '/usr/local/go']);
    await run(container, 'mkdir -p /go/bin /go/src && chmod -R 1777 /go');
    await buildah(['config', '--env', `PATH=/go/bin:/usr/local/go/bin:${systemPath}`, '--env', 'GOPATH=/go', '--env', `GOLANG_VERSION=${go.version.replace(/^go/, '')}`, '--workingdir', '/go', container]);
  });
  // As the real node image lays it out: node and npm under /usr/local, a `node` user with UID 1000.
  await make('node', nodeKey, async (container) => {
    await buildah(['copy', container, nodeBinary, '/usr/local/bin/node']);
    await buildah(['copy', container, npm.dir, '/usr/local/lib/node_modules/npm']);
    await run(
      container,
      'ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx ' +
        '&& groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node ' +
        // Debian's sources where the real image has them (deb822), which the build overrides with its local repository.
        `&& rm -f /etc/apt/sources.list && printf 'Types: deb\\nURIs: ${DEBIAN_MIRROR}\\nSuites: bookworm\\nComponents: main\\n' > ${DEBIAN_SOURCES} ` +
        // Node's compile cache would land in /tmp of the base otherwise.
        '&& NODE_DISABLE_COMPILE_CACHE=1 node --version && NODE_DISABLE_COMPILE_CACHE=1 npm --version',
    );
    await buildah(['config', '--env', `NODE_VERSION=${nodeVersion}`, '--env', `PATH=${systemPath}`, '--cmd', 'node', container]);
  });
  await buildah(['tag', `${STAND_IN_REPO}:golang-${goKey}`, full(golangBase)]);
  await buildah(['tag', `${STAND_IN_REPO}:node-${nodeKey}`, full(nodeBase)]);
  // Stand-ins of an earlier Go, Node or npm are not used again.
  const current = new Set([`${STAND_IN_REPO}:golang-${goKey}`, `${STAND_IN_REPO}:node-${nodeKey}`]);
  const standIns = (await buildah(['images', '--noheading', '--format', '{{.Name}}:{{.Tag}}'])).split('\n').filter((image) => image.startsWith(`${STAND_IN_REPO}:`) && !current.has(image));
  for (const image of standIns) await buildah(['rmi', image]).catch(() => '');
  return { golang: full(golangBase), node: full(nodeBase), nodeKey };
}

/**
 * The Debian packages the Dockerfile installs (its `apt-get install` lines), so
 * that the offline build finds them: downloaded once per node stand-in and
 * package list, with the network, by the stand-in's own apt (so the versions
 * and dependencies are what that root filesystem resolves), into a flat
 * repository (`Packages` written here from each package's control fields, as
 * dpkg-scanpackages would) that the build mounts in place of Debian's sources.
 */
async function ensureAptRepository(cache: string, { buildah }: Buildah, node: string, nodeKey: string, timings: Record<string, number>): Promise<string | undefined> {
  const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
  const packages = [...dockerfile.matchAll(/apt-get install ((?:[^&\\\n]|\\\n)+)/g)]
    .flatMap((m) => (m[1] as string).replaceAll('\\\n', ' ').split(/\s+/))
    .filter((word) => /^[a-z0-9][a-z0-9.+-]+$/.test(word))
    .sort();
  if (packages.length === 0) return undefined;
  const dir = join(cache, `apt-${sha256(JSON.stringify({ nodeKey, packages })).slice(0, 16)}`);
  if (existsSync(dir)) return dir;
  const started = Date.now();
  const work = `${dir}.partial-${process.pid}`;
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  const container = await buildah(['from', '--pull=never', node]);
  try {
    await buildah(['run', '--isolation', 'chroot', container, '--', 'sh', '-c', `apt-get update -qq && apt-get install -y -qq --download-only --no-install-recommends ${packages.join(' ')}`]);
    const root = await buildah(['mount', container]);
    const archives = join(root, 'var', 'cache', 'apt', 'archives');
    const index: string[] = [];
    for (const file of (await readdir(archives)).filter((name) => name.endsWith('.deb')).sort()) {
      await cp(join(archives, file), join(work, file));
      const data = await readFile(join(work, file));
      const control = (await runCommand('dpkg-deb', ['--field', join(work, file)], { cwd: work, env: process.env })).stdout.trimEnd();
      index.push(`${control}\nFilename: ./${file}\nSize: ${data.length}\nSHA256: ${sha256(data)}\n`);
    }
    if (index.length === 0) throw new ImageBuildError(`apt-get downloaded nothing for ${packages.join(' ')}`);
    await writeFile(join(work, 'Packages'), index.join('\n'));
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error instanceof ImageBuildError ? error : new ImageBuildError(`downloading ${packages.join(' ')} for the offline build failed`, { cause: error });
  } finally {
    await buildah(['rm', container]).catch(() => '');
  }
  await rename(work, dir);
  // Repositories of earlier stand-ins or package lists are not read again.
  for (const entry of await readdir(cache)) if (/^apt-[0-9a-f]{16}$/.test(entry) && join(cache, entry) !== dir) await rm(join(cache, entry), { recursive: true, force: true });
  timings['apt packages for the offline build'] = (Date.now() - started) / 1000;
  return dir;
}

/** The npm cache holding the lock file's production dependencies, filled once per lock file. */
async function ensureNpmCache(cache: string): Promise<string> {
  const lock = await readFile(join(repoRoot, 'package-lock.json'));
  const dir = join(cache, `npm-${sha256(lock).slice(0, 16)}`);
  if (existsSync(dir)) return dir;
  const work = await mkdtemp(join(cache, 'npm-fill-'));
  try {
    await cp(join(repoRoot, 'package.json'), join(work, 'package.json'));
    await cp(join(repoRoot, 'package-lock.json'), join(work, 'package-lock.json'));
    await runCommand('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--no-update-notifier', '--prefer-offline', `--cache=${join(work, 'cache')}`, `--logs-dir=${join(work, 'logs')}`], {
      cwd: work,
      env: process.env,
    });
    await rename(join(work, 'cache'), dir);
    // The caches of earlier lock files are not read again.
    for (const entry of await readdir(cache)) if (/^npm-[0-9a-f]{16}$/.test(entry) && join(cache, entry) !== dir) await rm(join(cache, entry), { recursive: true, force: true });
  } catch (error) {
    throw new ImageBuildError('filling the npm cache of the production dependencies failed', { cause: error });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return dir;
}

/** The build context as the Dockerfile sees it: every file .dockerignore lets through. */
async function contextKey(): Promise<string> {
  const allowed = (await readFile(join(repoRoot, '.dockerignore'), 'utf8')).split('\n').filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
  const hash = createHash('sha256');
  const add = async (path: string): Promise<void> => {
    const full = join(repoRoot, path);
    const info = await stat(full);
    if (info.isDirectory()) {
      for (const entry of (await readdir(full)).sort()) await add(join(path, entry));
    } else {
      hash.update(`${path}\0${info.mode & 0o111 ? 'x' : '-'}\0`).update(await readFile(full)).update('\0');
    }
  };
  for (const path of ['Dockerfile', '.dockerignore', ...allowed]) await add(path);
  return hash.digest('hex');
}

interface InspectedImage {
  readonly FromImageID: string;
  readonly Docker: { readonly config: { readonly Env?: string[]; readonly Labels?: Record<string, string>; readonly User?: string } };
}

let building: Promise<Images> | undefined;

/**
 * Both images of the Dockerfile, built if the cache has none for the current
 * Dockerfile, build context and stand-in bases; once per process, and under a
 * lock so that two test files (or two runs) never build at once.
 * @throws {ImageToolsMissingError} when the check cannot run on this machine.
 * @throws {ImageBuildError} when a step fails.
 */
export function ensureImages(): Promise<Images> {
  building ??= buildImages();
  return building;
}

let preparing: Promise<void> | undefined;

/**
 * What the builds take that no Go build makes: buildah and mmdebstrap, the stand-in bases, the npm cache of
 * the production dependencies and the local apt repository. Mostly downloads, which leave the cores idle, so
 * the setup runs this beside the Go builds; `ensureImages` runs it first (from the cache, once it is filled).
 * Once per process, under the build lock.
 * @throws {ImageToolsMissingError} when the check cannot run on this machine.
 */
export function prepareImageInputs(): Promise<void> {
  preparing ??= (async () => {
    await ensureImagePackages();
    const cache = imageCacheDir();
    await mkdir(cache, { recursive: true });
    const release = await acquireLock(join(cache, '.lock'), (holder) => process.stderr.write(`image: waiting for pid ${holder}, which is building the images\n`));
    try {
      const runner = buildahRunner(cache);
      const bases = await ensureStandIns(cache, runner, {});
      await ensureNpmCache(cache);
      await ensureAptRepository(cache, runner, bases.node, bases.nodeKey, {});
    } finally {
      await release();
    }
  })();
  return preparing;
}

async function buildImages(): Promise<Images> {
  await prepareImageInputs();
  const cache = imageCacheDir();
  await mkdir(cache, { recursive: true });
  const release = await acquireLock(join(cache, '.lock'), (holder) => process.stderr.write(`image: waiting for pid ${holder}, which is building the images\n`));
  try {
    const timings: Record<string, number> = {};
    const runner = buildahRunner(cache);
    const { buildah, exists } = runner;
    const bases = await ensureStandIns(cache, runner, timings);
    const baseIds = await Promise.all([bases.golang, bases.node].map((base) => buildah(['inspect', '--type', 'image', '--format', '{{.FromImageID}}', base])));
    const key = sha256(`${await contextKey()}\0${baseIds.join('\0')}`).slice(0, 16);
    const name = (target: ImageTarget): string => `localhost/driftless-${target}:${key}`;
    const leftInTmp: string[] = [];
    if (!(await exists(name('plugin'))) || !(await exists(name('controller')))) {
      // Earlier builds' working containers and images go first: their layers are what fills the disk.
      await removeOldImages(runner, key);
      const npmCache = await ensureNpmCache(cache);
      const aptRepository = await ensureAptRepository(cache, runner, bases.node, bases.nodeKey, timings);
      const go = await goFacts();
      const work = await mkdtemp(join(cache, 'build-'));
      try {
        // Only for the tools stage: GOPROXY from the mounted module cache, so `go install …@version` needs no network;
        // and no checksum database: the modules in that cache were verified against sum.golang.org by the host's go
        // when the setup downloaded them (ensureTools), and the database's tiles for today's tree may not be cached
        // (a cold run asked sum.golang.org for one, from inside the network namespace, and failed).
        const goEnv = (await readFile(join(go.goroot, 'go.env'), 'utf8'))
          .replace(/^GOPROXY=.*$/m, 'GOPROXY=file:///go/pkg/mod/cache/download')
          .replace(/^GOSUMDB=.*$/m, 'GOSUMDB=off');
        if (!/^GOSUMDB=off$/m.test(goEnv)) throw new ImageBuildError('the Go toolchain\'s go.env has no GOSUMDB line to turn off');
        await writeFile(join(work, 'go.env'), goEnv);
        // /tmp of every RUN step: the filled npm cache where the Dockerfile's npm ci looks, and afterwards whatever the steps left.
        const tmp = join(work, 'tmp');
        await mkdir(tmp);
        // As /tmp is: the plugin stage's priming step runs as UID 999.
        await chmod(tmp, 0o1777);
        const common = ['bud', '--pull=never', '--isolation=chroot', '--layers', '--file', join(repoRoot, 'Dockerfile')];
        // apt reads the local repository in place of Debian's (mounted over the file the image has, so no mount point is left behind).
        const sources = join(work, 'debian.sources');
        await writeFile(sources, 'Types: deb\nURIs: file:/tmp/apt\nSuites: ./\nTrusted: yes\n');
        let started = Date.now();
        // The tools stage alone, with the Go caches: the same go install argv as test/tools.ts, so helm and kustomize link from the cache.
        // The mounts would leave empty mount points in the images (buildah commits them), so the targets get none: their tools stage is this one, from the layer cache.
        await buildah(
          [...common, '--target', 'tools', '-v', `${join(work, 'go.env')}:/usr/local/go/go.env:ro`, '-v', `${go.gocache}:/root/.cache/go-build`, '-v', `${go.gomodcache}:/go/pkg/mod`, '-t', `localhost/driftless-tools:${key}`, repoRoot],
          { offline: true },
        );
        timings['build tools stage'] = (Date.now() - started) / 1000;
        for (const target of ['controller', 'plugin'] as const) {
          // npm ci removes /tmp/npm (so a build whose npm layer is cached leaves the copy behind: not the build's doing).
          await rm(join(tmp, 'npm'), { recursive: true, force: true });
          await cp(npmCache, join(tmp, 'npm', 'cache'), { recursive: true });
          await rm(join(tmp, 'apt'), { recursive: true, force: true });
          if (aptRepository !== undefined) await cp(aptRepository, join(tmp, 'apt'), { recursive: true });
          started = Date.now();
          await buildah([...common, '--target', target, '-v', `${tmp}:/tmp`, '-v', `${sources}:${DEBIAN_SOURCES}:ro`, '-t', name(target), repoRoot], { offline: true });
          timings[`build ${target}`] = (Date.now() - started) / 1000;
          const given = (path: string): boolean => ['npm', 'apt'].some((dir) => path === dir || path.startsWith(`${dir}/`));
          leftInTmp.push(...(await listTree(tmp)).filter((path) => !given(path)).map((path) => `${target}: /tmp/${path}`));
        }
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    }
    const image = async (target: ImageTarget): Promise<BuiltImage> => {
      const [inspected] = JSON.parse(await buildah(['inspect', '--type', 'image', name(target)]).then((text) => `[${text}]`)) as [InspectedImage];
      const container = `driftless-${target}-${key}`;
      const containers = await buildah(['containers', '--noheading', '--format', '{{.ContainerName}}']);
      if (!containers.split('\n').includes(container)) await buildah(['from', '--pull=never', '--name', container, name(target)]);
      const rootfs = await buildah(['mount', container]);
      const size = await buildah(['images', '--noheading', '--format', '{{.Size}}', '--no-trunc', name(target)]);
      const config = inspected.Docker.config;
      return {
        target,
        name: name(target),
        id: inspected.FromImageID,
        sizeBytes: parseSize(size),
        env: Object.fromEntries((config.Env ?? []).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])),
        labels: config.Labels ?? {},
        user: config.User ?? '',
        rootfs,
      };
    };
    return { plugin: await image('plugin'), controller: await image('controller'), timings, leftInTmp };
  } finally {
    await release();
  }
}

/** "482 MB" → bytes (buildah prints decimal units). */
function parseSize(text: string): number {
  const match = /^([\d.]+)\s*(B|kB|KB|MB|GB)$/.exec(text.trim());
  if (!match) throw new ImageBuildError(`buildah images printed size ${JSON.stringify(text)}`);
  const unit = { B: 1, kB: 1e3, KB: 1e3, MB: 1e6, GB: 1e9 }[match[2] as 'B'];
  return Math.round(Number(match[1]) * unit);
}

/** Relative paths of everything under `dir` (directories included). */
async function listTree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const path = join(prefix, entry.name);
    out.push(path);
    if (entry.isDirectory()) out.push(...(await listTree(dir, path)));
  }
  return out;
}

/** Removes the working containers and images of builds other than `key`, and the layers only they used. */
async function removeOldImages({ buildah }: Buildah, key: string): Promise<void> {
  const containers = (await buildah(['containers', '--noheading', '--format', '{{.ContainerName}}'])).split('\n').filter((c) => /^driftless-(plugin|controller)-/.test(c) && !c.endsWith(key));
  for (const container of containers) await buildah(['rm', container]);
  const images = (await buildah(['images', '--noheading', '--format', '{{.Name}}:{{.Tag}}'])).split('\n').filter((i) => /^localhost\/driftless-(plugin|controller|tools):/.test(i) && !i.endsWith(key));
  for (const image of images) await buildah(['rmi', image]).catch(() => '');
  await buildah(['rmi', '--prune']).catch(() => '');
}
