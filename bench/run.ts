/**
 * `npm run bench`: how fast `driftless generate` is where Argo CD feels it.
 *
 * - cold start: spawning the CLI on a tiny app (every Argo CD render is a new process);
 * - throughput: a generated 5,000-document stream on stdin, end to end, in MB/s;
 * - Kustomize overhead: a generated 1,000-document Kustomize app, as a ratio of
 *   `driftless generate` to `kustomize build` alone;
 * - Helm charts (bench/charts.ts): a CRD-heavy chart (kube-prometheus-stack-like),
 *   a mid-size app chart (argo-cd-like) and a tiny chart, each as the ratio of
 *   `driftless generate` to `helm template` alone, the two run alternately so that
 *   the machine's load hits both; for the tiny chart also the difference (the fixed overhead).
 *
 * Figures are medians of several runs, printed beside the targets of the spec.
 * Cold start is measured without and with Node's compile cache (bin/driftless.js
 * enables it; the image primes it for the sidecar, so only a run outside the image
 * starts without one); the others run with the cache, as the sidecar does.
 * Each case is measured two ways, run alternately: `oneshot`, a process that renders
 * itself, and `server`, the shipped sidecar's way, a `driftless generate` that relays to a
 * warm `driftless serve` (bench/render-server.ts) started for the case; the server variant's
 * CPU is the client's plus the server's over the request (helm/kustomize are its children then).
 * Nothing is asserted: timings belong in a report, not in a test.
 * Options: `--runs N` (default 9), `--keep` keeps the generated apps, `--only a,b`
 * runs some of `cold`, `stream`, `kustomize`, `charts`, `--mode a,b` some of `oneshot`, `server`.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureTools } from '../test/tools.ts';
import { writeAppChart, writeCrdChart, writeTinyChart } from './charts.ts';
import { type RenderServer, startRenderServer } from './render-server.ts';

const { values: options } = parseArgs({
  options: {
    runs: { type: 'string', default: '9' },
    keep: { type: 'boolean', default: false },
    only: { type: 'string', default: 'cold,stream,kustomize,charts' },
    mode: { type: 'string', default: 'oneshot,server' },
  },
});
/** The names a list option may hold; a typo would otherwise print an empty table. */
function namesOf(option: string, value: string, known: readonly string[]): Set<string> {
  const names = value.split(',');
  const unknown = names.filter((name) => !known.includes(name));
  if (unknown.length > 0) throw new Error(`--${option}: unknown ${unknown.join(', ')}; expected some of ${known.join(', ')}`);
  return new Set(names);
}
const ONLY = namesOf('only', options.only, ['cold', 'stream', 'kustomize', 'charts']);
const MODES = namesOf('mode', options.mode, ['oneshot', 'server']);
const RUNS = Math.max(1, Number(options.runs));
const root = join(import.meta.dirname, '..');
const cli = join(root, 'bin', 'driftless.js');

interface Timed {
  /** Wall-clock milliseconds. */
  readonly ms: number;
  /** User + system CPU milliseconds of the process and its children, when GNU time is available (the server's share included). */
  readonly cpuMs: number | undefined;
  /** The render server's share of `cpuMs`, for a render through it. */
  readonly serverCpuMs?: number;
}

/**
 * GNU time reports the CPU time of a child and its descendants (helm/kustomize
 * included). On a busy machine wall time mostly measures the queue for a core;
 * CPU time shows what the command itself costs.
 */
const GNU_TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const CPU_MARK = '__driftless_bench_cpu__';

