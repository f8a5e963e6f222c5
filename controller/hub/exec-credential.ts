/**
 * An exec credential plugin run the way client-go runs one for Argo CD
 * (k8s.io/client-go/plugin/pkg/client/auth/exec): the command with its
 * arguments, the controller's environment plus the configured variables plus
 * KUBERNETES_EXEC_INFO (an ExecCredential with `interactive: false`, and the
 * cluster when `provideClusterInfo`), no stdin, an ExecCredential read from
 * stdout, kept until its `expirationTimestamp` or until the server refuses it.
 *
 * Not client-node's ExecAuth: that one waits for the command forever, keeps a
 * credential without expiry even after a 401, never sets KUBERNETES_EXEC_INFO,
 * leaves stdin open, and puts the plugin's stderr in its error (ADR 0020).
 * Here every run has a deadline, and no error carries the plugin's output or
 * arguments: either may hold a credential.
 */
import { spawn } from 'node:child_process';
import { SafeCredentialError } from '../kube/kubeconfig-errors.ts';
import type { ClusterConnection, ExecProvider } from './cluster-secret.ts';

/** A credential the plugin returned. Secret. */
export interface ExecCredential {
  readonly token?: string;
  /** PEM text of a client certificate and its key, when the plugin returns one. */
  readonly clientCertificateData?: string;
  readonly clientKeyData?: string;
  /** When to run the plugin again (ms since the epoch); undefined: until the server refuses it. */
  readonly expiresAt: number | undefined;
}

/** Running the plugin failed; the message names the command and what went wrong, never its output or arguments. */
export class ExecCredentialError extends SafeCredentialError {
  override readonly name = 'ExecCredentialError';
}

/** How long one run of the plugin may take before it is killed (client-go has no limit; a hung plugin would hang every request). */
export const DEFAULT_EXEC_TIMEOUT_MS = 30_000;
/** More stdout than this is not an ExecCredential. */
const MAX_OUTPUT_BYTES = 1 << 20;

/** What KUBERNETES_EXEC_INFO says about the cluster (client-go's clientauthentication Cluster, as JSON). */
function clusterInfo(server: string, connection: ClusterConnection, exec: ExecProvider): Record<string, unknown> {
  const tls = connection.tls;
  return {
    server,
    ...(tls.serverName === undefined ? {} : { 'tls-server-name': tls.serverName }),
    ...(tls.insecure ? { 'insecure-skip-tls-verify': true } : {}),
    ...(tls.caData === undefined ? {} : { 'certificate-authority-data': Buffer.from(tls.caData).toString('base64') }),
    ...(connection.proxyUrl === undefined ? {} : { 'proxy-url': connection.proxyUrl }),
    ...(connection.disableCompression ? { 'disable-compression': true } : {}),
    ...(exec.config === undefined ? {} : { config: JSON.parse(exec.config) as unknown }),
  };
}

/** The KUBERNETES_EXEC_INFO value client-go sets for a plugin in Never interactive mode. */
export function execInfo(server: string, connection: ClusterConnection, exec: ExecProvider): string {
  return JSON.stringify({
    kind: 'ExecCredential',
    apiVersion: exec.apiVersion,
    spec: { interactive: false, ...(exec.provideClusterInfo ? { cluster: clusterInfo(server, connection, exec) } : {}) },
  });
}

