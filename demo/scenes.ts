/**
 * Four of the five things the demo shows (the third, the second cluster, is in
 * second-cluster.ts), each narrated with timings and each checked: a demo that
 * claims "the app stayed Synced" must have seen it.
 *
 * 1. A ConfigMap changed in Git: Argo CD sees the new hash, the sync rolls the Deployment.
 * 2. A Secret rotated out of band: the controller evicts the pods; no new ReplicaSet, the app stays Synced.
 * 4. A TLS Secret rotated out of band for a canary Rollout with the `git` strategy: the controller
 *    commits the keyed digest, Argo CD syncs the commit, the Rollout goes through its canary step.
 * 5. `driftless explain`, the plugin's view of the commit and the controller's view of the cluster.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, KubeList, KubeObject } from '../test/cluster/api.ts';
import { applicationStatus, type ArgoCD } from '../test/cluster/argocd.ts';
import { runCommand } from '../test/cluster/exec.ts';
import { podIsReady, waitForDeploymentRollout } from '../test/cluster/testing.ts';
import { waitFor } from '../test/support/wait.ts';
import { replicaSetNames as allReplicaSetNames, waitForEvent } from '../test/controller/support/fixtures.ts';
import {
  DemoCheckError,
  canarySecretName,
  canaryWorkloadName,
  configMapName,
  deploymentPath,
  renewCertificate,
  rolloutPath,
  secretName,
  shortHash,
  shortSha,
  templateHash,
  waitSynced,
  workloadName,
  type DemoApp,
} from './app.ts';
import type { DemoBinaries, DemoEnvironment } from './environment.ts';
import type { Narrator } from './narrator.ts';

const bin = join(import.meta.dirname, '..', 'bin', 'driftless.js');
/** Deadline of the waits on a rollout or a restart: generous, the machine may be loaded. */
export const rolloutTimeoutMs = 180_000;

/** The sorted names of `objects`. */
export function names(objects: readonly KubeObject[]): string[] {
  return objects.map((object) => object.metadata?.name ?? '').sort();
}