/** Runs a command to completion, feeding `input` on stdin; fails loudly on a non-zero exit. */
function timed(command: string, args: readonly string[], env: NodeJS.ProcessEnv, input?: Buffer, cwd?: string): Promise<Timed> {
  const argv = GNU_TIME ? [GNU_TIME, '-f', `${CPU_MARK} %U %S`, command, ...args] : [command, ...args];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(argv[0] as string, argv.slice(1), { env, cwd, stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-4000); });
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      const mark = stderr.lastIndexOf(CPU_MARK);
      const [user, system] = mark < 0 ? [] : stderr.slice(mark + CPU_MARK.length).trim().split(/\s+/).map(Number);
      const cpuMs = user === undefined || system === undefined ? undefined : (user + system) * 1000;
      if (code === 0) resolve({ ms, cpuMs });
      else reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${mark < 0 ? stderr : stderr.slice(0, mark)}`));
    });
    if (input) child.stdin?.end(input);
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

interface Measured {
  readonly ms: number;
  readonly cpuMs: number | undefined;
  /** Median of the render server's share of the CPU, for a render through it. */
  readonly serverCpuMs: number | undefined;
}

function summary(results: readonly Timed[]): Measured {
  const all = (values: readonly (number | undefined)[]): number | undefined => {
    const known = values.filter((v) => v !== undefined);
    return known.length === results.length ? median(known) : undefined;
  };
  return { ms: median(results.map((r) => r.ms)), cpuMs: all(results.map((r) => r.cpuMs)), serverCpuMs: all(results.map((r) => r.serverCpuMs)) };
}

async function measure(runs: number, once: () => Promise<Timed>): Promise<Measured> {
  await once(); // warm the page cache and the filesystem, not the process: every run is a new process
  const results: Timed[] = [];
  for (let i = 0; i < runs; i++) results.push(await once());
  return summary(results);
}

/**
 * Commands measured alternately (a, b, c, then c, b, a, ...), so that a change in the
 * machine's load during the runs hits every side of a ratio alike. Each runs once first
 * unmeasured: the page cache, and for a render server its first (cold) render.
 */
async function measureAlternately(runs: number, commands: readonly (() => Promise<Timed>)[]): Promise<Measured[]> {
  for (const command of commands) await command();
  const results: Timed[][] = commands.map(() => []);
  for (let i = 0; i < runs; i++) {
    const order = commands.map((_, index) => index);
    if (i % 2 === 1) order.reverse();
    for (const index of order) results[index]?.push(await (commands[index] as () => Promise<Timed>)());
  }
  return results.map(summary);
}

/** One app's worth of objects: settings, credentials, a Deployment using both, a Service, a PDB. */
function appDocuments(i: number): string[] {
  const name = `svc-${String(i).padStart(4, '0')}`;
  const secretValue = Buffer.from(`password-${i}-${'x'.repeat(24)}`).toString('base64');
  return [
    `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}-settings
  labels:
    app.kubernetes.io/name: ${name}
data:
  LOG_LEVEL: info
  FEATURE_FLAGS: "checkout,search,recommendations"
  UPSTREAM_URL: http://${name}.shop.svc.cluster.local:8080
  application.yaml: |
    server:
      port: 8080
      shutdown: graceful
    cache:
      ttl: 300s
      size: 10000
`,
    `apiVersion: v1
kind: Secret
metadata:
  name: ${name}-credentials
type: Opaque
data:
  username: ${Buffer.from(name).toString('base64')}
  password: ${secretValue}
`,
    `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
  labels:
    app.kubernetes.io/name: ${name}
  annotations:
    reloader.stakater.com/auto: "true"
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: ${name}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: ${name}
    spec:
      containers:
        - name: app
          image: ghcr.io/example/${name}:1.0.${i}
          ports:
            - name: http
              containerPort: 8080
          envFrom:
            - configMapRef:
                name: ${name}-settings
          env:
            - name: DB_PASSWORD
              valueFrom:
                secretKeyRef:
                  name: ${name}-credentials
                  key: password
          resources:
            requests: {cpu: 50m, memory: 64Mi}
            limits: {memory: 256Mi}
          volumeMounts:
            - name: config
              mountPath: /etc/app
      volumes:
        - name: config
          configMap:
            name: ${name}-settings
            items:
              - key: application.yaml
                path: application.yaml
`,
    `apiVersion: v1
kind: Service
metadata:
  name: ${name}
spec:
  selector:
    app.kubernetes.io/name: ${name}
  ports:
    - name: http
      port: 80
      targetPort: http
`,
    `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: ${name}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: ${name}