/** Reads the plugin's stdout as client-go does: an ExecCredential of the configured apiVersion with a token or a certificate pair. */
export function parseExecCredential(stdout: string, exec: ExecProvider): ExecCredential {
  const what = `exec credential plugin ${JSON.stringify(exec.command)}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch {
    throw new ExecCredentialError(`${what}: its output is not JSON (not shown)`);
  }
  const object = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { kind?: unknown; apiVersion?: unknown; status?: unknown };
  if (object.kind !== 'ExecCredential') throw new ExecCredentialError(`${what}: its output is not an ExecCredential`);
  if (object.apiVersion !== exec.apiVersion) {
    throw new ExecCredentialError(`${what}: configured for ${exec.apiVersion}, it returned ${typeof object.apiVersion === 'string' ? JSON.stringify(object.apiVersion) : 'no apiVersion'}`);
  }
  const status = (typeof object.status === 'object' && object.status !== null ? object.status : {}) as Record<string, unknown>;
  const text = (key: string): string | undefined => (typeof status[key] === 'string' && status[key] !== '' ? status[key] : undefined);
  const token = text('token');
  const cert = text('clientCertificateData');
  const key = text('clientKeyData');
  if (token === undefined && (cert === undefined || key === undefined)) {
    throw new ExecCredentialError(`${what}: it returned neither a token nor a client certificate and key`);
  }
  const expiry = text('expirationTimestamp');
  const expiresAt = expiry === undefined ? undefined : Date.parse(expiry);
  if (expiresAt !== undefined && Number.isNaN(expiresAt)) throw new ExecCredentialError(`${what}: its expirationTimestamp is not a time`);
  return {
    ...(token === undefined ? {} : { token }),
    ...(cert === undefined || key === undefined ? {} : { clientCertificateData: cert, clientKeyData: key }),
    expiresAt,
  };
}

/** Runs the plugin once; resolves with its stdout, rejects with ExecCredentialError. */
function run(exec: ExecProvider, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> {
  const what = `exec credential plugin ${JSON.stringify(exec.command)}`;
  return new Promise((resolve, reject) => {
    const child = spawn(exec.command, [...exec.args], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    // Our own deadline, not spawn's `timeout`: that one's timer outlives a command that could not be started
    // (it is cleared only on exit), holding the process open for the whole deadline.
    const deadline = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const chunks: Buffer[] = [];
    let size = 0;
    let failure: ExecCredentialError | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_OUTPUT_BYTES) {
        failure ??= new ExecCredentialError(`${what}: its output is over ${MAX_OUTPUT_BYTES} bytes`);
        child.kill('SIGKILL');
      } else {
        chunks.push(chunk);
      }
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      const hint = error.code === 'ENOENT' && exec.installHint !== undefined ? ` — ${exec.installHint}` : '';
      failure ??= new ExecCredentialError(`${what}: cannot run it (${error.code ?? 'error'}); the command must be in the controller's image${hint}`);
    });
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      if (failure !== undefined) return reject(failure);
      if (signal === 'SIGKILL') return reject(new ExecCredentialError(`${what}: no answer within ${timeoutMs / 1000} s, killed`));
      if (code !== 0) return reject(new ExecCredentialError(`${what}: exited with ${code === null ? `signal ${signal}` : `status ${code}`} (its output is not shown)`));
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/**
 * The credentials of one cluster from its exec plugin: run at the first
 * request, again once expired or after `invalidate()` (the server answered 401),
 * at most one run at a time.
 */
export class ExecCredentialSource {
  readonly #exec: ExecProvider;
  readonly #env: NodeJS.ProcessEnv;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  #cached: ExecCredential | undefined;
  #running: Promise<ExecCredential> | undefined;

  constructor(server: string, connection: ClusterConnection & { readonly exec: ExecProvider }, options: { readonly timeoutMs?: number; readonly now?: () => number } = {}) {
    this.#exec = connection.exec;
    // client-go: the process's environment, then the configured variables, then KUBERNETES_EXEC_INFO; later ones win.
    this.#env = { ...process.env, ...connection.exec.env, KUBERNETES_EXEC_INFO: execInfo(server, connection, connection.exec) };
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
    this.#now = options.now ?? Date.now;
  }

  /** A valid credential, running the plugin when there is none. */
  async get(): Promise<ExecCredential> {
    const cached = this.#cached;
    if (cached !== undefined && (cached.expiresAt === undefined || this.#now() < cached.expiresAt)) return cached;
    this.#running ??= run(this.#exec, this.#env, this.#timeoutMs)
      .then((stdout) => {
        this.#cached = parseExecCredential(stdout, this.#exec);
        return this.#cached;
      })
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  /** Forgets the credential: the server refused it. */
  invalidate(): void {
    this.#cached = undefined;
  }
}
