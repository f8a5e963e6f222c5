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

/** Dockerfile instructions of the last (runtime) stage, continuation lines joined. */
function runtimeStage(): string[] {
  const instructions = dockerfile.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const lastFrom = instructions.findLastIndex((l) => /^FROM\s/i.test(l));
  return instructions.slice(lastFrom);
}

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
    // What the README tells a user to run: eval the line, then the pinned tools are the ones on PATH.
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

  it('runs on the Node version the tests run on, with production dependencies only, as UID 999, without an entrypoint', () => {
    const stage = runtimeStage();
    assert.equal(stage[0], `FROM node:${packageJson.devDependencies?.['node']}-slim`);
    assert.ok(stage.some((l) => /^RUN npm ci --omit=dev\b/.test(l)));
    assert.equal(stage.filter((l) => /^USER\s/.test(l)).at(-1), 'USER 999:999');
    assert.ok(!stage.some((l) => /^(ENTRYPOINT|CMD)\s/.test(l)), 'the sidecar sets the command');
    assert.ok(stage.some((l) => l === 'COPY --from=tools /out/kustomize /out/helm /usr/local/bin/'));
    // plugin.yaml runs `driftless generate`, so the CLI must be on PATH under that name.
    assert.ok(stage.some((l) => l === 'RUN ln -s /opt/driftless/bin/driftless.js /usr/local/bin/driftless'));
    assert.match(readFileSync(join(root, 'bin', 'driftless.js'), 'utf8'), /^#!\/usr\/bin\/env node\n/);
  });

  it('copies every file the CLI can load, the plugin\'s and the controller\'s, and .dockerignore lets them through', () => {
    const stage = runtimeStage();
    const workdir = stage.filter((l) => /^WORKDIR\s/.test(l)).at(-1)?.split(/\s+/)[1];
    assert.equal(workdir, '/opt/driftless');
    const copied = stage
      .filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))
      .flatMap((l) => l.split(/\s+/).slice(1, -1));
    const allowed = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1));
    const loaded = loadedFiles(join(root, 'bin', 'driftless.js'));
    // Both commands of the image: `driftless generate` (the sidecar) and `driftless controller`.
    for (const entry of ['plugin/main.ts', 'controller/main.ts']) assert.ok(loaded.includes(join(root, entry)), `the CLI loads ${entry}`);
    for (const file of loaded) {
      const path = relative(root, file);
      assert.ok(copied.some((source) => (source.endsWith('/') ? path.startsWith(source) : path === source)), `${path} is copied into the image`);
      assert.ok(allowed.some((source) => (source.endsWith('/') ? path.startsWith(source) : path === source)), `${path} is not excluded by .dockerignore`);
    }
    for (const source of copied) assert.ok(allowed.includes(source), `.dockerignore lets ${source} through`);
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
