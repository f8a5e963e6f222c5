/**
 * `npm run bench`: how fast `driftless generate` is where Argo CD feels it.
 *
 * - cold start: spawning the CLI on a tiny app (every Argo CD render is a new process);
 * - throughput: a generated 5,000-document stream on stdin, end to end, in MB/s;
 * - Kustomize overhead: a generated 1,000-document Kustomize app, as a ratio of
 *   `driftless generate` to `kustomize build` alone.
 *
 * Figures are medians of several runs, printed beside the targets of the spec.
 * Cold start is measured without and with Node's compile cache; the other two
 * run as the sidecar does (manifests/plugin sets NODE_COMPILE_CACHE).
 * Nothing is asserted: timings belong in a report, not in a test.
 * Options: `--runs N` (default 9), `--keep` keeps the generated apps.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
  readonly ms: number;
  readonly stdoutBytes: number;
}

/** Runs a command to completion, feeding `input` on stdin; fails loudly on a non-zero exit. */
function timed(command: string, args: readonly string[], env: NodeJS.ProcessEnv, input?: Buffer): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { env, stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let stdoutBytes = 0;
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => { stdoutBytes += chunk.length; });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr = (stderr + chunk).slice(-2000); });
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      if (code === 0) resolve({ ms, stdoutBytes });
      else reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${stderr}`));
    });
    if (input) child.stdin?.end(input);
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

async function medianMs(runs: number, once: () => Promise<Timed>): Promise<number> {
  await once(); // warm the page cache and the filesystem, not the process: every run is a new process
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push((await once()).ms);
  return median(times);
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

function row(label: string, value: string, target: string, met: boolean): string {
  return `  ${label.padEnd(44)} ${value.padStart(12)}   target ${target.padEnd(10)} ${met ? 'met' : 'MISSED'}`;
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
  process.stdout.write(`driftless generate benchmark (node ${process.version}, kustomize ${tools.kustomize.split('/').at(-2)}, ${RUNS} runs each, medians)\n`);

  // 1. Cold start on a tiny app.
  const tiny = join(root, 'examples', 'directory');
  const nodeBaseline = await medianMs(RUNS, () => timed(node, ['-e', ''], env));
  const cold = await medianMs(RUNS, () => timed(node, [cli, 'generate', '--path', tiny], env));
  // The sidecar sets NODE_COMPILE_CACHE (manifests/plugin); from its second render on, this is what Argo CD waits for.
  const sidecarEnv = { ...env, NODE_COMPILE_CACHE: join(work, 'node-compile-cache') };
  const coldCached = await medianMs(RUNS, () => timed(node, [cli, 'generate', '--path', tiny], sidecarEnv));

  // 2. Throughput on a 5,000-document stream through stdin.
  const input = stream(5000);
  const streamMs = await medianMs(RUNS, () => timed(node, [cli, 'generate', '-'], sidecarEnv, input));
  const mbPerS = input.length / 1e6 / (streamMs / 1000);

  // 3. A 1,000-document Kustomize app, against kustomize build alone.
  const app = join(work, 'kustomize-app');
  await writeKustomizeApp(app, 1000);
  const kustomizeMs = await medianMs(RUNS, () => timed(tools.kustomize, ['build', app], env));
  const generateMs = await medianMs(RUNS, () => timed(node, [cli, 'generate', '--source-type', 'kustomize', '--path', app], sidecarEnv));
  const ratio = generateMs / kustomizeMs;

  process.stdout.write(
    [
      row('cold start, tiny app (ms)', cold.toFixed(1), '< 150', cold < 150),
      row('  same, warm NODE_COMPILE_CACHE as in sidecar', coldCached.toFixed(1), '< 150', coldCached < 150),
      `    (node -e '' alone: ${nodeBaseline.toFixed(1)} ms)`,
      row(`throughput, 5,000 docs on stdin (MB/s)`, mbPerS.toFixed(1), '>= 20', mbPerS >= 20),
      `    (${(input.length / 1e6).toFixed(2)} MB in ${streamMs.toFixed(0)} ms, process start included)`,
      row('1,000-doc Kustomize app vs kustomize build', ratio.toFixed(3), '<= 1.10', ratio <= 1.1),
      `    (generate ${generateMs.toFixed(0)} ms, kustomize build ${kustomizeMs.toFixed(0)} ms)`,
      '',
    ].join('\n'),
  );
} finally {
  if (options.keep) process.stdout.write(`kept ${work}\n`);
  else await rm(work, { recursive: true, force: true });
}
