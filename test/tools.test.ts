/**
 * test/tools.ts installs the pinned renderers, and the Dockerfile builds the same
 * ones and ships every file the CLI loads. There is no Docker engine here, so
 * the Dockerfile is checked as text against the repository.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { TOOL_PINS, ensureTools, goInstallArgs, toolsRoot } from './tools.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

/** Dockerfile instructions (continuation lines joined), split by stage: name → its instructions, FROM first. */
function stages(): Map<string, string[]> {
  const instructions = dockerfile.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const byName = new Map<string, string[]>();
  let current: string[] = [];
  for (const line of instructions) {
    const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) {
      current = [];
      byName.set(from[1] ?? `#${byName.size}`, current);
    }
    current.push(line);
  }
  return byName;
}

/** The instructions that make an image: the stage's and, first, those of the stages it is FROM. */
function imageInstructions(target: string): string[] {
  const all = stages();
  const own = all.get(target);
  assert.ok(own, `the Dockerfile has a stage ${target}`);
  const base = (own[0] as string).split(/\s+/)[1] as string;
  return all.has(base) ? [...imageInstructions(base), ...own.slice(1)] : own;
}

/** The paths an image's COPY instructions take from the build context. */
function copiedSources(instructions: readonly string[]): string[] {
  return instructions.filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l)).flatMap((l) => l.split(/\s+/).slice(1, -1));
}

const matchesSource = (path: string) => (source: string): boolean => (source.endsWith('/') ? path.startsWith(source) : path === source);