/** Waits until exactly `replicas` pods of the demo's Deployment (or of `workload`) run, all Ready, none terminating, and `accept` holds for them. */
export function waitForPods(
  client: ApiClient,
  namespace: string,
  replicas: number,
  description: string,
  accept: (pods: readonly KubeObject[]) => boolean,
  workload: string = workloadName,
): Promise<KubeObject[]> {
  return waitFor(description, async () => {
    const selector = encodeURIComponent(`app.kubernetes.io/name=${workload}`);
    const all = (await client.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}`)).items;
    const ready = all.filter(podIsReady);
    return all.length === replicas && ready.length === replicas && accept(ready) ? ready : undefined;
  }, { timeoutMs: rolloutTimeoutMs });
}

/** The Deployment's ReplicaSets (the canary Rollout's live in the same namespace). */
async function replicaSetNames(client: ApiClient, namespace: string): Promise<string[]> {
  return (await allReplicaSetNames(client, namespace)).filter((name) => name.startsWith(`${workloadName}-`));
}

function replicasOf(deployment: KubeObject): number {
  return (deployment.spec?.['replicas'] as number | undefined) ?? 1;
}

/** Step 1. @returns the app at its new revision. */
export async function changeConfigMapInGit(env: DemoEnvironment, narrator: Narrator, app: DemoApp): Promise<DemoApp> {
  narrator.section(`1. ConfigMap ${configMapName} changed in Git → Argo CD sync → rolling update`);
  const { argocd, namespace } = env;
  const api = env.cluster.admin;
  const before = await api.request('GET', deploymentPath(namespace));
  const replicaSetsBefore = await replicaSetNames(api, namespace);
  const file = `${app.path}/configmap.yaml`;
  const content = await app.repo.read(file);
  const changed = content.replace('LOG_LEVEL: info', 'LOG_LEVEL: debug');
  if (changed === content) throw new DemoCheckError(`${file} has no "LOG_LEVEL: info" for the demo to change`);
  const revision = await app.repo.commit({ [file]: changed }, `${configMapName}: debug logging`);
  narrator.say(`ConfigMap ${configMapName} changed in Git: LOG_LEVEL info → debug (commit ${shortSha(revision)}); refresh requested`);

  await argocd.refresh(app.name);
  const compared = applicationStatus(
    await argocd.waitForApplication(app.name, `compared at ${revision}`, (status) => status.sync?.revision === revision, { timeoutMs: 120_000 }),
  );
  const drifted = (compared.resources ?? []).filter((resource) => resource.status === 'OutOfSync').map((resource) => `${resource.kind} ${resource.name}`);
  if (compared.sync?.status !== 'OutOfSync') throw new DemoCheckError(`after the commit Argo CD reports ${compared.sync?.status}, not OutOfSync`);
  narrator.say(`Argo CD compared ${shortSha(revision)}: OutOfSync (${drifted.join(', ')}: the plugin put a new hash in the pod template); sync started`);

  await argocd.sync(app.name, { revision });
  await waitSynced(argocd, app.name, revision);
  const after = await api.request('GET', deploymentPath(namespace));
  narrator.say(`Application ${app.name} Synced/Healthy at ${shortSha(revision)}; hash ${shortHash(templateHash(before))} → ${shortHash(templateHash(after))}`);

  const [created] = await waitFor('the new ReplicaSet', async () => {
    const fresh = (await replicaSetNames(api, namespace)).filter((name) => !replicaSetsBefore.includes(name));
    return fresh.length > 0 ? fresh : undefined;
  }, { timeoutMs: rolloutTimeoutMs });
  const replicaSet = await api.request('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets/${created}`);
  const podHash = replicaSet.metadata?.labels?.['pod-template-hash'] ?? '';
  await waitForDeploymentRollout(api, namespace, workloadName, { timeoutMs: rolloutTimeoutMs });
  const replicas = replicasOf(after);
  const pods = await waitForPods(api, namespace, replicas, `${replicas} ready pods of ReplicaSet ${created}`, (ready) =>
    ready.every((pod) => pod.metadata?.labels?.['pod-template-hash'] === podHash),
  );
  narrator.say(`rolling update: ReplicaSet ${replicaSetsBefore.join(', ')} → ${created}, ${pods.length}/${replicas} new pods ready, the old ones gone (the example keeps the default 30 s termination grace)`);
  return { ...app, revision };
}

/** How often, and in which states, Argo CD reported the app while something happened. */
export interface Observations {
  readonly polls: number;
  readonly synced: number;
  /** `sync/health` → count. */
  readonly states: ReadonlyMap<string, number>;
}

/** Polls the Application every `intervalMs` until `stop`, counting the states seen. */
export function observeApplication(argocd: ArgoCD, name: string, intervalMs = 250): { stop(): Promise<Observations> } {
  const states = new Map<string, number>();
  let polls = 0;
  let synced = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const status = applicationStatus(await argocd.getApplication(name));
      polls++;
      if (status.sync?.status === 'Synced') synced++;
      const state = `${status.sync?.status ?? '?'}/${status.health?.status ?? '?'}`;
      states.set(state, (states.get(state) ?? 0) + 1);
      await sleep(intervalMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { polls, synced, states };
    },
  };
}

