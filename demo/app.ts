/**
 * The demo's applications: `examples/directory` committed to a local Git
 * repository and registered with Argo CD through the Driftless plugin, and the
 * TLS Secret it mounts, which is deliberately not in Git — it is created in
 * the cluster the way cert-manager would, so it is the out-of-band config the
 * controller looks after. Beside it, in the same repository, a canary Rollout
 * with its own TLS Secret that the controller restarts through Git (the `git`
 * strategy, ADR 0016): the write-back scene. And a small `api` Deployment
 * with its own TLS Secret, which an Application with `destination.name: edge`
 * deploys into the second cluster: the hub scene.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { ApiClient, KubeObject } from '../test/cluster/api.ts';
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

/** The canary app: its Application, Rollout and (out-of-band) TLS Secret. */
export const canaryAppName = 'checkout';
export const canaryWorkloadName = 'checkout';
export const canarySecretName = 'checkout-tls';

/** The second cluster's app: its Application, Deployment and (out-of-band) TLS Secret. */
export const spokeAppName = 'api';
export const spokeWorkloadName = 'api';
export const spokeSecretName = 'api-tls';

/** The Application as committed and synced. */
export interface DemoApp {
  readonly name: string;
  readonly repo: GitRepo;
  /** Path of the app inside the repository. */
  readonly path: string;
  /** The commit Argo CD last synced. */
  readonly revision: string;
  /** The canary app, in the same repository, synced automatically (the write-back scene). */
  readonly canary: { readonly name: string; readonly path: string };
  /** The second cluster's app, in the same repository, synced once at the start (the hub scene). */
  readonly spoke: { readonly name: string; readonly path: string };
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

/** The path of the demo's Deployment (or of `name`). */
export function deploymentPath(namespace: string, name: string = workloadName): string {
  return `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`;
}

/** The path of the canary app's Rollout. */
export function rolloutPath(namespace: string): string {
  return `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/rollouts/${canaryWorkloadName}`;
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

/** Creates a TLS Secret as cert-manager would: its annotation says which Certificate wrote it. `api`: the cluster (default the first). */
export async function createCertManagerSecret(env: DemoEnvironment, name: string = secretName, api: ApiClient = env.cluster.admin): Promise<void> {
  await api.request('POST', `/api/v1/namespaces/${env.namespace}/secrets`, {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, annotations: { 'cert-manager.io/certificate-name': name } },
    stringData: fakeTls(),
  });
}

/** Replaces a certificate in place, as cert-manager does on renewal. `api`: the cluster (default the first). */
export async function renewCertificate(env: DemoEnvironment, name: string = secretName, api: ApiClient = env.cluster.admin): Promise<void> {
  await api.request('PATCH', `/api/v1/namespaces/${env.namespace}/secrets/${name}`, { stringData: fakeTls() }, {
    contentType: 'application/merge-patch+json',
  });
}

/**
 * The canary app: one Argo Rollout with its ConfigMap (in Git, so the plugin stamps a hash from the
 * start) that mounts its TLS Secret (not in Git) and asks to be restarted through Git. Two replicas, one canary step (50 %, then a short pause) and a 1 s termination grace,
 * so that the scene shows every stage of a canary without the default 30 s per replaced pod.
 */
function canaryFiles(path: string): Record<string, string> {
  const rollout = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: ${canaryWorkloadName}
  labels:
    app.kubernetes.io/name: ${canaryWorkloadName}
  annotations:
    secret.reloader.stakater.com/reload: ${canarySecretName}
    # An out-of-band change of ${canarySecretName} is committed to this directory (.driftless/out-of-band)
    # instead of restarted in the cluster: Argo CD's sync rolls it through the canary steps below.
    driftless.dev/restart-strategy: git
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: ${canaryWorkloadName}
  strategy:
    canary:
      steps:
        - setWeight: 50
        - pause: {}  # until promoted, as a team gates a canary; the demo promotes it
  template:
    metadata:
      labels:
        app.kubernetes.io/name: ${canaryWorkloadName}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: ${canaryWorkloadName}
          image: nginxinc/nginx-unprivileged:1.29-alpine
          envFrom:
            - configMapRef:
                name: ${canaryWorkloadName}-settings
          volumeMounts:
            - name: tls
              mountPath: /etc/${canaryWorkloadName}/tls
              readOnly: true
      volumes:
        - name: tls
          secret:
            secretName: ${canarySecretName}
`;
  const configMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${canaryWorkloadName}-settings
data:
  LOG_LEVEL: info
`;
  return { [`${path}/rollout.yaml`]: rollout, [`${path}/configmap.yaml`]: configMap };
}

/**
 * The second cluster's app: one Deployment mounting its TLS Secret (not in Git), opted in by
 * Reloader's `secret.reloader.stakater.com/reload`. Two replicas and a 1 s termination grace, so the
 * scene shows the evictions without the example's default 30 s per replaced pod.
 */
function spokeFiles(path: string): Record<string, string> {
  const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${spokeWorkloadName}
  labels:
    app.kubernetes.io/name: ${spokeWorkloadName}
  annotations:
    secret.reloader.stakater.com/reload: ${spokeSecretName}
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: ${spokeWorkloadName}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: ${spokeWorkloadName}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: ${spokeWorkloadName}
          image: nginxinc/nginx-unprivileged:1.29-alpine
          volumeMounts:
            - name: tls
              mountPath: /etc/${spokeWorkloadName}/tls
              readOnly: true
      volumes:
        - name: tls
          secret:
            secretName: ${spokeSecretName}
`;
  return { [`${path}/deployment.yaml`]: deployment };
}

/** The Application spec: the plugin renders it; the destination is the demo's namespace in Argo CD's own cluster. */
function applicationSpec(repo: GitRepo, path: string, namespace: string): Record<string, unknown> {
  return {
    source: { repoURL: repo.url, targetRevision: repo.branch, path, plugin: { name: pluginName } },
    destination: { server: 'https://kubernetes.default.svc', namespace },
  };
}

/**
 * Commits the example and the canary app, registers both Applications, syncs them (at once: the
 * canary app only matters from the write-back scene on) and waits for both to be Synced/Healthy.
 */
export async function deployApplication(env: DemoEnvironment, narrator: Narrator, name: string): Promise<DemoApp> {
  const { argocd, namespace, spoke } = env;
  await createCertManagerSecret(env);
  await createCertManagerSecret(env, canarySecretName);
  await createCertManagerSecret(env, spokeSecretName, spoke.cluster.admin);
  narrator.say(`Secrets ${secretName} and ${canarySecretName} created in namespace ${namespace} out of band, as cert-manager would (not in Git; values never shown); ${spokeSecretName} likewise in ${spoke.name}`);
  const path = `apps/${exampleName}`;
  const canaryPath = `apps/${canaryAppName}`;
  const spokePath = `apps/${spokeAppName}`;
  const repo = await argocd.createRepo('demo');
  const files = { ...(await exampleFiles(path)), ...canaryFiles(canaryPath), ...spokeFiles(spokePath) };
  const revision = await repo.commit(files, `add the ${exampleName} example, the ${canaryAppName} canary and the ${spokeAppName} app`);
  narrator.say(`Git repository ${repo.url}: examples/${exampleName} committed at ${path} (commit ${shortSha(revision)}; without secret.yaml; Deployment ${workloadName} annotated reloader.stakater.com/auto)`);
  narrator.say(`…at ${canaryPath}, Rollout ${canaryWorkloadName} (canary: 50 %, then paused until promoted) mounting Secret ${canarySecretName}, annotated driftless.dev/restart-strategy: git`);
  narrator.say(`…and at ${spokePath}, Deployment ${spokeWorkloadName} (2 replicas, 1 s termination grace) mounting Secret ${spokeSecretName}, annotated secret.reloader.stakater.com/reload`);
  await argocd.createApplication(name, applicationSpec(repo, path, namespace));
  narrator.say(`Application ${name} registered: source.plugin.name ${pluginName}, destination namespace ${namespace}; sync started`);
  await argocd.createApplication(canaryAppName, { ...applicationSpec(repo, canaryPath, namespace), syncPolicy: { automated: { prune: true, selfHeal: false } } });
  narrator.say(`Application ${canaryAppName} registered: the same plugin, automated sync`);
  await argocd.createApplication(spokeAppName, { ...applicationSpec(repo, spokePath, namespace), destination: { name: spoke.name, namespace } });
  narrator.say(`Application ${spokeAppName} registered: the same plugin, destination.name ${spoke.name} (the cluster Secret's name), namespace ${namespace}; sync started`);
  await Promise.all([argocd.sync(name, { revision }), argocd.sync(spokeAppName, { revision })]);
  await Promise.all([waitSynced(argocd, name, revision), waitSynced(argocd, canaryAppName, revision), waitSynced(argocd, spokeAppName, revision)]);
  const deployment = await env.cluster.admin.request('GET', deploymentPath(namespace));
  narrator.say(`Application ${name} Synced/Healthy at ${shortSha(revision)}; Deployment ${workloadName}'s pod template has ${HASH_ANNOTATION}: ${shortHash(templateHash(deployment))}`);
  const rollout = await env.cluster.admin.request('GET', rolloutPath(namespace));
  narrator.say(`Application ${canaryAppName} Synced/Healthy at ${shortSha(revision)}; Rollout ${canaryWorkloadName}'s pod template has ${HASH_ANNOTATION}: ${shortHash(templateHash(rollout))}`);
  narrator.say(`Application ${spokeAppName} Synced/Healthy at ${shortSha(revision)}: Argo CD deployed Deployment ${spokeWorkloadName} into ${spoke.name}, as ${spoke.user}`);
  return { name, repo, path, revision, canary: { name: canaryAppName, path: canaryPath }, spoke: { name: spokeAppName, path: spokePath } };
}

/** Waits for Synced/Healthy at `revision` with the demo's deadline (a loaded machine renders slowly). */
export async function waitSynced(argocd: ArgoCD, name: string, revision: string): Promise<void> {
  const app = await argocd.waitForSyncedAndHealthy(name, revision, { timeoutMs: 180_000 });
  const phase = applicationStatus(app).operationState?.phase;
  if (phase !== undefined && phase !== 'Succeeded') throw new DemoCheckError(`the sync of ${name} ended ${phase}: ${applicationStatus(app).operationState?.message ?? ''}`);
}
