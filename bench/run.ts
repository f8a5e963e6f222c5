/**
 * `npm run bench`: how fast `driftless generate` is where Argo CD feels it.
 *
 * - cold start: spawning the CLI on a tiny app (every Argo CD render is a new process);
 * - throughput: a generated 5,000-document stream on stdin, end to end, in MB/s;
 * - Kustomize overhead: a generated 1,000-document Kustomize app, as a ratio of
 *   `driftless generate` to `kustomize build` alone.
 *
 * Figures are medians of several runs, printed beside the targets of the spec.
 * Cold start is measured without and with Node's compile cache (bin/driftless.js
 * enables it; the first render in a fresh sidecar has none); the other two run as
 * the sidecar does after its first render.
 * Nothing is asserted: timings belong in a report, not in a test.
 * Options: `--runs N` (default 9), `--keep` keeps the generated apps.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureTools } from '../test/tools.ts';

const { values: options } = parseArgs({
  options: { runs: { type: 'string', default: '9' }, keep: { type: 'boolean', default: false } },
});
const RUNS = Math.max(1, Number(options.runs));
const root = join(import.meta.dirname, '..');
const cli = join(root, 'bin', 'driftless.js');

interface Timed {
  /** Wall-clock milliseconds. */
  readonly ms: number;
  /** User + system CPU milliseconds of the process and its children, when GNU time is available. */
  readonly cpuMs: number | undefined;
}

/**
 * GNU time reports the CPU time of a child and its descendants (helm/kustomize
 * included). On a busy machine wall time mostly measures the queue for a core;
 * CPU time shows what the command itself costs.
 */
const GNU_TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const CPU_MARK = '__driftless_bench_cpu__';

/** Runs a command to completion, feeding `input` on stdin; fails loudly on a non-zero exit. */
function timed(command: string, args: readonly string[], env: NodeJS.ProcessEnv, input?: Buffer): Promise<Timed> {
  const argv = GNU_TIME ? [GNU_TIME, '-f', `${CPU_MARK} %U %S`, command, ...args] : [command, ...args];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(argv[0] as string, argv.slice(1), { env, stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'] });
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
}

async function measure(runs: number, once: () => Promise<Timed>): Promise<Measured> {
  await once(); // warm the page cache and the filesystem, not the process: every run is a new process
  const results: Timed[] = [];
  for (let i = 0; i < runs; i++) results.push(await once());
  const cpu = results.map((r) => r.cpuMs).filter((c) => c !== undefined);
  return { ms: median(results.map((r) => r.ms)), cpuMs: cpu.length === results.length ? median(cpu) : undefined };
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

function header(): string {
  return `  ${'measure'.padEnd(44)} ${'wall'.padStart(9)} ${'CPU'.padStart(9)}   target`;
}

function row(label: string, wall: number, cpu: number | undefined, meets: (v: number) => boolean, target: string, digits: number): string {
  const verdict = (v: number | undefined): string => (v === undefined ? '' : meets(v) ? 'met' : 'MISSED');
  return `  ${label.padEnd(44)} ${wall.toFixed(digits).padStart(9)} ${(cpu?.toFixed(digits) ?? '-').padStart(9)}   ${target.padEnd(8)} wall ${verdict(wall)}, CPU ${verdict(cpu)}`;
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

  // 1. Cold start on a tiny app.
  const tiny = join(root, 'examples', 'directory');
  const nodeBaseline = await measure(RUNS, () => timed(node, ['-e', ''], env));
  // bin/driftless.js enables Node's compile cache; the first render of a fresh sidecar runs without it.
  const cold = await measure(RUNS, () => timed(node, [cli, 'generate', '--path', tiny], { ...env, NODE_DISABLE_COMPILE_CACHE: '1' }));
  // The sidecar keeps the cache on its /tmp (NODE_COMPILE_CACHE, manifests/plugin): every later render.
  const sidecarEnv = { ...env, NODE_COMPILE_CACHE: join(work, 'node-compile-cache') };
  const coldCached = await measure(RUNS, () => timed(node, [cli, 'generate', '--path', tiny], sidecarEnv));

  // 2. Throughput on a 5,000-document stream through stdin.
  const input = stream(5000);
  const streamed = await measure(RUNS, () => timed(node, [cli, 'generate', '-'], sidecarEnv, input));
  const mbPerS = (ms: number): number => input.length / 1e6 / (ms / 1000);

  // 3. A 1,000-document Kustomize app, against kustomize build alone.
  const app = join(work, 'kustomize-app');
  await writeKustomizeApp(app, 1000);
  const kustomize = await measure(RUNS, () => timed(tools.kustomize, ['build', app], env));
  const generate = await measure(RUNS, () => timed(node, [cli, 'generate', '--source-type', 'kustomize', '--path', app], sidecarEnv));
  const ratio = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined || b === undefined ? undefined : a / b);

  const ms = (m: Measured): string => `${m.ms.toFixed(0)} ms wall${m.cpuMs === undefined ? '' : `, ${m.cpuMs.toFixed(0)} ms CPU`}`;
  process.stdout.write(
    [
      '',
      header(),
      row('cold start, tiny app, no compile cache (ms)', cold.ms, cold.cpuMs, (v) => v < 150, '< 150', 0),
      row('  with the warm compile cache (later renders)', coldCached.ms, coldCached.cpuMs, (v) => v < 150, '< 150', 0),
      `    node -e '' alone: ${ms(nodeBaseline)}`,
      row('throughput, 5,000 docs on stdin (MB/s)', mbPerS(streamed.ms), streamed.cpuMs === undefined ? undefined : mbPerS(streamed.cpuMs), (v) => v >= 20, '>= 20', 1),
      `    ${(input.length / 1e6).toFixed(2)} MB: ${ms(streamed)} (process start included)`,
      row('1,000-doc Kustomize app / kustomize build', ratio(generate.ms, kustomize.ms) as number, ratio(generate.cpuMs, kustomize.cpuMs), (v) => v <= 1.1, '<= 1.10', 3),
      `    generate ${ms(generate)}; kustomize build ${ms(kustomize)}`,
      '',
      'Wall time is what Argo CD waits for; the CPU figure is what the command costs (time waiting for a core excluded).',
      '',
    ].join('\n'),
  );
} finally {
  if (options.keep) process.stdout.write(`kept ${work}\n`);
  else await rm(work, { recursive: true, force: true });
}
