import { configMapEntry, hashEntries, outOfBandEntry, prepareHashKey, secretEntry, sortEntries, sourceEntry } from './hash.ts';
import { getPath } from './manifest.ts';
import type { ConfigKind, HashEntry, HashKey, Manifest, PolicyDecision, PolicyMode, Reference } from './model.ts';
import { listedOutOfBand } from './out-of-band.ts';
import type { OutOfBandEntry, OutOfBandIndex } from './out-of-band.ts';
import { CONFIG_KINDS, decide, namedMatch, readAnnotations, readWorkloadPolicy } from './policy.ts';
import { SECRET_PROVIDER_CLASS_GROUP, isConfigMap, isSecret, isSecretProviderClass, providedSecretName, secretSourceKind, secretSourceKindOf, sourceTemplateAnnotations } from './providers.ts';
import { findReferences } from './references.ts';
import { isRollout, podTemplatePath, rolloutWorkloadRef, workloadKind } from './workloads.ts';

/**
 * Whether planWorkloads (or expandLists before it) reads anything of an object
 * of this API group and kind beyond its identity (apiVersion, kind and
 * metadata's name, generateName and namespace): workloads, configs, Secret
 * sources, and lists, whose items are objects of their own. A reader may leave
 * the rest of every other object (a CustomResourceDefinition, a Role) unread.
 */
export function readsBeyondIdentity(group: string, kind: string): boolean {
  if (kind.endsWith('List')) return true;
  if (group === '' && (kind === 'ConfigMap' || kind === 'Secret')) return true;
  if (group === SECRET_PROVIDER_CLASS_GROUP && kind === 'SecretProviderClass') return true;
  return workloadKind(group, kind) !== undefined || secretSourceKindOf(group, kind) !== undefined;
}

/** What a workload uses of one config object, and whether it feeds the hash. */
export interface ConfigReport {
  readonly kind: ConfigKind;
  readonly name: string;
  /** Every use in the pod template; empty when selected by name only. */
  readonly references: readonly Reference[];
  /** The object itself is in the render (in the workload's namespace). */
  readonly inRender: boolean;
  /** Git-side sources in the render that provide this Secret (SealedSecret, ExternalSecret, Certificate). */
  readonly providers: readonly { readonly kind: string; readonly name: string }[];
  readonly decision: PolicyDecision;
  /** The out-of-band file's entry folded into the hash for this config; absent when none was. */
  readonly outOfBand?: OutOfBandEntry;
}

/** The outcome for one workload: what it uses, what is hashed, and the value to stamp. */
export interface WorkloadPlan {
  readonly workload: Manifest;
  /** Where the pod template is; `undefined` for a Rollout with `spec.workloadRef`. */
  readonly templatePath: readonly string[] | undefined;
  /**
   * Why the workload is not stamped (e.g. include-rollouts=false). A skipped
   * workload still reports its configs, but has no entries and no hash.
   */
  readonly skipped?: string;
  /** One per referenced config and per unreferenced config a named pattern matches, sorted kind then name. */
  readonly configs: readonly ConfigReport[];
  /** The hash v1 entries, sorted kind then name. They hold Secret data (base64): never print or log them. */
  readonly entries: readonly HashEntry[];
  /** The value to stamp; `undefined` when skipped or when no selected config is in the render. */
  readonly hash: string | undefined;
}

/** Options of a plan; the shells parse them from parameters or flags. */
export interface PlanOptions {
  readonly mode: PolicyMode;
  /** When false, Rollouts (and Deployments a Rollout's workloadRef borrows) are left to the controller. */
  readonly includeRollouts: boolean;
  readonly key?: HashKey;
  /** The app's out-of-band file, when it has one: listed digests of configs not in the render. */
  readonly outOfBand?: OutOfBandIndex;
}

/**
 * The config-side objects of the render in one namespace. Keyed per kind, then by the name itself:
 * a `kind/name` string built for every lookup was a good part of planning a large render.
 */
interface NamespaceIndex {
  readonly configs: Record<ConfigKind, Map<string, Manifest[]>>;
  /** Provided Secret name → sources. */
  readonly sources: Map<string, Manifest[]>;
  /** Every name a named pattern may select, per kind: objects in the render and Secrets a source provides. */
  readonly names: Record<ConfigKind, Set<string>>;
}

