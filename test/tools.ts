/**
 * Real `kustomize` and `helm` for the tests and the benchmark, built from the Go
 * module proxy at the versions pinned in `test/tools/versions.json` (the one place
 * the pins live; the Dockerfile's ARGs are checked against it by a test).
 *
 * The binaries go to `${XDG_CACHE_HOME:-$HOME/.cache}/driftless/tools/<name>-<version>/`,
 * outside the clone, so a fresh CI clone on the same machine reuses them.
 * Each install is built into a temporary directory, verified, then renamed into
 * place: a crashed or concurrent install never leaves a half-written tool behind.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, symlink, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { acquireLock } from './support/build-lock.ts';

/** One pinned Go-installable tool. */
export interface ToolPin {
  /** Go package path handed to `go install`. */
  readonly module: string;
  /** Module version, e.g. `v5.8.2`. */
  readonly version: string;
  /** Package variable set with `-X` so that `<tool> version` prints the pin (null when the tool reads Go build info). */
  readonly versionVariable: string | null;
}

export type ToolName = 'kustomize' | 'helm';

/** Absolute paths of the installed tools. */
export interface Tools {
  readonly kustomize: string;
  readonly helm: string;
  /** A directory containing exactly `kustomize` and `helm`, for the front of PATH. */
  readonly binDir: string;
  /**
   * The Go YAML oracle built from `test/tools/goyaml/` (its go.mod/go.sum pin sigs.k8s.io/yaml and
   * k8s.io/apimachinery): reads a stream as Argo CD reads plugin output. Not on `binDir`.
   */
  readonly goyaml: string;
}

/** The pins, read from `test/tools/versions.json`. */
export const TOOL_PINS: Readonly<Record<ToolName, ToolPin>> = Object.freeze(
  JSON.parse(readFileSync(join(import.meta.dirname, 'tools', 'versions.json'), 'utf8')) as Record<ToolName, ToolPin>,
);

/** The argv after `go` that builds one tool; the Dockerfile runs the same command. */
export function goInstallArgs(pin: ToolPin): string[] {
  const ldflags = ['-s', '-w'];
  if (pin.versionVariable !== null) ldflags.push('-X', `${pin.versionVariable}=${pin.version}`);
  return ['install', '-trimpath', `-ldflags=${ldflags.join(' ')}`, `${pin.module}@${pin.version}`];
}

/** The cache root for the tools, outside any clone. */
export function toolsRoot(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const cache = env['XDG_CACHE_HOME'] || join(env['HOME'] || homedir(), '.cache');
  return join(cache, 'driftless', 'tools');
}

let pending: Promise<Tools> | undefined;

/**
 * Installs the pinned kustomize and helm if they are not in the cache yet and
 * returns their paths. Cheap when they are present (a few `stat`s).
 */
export function ensureTools(): Promise<Tools> {
  pending ??= install().catch((error: unknown) => {
    pending = undefined;
    throw error;
  });
  return pending;
}

/** The renderers alone: what a user of the plugin needs (`npm run setup -- --tools`), without the test-only YAML oracle. */
export type Renderers = Pick<Tools, 'kustomize' | 'helm' | 'binDir'>;

/** Installs the pinned kustomize and helm if they are not in the cache yet, and the binDir holding both. */
export async function ensureRenderers(): Promise<Renderers> {
  const root = toolsRoot();
  await mkdir(root, { recursive: true });
  // Sequential on purpose: each build already uses every core.
  const kustomize = await ensureTool(root, 'kustomize');
  const helm = await ensureTool(root, 'helm');
  const binDir = await ensureBinDir(root, { kustomize, helm });
  return Object.freeze({ kustomize, helm, binDir });
}

async function install(): Promise<Tools> {
  const renderers = await ensureRenderers();
  const goyaml = await ensureGoyaml(toolsRoot());
  return Object.freeze({ ...renderers, goyaml });
}

