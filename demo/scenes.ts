/**
 * The three things the demo shows, each narrated with timings and each
 * checked: a demo that claims "the app stayed Synced" must have seen it.
 *
 * 1. A ConfigMap changed in Git: Argo CD sees the new hash, the sync rolls the Deployment.
 * 2. A Secret rotated out of band: the controller evicts the pods; no new ReplicaSet, the app stays Synced.
 * 3. `driftless explain`, the plugin's view of the commit and the controller's view of the cluster.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, KubeList, KubeObject } from '../test/cluster/api.ts';
import { applicationStatus, type ArgoCD } from '../test/cluster/argocd.ts';
import { runCommand } from '../test/cluster/exec.ts';
import { podIsReady, waitForDeploymentRollout } from '../test/cluster/testing.ts';
import { waitFor } from '../test/support/wait.ts';
import { replicaSetNames, waitForEvent } from '../test/controller/support/fixtures.ts';
import {
  DemoCheckError,
  configMapName,
  deploymentPath,
  renewCertificate,
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
const rolloutTimeoutMs = 180_000;

function names(objects: readonly KubeObject[]): string[] {
  return objects.map((object) => object.metadata?.name ?? '').sort();
}

/** Waits until exactly `replicas` pods run, all Ready, none terminating, and `accept` holds for them. */
function waitForPods(client: ApiClient, namespace: string, replicas: number, description: string, accept: (pods: readonly KubeObject[]) => boolean): Promise<KubeObject[]> {
  return waitFor(description, async () => {
    const selector = encodeURIComponent(`app.kubernetes.io/name=${workloadName}`);
    const all = (await client.request<KubeList>('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=${selector}`)).items;
    const ready = all.filter(podIsReady);
    return all.length === replicas && ready.length === replicas && accept(ready) ? ready : undefined;
  }, { timeoutMs: rolloutTimeoutMs });
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
interface Observations {
  readonly polls: number;
  readonly synced: number;
  /** `sync/health` → count. */
  readonly states: ReadonlyMap<string, number>;
}

/** Polls the Application every `intervalMs` until `stop`, counting the states seen. */
function observeApplication(argocd: ArgoCD, name: string, intervalMs = 250): { stop(): Promise<Observations> } {
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

/** Runs `driftless` from this checkout; resolves with its stdout (its stderr appended as warnings). */
async function driftless(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout, stderr } = await runCommand(process.execPath, [bin, ...args], { cwd, env });
  return stderr.trim() === '' ? stdout : `${stdout}\n(stderr)\n${stderr}`;
}

/** Step 3. */
export async function explainWorkload(env: DemoEnvironment, narrator: Narrator, app: DemoApp, binaries: DemoBinaries): Promise<void> {
  narrator.section(`3. driftless explain: why Deployment ${workloadName} has its hash, and what the controller does for it`);
  const { KUBECONFIG: _kubeconfig, ...rest } = process.env;
  const base = { ...rest, PATH: `${binaries.tools.binDir}:${process.env['PATH'] ?? '/usr/bin:/bin'}` };
  narrator.say(`$ driftless explain --path ${app.path} --namespace ${env.namespace}    # the plugin, on commit ${shortSha(app.revision)}, with the sidecar's key`);
  narrator.block(await driftless(['explain', '--path', app.path, '--namespace', env.namespace], app.repo.workDir, { ...base, DRIFTLESS_HASH_KEY_FILE: env.argocd.hashKeyFile }));
  const live = ['explain', '--live', `--namespace=${env.namespace}`, `deployment/${workloadName}`];
  narrator.say(`$ driftless ${live.join(' ')}    # the controller's view of the live cluster`);
  narrator.block(await driftless([...live, `--kubeconfig=${env.cluster.kubeconfigPath}`, `--hash-key-file=${env.argocd.hashKeyFile}`], app.repo.workDir, base));
}
