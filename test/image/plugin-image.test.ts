/**
 * The Dockerfile built as shipped (build.ts: buildah, stand-in bases under the
 * Dockerfile's own base names) and the plugin image run as the sidecar runs
 * it: UID 999, read-only root, only the volumes and environment the pod gives.
 * Its commands must print exactly what the checkout prints, byte for byte.
 * The Argo CD and controller checks from the images are in
 * test/image/*.cluster.test.ts.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Images } from './build.ts';
import { imagesOrDiagnostic } from './checked.ts';
import { rootfsCommandLine, type RootfsMount } from './rootfs.ts';
import { ensureRenderers } from '../tools.ts';

const repoRoot = join(import.meta.dirname, '..', '..');
const packageJson = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { version: string; license: string };

interface Output {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end, feeding `stdin`; never rejects on a non-zero exit (the exit is compared too). */
async function capture(file: string, args: readonly string[], options: { cwd?: string; env: Readonly<Record<string, string>>; stdin?: string }): Promise<Output> {
  const child = spawn(file, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdin.end(options.stdin ?? '');
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

describe('the image check on a machine that cannot build', () => {
  it('says, without root, what to install and how to run it, instead of building', async () => {
    const script = `import(${JSON.stringify(join(import.meta.dirname, 'build.ts'))}).then((m) => m.ensureImages()).then(` +
      `() => process.exit(0), (e) => { process.stderr.write(e.name + ': ' + e.message); process.exit(7); });`;
    // As nobody when this runs as root (as CI does); as the user it is otherwise.
    const [file, args] = process.getuid?.() === 0
      ? ['/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', process.execPath, '--input-type=module', '-e', script]]
      : [process.execPath, ['--input-type=module', '-e', script]];
    const result = await capture(file, args, { cwd: tmpdir(), env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: tmpdir() } });
    assert.equal(result.code, 7, result.stderr);
    assert.match(result.stderr, /^ImageToolsMissingError: not root: .*apt-get install -y --no-install-recommends buildah mmdebstrap/);
  });
});

