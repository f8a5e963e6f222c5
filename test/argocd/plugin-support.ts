/**
 * Helpers for the Argo CD plugin tests: committing an example app, rendering
 * it locally exactly as the sidecar would (same key, same parameters), and
 * reading the hash from live workloads.
 */
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { HASH_ANNOTATION } from '../../core/index.ts';
import type { ApiClient, KubeList, KubeObject } from '../cluster/api.ts';
import type { ArgoCD } from '../cluster/argocd.ts';
import { runCommand } from '../cluster/exec.ts';
import { filesOf, type GitRepo } from '../cluster/git-repo.ts';
import { waitFor } from '../support/wait.ts';
import { ensureTools } from '../tools.ts';

const repoRoot = join(import.meta.dirname, '..', '..');

/** Kinds whose pod template gets the hash. */
const workloadKinds = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob', 'Rollout']);

/** One plugin parameter as an Application lists it (and as Argo CD passes it in ARGOCD_APP_PARAMETERS). */
export interface PluginParameter {
  readonly name: string;
  readonly string?: string;
  readonly array?: readonly string[];
  readonly map?: Readonly<Record<string, string>>;
}

/** An example app committed to a fresh repository. */
export interface CommittedApp {
  readonly repo: GitRepo;
  /** Path of the app inside the repository. */
  readonly path: string;
  readonly revision: string;
}

/**
 * Commits `examples/<example>` to a new repository under `apps/<example>`,
 * after `rewrite` (file path relative to the example → new content) if given.
 */
export async function commitExample(
  argocd: ArgoCD,
  repoName: string,
  example: string,
  rewrite: (path: string, content: string) => string = (_path, content) => content,
): Promise<CommittedApp> {
  const path = `apps/${example}`;
  const files = await filesOf(join(repoRoot, 'examples', example), path);
  for (const [file, content] of Object.entries(files)) files[file] = rewrite(file.slice(path.length + 1), content);
  const repo = await argocd.createRepo(repoName);
  const revision = await repo.commit(files, `add the ${example} example`);
  return { repo, path, revision };
}

/** The Application spec for an app rendered by the Driftless plugin. */
export function pluginApplicationSpec(
  app: CommittedApp,
  namespace: string,
  plugin: { readonly parameters?: readonly PluginParameter[]; readonly env?: readonly { name: string; value: string }[] } = {},
): Record<string, unknown> {
  return {
    source: {
      repoURL: app.repo.url,
      targetRevision: app.repo.branch,
      path: app.path,
      plugin: { name: 'driftless-v1', ...plugin },
    },
    destination: { server: 'https://kubernetes.default.svc', namespace },
  };
}

/**
 * Renders the app from the repository's working clone with the sidecar's key
 * and Argo CD's ARGOCD_* variables, as the sidecar does for this commit.
 * @returns the rendered objects.
 */
export async function renderLocally(
  argocd: ArgoCD,
  app: CommittedApp,
  appName: string,
  namespace: string,
  parameters: readonly PluginParameter[] = [],
): Promise<KubeObject[]> {
  const tools = await ensureTools();
  const { stdout } = await runCommand(process.execPath, [join(repoRoot, 'bin', 'driftless.js'), 'generate'], {
    cwd: join(app.repo.workDir, app.path),
    env: {
      PATH: `${tools.binDir}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
      DRIFTLESS_HASH_KEY_FILE: argocd.hashKeyFile,
      NODE_DISABLE_COMPILE_CACHE: '1',
      ARGOCD_APP_NAME: appName,
      ARGOCD_APP_NAMESPACE: namespace,
      ARGOCD_APP_SOURCE_PATH: app.path,
      ARGOCD_APP_PARAMETERS: JSON.stringify(parameters),
    },
  });
  return parseAllDocuments(stdout)
    .map((document) => document.toJS() as KubeObject | null)
    .filter((object): object is KubeObject => object !== null);
}

/** The pod template of a workload. */
export function podTemplateOf(object: KubeObject): KubeObject | undefined {
  const spec = object.spec ?? {};
  if (object.kind === 'CronJob') {
    return ((spec['jobTemplate'] as KubeObject | undefined)?.spec?.['template'] as KubeObject | undefined) ?? undefined;
  }
  return spec['template'] as KubeObject | undefined;
}

/** The Driftless hash in a workload's pod template, if any. */
export function hashOf(object: KubeObject): string | undefined {
  return podTemplateOf(object)?.metadata?.annotations?.[HASH_ANNOTATION];
}

/** The workloads among rendered objects. */
export function workloadsOf(objects: readonly KubeObject[]): KubeObject[] {
  return objects.filter((object) => workloadKinds.has(object.kind ?? ''));
}

/** The REST path of a namespaced object (only the kinds these tests use). */
export function objectPath(object: KubeObject, namespace: string): string {
  const apiVersion = object.apiVersion ?? 'v1';
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${base}/namespaces/${namespace}/${(object.kind ?? '').toLowerCase()}s/${object.metadata?.name ?? ''}`;
}

/** ReplicaSets of a namespace, by name, with the pod-template hash their Deployment gave them. */
export async function replicaSets(client: ApiClient, namespace: string): Promise<string[]> {
  const list = await client.request<KubeList>('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets`);
  return list.items.map((item) => item.metadata?.name ?? '').sort();
}

/**
 * Follows a canary Rollout (one pause step) after a sync that changed its template: waits until it stands
 * at its pause step with a canary ReplicaSet beside `stable`, then until it is promoted and Healthy with the
 * canary as the stable ReplicaSet. `status` reads the Rollout's status. Returns the canary's pod hash and the
 * states seen, each once in a row (a timeout names them).
 */
export async function followCanary(status: () => Promise<Record<string, unknown>>, stable: string): Promise<{ canary: string; seen: readonly string[] }> {
  const seen: string[] = [];
  const note = (s: Record<string, unknown>): void => {
    const text = JSON.stringify([s['phase'], s['currentStepIndex'], s['stableRS'], s['currentPodHash']]);
    if (seen.at(-1) !== text) seen.push(text);
  };
  const paused = await waitFor('the Rollout at its pause step with a canary beside the stable ReplicaSet', async () => {
    const s = await status();
    note(s);
    return s['currentStepIndex'] === 1 && s['stableRS'] === stable && typeof s['currentPodHash'] === 'string' && s['currentPodHash'] !== stable ? s : undefined;
  }, { timeoutMs: 90_000, intervalMs: 200 }).catch((error: unknown) => {
    throw new Error(`states seen: ${seen.join(' ')}`, { cause: error });
  });
  const canary = String(paused['currentPodHash']);
  await waitFor('the Rollout promoted: the canary is the stable ReplicaSet', async () => {
    const s = await status();
    note(s);
    return s['phase'] === 'Healthy' && s['stableRS'] === canary ? s : undefined;
  }, { timeoutMs: 120_000, intervalMs: 200 }).catch((error: unknown) => {
    throw new Error(`states seen: ${seen.join(' ')}`, { cause: error });
  });
  return { canary, seen };
}
