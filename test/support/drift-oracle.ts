/**
 * The drift oracle: "would Argo CD see drift for this workload?", answered by
 * the real kubectl against the real API server instead of a re-implementation.
 *
 * Argo CD applies and compares with kubectl's own code (gitops-engine
 * `pkg/utils/kube/resource_ops.go`, `pkg/diff/diff.go`), so each mode is the
 * kubectl command nearest to what it does:
 *
 * - client side, as the legacy diff (the default): a three-way patch from
 *   `last-applied-configuration`, the Git manifest and live; `kubectl diff`
 *   computes that same patch (strategic merge for built-in kinds, JSON merge
 *   for CRDs), dry-runs it on the server and diffs live against the result;
 * - server side, as Server-Side Diff: a server-side-apply dry-run as field
 *   manager `argocd-controller` with force-conflicts (gitops-engine sets
 *   `ForceConflicts` for server-side diff and server-side apply alike),
 *   diffed against live.
 *
 * Neither looks at children (ReplicaSets, pods) or `status`, as Argo CD's sync
 * status does not. Not modelled: Argo CD's normalisers and ignoreDifferences,
 * and for Server-Side Diff the removal of mutating-webhook fields (the test
 * cluster has no webhooks).
 */
import { AssertionError } from 'node:assert';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../cluster/api.ts';
import type { Kubectl } from '../cluster/kubectl.ts';

/** The field manager Argo CD's application controller applies and dry-runs as (`common.ArgoCDSSAManager`). */
export const argoCdFieldManager = 'argocd-controller';

/** What the oracle needs of a cluster: its kubectl (`Cluster` from test/cluster/harness.ts has one). */
export interface KubectlHost {
  readonly kubectl: Kubectl;
}

/** A manifest as Git renders it: one object, or YAML/JSON text with one or more documents. */
export type Manifest = KubeObject | string;

/** Options of every oracle call. */
export interface OracleOptions {
  /** The Application's destination namespace, for manifests without `metadata.namespace`. */
  readonly namespace?: string;
}

/** What a re-sync would change, per diff strategy: unified diffs of live → predicted live, '' when none. */
export interface Drift {
  /** Legacy diff (three-way, client side). */
  readonly clientSide: string;
  /** Server-Side Diff (SSA dry-run as `argocd-controller`). */
  readonly serverSide: string;
}

/** kubectl failed, or the manifest cannot be handled (e.g. it holds a Secret). */
export class DriftOracleError extends Error {
  override readonly name = 'DriftOracleError';
}

/**
 * Secrets are refused rather than redacted: kubectl masks `data` in a diff, but
 * not the `last-applied-configuration` annotation, which holds the whole
 * Secret in clear text; a redactor that misses one path would print a value.
 */
function assertNoSecrets(objects: readonly unknown[]): void {
  for (const object of objects) {
    if (typeof object !== 'object' || object === null) continue;
    const { kind, items } = object as { kind?: unknown; items?: unknown };
    if (kind === 'Secret') throw new DriftOracleError('the drift oracle refuses Secrets: their diffs would print values');
    if (Array.isArray(items)) assertNoSecrets(items);
  }
}

/** The manifest as kubectl's stdin. */
function manifestText(manifest: Manifest): string {
  if (typeof manifest !== 'string') {
    assertNoSecrets([manifest]);
    return JSON.stringify(manifest);
  }
  const documents = parseAllDocuments(manifest);
  if (documents.length === 0) throw new DriftOracleError('the manifest is empty');
  for (const document of documents) {
    if (document.errors.length > 0) throw new DriftOracleError(`the manifest is not valid YAML: ${document.errors[0]?.message}`);
  }
  assertNoSecrets(documents.map((document) => document.toJS() as unknown));
  return manifest;
}

function namespaceArgs(options: OracleOptions): string[] {
  return options.namespace === undefined ? [] : [`--namespace=${options.namespace}`];
}

