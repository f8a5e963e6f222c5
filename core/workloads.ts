import { byGroupAndKind, getPath, isRecord } from './manifest.ts';
import type { Manifest } from './model.ts';

/** A kind whose pod template Driftless stamps, and where that template lives. */
export interface WorkloadKind {
  readonly group: string;
  readonly kind: string;
  readonly templatePath: readonly string[];
}

const SPEC_TEMPLATE = Object.freeze(['spec', 'template']);

/**
 * Every kind whose pod template may be stamped. Jobs and bare Pods are absent
 * on purpose: their templates are immutable, so a changed hash would make the
 * sync fail instead of rolling anything.
 */
export const WORKLOAD_KINDS: readonly WorkloadKind[] = Object.freeze([
  { group: 'apps', kind: 'Deployment', templatePath: SPEC_TEMPLATE },
  { group: 'apps', kind: 'StatefulSet', templatePath: SPEC_TEMPLATE },
  { group: 'apps', kind: 'DaemonSet', templatePath: SPEC_TEMPLATE },
  { group: 'apps', kind: 'ReplicaSet', templatePath: SPEC_TEMPLATE },
  { group: 'argoproj.io', kind: 'Rollout', templatePath: SPEC_TEMPLATE },
  { group: 'batch', kind: 'CronJob', templatePath: Object.freeze(['spec', 'jobTemplate', 'spec', 'template']) },
  { group: 'apps.openshift.io', kind: 'DeploymentConfig', templatePath: SPEC_TEMPLATE },
].map((entry) => Object.freeze(entry)));

/**
 * WORKLOAD_KINDS by group, then kind: podTemplatePath runs for every object of
 * a render, and a scan of the list with a closure per call showed in profiles.
 */
const WORKLOAD_KIND_BY_GROUP: ReadonlyMap<string, ReadonlyMap<string, WorkloadKind>> = byGroupAndKind(WORKLOAD_KINDS);

/** The stamped kind of this API group and kind, or `undefined` for any other. */
export function workloadKind(group: string, kind: string): WorkloadKind | undefined {
  return WORKLOAD_KIND_BY_GROUP.get(group)?.get(kind);
}

/** True for an Argo Rollout (`argoproj.io`), with or without `spec.workloadRef`. */
export function isRollout(m: Manifest): boolean {
  return m.group === 'argoproj.io' && m.kind === 'Rollout';
}

/** The object a Rollout's `spec.workloadRef` points to. */
export interface WorkloadRef {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  /** Always the Rollout's own namespace: a workloadRef cannot cross namespaces. */
  readonly namespace: string;
}

/**
 * The Deployment (or other workload) whose template a Rollout borrows, or
 * `undefined` for a Rollout with its own template and for every other kind.
 */
export function rolloutWorkloadRef(m: Manifest): WorkloadRef | undefined {
  if (!isRollout(m)) return undefined;
  const ref = getPath(m.object, ['spec', 'workloadRef']);
  if (!isRecord(ref)) return undefined;
  const name = ref['name'];
  const kind = ref['kind'];
  const apiVersion = ref['apiVersion'];
  if (typeof name !== 'string' || name === '') return undefined;
  const group = typeof apiVersion === 'string' && apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.lastIndexOf('/')) : 'apps';
  return Object.freeze({ group, kind: typeof kind === 'string' && kind !== '' ? kind : 'Deployment', name, namespace: m.namespace });
}

/**
 * Where the pod template of a workload is, e.g. `['spec', 'template']`, or
 * `undefined` when the object is not stamped: any other kind (Job and Pod
 * included) and a Rollout with `spec.workloadRef`, whose template lives in
 * the referenced Deployment.
 */
export function podTemplatePath(m: Manifest): readonly string[] | undefined {
  const entry = workloadKind(m.group, m.kind);
  if (entry === undefined) return undefined;
  if (isRollout(m) && isRecord(getPath(m.object, ['spec', 'workloadRef']))) return undefined;
  return entry.templatePath;
}