/** Step 2. */
export async function rotateSecretOutOfBand(env: DemoEnvironment, narrator: Narrator, app: DemoApp): Promise<void> {
  narrator.section(`2. Secret ${secretName} rotated out of band (not in Git) → the controller restarts the pods by eviction; the app stays Synced`);
  const { argocd, controller, namespace } = env;
  const api = env.cluster.admin;
  const recorded = await waitFor('the controller\'s first-sight record', async () => {
    const deployment = await api.request('GET', deploymentPath(namespace));
    const record = deployment.metadata?.annotations?.['driftless.dev/restarted-for'];
    return record?.includes(`"Secret/${secretName}"`) ? record : undefined;
  }, { timeoutMs: 60_000 });
  narrator.say(
    `controller: Secret ${secretName} is out of band for Deployment ${workloadName} (not in the app's render) → its digest is recorded in ` +
      `driftless.dev/restarted-for (${Object.keys(JSON.parse(recorded) as object).join(', ')}); ConfigMap ${configMapName} is in-band, left to Argo CD`,
  );

  const before = await api.request('GET', deploymentPath(namespace));
  const replicas = replicasOf(before);
  const podsBefore = await waitForPods(api, namespace, replicas, `${replicas} ready pods`, () => true);
  const replicaSetsBefore = await replicaSetNames(api, namespace);
  const mark = controller.lines.length;
  const observing = observeApplication(argocd, app.name);
  let observations: Observations | undefined;
  try {
    await renewCertificate(env);
    narrator.say(`Secret ${secretName} rotated in the cluster (cert-manager renewed the certificate; no commit, the render is unchanged)`);
    const started = await waitForEvent(api, namespace, workloadName, 'RestartStarted', rolloutTimeoutMs);
    narrator.say(`controller Event RestartStarted: ${String(started['message'])}`);
    const oldNames = names(podsBefore);
    const podsAfter = await waitForPods(api, namespace, replicas, 'every pod replaced', (ready) => names(ready).every((name) => !oldNames.includes(name)));
    const finished = await waitForEvent(api, namespace, workloadName, 'RestartFinished', rolloutTimeoutMs);
    const evictions = controller.lines.slice(mark).filter((line) => line.msg === 'evicted').length;
    narrator.say(`pods restarted by eviction (${evictions} evictions): ${oldNames.join(', ')} → ${names(podsAfter).join(', ')}, ${podsAfter.length}/${replicas} ready`);
    narrator.say(`controller Event RestartFinished: ${String(finished['message'])}`);
  } finally {
    observations = await observing.stop();
  }

  const after = await api.request('GET', deploymentPath(namespace));
  const replicaSetsAfter = await replicaSetNames(api, namespace);
  if (JSON.stringify(after.spec?.['template']) !== JSON.stringify(before.spec?.['template'])) throw new DemoCheckError('the controller changed the pod template');
  if (replicaSetsAfter.join() !== replicaSetsBefore.join()) throw new DemoCheckError(`a new ReplicaSet appeared: ${replicaSetsAfter.join(', ')}`);
  narrator.say(`pod template untouched, no new ReplicaSet (still ${replicaSetsAfter.join(', ')})`);
  const states = [...observations.states].map(([state, count]) => `${state} ×${count}`).join(', ');
  narrator.say(`Application ${app.name} during the restart: Synced at ${observations.synced} of ${observations.polls} polls (every 250 ms; ${states})`);
  if (observations.synced !== observations.polls) throw new DemoCheckError(`Argo CD reported ${app.name} not Synced at ${observations.polls - observations.synced} polls during the restart`);

  await argocd.refresh(app.name, 'hard');
  const refreshed = applicationStatus(
    await argocd.waitForApplication(app.name, 'the hard refresh', (_status, object) => object.metadata?.annotations?.['argocd.argoproj.io/refresh'] === undefined, { timeoutMs: 120_000 }),
  );
  if (refreshed.sync?.status !== 'Synced') throw new DemoCheckError(`after a hard refresh Argo CD reports ${refreshed.sync?.status}`);
  narrator.say(`hard refresh (re-rendered, no manifest cache): still ${refreshed.sync.status}/${refreshed.health?.status ?? '?'}: nothing for Argo CD to undo, nothing to sync`);
}

/** git with no user or system config (the demo's repository is local; nothing of the user's may leak in). */
async function git(args: readonly string[], cwd: string): Promise<string> {
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: cwd, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LC_ALL: 'C' };
  return (await runCommand('git', args, { cwd, env })).stdout;
}

/** The bare repository behind a `file://` URL. */
function bareOf(app: DemoApp): string {
  return new URL(app.repo.url).pathname;
}

/** What the scene reads of a Rollout's status. */
interface RolloutView {
  readonly phase: string | undefined;
  /** Why it is paused (`CanaryPauseStep`), if it is. */
  readonly pausedFor: readonly string[];
  readonly step: number | undefined;
  readonly stableRS: string | undefined;
  readonly podHash: string | undefined;
  readonly hash: string | undefined;
}

async function rolloutView(client: ApiClient, namespace: string): Promise<RolloutView> {
  const rollout = await client.request('GET', rolloutPath(namespace));
  const status = rollout.status ?? {};
  const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
  return {
    phase: text(status['phase']),
    pausedFor: Array.isArray(status['pauseConditions']) ? status['pauseConditions'].map((condition: { reason?: unknown }) => String(condition.reason)) : [],
    step: typeof status['currentStepIndex'] === 'number' ? status['currentStepIndex'] : undefined,
    stableRS: text(status['stableRS']),
    podHash: text(status['currentPodHash']),
    hash: templateHash(rollout),
  };
}