`,
  ];
}

function stream(documents: number): Buffer {
  const docs: string[] = [];
  for (let i = 0; docs.length < documents; i++) docs.push(...appDocuments(i));
  return Buffer.from(docs.slice(0, documents).join('---\n'));
}

async function writeKustomizeApp(dir: string, documents: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  const files: string[] = [];
  const docs: string[] = [];
  for (let i = 0; docs.length < documents; i++) docs.push(...appDocuments(i));
  // 100 files of 10 documents each: the shape of a real app repository.
  for (let f = 0; f * 10 < documents; f++) {
    const file = `resources-${String(f).padStart(3, '0')}.yaml`;
    files.push(file);
    await writeFile(join(dir, file), docs.slice(f * 10, Math.min(documents, f * 10 + 10)).join('---\n'));
  }
  await writeFile(join(dir, 'kustomization.yaml'), `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: shop\nresources:\n${files.map((f) => `  - ${f}`).join('\n')}\n`);
}

/** The size of a chart's render, for the MB figure beside its ratio. */
function renderedBytes(helm: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(helm, args, { env, cwd, stdio: ['ignore', 'pipe', 'ignore'] });
    let bytes = 0;
    child.stdout.on('data', (chunk: Buffer) => { bytes += chunk.length; });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(bytes) : reject(new Error(`helm ${args.join(' ')} exited ${code}`))));
  });
}

function header(): string {
  return `  ${'measure'.padEnd(52)} ${'wall'.padStart(9)} ${'CPU'.padStart(9)}   target`;
}

function row(label: string, wall: number, cpu: number | undefined, meets: (v: number) => boolean, target: string, digits: number): string {
  const verdict = (v: number | undefined): string => (v === undefined ? '' : meets(v) ? 'met' : 'MISSED');
  return `  ${label.padEnd(52)} ${wall.toFixed(digits).padStart(9)} ${(cpu?.toFixed(digits) ?? '-').padStart(9)}   ${target.padEnd(8)} wall ${verdict(wall)}, CPU ${verdict(cpu)}`;
}

const tools = await ensureTools();
const work = await mkdtemp(join(tmpdir(), 'driftless-bench-'));
try {
  const keyFile = join(work, 'hash-key');
  await writeFile(keyFile, 'bench-key-0123456789abcdef0123456789abcdef');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${tools.binDir}:${process.env['PATH'] ?? ''}`,
    ARGOCD_APP_NAME: 'bench',
    ARGOCD_APP_NAMESPACE: 'shop',
    DRIFTLESS_HASH_KEY_FILE: keyFile,
  };
  const node = process.execPath;
  process.stdout.write(
    `driftless generate benchmark (node ${process.version}, ${tools.kustomize.split('/').at(-2)}, ${RUNS} runs each, medians; ` +
      `load average ${loadavg().map((l) => l.toFixed(1)).join(' ')})\n`,
  );

  const ratio = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined || b === undefined ? undefined : a / b);
  const ms = (m: Measured): string =>
    `${m.ms.toFixed(0)} ms wall${m.cpuMs === undefined ? '' : `, ${m.cpuMs.toFixed(0)} ms CPU`}` +
    (m.serverCpuMs === undefined ? '' : ` (the server's ${m.serverCpuMs.toFixed(0)} ms of it)`);
  const lines: string[] = ['', header()];
  const sidecarEnv = { ...env, NODE_COMPILE_CACHE: join(work, 'node-compile-cache') };

  /** Runs a case with a render server of its own (when `--mode` has `server`), stopped after it, failed or not. */
  const withServer = async (use: (server: RenderServer | undefined) => Promise<void>): Promise<void> => {
    if (!MODES.has('server')) return use(undefined);
    const server = await startRenderServer(node, cli, join(work, 'render.sock'), sidecarEnv);
    try {
      await use(server);
    } finally {
      await server.stop();
    }
  };

  /** A way of running `driftless generate`, with its row label and the name in the detail line. */
  interface Variant {
    readonly label: string;
    readonly name: string;
    readonly run: () => Promise<Timed>;
  }

  /**
   * `driftless generate <args>` as the modes ask: a process that renders itself (the sidecar's compile
   * cache warm), and a client of `server`, whose CPU over the request is added to the client's.
   */
  const generateVariants = (server: RenderServer | undefined, label: string, args: readonly string[], input?: Buffer, cwd?: string): Variant[] => {
    const variants: Variant[] = [];
    if (MODES.has('oneshot')) variants.push({ label, name: 'generate', run: () => timed(node, [cli, 'generate', ...args], sidecarEnv, input, cwd) });
    if (server) {
      const clientEnv = { ...sidecarEnv, DRIFTLESS_RENDER_SOCKET: server.socket };
      const run = async (): Promise<Timed> => {
        const { result, serverCpuMs } = await server.served(() => timed(node, [cli, 'generate', ...args], clientEnv, input, cwd));
        return { ms: result.ms, cpuMs: result.cpuMs === undefined ? undefined : result.cpuMs + serverCpuMs, serverCpuMs };
      };
      variants.push({ label: MODES.has('oneshot') ? '  via the render server' : `${label}, render server`, name: 'generate via the server', run });
    }
    return variants;
  };

  if (ONLY.has('cold')) {
    // 1. Cold start on a tiny app.
    const tiny = join(root, 'examples', 'directory');
    const nodeBaseline = await measure(RUNS, () => timed(node, ['-e', ''], env));
    await withServer(async (server) => {
      const variants: Variant[] = [
        // bin/driftless.js enables Node's compile cache; a run outside the image (no primed cache) starts without it.
        ...(MODES.has('oneshot')
          ? [{ label: 'cold start, tiny app, no compile cache (ms)', name: 'no cache', run: () => timed(node, [cli, 'generate', '--path', tiny], { ...env, NODE_DISABLE_COMPILE_CACHE: '1' }) }]
          : []),
        // The sidecar's cache is primed in the image (Dockerfile, NODE_COMPILE_CACHE in manifests/plugin): every render.
        ...generateVariants(server, '  with the compile cache (primed in the image)', ['--path', tiny]),
      ];
      const measured = await measureAlternately(RUNS, variants.map((v) => v.run));
      variants.forEach((variant, i) => {
        const m = measured[i] as Measured;
        lines.push(row(variant.label, m.ms, m.cpuMs, (v) => v < 150, '< 150', 0));
        if (m.serverCpuMs !== undefined) lines.push(`    ${ms(m)}`);
      });
      lines.push(`    node -e '' alone: ${ms(nodeBaseline)}`);
    });
  }

  if (ONLY.has('stream')) {
    // 2. Throughput on a 5,000-document stream through stdin.
    const input = stream(5000);
    const mbPerS = (t: number): number => input.length / 1e6 / (t / 1000);
    await withServer(async (server) => {
      const variants = generateVariants(server, 'throughput, 5,000 docs on stdin (MB/s)', ['-'], input);
      const measured = await measureAlternately(RUNS, variants.map((v) => v.run));
      variants.forEach((variant, i) => {
        const m = measured[i] as Measured;
        lines.push(
          row(variant.label, mbPerS(m.ms), m.cpuMs === undefined ? undefined : mbPerS(m.cpuMs), (v) => v >= 20, '>= 20', 1),
          `    ${(input.length / 1e6).toFixed(2)} MB, process start included: ${variant.name} ${ms(m)}`,
        );
      });
    });
  }

  if (ONLY.has('kustomize')) {
    // 3. A 1,000-document Kustomize app, against kustomize build alone.
    const app = join(work, 'kustomize-app');
    await writeKustomizeApp(app, 1000);
    await withServer(async (server) => {
      const variants = generateVariants(server, '1,000-doc Kustomize app / kustomize build', ['--source-type', 'kustomize', '--path', app]);
      const [kustomize, ...generated] = (await measureAlternately(RUNS, [() => timed(tools.kustomize, ['build', app], env), ...variants.map((v) => v.run)])) as [Measured, ...Measured[]];
      variants.forEach((variant, i) => {
        const m = generated[i] as Measured;
        lines.push(
          row(variant.label, ratio(m.ms, kustomize.ms) as number, ratio(m.cpuMs, kustomize.cpuMs), (v) => v <= 1.1, '<= 1.10', 3),
          `    ${variant.name} ${ms(m)}; kustomize build ${ms(kustomize)}`,
        );
      });
    });
  }

  if (ONLY.has('charts')) {
    // 4. Helm charts, each against helm template alone with the flags the plugin passes.
    const charts: readonly [string, string, (dir: string) => Promise<void>][] = [
      ['CRD-heavy chart (kube-prometheus-like)', 'crd-chart', writeCrdChart],
      ['mid-size app chart (argo-cd-like)', 'app-chart', writeAppChart],
      ['tiny chart', 'tiny-chart', writeTinyChart],
    ];
    for (const [label, name, write] of charts) {
      const dir = join(work, name);
      await write(dir);
      const helmArgs = ['template', 'bench', '.', '--include-crds', '--namespace=shop'];
      const bytes = (await renderedBytes(tools.helm, helmArgs, env, dir)) / 1e6;
      await withServer(async (server) => {
        const variants = generateVariants(server, `${label} / helm template`, ['--source-type', 'helm', '--path', dir, '--namespace', 'shop']);
        const [helm, ...generated] = (await measureAlternately(RUNS, [() => timed(tools.helm, helmArgs, env, undefined, dir), ...variants.map((v) => v.run)])) as [Measured, ...Measured[]];
        variants.forEach((variant, i) => {
          const m = generated[i] as Measured;
          lines.push(
            row(variant.label, ratio(m.ms, helm.ms) as number, ratio(m.cpuMs, helm.cpuMs), (v) => v <= 1.5, '<= 1.50', 3),
            `    ${bytes.toFixed(2)} MB rendered: ${variant.name} ${ms(m)}; helm template ${ms(helm)}`,
          );
        });
        if (name === 'tiny-chart') {
          variants.forEach((variant, i) => {
            const m = generated[i] as Measured;
            const overheadCpu = m.cpuMs === undefined || helm.cpuMs === undefined ? undefined : m.cpuMs - helm.cpuMs;
            const overheadLabel = variant.name === 'generate' ? '  fixed overhead, generate - helm template (ms)' : '  fixed overhead via the render server (ms)';
            lines.push(row(overheadLabel, m.ms - helm.ms, overheadCpu, (v) => v <= 60, '<= 60', 0));
          });
        }
      });
    }
  }

  lines.push(
    '',
    `Wall time is what Argo CD waits for; the CPU figure is what the command costs (time waiting for a core excluded). Load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}.`,
    '',
  );
  process.stdout.write(lines.join('\n'));
} finally {
  if (options.keep) process.stdout.write(`kept ${work}\n`);
  else await rm(work, { recursive: true, force: true });
}