async function apply(host: KubectlHost, manifest: Manifest, options: OracleOptions, modeArgs: readonly string[]): Promise<void> {
  const args = ['apply', ...modeArgs, `--field-manager=${argoCdFieldManager}`, ...namespaceArgs(options), '-f', '-'];
  const result = await host.kubectl(args, { stdin: manifestText(manifest) });
  if (result.code !== 0) throw new DriftOracleError(`kubectl ${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
}

/**
 * Applies as Argo CD's default sync does: client-side `kubectl apply`, which records
 * `last-applied-configuration`, as field manager `argocd-controller` (gitops-engine
 * passes its manager to client-side applies too).
 * @throws {DriftOracleError} when kubectl fails or the manifest holds a Secret.
 */
export function applyAsArgoCD(host: KubectlHost, manifest: Manifest, options: OracleOptions = {}): Promise<void> {
  return apply(host, manifest, options, []);
}

/**
 * Applies as Argo CD's sync with `ServerSideApply=true` does:
 * `kubectl apply --server-side --force-conflicts --field-manager=argocd-controller`.
 * @throws {DriftOracleError} when kubectl fails or the manifest holds a Secret.
 */
export function applyAsArgoCDServerSide(host: KubectlHost, manifest: Manifest, options: OracleOptions = {}): Promise<void> {
  return apply(host, manifest, options, ['--server-side', '--force-conflicts']);
}

/**
 * kubectl names the two sides by temp dirs and stamps them with mtimes; both
 * change per run, so they are replaced by stable names.
 */
function normaliseDiff(text: string): string {
  return text
    .split('\n')
    .map((line) =>
      line
        .replace(/\S*\/LIVE-\d+\//g, 'live/')
        .replace(/\S*\/MERGED-\d+\//g, 'merged/')
        .replace(/^((?:---|\+\+\+) \S+)\t.*$/, '$1'),
    )
    .join('\n');
}

/**
 * A dry-run never bumps `resourceVersion`, so a diff that changes it compared two
 * different live objects: a controller (status, revision annotations) wrote between
 * kubectl's read of live and its dry-run. Such a diff says nothing about drift.
 */
const raceMarker = /^-  resourceVersion: /m;
const attemptsOnRace = 5;

/** `kubectl diff` exits 0 for no differences, 1 for differences, and above 1 when kubectl or diff failed. */
async function diff(host: KubectlHost, manifest: Manifest, options: OracleOptions, modeArgs: readonly string[]): Promise<string> {
  const args = ['diff', ...modeArgs, ...namespaceArgs(options), '-f', '-'];
  const stdin = manifestText(manifest);
  for (let attempt = 1; ; attempt++) {
    const result = await host.kubectl(args, { stdin });
    if (result.code === 0) return '';
    if (result.code !== 1 || result.stdout === '') {
      throw new DriftOracleError(`kubectl ${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
    }
    if (!raceMarker.test(result.stdout)) return normaliseDiff(result.stdout);
    if (attempt === attemptsOnRace) {
      throw new DriftOracleError(`kubectl ${args.join(' ')}: live changed during each of ${attemptsOnRace} diffs`);
    }
  }
}

/**
 * Legacy diff: what a client-side re-apply of `manifest` would change.
 * @returns the unified diff, '' when none.
 * @throws {DriftOracleError} when kubectl fails or the manifest holds a Secret.
 */
export function clientSideDrift(host: KubectlHost, manifest: Manifest, options: OracleOptions = {}): Promise<string> {
  return diff(host, manifest, options, []);
}

/**
 * Server-Side Diff: what an SSA of `manifest` as `argocd-controller`, forcing conflicts, would change.
 * @returns the unified diff, '' when none.
 * @throws {DriftOracleError} when kubectl fails or the manifest holds a Secret.
 */
export function serverSideDrift(host: KubectlHost, manifest: Manifest, options: OracleOptions = {}): Promise<string> {
  return diff(host, manifest, options, ['--server-side', '--force-conflicts', `--field-manager=${argoCdFieldManager}`]);
}

/**
 * Both diffs of `manifest` (as Git renders it) against live.
 * @throws {DriftOracleError} when kubectl fails or the manifest holds a Secret.
 */
export async function driftOf(host: KubectlHost, manifest: Manifest, options: OracleOptions = {}): Promise<Drift> {
  const [clientSide, serverSide] = await Promise.all([
    clientSideDrift(host, manifest, options),
    serverSideDrift(host, manifest, options),
  ]);
  return { clientSide, serverSide };
}

/**
 * Fails, showing the diffs, when Argo CD would see drift under either strategy.
 * @throws {AssertionError} on drift; {DriftOracleError} when kubectl fails.
 */
export async function assertNoDrift(host: KubectlHost, manifest: Manifest, options: OracleOptions = {}): Promise<void> {
  const drift = await driftOf(host, manifest, options);
  if (drift.clientSide === '' && drift.serverSide === '') return;
  const section = (title: string, text: string): string => `--- ${title} ---\n${text === '' ? '(none)\n' : text}`;
  throw new AssertionError({
    message: `Argo CD would see drift:\n${section('legacy diff (client side)', drift.clientSide)}${section('server-side diff', drift.serverSide)}`,
    actual: drift,
    expected: { clientSide: '', serverSide: '' },
    operator: 'assertNoDrift',
  });
}