/** The pods of one ReplicaSet of the Rollout (by its pod-template hash), Ready and not terminating. */
async function readyPodsOf(client: ApiClient, namespace: string, podHash: string): Promise<KubeObject[]> {
  const selector = encodeURIComponent(`app.kubernetes.io/name=${canaryWorkloadName},rollouts-pod-template-hash=${podHash}`);
  const pods = (await client.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}`)).items;
  return pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined && podIsReady(pod));
}

function pods(count: number): string {
  return `${count} pod${count === 1 ? '' : 's'}`;
}

/** Step 4. */
export async function rotateSecretThroughGit(env: DemoEnvironment, narrator: Narrator, app: DemoApp): Promise<void> {
  narrator.section(`4. Secret ${canarySecretName} (kubernetes.io/tls) rotated out of band for a canary Rollout with the git strategy → a commit → Argo CD syncs → the canary step`);
  const { argocd, controller, namespace } = env;
  const api = env.cluster.admin;
  const { name } = app.canary;
  const bare = bareOf(app);
  await waitFor('the controller\'s first-sight record of the Rollout', async () => {
    const rollout = await api.request('GET', rolloutPath(namespace));
    return rollout.metadata?.annotations?.['driftless.dev/restarted-for']?.includes(`"Secret/${canarySecretName}"`) ? rollout : undefined;
  }, { timeoutMs: 60_000 });
  const before = await waitFor(`Rollout ${canaryWorkloadName} Healthy`, async () => {
    const view = await rolloutView(api, namespace);
    return view.phase === 'Healthy' && view.stableRS !== undefined && view.hash !== undefined ? view : undefined;
  }, { timeoutMs: rolloutTimeoutMs });
  const stable = before.stableRS ?? '';
  narrator.say(`Rollout ${canaryWorkloadName} Healthy, stable ReplicaSet ${canaryWorkloadName}-${stable}; the controller recorded Secret ${canarySecretName} as out of band for it, strategy git`);
  const headBefore = (await git(['rev-parse', `refs/heads/${app.repo.branch}`], bare)).trim();
  const mark = controller.lines.length;

  await renewCertificate(env, canarySecretName);
  narrator.say(`Secret ${canarySecretName} rotated in the cluster (cert-manager renewed the certificate)`);
  const started = await waitForEvent(api, namespace, canaryWorkloadName, 'RestartStarted', rolloutTimeoutMs);
  narrator.say(`controller Event RestartStarted: ${String(started['message'])}`);
  const committed = await waitForEvent(api, namespace, canaryWorkloadName, 'WriteBackCommitted', rolloutTimeoutMs);
  const sha = (await git(['rev-parse', `refs/heads/${app.repo.branch}`], bare)).trim();
  const count = (await git(['rev-list', '--count', `${headBefore}..${sha}`], bare)).trim();
  if (count !== '1') throw new DemoCheckError(`the write-back added ${count} commits on ${app.repo.branch}, not one`);
  const message = String(committed['message']);
  if (!message.includes(`committed ${sha.slice(0, 12)}`)) throw new DemoCheckError(`the controller's Event names another commit than ${sha}: ${message}`);
  narrator.say(`controller Event WriteBackCommitted: ${message.replace(app.repo.url, 'the demo repository')}`);

  const file = `${app.canary.path}/.driftless/out-of-band`;
  const changed = (await git(['diff-tree', '--no-commit-id', '--name-only', '-r', sha], bare)).trim();
  if (changed !== file) throw new DemoCheckError(`the write-back commit changed ${changed.split('\n').join(', ')}, not only ${file}`);
  narrator.say(`$ git show ${shortSha(sha)}    # one commit on ${app.repo.branch}, one file: the keyed digest (HMAC with the hash key; the Secret's data never leaves the cluster)`);
  const header = (await git(['log', '-1', '--format=commit %h%nAuthor: %an <%ae>%n%n%B', sha], bare)).trimEnd();
  narrator.block(`${header}\n\n${(await git(['show', '--format=', '--no-color', sha], bare)).trim()}`);
  // The demo's working clone (the hints' "commit and push") must not fall behind the controller's commit.
  await git(['pull', '--quiet', '--ff-only', 'origin', app.repo.branch], app.repo.workDir);

  // What the Git host's push webhook does (argocd-server sets this annotation); the automated sync follows.
  await argocd.refresh(name);
  await argocd.waitForApplication(name, `the automated sync of ${shortSha(sha)}`, (status) => status.sync?.revision === sha, { timeoutMs: 120_000 });
  narrator.say(`refresh requested (as the Git host's webhook does): Argo CD compared ${shortSha(sha)}, where the plugin folds the listed digest into the Rollout's hash; the automated sync applies it`);

  const paused = await waitFor(`Rollout ${canaryWorkloadName} at its pause step with a canary beside the stable ReplicaSet`, async () => {
    const view = await rolloutView(api, namespace);
    if (view.step !== 1 || !view.pausedFor.includes('CanaryPauseStep') || view.stableRS !== stable || view.podHash === undefined || view.podHash === stable) return undefined;
    return (await readyPodsOf(api, namespace, view.podHash)).length > 0 ? view : undefined;
  }, { timeoutMs: rolloutTimeoutMs, intervalMs: 200 });
  const canary = paused.podHash ?? '';
  const canaryReplicaSet = await api.request('GET', `/apis/apps/v1/namespaces/${namespace}/replicasets/${canaryWorkloadName}-${canary}`);
  const canaryHash = templateHash(canaryReplicaSet);
  if (canaryHash === undefined || canaryHash === before.hash) throw new DemoCheckError(`the canary ReplicaSet has the old hash ${String(canaryHash)}`);
  const [canaryPods, stablePods] = await Promise.all([readyPodsOf(api, namespace, canary), readyPodsOf(api, namespace, stable)]);
  narrator.say(
    `Rollout ${canaryWorkloadName} paused at its canary step (50 %): canary ${canaryWorkloadName}-${canary} ` +
      `(${pods(canaryPods.length)}, hash ${shortHash(canaryHash)}) beside stable ${canaryWorkloadName}-${stable} (${pods(stablePods.length)}, hash ${shortHash(before.hash)})`,
  );

  // What `kubectl argo rollouts promote` does at a pause step: clear the pause condition (status subresource).
  await api.request('PATCH', `${rolloutPath(namespace)}/status`, { status: { pauseConditions: null } }, { contentType: 'application/merge-patch+json' });
  narrator.say(`promoted, as \`kubectl argo rollouts promote ${canaryWorkloadName}\` does (the pause condition cleared)`);
  await waitFor(`Rollout ${canaryWorkloadName} promoted: the canary is the stable ReplicaSet`, async () => {
    const view = await rolloutView(api, namespace);
    return view.phase === 'Healthy' && view.stableRS === canary ? view : undefined;
  }, { timeoutMs: rolloutTimeoutMs, intervalMs: 200 });
  const promoted = await waitFor('every pod on the new ReplicaSet', async () => {
    const [fresh, old] = await Promise.all([readyPodsOf(api, namespace, canary), readyPodsOf(api, namespace, stable)]);
    return fresh.length === 2 && old.length === 0 ? fresh : undefined;
  }, { timeoutMs: rolloutTimeoutMs });
  narrator.say(`the Rollout completed: stable ${canaryWorkloadName}-${canary}, ${promoted.length}/2 pods with hash ${shortHash(canaryHash)}, Healthy`);

  const finished = await waitForEvent(api, namespace, canaryWorkloadName, 'RestartFinished', rolloutTimeoutMs);
  narrator.say(`controller Event RestartFinished: ${String(finished['message'])}`);
  await waitSynced(argocd, name, sha);
  const rollout = await api.request('GET', rolloutPath(namespace));
  if (rollout.spec?.['restartAt'] !== undefined) throw new DemoCheckError('the controller wrote spec.restartAt: a second rollout');
  const evictions = controller.lines.slice(mark).filter((line) => line.msg === 'evicted').length;
  if (evictions !== 0) throw new DemoCheckError(`the controller evicted ${evictions} pods`);
  const head = (await git(['rev-parse', `refs/heads/${app.repo.branch}`], bare)).trim();
  if (head !== sha) throw new DemoCheckError(`a second commit ${head} followed the write-back ${sha}`);
  narrator.say(`Application ${name} Synced/Healthy at ${shortSha(sha)}; one rollout, all of it Argo CD's: no eviction, no spec.restartAt, no second commit`);
}