describe('the images built from the Dockerfile', () => {
  let images: Images | undefined;
  let work = '';
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'driftless-image-'));
  });
  after(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it('builds both targets from the stand-in bases without network, leaving nothing in /tmp, labelled and as UID 999', { timeout: 30 * 60_000 }, async (t) => {
    images = await imagesOrDiagnostic(t);
    if (images === undefined) return;
    const { plugin, controller } = images;
    for (const image of [plugin, controller]) {
      assert.equal(image.user, '999:999', `${image.target} runs as UID 999`);
      assert.equal(image.labels['org.opencontainers.image.source'], 'https://github.com/driftless/driftless');
      assert.equal(image.labels['org.opencontainers.image.version'], packageJson.version);
      assert.equal(image.labels['org.opencontainers.image.licenses'], packageJson.license);
      assert.equal(image.labels['org.opencontainers.image.title'], `driftless-${image.target}`);
    }
    assert.deepEqual(images.leftInTmp, [], 'no RUN step leaves anything in /tmp (a docker build would commit it)');
    // Sizes are figures, not a property: the controller's git, ssh and gpg (~80 MB) weigh about what the plugin's helm and
    // kustomize do, so which is smaller turns on a few MB (what each image ships is checked in the next test).
    t.diagnostic(`plugin ${(plugin.sizeBytes / 1e6).toFixed(0)} MB, controller ${(controller.sizeBytes / 1e6).toFixed(0)} MB (uncompressed)`);
    t.diagnostic(`build steps this run: ${JSON.stringify(images.timings)}`);
  });

  it('ships each component only what it runs, with no package manager cache or npm log, and an SBOM', async (t) => {
    if (images === undefined) return t.diagnostic('the images were not built (see the first test)');
    const { plugin, controller } = images;
    const has = (image: { rootfs: string }, path: string): boolean => existsSync(join(image.rootfs, path));
    for (const path of ['usr/local/bin/helm', 'usr/local/bin/kustomize', 'opt/driftless/plugin/main.ts', 'opt/driftless/core/index.ts']) {
      assert.ok(has(plugin, path), `the plugin image has /${path}`);
    }
    assert.ok(!has(plugin, 'opt/driftless/controller'), 'the plugin image has no controller code');
    assert.ok((await readdir(join(plugin.rootfs, 'opt/driftless/node-compile-cache'))).length > 0, 'the compile cache is primed');
    for (const path of ['usr/local/bin/helm', 'usr/local/bin/kustomize', 'opt/driftless/plugin', 'opt/driftless/examples']) {
      assert.ok(!has(controller, path), `the controller image has no /${path}`);
    }
    assert.ok(has(controller, 'opt/driftless/controller/main.ts'), 'the controller image has the controller');
    assert.ok((await readdir(join(controller.rootfs, 'opt/driftless/node-compile-cache'))).length > 0, 'the controller\'s compile cache is primed (ADR 0021)');
    for (const image of [plugin, controller]) {
      for (const path of ['root/.npm', 'tmp/npm', 'tmp/node-compile-cache', 'root/.cache', 'go']) {
        assert.ok(!has(image, path), `${image.target}: no /${path}`);
      }
      assert.deepEqual(await readdir(join(image.rootfs, 'tmp')), [], `${image.target}: /tmp is empty`);
      const sbom = JSON.parse(await readFile(join(image.rootfs, 'opt/driftless/sbom.spdx.json'), 'utf8')) as { spdxVersion: string; packages: { name: string }[] };
      assert.equal(sbom.spdxVersion, 'SPDX-2.3');
      const names = new Set(sbom.packages.map((entry) => entry.name));
      for (const dependency of Object.keys((JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies)) {
        assert.ok(names.has(dependency), `${image.target}: the SBOM lists ${dependency}`);
      }
      assert.ok(!names.has('typescript'), `${image.target}: the SBOM lists no dev dependency`);
    }
  });

  it('runs the plugin\'s commands as UID 999 on a read-only root, without a shell, with output byte-identical to the checkout\'s', { timeout: 10 * 60_000 }, async (t) => {
    if (images === undefined) return t.diagnostic('the images were not built (see the first test)');
    const plugin = images.plugin;
    const renderers = await ensureRenderers();
    const keyDir = await mkdtemp(join(work, 'key-'));
    await writeFile(join(keyDir, 'key'), 'image-check-key-0123456789abcdef\n', { mode: 0o644 });
    await chmod(keyDir, 0o755);
    // No shell at run time: every shell of the image is masked (an empty file cannot be executed), so a command that needed one would fail.
    const shells = ['/usr/bin/dash', '/usr/bin/bash'].filter((shell) => existsSync(join(plugin.rootfs, shell)));
    assert.ok(shells.length > 0, 'the base has a shell to mask');
    const noShell: RootfsMount[] = shells.map((shell) => ({ source: '/dev/null', target: shell, readOnly: true }));
    const application = 'apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: shop}\nspec:\n  source: {repoURL: https://example.invalid/r.git, path: app, helm: {releaseName: shop, valueFiles: [values.yaml]}}\n';
    const deployment = await readFile(join(repoRoot, 'examples', 'directory', 'deployment.yaml'), 'utf8');
    const cases: { args: string[]; stdin?: string; keyed?: boolean }[] = [
      { args: ['--help'] },
      { args: ['generate', '--help'] },
      { args: ['generate', '--path', 'examples/directory'] },
      { args: ['generate', '--path', 'examples/directory'], keyed: true },
      { args: ['generate', '--path', 'examples/helm'], keyed: true },
      { args: ['generate', '--path', 'examples/kustomize', '--name-prefix', 'image-'], keyed: true },
      { args: ['explain', '--path', 'examples/directory'], keyed: true },
      { args: ['generate', '-'], stdin: deployment, keyed: true },
      { args: ['migrate-app', '-'], stdin: application },
      // A usage error: its message and exit code (an error naming a path would name the image's /opt/driftless).
      { args: ['generate', '--path', 'examples/directory', '--no-such-flag'] },
    ];
    for (const { args, stdin, keyed } of cases) {
      const home = await mkdtemp(join(work, 'tmp-'));
      await chmod(home, 0o1777);
      const mounts: RootfsMount[] = [{ source: home, target: '/tmp' }, { source: keyDir, target: '/etc/driftless/hash-key', readOnly: true }, ...noShell];
      const [file, argv] = rootfsCommandLine({
        rootfs: plugin.rootfs,
        mounts,
        user: plugin.user,
        // The image's environment, and what the sidecar sets (manifests/plugin): HOME on the writable /tmp, the primed cache.
        env: { ...plugin.env, HOME: '/tmp', NODE_COMPILE_CACHE: '/opt/driftless/node-compile-cache', ...(keyed === true ? { DRIFTLESS_HASH_KEY_FILE: '/etc/driftless/hash-key/key' } : {}) },
        cwd: '/opt/driftless',
        command: 'driftless',
        args,
      });
      const fromImage = await capture(file, argv, { env: {}, ...(stdin === undefined ? {} : { stdin }) });
      const checkoutHome = await mkdtemp(join(work, 'home-'));
      const fromCheckout = await capture(process.execPath, [join(repoRoot, 'bin', 'driftless.js'), ...args], {
        cwd: repoRoot,
        env: {
          PATH: [dirname(process.execPath), renderers.binDir, '/usr/bin', '/bin'].join(':'),
          HOME: checkoutHome,
          NODE_COMPILE_CACHE: join(checkoutHome, 'compile-cache'),
          ...(keyed === true ? { DRIFTLESS_HASH_KEY_FILE: join(keyDir, 'key') } : {}),
        },
        ...(stdin === undefined ? {} : { stdin }),
      });
      const label = `driftless ${args.join(' ')}${keyed === true ? ' (with the hash key)' : ''}`;
      assert.equal(fromImage.stderr, fromCheckout.stderr, `${label}: stderr`);
      assert.equal(fromImage.stdout, fromCheckout.stdout, `${label}: stdout`);
      assert.equal(fromImage.code, fromCheckout.code, `${label}: exit code`);
      assert.ok(fromCheckout.stdout.length > 0 || fromCheckout.stderr.length > 0, `${label} says something`);
    }
  });

  it('hits the compile cache the build primed, on a root that is mounted read-only', async (t) => {
    if (images === undefined) return t.diagnostic('the images were not built (see the first test)');
    const plugin = images.plugin;
    const home = await mkdtemp(join(work, 'cache-'));
    await chmod(home, 0o1777);
    const run = (command: string, args: string[], env: Record<string, string> = {}): Promise<Output> => {
      const [file, argv] = rootfsCommandLine({ rootfs: plugin.rootfs, mounts: [{ source: home, target: '/tmp' }], user: plugin.user, env: { ...plugin.env, HOME: '/tmp', ...env }, cwd: '/opt/driftless', command, args });
      return capture(file, argv, { env: {} });
    };
    const mounts = await run('cat', ['/proc/self/mountinfo']);
    const root = mounts.stdout.split('\n').find((line) => line.split(' ')[4] === '/');
    assert.match(root ?? '', /^\S+ \S+ \S+ \S+ \/ ro[, ]/, 'the root is mounted read-only');
    const id = await run('id', ['-u']);
    assert.equal(id.stdout, '999\n');
    const generate = await run('driftless', ['generate', '--path', 'examples/directory'], { NODE_COMPILE_CACHE: '/opt/driftless/node-compile-cache', NODE_DEBUG_NATIVE: 'COMPILE_CACHE' });
    assert.equal(generate.code, 0, generate.stderr);
    assert.match(generate.stderr, /V8 code cache for ESM file:\/\/\/opt\/driftless\/plugin\/main\.ts was accepted/);
  });
});
