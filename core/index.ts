/**
 * The shared core of Driftless: pure functions from parsed Kubernetes objects
 * to references, policy decisions and hash v1 values. The plugin (rendered
 * manifests) and the controller (live objects) both import from here only.
 */
export type {
  ConfigKind,
  HashEntry,
  HashKey,
  KubeObject,
  Manifest,
  Origin,
  PolicyDecision,
  PolicyMode,
  PolicyRule,
  Reference,
  ReferenceField,
} from './model.ts';
export {
  ANNOTATIONS,
  BOOKKEEPING,
  DRIFTLESS_PREFIX,
  FLEET_ANNOTATIONS,
  HASH_ANNOTATION,
  RELOADER_ROLLOUT_STRATEGY,
  WRITE_BACK_ANNOTATION,
  WRITE_BACK_BRANCH_ANNOTATION,
  WRITE_BACK_REPO_ANNOTATION,
  WRITE_BACK_SOURCE_ANNOTATION,
} from './annotations.ts';
export { ManifestError, describeObject } from './errors.ts';
export type { ObjectIdentity } from './errors.ts';
export { apiGroup, expandLists, getPath, isRecord, toManifest } from './manifest.ts';
export type { ManifestContext } from './manifest.ts';
export { WORKLOAD_KINDS, isRollout, podTemplatePath, rolloutWorkloadRef } from './workloads.ts';
export type { WorkloadKind, WorkloadRef } from './workloads.ts';
export { findReferences } from './references.ts';
export { CONFIG_KINDS, decide, namedMatch, parseGoBool, reloaderPatternToJs, readAnnotations, readWorkloadPolicy } from './policy.ts';
export type { KindPolicy, NamedPattern, PolicyConfig, WorkloadPolicy } from './policy.ts';
export {
  HASH_VERSION,
  SOURCE_ENTRY_KINDS,
  canonicalJson,
  configMapEntry,
  decodeBase64,
  hashEntries,
  hashMessage,
  outOfBandEntry,
  secretEntry,
  sortEntries,
  sourceEntry,
} from './hash.ts';
export type { SourceEntryKind } from './hash.ts';
export {
  SECRET_PROVIDER_CLASS_GROUP,
  SECRET_SOURCE_KINDS,
  isConfigMap,
  isSecret,
  isSecretProviderClass,
  providedSecretName,
  secretSourceKind,
  sourceTemplateAnnotations,
} from './providers.ts';
export type { SecretSourceKind } from './providers.ts';
export { planWorkloads, readsBeyondIdentity } from './plan.ts';
export type { ConfigReport, PlanOptions, WorkloadPlan } from './plan.ts';
export {
  OUT_OF_BAND_FILE,
  OUT_OF_BAND_KINDS,
  OUT_OF_BAND_VERSION,
  OutOfBandFileError,
  formatOutOfBandFile,
  listedOutOfBand,
  outOfBandKey,
  parseOutOfBandFile,
} from './out-of-band.ts';
export type { OutOfBandEntry, OutOfBandIndex, OutOfBandKind } from './out-of-band.ts';
export { parseGoDuration } from './go-duration.ts';