/** Builds the test-only Go YAML oracle; cached under a hash of its sources, so an edit rebuilds it. */
async function ensureGoyaml(root: string): Promise<string> {
  const sourceDir = join(import.meta.dirname, 'tools', 'goyaml');
  const digest = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', 'main.go']) digest.update(file).update('\0').update(await readFile(join(sourceDir, file))).update('\0');
  const id = digest.digest('hex').slice(0, 16);
  const finalDir = join(root, `goyaml-${id}`);
  const finalBin = join(finalDir, 'goyaml');
  if (existsSync(finalBin)) return finalBin;
  const release = await acquireLock(join(root, `.lock-goyaml-${id}`), announceWait('the Go YAML oracle'));
  const tempDir = join(root, `.tmp-goyaml-${id}-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    if (existsSync(finalBin)) return finalBin;
    await mkdir(tempDir, { recursive: true });
    const args = ['build', '-C', sourceDir, '-mod=readonly', '-trimpath', '-o', join(tempDir, 'goyaml'), '.'];
    await run('go', args, { ...process.env, CGO_ENABLED: '0' }, `go ${args.join(' ')}`);
    await publish(tempDir, finalDir);
  } finally {
    await rm(tempDir, { recursive: true, force: true });
    await release();
  }
  return finalBin;
}

async function ensureTool(root: string, name: ToolName): Promise<string> {
  const pin = TOOL_PINS[name];
  const finalDir = join(root, `${name}-${pin.version}`);
  const finalBin = join(finalDir, name);
  if (existsSync(finalBin)) return finalBin;

  // Another process (a parallel test file, another engineer's run) may be
  // building the same tool; wait for it instead of compiling twice.
  const release = await acquireLock(join(root, `.lock-${name}-${pin.version}`), announceWait(name));
  const tempDir = join(root, `.tmp-${name}-${pin.version}-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    if (existsSync(finalBin)) return finalBin;
    await mkdir(tempDir, { recursive: true });
    const started = Date.now();
    process.stderr.write(`driftless tools: building ${name} ${pin.version} from the Go module proxy (first run only, takes minutes)...\n`);
    await run('go', goInstallArgs(pin), { ...process.env, GOBIN: tempDir, CGO_ENABLED: '0' }, `go ${goInstallArgs(pin).join(' ')}`);
    const tempBin = join(tempDir, name);
    await verifyVersion(tempBin, name, pin.version);
    await publish(tempDir, finalDir);
    process.stderr.write(`driftless tools: ${name} ${pin.version} ready in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  } finally {
    await rm(tempDir, { recursive: true, force: true });
    await release();
  }
  return finalBin;
}

function announceWait(what: string): (holder: number) => void {
  return (holder) => process.stderr.write(`driftless tools: waiting for another process (pid ${holder}) that is building ${what}...\n`);
}

/** Checks that the built binary reports the pinned version, so a wrong pin or ldflag cannot go unnoticed. */
async function verifyVersion(bin: string, name: ToolName, version: string): Promise<void> {
  const args = name === 'helm' ? ['version', '--short'] : ['version'];
  const { stdout } = await run(bin, args, process.env, `${name} ${args.join(' ')}`);
  const reported = stdout.trim();
  if (!reported.startsWith(version)) {
    throw new Error(`driftless tools: ${name} built from ${TOOL_PINS[name].module}@${version} reports version ${JSON.stringify(reported)}`);
  }
}

/** A directory with symlinks to both tools; named after the pins, so a pin change gets a fresh one. */
async function ensureBinDir(root: string, bins: Readonly<Record<ToolName, string>>): Promise<string> {
  const binDir = join(root, `bin-kustomize-${TOOL_PINS.kustomize.version}-helm-${TOOL_PINS.helm.version}`);
  if (existsSync(join(binDir, 'kustomize')) && existsSync(join(binDir, 'helm'))) return binDir;
  const tempDir = join(root, `.tmp-bin-${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(tempDir, { recursive: true });
  try {
    for (const [name, target] of Object.entries(bins)) await symlink(target, join(tempDir, name));
    await publish(tempDir, binDir);
  } finally {
    await rm(tempDir, { recursive: true, force: true });
  }
  return binDir;
}

/** Renames a finished temp dir into place; losing a race to another installer is fine. */
async function publish(tempDir: string, finalDir: string): Promise<void> {
  try {
    await rename(tempDir, finalDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const exists = await stat(finalDir).then(() => true, () => false);
    if (!(exists && (code === 'ENOTEMPTY' || code === 'EEXIST'))) throw error;
  }
}

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv, display: string): Promise<{ stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-4000); });
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' && command === 'go') {
        reject(new Error(
          'driftless tools: `go` is not on PATH. The tests build the pinned kustomize ' +
          `${TOOL_PINS.kustomize.version} and helm ${TOOL_PINS.helm.version} from the Go module proxy; ` +
          'install Go 1.26 or newer (https://go.dev/dl/) and run again.',
          { cause: error },
        ));
      } else {
        reject(new Error(`driftless tools: cannot run ${display}: ${error.message}`, { cause: error }));
      }
    });
    child.on('close', (code, signal) => {
      if (code === 0) resolve({ stdout });
      else reject(new Error(`driftless tools: \`${display}\` failed (${signal ?? `exit ${code}`}):\n${stderr.trimEnd()}`));
    });
  });
}