function configKindOf(m: Manifest): ConfigKind | undefined {
  if (isConfigMap(m)) return 'ConfigMap';
  if (isSecret(m)) return 'Secret';
  if (isSecretProviderClass(m)) return 'SecretProviderClass';
  return undefined;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function compareByKindName(a: { kind: string; name: string }, b: { kind: string; name: string }): number {
  if (a.kind !== b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return 0;
}

/**
 * Computes every config object's entry up front, in input order, so a broken
 * ConfigMap or Secret is reported even when no workload uses it (the sync
 * would fail on it anyway) and each object is decoded once.
 */
function computeEntries(manifests: readonly Manifest[]): Map<Manifest, HashEntry> {
  const entries = new Map<Manifest, HashEntry>();
  for (const m of manifests) {
    if (isConfigMap(m)) entries.set(m, configMapEntry(m));
    else if (isSecret(m)) entries.set(m, secretEntry(m));
    else if (isSecretProviderClass(m) || secretSourceKind(m) !== undefined) entries.set(m, sourceEntry(m));
  }
  return entries;
}

function indexNamespaces(manifests: readonly Manifest[]): Map<string, NamespaceIndex> {
  const index = new Map<string, NamespaceIndex>();
  const at = (namespace: string): NamespaceIndex => {
    let entry = index.get(namespace);
    if (entry === undefined) {
      entry = emptyIndex();
      index.set(namespace, entry);
    }
    return entry;
  };
  for (const m of manifests) {
    // An object named only by generateName cannot be referenced, and what it provides is unknowable.
    if (m.name === '') continue;
    const kind = configKindOf(m);
    if (kind !== undefined) {
      push(at(m.namespace).configs[kind], m.name, m);
      at(m.namespace).names[kind].add(m.name);
    }
    const provided = providedSecretName(m);
    if (provided !== undefined) {
      push(at(m.namespace).sources, provided, m);
      at(m.namespace).names.Secret.add(provided);
    }
  }
  return index;
}

/**
 * The annotations `ignore`/`match` are read from: the object's own, else the
 * templates of the sources that provide it (first in kind, name order wins
 * per key), with a phrase saying where they came from for the reason.
 */
function configAnnotations(objects: readonly Manifest[], sources: readonly Manifest[]): { annotations: Readonly<Record<string, string>>; annotationsFrom?: string } {
  const first = objects[0];
  if (first !== undefined) return { annotations: readAnnotations(first, ['metadata', 'annotations']) };
  if (sources.length === 0) return { annotations: {} };
  const merged: Record<string, string> = {};
  for (const source of [...sources].sort(compareByKindName)) {
    for (const [key, value] of Object.entries(sourceTemplateAnnotations(source))) {
      if (!Object.hasOwn(merged, key)) merged[key] = value;
    }
  }
  const names = sources.map((s) => `${s.kind} ${s.name}`).join(', ');
  return { annotations: merged, annotationsFrom: `the Secret template of ${names}` };
}

function emptyIndex(): NamespaceIndex {
  return {
    configs: { ConfigMap: new Map(), Secret: new Map(), SecretProviderClass: new Map() },
    sources: new Map(),
    names: { ConfigMap: new Set(), Secret: new Set(), SecretProviderClass: new Set() },
  };
}

const EMPTY_INDEX: NamespaceIndex = emptyIndex();
const SPEC: readonly string[] = Object.freeze(['spec']);
const NONE: readonly Manifest[] = Object.freeze([]);

function planOne(
  workload: Manifest,
  templatePath: readonly string[] | undefined,
  skipped: string | undefined,
  index: NamespaceIndex,
  entryOf: Map<Manifest, HashEntry>,
  options: PlanOptions,
): WorkloadPlan {
  const references = templatePath === undefined ? [] : findReferences(getPath(getPath(workload.object, templatePath), SPEC));
  const policy = readWorkloadPolicy(workload);
  type Candidate = { kind: ConfigKind; name: string; references: Reference[] };
  const candidates: Record<ConfigKind, Map<string, Candidate>> = { ConfigMap: new Map(), Secret: new Map(), SecretProviderClass: new Map() };
  for (const reference of references) {
    const found = candidates[reference.kind].get(reference.name);
    if (found === undefined) candidates[reference.kind].set(reference.name, { kind: reference.kind, name: reference.name, references: [reference] });
    else found.references.push(reference);
  }
  if (templatePath !== undefined) {
    // Named patterns need no reference: any object in the namespace, or Secret a source provides, may match.
    for (const kind of CONFIG_KINDS) {
      if (policy.kinds[kind].named.length === 0) continue;
      for (const name of index.names[kind]) {
        if (!candidates[kind].has(name) && namedMatch(policy, kind, name) !== undefined) {
          candidates[kind].set(name, { kind, name, references: [] });
        }
      }
    }
  }
  const configs: ConfigReport[] = [];
  const entries: HashEntry[] = [];
  const sortedCandidates = CONFIG_KINDS.flatMap((kind) => [...candidates[kind].values()]).sort(compareByKindName);
  for (const candidate of sortedCandidates) {
    const objects = index.configs[candidate.kind].get(candidate.name) ?? NONE;
    const provided = candidate.kind === 'Secret' ? index.sources.get(candidate.name) : undefined;
    const sources = provided === undefined ? NONE : [...provided].sort(compareByKindName);
    const { annotations, annotationsFrom } = configAnnotations(objects, sources);
    const config = { kind: candidate.kind, name: candidate.name, annotations, ...(annotationsFrom === undefined ? {} : { annotationsFrom }) };
    const decision = decide(policy, config, candidate.references.length > 0, options.mode);
    const folded = decision.selected && skipped === undefined
      ? listedOutOfBand(options.outOfBand, workload.namespace, candidate.kind, candidate.name, objects.length > 0)
      : undefined;
    configs.push(Object.freeze({
      kind: candidate.kind,
      name: candidate.name,
      references: Object.freeze(candidate.references),
      inRender: objects.length > 0,
      providers: Object.freeze(sources.map((s) => Object.freeze({ kind: s.kind, name: s.name }))),
      decision,
      ...(folded === undefined ? {} : { outOfBand: folded }),
    }));
    if (decision.selected && skipped === undefined) {
      for (const m of objects) entries.push(entryOf.get(m) as HashEntry);
      for (const m of sources) entries.push(entryOf.get(m) as HashEntry);
      if (folded !== undefined) entries.push(outOfBandEntry(folded.kind, folded.name, folded.digest));
    }
  }
  const sorted = sortEntries(entries);
  return Object.freeze({
    workload,
    templatePath,
    ...(skipped === undefined ? {} : { skipped }),
    configs: Object.freeze(configs),
    entries: Object.freeze(sorted),
    hash: sorted.length === 0 ? undefined : hashEntries(sorted, options.key),
  });
}

/**
 * Plans every workload of a render, in input order: one plan per workload
 * manifest, skipped ones included (a Rollout with `spec.workloadRef`, and
 * Rollouts when `includeRollouts` is false). References resolve in the
 * workload's namespace. Throws ManifestError for the first invalid object:
 * ConfigMaps, Secrets and sources are checked first (a value that is not a
 * string, base64 that does not decode), then each workload in input order (a
 * bad regex, a non-string annotation).
 */
export function planWorkloads(manifests: readonly Manifest[], givenOptions: PlanOptions): WorkloadPlan[] {
  const options: PlanOptions = givenOptions.key === undefined ? givenOptions : { ...givenOptions, key: prepareHashKey(givenOptions.key) };
  const entryOf = computeEntries(manifests);
  const index = indexNamespaces(manifests);
  // A Deployment borrowed by a Rollout's workloadRef rolls out through the Rollout, so it follows include-rollouts.
  const borrowedBy = new Map<string, Manifest>();
  for (const m of manifests) {
    const ref = rolloutWorkloadRef(m);
    if (ref !== undefined) borrowedBy.set(`${ref.namespace}/${ref.group}/${ref.kind}/${ref.name}`, m);
  }
  const plans: WorkloadPlan[] = [];
  for (const m of manifests) {
    const templatePath = podTemplatePath(m);
    const rollout = isRollout(m);
    if (templatePath === undefined && !rollout) continue;
    if (templatePath === undefined && rolloutWorkloadRef(m) === undefined && rollout) {
      // A workloadRef without a name: nothing to borrow, nothing to stamp.
      plans.push(planOne(m, undefined, 'spec.workloadRef names no workload', EMPTY_INDEX, entryOf, options));
      continue;
    }
    let skipped: string | undefined;
    // Only Rollouts with a workloadRef borrow: without any, no key needs building (one per workload).
    const borrower = borrowedBy.size === 0 ? undefined : borrowedBy.get(`${m.namespace}/${m.group}/${m.kind}/${m.name}`);
    if (templatePath === undefined) {
      const ref = rolloutWorkloadRef(m);
      skipped = `spec.workloadRef: the pod template is ${ref?.kind ?? 'Deployment'} ${ref?.name ?? ''}'s, which gets the hash instead`;
    } else if (rollout && !options.includeRollouts) {
      skipped = 'include-rollouts=false: the controller restarts Rollouts';
    } else if (borrower !== undefined && !options.includeRollouts) {
      skipped = `include-rollouts=false: the template belongs to Rollout ${borrower.name} (spec.workloadRef)`;
    }
    plans.push(planOne(m, templatePath, skipped, index.get(m.namespace) ?? EMPTY_INDEX, entryOf, options));
  }
  return plans;
}