describe('ensureTools', () => {
  it('installs the pinned kustomize and helm and a binDir holding exactly both', async () => {
    const tools = await ensureTools();
    assert.ok(tools.kustomize.startsWith(toolsRoot()), 'kustomize is in the cache outside the clone');
    assert.ok(relative(root, tools.kustomize).startsWith('..'), 'not inside the clone');
    assert.equal(realpathSync(join(tools.binDir, 'kustomize')), realpathSync(tools.kustomize));
    assert.equal(realpathSync(join(tools.binDir, 'helm')), realpathSync(tools.helm));
    const kustomize = await run(tools.kustomize, ['version']);
    assert.equal(kustomize.stdout.trim(), TOOL_PINS.kustomize.version);
    const helm = await run(tools.helm, ['version', '--short']);
    assert.match(helm.stdout.trim(), new RegExp(`^${TOOL_PINS.helm.version.replaceAll('.', '\\.')}(\\+|$)`));
    assert.deepEqual(await ensureTools(), tools, 'a second call returns the same installation');
  });

  it('builds the Go YAML oracle, which reads a stream as Argo CD does (e5 a string, 0o17 an int)', async () => {
    const { goyaml } = await ensureTools();
    const { stdout } = await new Promise<{ stdout: string }>((resolveRun, reject) => {
      const child = execFile(goyaml, [], (error, out) => (error ? reject(error) : resolveRun({ stdout: out })));
      child.stdin?.end('a: e5\nb: 0o17\n---\n--- x\n');
    });
    assert.equal(stdout, '{"json":{"a":"e5","b":15}}\n{"error":"invalid Yaml document separator: x"}\n');
  });

  it('puts the cache under XDG_CACHE_HOME, else ~/.cache', () => {
    assert.equal(toolsRoot({ XDG_CACHE_HOME: '/x/cache', HOME: '/home/u' }), '/x/cache/driftless/tools');
    assert.equal(toolsRoot({ HOME: '/home/u' }), '/home/u/.cache/driftless/tools');
    assert.equal(toolsRoot({ XDG_CACHE_HOME: '', HOME: '/home/u' }), '/home/u/.cache/driftless/tools');
  });

  it('fails with a clear message when go is missing', async () => {
    const cache = await mkdtemp(join(tmpdir(), 'driftless-nogo-'));
    try {
      const script = `import(${JSON.stringify(join(import.meta.dirname, 'tools.ts'))}).then((m) => m.ensureTools()).then(() => process.exit(0), (e) => { process.stderr.write(e.message); process.exit(7); });`;
      const result = await run(process.execPath, ['--input-type=module', '-e', script], {
        env: { PATH: join(cache, 'empty-path'), XDG_CACHE_HOME: cache, HOME: cache },
      }).then(() => undefined, (error: unknown) => error as { code?: number; stderr?: string });
      assert.ok(result, 'ensureTools must fail without go');
      assert.equal(result.code, 7);
      assert.match(result.stderr ?? '', /`go` is not on PATH/);
      assert.match(result.stderr ?? '', new RegExp(`kustomize ${TOOL_PINS.kustomize.version.replaceAll('.', '\\.')}`));
      assert.ok(!existsSync(join(cache, 'driftless', 'tools', `kustomize-${TOOL_PINS.kustomize.version}`)), 'nothing half-installed');
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  });
});

describe('npm run setup -- --tools', () => {
  it('installs only the renderers and prints the line that puts the pinned kustomize and helm first on PATH', async () => {
    const setup = await run(process.execPath, [join(root, 'test', 'setup.ts'), '--tools']);
    const tools = await ensureTools();
    assert.equal(setup.stdout, `export PATH='${tools.binDir}':"$PATH"\n`);
    assert.match(setup.stderr, /setup: both in/);
    // What docs/plugin.md tells a user to run: eval the line, then the pinned tools are the ones on PATH.
    const shell = await run('sh', ['-c', `eval "$(${JSON.stringify(process.execPath)} test/setup.ts --tools 2>/dev/null)" && kustomize version && helm version --short`], { cwd: root, env: { PATH: '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/tmp', ...(process.env['XDG_CACHE_HOME'] === undefined ? {} : { XDG_CACHE_HOME: process.env['XDG_CACHE_HOME'] }) } });
    const [kustomize, helm] = shell.stdout.trim().split('\n');
    assert.equal(kustomize, TOOL_PINS.kustomize.version);
    assert.match(helm ?? '', new RegExp(`^${TOOL_PINS.helm.version.replaceAll('.', '\\.')}(\\+|$)`));
  });

  it('refuses an unknown argument with its usage (exit 2)', async () => {
    await assert.rejects(run(process.execPath, [join(root, 'test', 'setup.ts'), '--tool']), (error: { code?: number; stderr?: string }) => error.code === 2 && /unknown argument "--tool"/.test(error.stderr ?? ''));
  });
});

describe('Dockerfile', () => {
  it('builds kustomize and helm with exactly the go install argv of test/tools.ts', () => {
    for (const pin of Object.values(TOOL_PINS)) {
      const line = ['go', ...goInstallArgs(pin)].map((arg) => (/\s/.test(arg) ? `"${arg}"` : arg)).join(' ');
      assert.ok(dockerfile.includes(`RUN ${line}\n`), `Dockerfile runs: ${line}`);
    }
    assert.match(dockerfile, /^FROM golang:1\.26 AS tools$/m);
    assert.match(dockerfile, /^ENV CGO_ENABLED=0 /m);
  });

  it('has a plugin and a controller target, the plugin the default (last) one, both on the tests\' Node, as UID 999, without an entrypoint', () => {
    const names = [...stages().keys()];
    assert.deepEqual(names, ['tools', 'runtime', 'controller', 'plugin']);
    assert.equal(stages().get('runtime')?.[0], `FROM node:${packageJson.devDependencies?.['node']}-slim AS runtime`);
    for (const target of ['plugin', 'controller']) {
      const image = imageInstructions(target);
      assert.ok(image.some((l) => /^RUN npm ci --omit=dev\b/.test(l)), `${target}: production dependencies only`);
      assert.equal(image.filter((l) => /^USER\s/.test(l)).at(-1), 'USER 999:999', `${target}: runs as UID 999`);
      assert.ok(!image.some((l) => /^(ENTRYPOINT|CMD)\s/.test(l)), `${target}: the pod sets the command`);
      // plugin.yaml and the controller's Deployment run `driftless …`, so the CLI must be on PATH under that name.
      assert.ok(image.includes('RUN ln -s /opt/driftless/bin/driftless.js /usr/local/bin/driftless'), `${target}: driftless on PATH`);
    }
    assert.match(readFileSync(join(root, 'bin', 'driftless.js'), 'utf8'), /^#!\/usr\/bin\/env node\n/);
    assert.ok(imageInstructions('plugin').includes('COPY --from=tools /out/kustomize /out/helm /usr/local/bin/'));
    assert.ok(!imageInstructions('controller').some((l) => /--from=tools|kustomize|helm/.test(l)), 'the controller has no renderer');
  });

  it('gives the controller what the Git write-back runs (git, ssh, gpg, CA certificates), leaving no apt lists, archives or logs in the layer', () => {
    const install = imageInstructions('controller').find((l) => l.startsWith('RUN apt-get update'));
    assert.ok(install, 'the controller installs packages');
    for (const pkg of ['ca-certificates', 'git', 'gpg', 'gpg-agent', 'openssh-client']) assert.match(install, new RegExp(`--no-install-recommends [^&]*\\b${pkg}\\b`), pkg);
    for (const left of ['/var/lib/apt/lists/*', '/var/cache/apt/archives/*.deb', '/var/log/apt', '/var/log/dpkg.log']) assert.ok(install.includes(left), `removes ${left} in the same layer`);
    assert.ok(!imageInstructions('plugin').some((l) => /apt-get/.test(l)), 'the plugin needs no Debian package');
  });

  it('copies every file each command loads into its image, nothing of the other component, and .dockerignore lets them through', () => {
    const allowed = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1));
    const bin = join(root, 'bin', 'driftless.js');
    // bin/driftless.js routes `controller` and `explain --live` to the controller's code, everything else to the plugin's.
    const plugin = [bin, ...loadedFiles(join(root, 'plugin', 'main.ts'))];
    const controller = [bin, ...loadedFiles(join(root, 'controller', 'main.ts')), ...loadedFiles(join(root, 'controller', 'explain', 'main.ts'))];
    const cases = [
      { target: 'plugin', loaded: plugin, other: 'controller/' },
      { target: 'controller', loaded: controller, other: 'plugin/' },
    ];
    for (const { target, loaded, other } of cases) {
      const image = imageInstructions(target);
      assert.equal(image.filter((l) => /^WORKDIR\s/.test(l)).at(-1)?.split(/\s+/)[1], '/opt/driftless');
      const copied = copiedSources(image);
      for (const file of loaded) {
        const path = relative(root, file);
        assert.ok(!path.startsWith(other), `${target}: loads ${path}, code of the other component`);
        assert.ok(copied.some(matchesSource(path)), `${path} is copied into the ${target} image`);
        assert.ok(allowed.some(matchesSource(path)), `${path} is not excluded by .dockerignore`);
      }
      assert.ok(!copied.includes(other), `the ${target} image has no ${other}`);
      for (const source of copied) assert.ok(allowed.includes(source), `.dockerignore lets ${source} through`);
    }
    assert.ok(!copiedSources(imageInstructions('controller')).includes('examples/'), 'the examples only prime the plugin\'s compile cache');
  });

  it('labels both images (source, version, licenses) and leaves no npm cache, npm log or compile cache in a layer', () => {
    const runtime = stages().get('runtime') ?? [];
    const labels = runtime.filter((l) => /^LABEL\s/.test(l)).join(' ');
    assert.match(labels, /org\.opencontainers\.image\.source="https:\/\/github\.com\/driftless\/driftless"/);
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; license: string };
    assert.ok(labels.includes(`org.opencontainers.image.version="${pkg.version}"`), 'the version label is package.json\'s');
    assert.ok(labels.includes(`org.opencontainers.image.licenses="${pkg.license}"`), 'the licenses label is package.json\'s');
    const npm = runtime.filter((l) => /\bnpm\b/.test(l));
    assert.equal(npm.length, 1, 'one RUN does everything npm does, so it can clean up in its own layer');
    const line = npm[0] as string;
    for (const flag of ['--cache=/tmp/npm/cache', '--logs-dir=/tmp/npm/logs']) assert.ok(line.split(flag).length - 1 === 2, `npm ci and npm sbom both use ${flag}`);
    assert.match(line, /&& rm -rf \/tmp\/npm \/tmp\/node-compile-cache$/, 'the same RUN removes npm\'s cache and logs and the compile cache npm itself writes');
    assert.match(line, /npm sbom --omit=dev --package-lock-only --sbom-format=spdx .*> \/opt\/driftless\/sbom\.spdx\.json/);
  });

  it('is named by manifests and chart: the plugin image for the sidecars, the controller image for the controller', () => {
    const images = (file: string): string[] => [...readFileSync(join(root, file), 'utf8').matchAll(/^\s*image:\s*(\S+)\s*$/gm)].map((m) => m[1] as string);
    for (const file of ['manifests/plugin/argocd-repo-server.patch.yaml', 'charts/driftless/argo-cd-values.yaml']) {
      assert.deepEqual(images(file), ['ghcr.io/driftless/driftless-plugin:0.1.0', 'ghcr.io/driftless/driftless-plugin:0.1.0'], file);
    }
    assert.deepEqual(images('manifests/controller/base/deployment.yaml'), ['ghcr.io/driftless/driftless-controller:0.1.0']);
    assert.match(readFileSync(join(root, 'charts', 'driftless', 'values.yaml'), 'utf8'), /^  repository: ghcr\.io\/driftless\/driftless-controller$/m);
  });
});

/**
 * The files reachable from `entry` through static imports and string-literal
 * dynamic imports; bare specifiers must be Node built-ins or production dependencies.
 */
function loadedFiles(entry: string): string[] {
  const seen = new Set<string>();
  const queue = [entry];
  const builtins = new Set(builtinModules);
  const dependencies = new Set(Object.keys(packageJson.dependencies ?? {}));
  const specifier = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)(['"])([^'"]+)\1/gm;
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(specifier)) {
      const target = match[2] as string;
      if (target.startsWith('.')) {
        const path = resolve(dirname(file), target);
        assert.ok(existsSync(path), `${relative(root, file)} imports ${target}, which exists`);
        queue.push(path);
      } else if (target.startsWith('node:') || builtins.has(target)) {
        continue;
      } else {
        const name = target.startsWith('@') ? target.split('/').slice(0, 2).join('/') : (target.split('/')[0] as string);
        assert.ok(dependencies.has(name), `${relative(root, file)} imports ${target}, a production dependency`);
      }
    }
  }
  return [...seen];
}
