/**
 * The demo's application: `examples/directory` committed to a local Git
 * repository and registered with Argo CD through the Driftless plugin, and the
 * TLS Secret it mounts, which is deliberately not in Git — it is created in
 * the cluster the way cert-manager would, so it is the out-of-band config the
 * controller looks after.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { KubeObject } from '../test/cluster/api.ts';
import { applicationStatus, pluginName, type ArgoCD } from '../test/cluster/argocd.ts';
import { filesOf, type GitRepo } from '../test/cluster/git-repo.ts';
import { HASH_ANNOTATION } from '../core/index.ts';
import type { DemoEnvironment } from './environment.ts';
import type { Narrator } from './narrator.ts';

const repoRoot = join(import.meta.dirname, '..');

/** The example the demo deploys. */
export const exampleName = 'directory';
/** Its Deployment, ConfigMap and (out-of-band) Secret. */
export const workloadName = 'web';
export const configMapName = 'web-settings';
export const secretName = 'web-tls';

/** The Application as committed and synced. */
export interface DemoApp {
  readonly name: string;
  readonly repo: GitRepo;
  /** Path of the app inside the repository. */
  readonly path: string;
  /** The commit Argo CD last synced. */
  readonly revision: string;
}

/** The demo could not show what it set out to show: a step's expectation did not hold. */
export class DemoCheckError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DemoCheckError';
  }
}

/** The first 7 characters of a commit, as git prints it. */
export function shortSha(revision: string): string {
  return revision.slice(0, 7);
}

/** A hash as a reader can compare it: `v1:38be2725…`. */
export function shortHash(hash: string | undefined): string {
  return hash === undefined ? '(none)' : `${hash.slice(0, 11)}…`;
}

/** The Driftless hash in a workload's pod template. */
export function templateHash(workload: KubeObject): string | undefined {
  const template = workload.spec?.['template'] as KubeObject | undefined;
  return template?.metadata?.annotations?.[HASH_ANNOTATION];
}

/** The path of the demo's Deployment. */
export function deploymentPath(namespace: string): string {
  return `/apis/apps/v1/namespaces/${namespace}/deployments/${workloadName}`;
}

/**
 * The example's files as committed: the Secret left out (a real app keeps it
 * out of Git; the example's own README says so), and the Deployment opted in
 * with Reloader's `auto` annotation, since the controller, by default, only
 * restarts workloads that ask (mode `annotated`; the plugin's default is `all`).
 */
async function exampleFiles(path: string): Promise<Record<string, string>> {
  const files = await filesOf(join(repoRoot, 'examples', exampleName), path);
  delete files[`${path}/secret.yaml`];
  const deploymentFile = `${path}/deployment.yaml`;
  const deployment = files[deploymentFile] ?? '';
  const annotated = deployment.replace(`  name: ${workloadName}\n  labels:`, `  name: ${workloadName}\n  annotations:\n    reloader.stakater.com/auto: "true"\n  labels:`);
  if (annotated === deployment) throw new DemoCheckError(`examples/${exampleName}/deployment.yaml changed shape: the demo cannot annotate its Deployment`);
  files[deploymentFile] = annotated;
  return files;
}

/** A fresh fake certificate and key: random bytes in PEM armour (kwok never reads them). Never printed. */
function fakeTls(): Record<string, string> {
  const pem = (label: string): string => `-----BEGIN ${label}-----\n${randomBytes(48).toString('base64')}\n-----END ${label}-----\n`;
  return { 'tls.crt': pem('CERTIFICATE'), 'tls.key': pem('PRIVATE KEY') };
}

/** Creates the TLS Secret as cert-manager would: its annotation says which Certificate wrote it. */
export async function createCertManagerSecret(env: DemoEnvironment): Promise<void> {
  await env.cluster.admin.request('POST', `/api/v1/namespaces/${env.namespace}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name: secretName, annotations: { 'cert-manager.io/certificate-name': secretName } },
    stringData: fakeTls(),
  });
}

/** Replaces the certificate in place, as cert-manager does on renewal. */
export async function renewCertificate(env: DemoEnvironment): Promise<void> {
  await env.cluster.admin.request('PATCH', `/api/v1/namespaces/${env.namespace}/secrets/${secretName}`, { stringData: fakeTls() }, {
    contentType: 'application/merge-patch+json',
  });
}

/** The Application spec: the plugin renders it; the destination is the demo's namespace. */
function applicationSpec(repo: GitRepo, path: string, namespace: string): Record<string, unknown> {
  return {
    source: { repoURL: repo.url, targetRevision: repo.branch, path, plugin: { name: pluginName } },
    destination: { server: 'https://kubernetes.default.svc', namespace },
  };
}

/** Commits the example, registers the Application, syncs it and waits for Synced/Healthy. */
export async function deployApplication(env: DemoEnvironment, narrator: Narrator, name: string): Promise<DemoApp> {
  const { argocd, namespace } = env;
  await createCertManagerSecret(env);
  narrator.say(`Secret ${secretName} created in namespace ${namespace} out of band, as cert-manager would (not in Git; values never shown)`);
  const path = `apps/${exampleName}`;
  const repo = await argocd.createRepo('demo');
  const revision = await repo.commit(await exampleFiles(path), `add the ${exampleName} example`);
  narrator.say(`Git repository ${repo.url}: examples/${exampleName} committed at ${path} (commit ${shortSha(revision)}; without secret.yaml; Deployment ${workloadName} annotated reloader.stakater.com/auto)`);
  await argocd.createApplication(name, applicationSpec(repo, path, namespace));
  narrator.say(`Application ${name} registered: source.plugin.name ${pluginName}, destination namespace ${namespace}; sync started`);
  await argocd.sync(name, { revision });
  await waitSynced(argocd, name, revision);
  const deployment = await env.cluster.admin.request('GET', deploymentPath(namespace));
  narrator.say(`Application ${name} Synced/Healthy at ${shortSha(revision)}; Deployment ${workloadName}'s pod template has ${HASH_ANNOTATION}: ${shortHash(templateHash(deployment))}`);
  return { name, repo, path, revision };
}

/** Waits for Synced/Healthy at `revision` with the demo's deadline (a loaded machine renders slowly). */
export async function waitSynced(argocd: ArgoCD, name: string, revision: string): Promise<void> {
  const app = await argocd.waitForSyncedAndHealthy(name, revision, { timeoutMs: 180_000 });
  const phase = applicationStatus(app).operationState?.phase;
  if (phase !== undefined && phase !== 'Succeeded') throw new DemoCheckError(`the sync of ${name} ended ${phase}: ${applicationStatus(app).operationState?.message ?? ''}`);
}