/** Runs `driftless` from this checkout; resolves with its stdout (its stderr appended as warnings). */
async function driftless(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout, stderr } = await runCommand(process.execPath, [bin, ...args], { cwd, env });
  return stderr.trim() === '' ? stdout : `${stdout}\n(stderr)\n${stderr}`;
}

/** Step 5. */
export async function explainWorkload(env: DemoEnvironment, narrator: Narrator, app: DemoApp, binaries: DemoBinaries): Promise<void> {
  narrator.section(`5. driftless explain: why Deployment ${workloadName} has its hash, and what the controller does for it`);
  const { KUBECONFIG: _kubeconfig, ...rest } = process.env;
  const base = { ...rest, PATH: `${binaries.tools.binDir}:${process.env['PATH'] ?? '/usr/bin:/bin'}` };
  narrator.say(`$ driftless explain --path ${app.path} --namespace ${env.namespace}    # the plugin, on commit ${shortSha(app.revision)}, with the sidecar's key`);
  narrator.block(await driftless(['explain', '--path', app.path, '--namespace', env.namespace], app.repo.workDir, { ...base, DRIFTLESS_HASH_KEY_FILE: env.argocd.hashKeyFile }));
  const live = ['explain', '--live', `--namespace=${env.namespace}`, `deployment/${workloadName}`];
  narrator.say(`$ driftless ${live.join(' ')}    # the controller's view of the live cluster`);
  narrator.block(await driftless([...live, `--kubeconfig=${env.cluster.kubeconfigPath}`, `--hash-key-file=${env.argocd.hashKeyFile}`], app.repo.workDir, base));
}
