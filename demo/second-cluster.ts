/**
 * The hub scene: the `api` app, deployed by Argo CD into the second cluster
 * at the start, has its TLS Secret renewed there, and its pods are replaced by
 * the one controller, which runs in the first cluster and reaches the second
 * with the credentials of Argo CD's cluster Secret (hub mode,
 * `--argocd-clusters`). Checked like the rest: the evictions are the
 * controller's pipeline for that cluster, the second cluster's audit log shows
 * them as Argo CD's identity there, the Application stays Synced, and nothing
 * but the app's pods runs in the second cluster.
 */
import type { KubeList } from '../test/cluster/api.ts';
import { waitFor } from '../test/support/wait.ts';
import { waitForEvent } from '../test/controller/support/fixtures.ts';
import { DemoCheckError, deploymentPath, renewCertificate, spokeSecretName, spokeWorkloadName, type DemoApp } from './app.ts';
import { hubName, type DemoEnvironment } from './environment.ts';
import type { Narrator } from './narrator.ts';
import { names, observeApplication, rolloutTimeoutMs, waitForPods, type Observations } from './scenes.ts';

/** Waits for the controller's first-sight record of the Secret on the second cluster's Deployment. */
async function firstSight(env: DemoEnvironment, narrator: Narrator): Promise<void> {
  const { namespace, spoke } = env;
  const recorded = await waitFor(`the controller's first-sight record in ${spoke.name}`, async () => {
    const record = (await spoke.cluster.admin.request('GET', deploymentPath(namespace, spokeWorkloadName))).metadata?.annotations?.['driftless.dev/restarted-for'];
    return record?.includes(`"Secret/${spokeSecretName}"`) ? record : undefined;
  }, { timeoutMs: 60_000 });
  narrator.say(
    `controller, its ${spoke.name} pipeline: Secret ${spokeSecretName} is out of band for Deployment ${spokeWorkloadName} in ${spoke.name} → ` +
      `its digest is recorded in driftless.dev/restarted-for (${Object.keys(JSON.parse(recorded) as object).join(', ')})`,
  );
}

/** Every pod and Deployment in the second cluster, in every namespace: only the app's may be there. */
async function onlyTheWorkloadRuns(env: DemoEnvironment): Promise<string> {
  const api = env.spoke.cluster.admin;
  const [pods, deployments] = await Promise.all([api.request<KubeList>('GET', '/api/v1/pods'), api.request<KubeList>('GET', '/apis/apps/v1/deployments')]);
  const foreign = [...pods.items, ...deployments.items].filter((object) => object.metadata?.namespace !== env.namespace || !(object.metadata.name ?? '').startsWith(`${spokeWorkloadName}`));
  if (foreign.length > 0) throw new DemoCheckError(`${env.spoke.name} runs more than the app: ${foreign.map((object) => `${object.kind ?? 'object'} ${object.metadata?.namespace}/${object.metadata?.name}`).join(', ')}`);
  return `${pods.items.length} pods and ${deployments.items.length} Deployment in all of ${env.spoke.name}'s namespaces, all ${spokeWorkloadName}'s`;
}

/** Step 3. */
export async function rotateSecretInSpoke(env: DemoEnvironment, narrator: Narrator, app: DemoApp): Promise<void> {
  const { argocd, controller, namespace, spoke } = env;
  narrator.section(`3. Secret ${spokeSecretName} rotated in the second cluster ${spoke.name} → the controller in ${hubName} restarts the pods there by eviction`);
  const api = spoke.cluster.admin;
  const { name } = app.spoke;
  await firstSight(env, narrator);
  const replicas = ((await api.request('GET', deploymentPath(namespace, spokeWorkloadName))).spec?.['replicas'] as number | undefined) ?? 1;
  const podsBefore = await waitForPods(api, namespace, replicas, `${replicas} ready pods in ${spoke.name}`, () => true, spokeWorkloadName);
  const mark = controller.lines.length;
  const observing = observeApplication(argocd, name);
  let observations: Observations | undefined;
  try {
    await renewCertificate(env, spokeSecretName, api);
    narrator.say(`Secret ${spokeSecretName} rotated in ${spoke.name} (cert-manager renewed the certificate there; no commit)`);
    const started = await waitForEvent(api, namespace, spokeWorkloadName, 'RestartStarted', rolloutTimeoutMs);
    narrator.say(`controller Event RestartStarted, in ${spoke.name}: ${String(started['message'])}`);
    const oldNames = names(podsBefore);
    const podsAfter = await waitForPods(api, namespace, replicas, `every pod in ${spoke.name} replaced`, (ready) => names(ready).every((pod) => !oldNames.includes(pod)), spokeWorkloadName);
    const finished = await waitForEvent(api, namespace, spokeWorkloadName, 'RestartFinished', rolloutTimeoutMs);
    const evicted = controller.lines.slice(mark).filter((line) => line.msg === 'evicted');
    const there = evicted.filter((line) => line['cluster'] === spoke.name).length;
    if (there !== evicted.length) throw new DemoCheckError(`the controller evicted ${evicted.length - there} pods outside ${spoke.name}`);
    const audited = await waitFor(`${there} evictions in ${spoke.name}'s audit log`, async () => {
      const events = await spoke.cluster.audit({ user: spoke.user, resource: 'pods', subresource: 'eviction' });
      return events.length >= there ? events.length : undefined;
    }, { timeoutMs: 30_000 });
    narrator.say(
      `pods in ${spoke.name} restarted by eviction from ${hubName} (${there} evictions by the controller's ${spoke.name} pipeline; ${spoke.name}'s audit log has ${audited}, as ` +
        `${spoke.user}, the cluster Secret's identity): ${oldNames.join(', ')} → ${names(podsAfter).join(', ')}, ${podsAfter.length}/${replicas} ready`,
    );
    narrator.say(`controller Event RestartFinished, in ${spoke.name}: ${String(finished['message'])}`);
  } finally {
    observations = await observing.stop();
  }
  narrator.say(`Application ${name} (destination ${spoke.name}) during the restart: Synced at ${observations.synced} of ${observations.polls} polls`);
  if (observations.synced !== observations.polls) throw new DemoCheckError(`Argo CD reported ${name} not Synced at ${observations.polls - observations.synced} polls during the restart`);
  narrator.say(`nothing of Driftless or Argo CD runs in ${spoke.name}, only its workloads: ${await onlyTheWorkloadRuns(env)}`);
}
