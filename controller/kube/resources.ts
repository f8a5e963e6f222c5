/**
 * The API resources the controller lists, watches and writes, in one table.
 */
import type { WorkloadKindName } from '../model.ts';

/** One resource: where it lives in the API. */
export interface ResourceSpec {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  /** Optional APIs (CRDs, OpenShift) may be absent; their reflectors wait for them to appear. */
  readonly optional: boolean;
}

/** Workload kinds, in the order they are listed at start. */
export const WORKLOAD_RESOURCES: Readonly<Record<WorkloadKindName, ResourceSpec>> = Object.freeze({
  Deployment: { group: 'apps', version: 'v1', plural: 'deployments', optional: false },
  StatefulSet: { group: 'apps', version: 'v1', plural: 'statefulsets', optional: false },
  DaemonSet: { group: 'apps', version: 'v1', plural: 'daemonsets', optional: false },
  CronJob: { group: 'batch', version: 'v1', plural: 'cronjobs', optional: false },
  Rollout: { group: 'argoproj.io', version: 'v1alpha1', plural: 'rollouts', optional: true },
  DeploymentConfig: { group: 'apps.openshift.io', version: 'v1', plural: 'deploymentconfigs', optional: true },
});

/** Everything else the controller watches. */
export const OTHER_RESOURCES = Object.freeze({
  configMaps: { group: '', version: 'v1', plural: 'configmaps', optional: false },
  secrets: { group: '', version: 'v1', plural: 'secrets', optional: false },
  pods: { group: '', version: 'v1', plural: 'pods', optional: false },
  replicaSets: { group: 'apps', version: 'v1', plural: 'replicasets', optional: false },
  namespaces: { group: '', version: 'v1', plural: 'namespaces', optional: false },
  providerPodStatuses: { group: 'secrets-store.csi.x-k8s.io', version: 'v1', plural: 'secretproviderclasspodstatuses', optional: true },
  applications: { group: 'argoproj.io', version: 'v1alpha1', plural: 'applications', optional: true },
  appProjects: { group: 'argoproj.io', version: 'v1alpha1', plural: 'appprojects', optional: true },
} satisfies Record<string, ResourceSpec>);

/** `/api/v1` or `/apis/<group>/<version>`. */
function groupVersionPath(spec: ResourceSpec): string {
  return spec.group === '' ? `/api/${spec.version}` : `/apis/${spec.group}/${spec.version}`;
}

/** The collection path, cluster-wide (namespace `undefined`) or in one namespace. */
export function collectionPath(spec: ResourceSpec, namespace?: string): string {
  return namespace === undefined ? `${groupVersionPath(spec)}/${spec.plural}` : `${groupVersionPath(spec)}/namespaces/${encodeURIComponent(namespace)}/${spec.plural}`;
}

/** The path of one namespaced object. */
export function objectPath(spec: ResourceSpec, namespace: string, name: string): string {
  return `${collectionPath(spec, namespace)}/${encodeURIComponent(name)}`;
}
