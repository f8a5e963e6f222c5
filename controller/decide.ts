/**
 * Deciding, purely from cached summaries: which configs a workload uses (by
 * `core/`'s policy, exactly as the plugin decides), which of them are
 * out-of-band, and whether the recorded digests call for a restart.
 *
 * The in-band rule (ADR 0007): a selected config is in-band when the plugin
 * already covers it — the pod template carries `driftless.dev/config-hash`,
 * the config is tracked by Argo CD as part of the same Application (its
 * tracking names the config itself), and it is not a Secret written by an
 * operator (ExternalSecret, SealedSecret, Certificate). The sync rolls those;
 * the controller never acts on them. Everything else selected is out-of-band.
 * The rule assumes the plugin selected at least what the controller selects
 * (true with the defaults: plugin `all`, controller `annotated`).
 */
import { ANNOTATIONS, BOOKKEEPING, CONFIG_KINDS, RELOADER_ROLLOUT_STRATEGY, decide as decidePolicy, namedMatch, readWorkloadPolicy, type ConfigKind, type PolicyDecision, type PolicyMode } from '../core/index.ts';
import { ABSENT, configKey, restartTimeFor, restartTimeForWrite, type DigestMap } from './bookkeeping.ts';
import type { ConfigSummary, RestartStrategy, WorkloadSummary } from './model.ts';
import { GIT_STRATEGY } from './writeback/select.ts';

/** Read access to the config caches of one namespace. */
export interface ConfigLookup {
  get(kind: ConfigKind, name: string): ConfigSummary | undefined;
  /** Every name of that kind in the namespace (named patterns need no reference). */
  names(kind: ConfigKind): Iterable<string>;
}

/** One config a workload selects, and how it is covered. */
export interface SelectedConfig {
  readonly kind: ConfigKind;
  readonly name: string;
  readonly decision: PolicyDecision;
  readonly band: 'in-band' | 'out-of-band';
  /** Why it is in-band or out-of-band, in words. */
  readonly why: string;
  readonly summary: ConfigSummary | undefined;
}

/** Every config a workload references or a named pattern matches, with the policy decision. */
export interface Selection {
  readonly configs: readonly SelectedConfig[];
  /** Configs the policy considered and did not select (for explain). */
  readonly skipped: readonly { readonly kind: ConfigKind; readonly name: string; readonly decision: PolicyDecision }[];
}

/**
 * Where an in-band config came from, for `why`: the rule's three conditions.
 */
function classify(workload: WorkloadSummary, stamped: boolean, config: ConfigSummary | undefined): { band: SelectedConfig['band']; why: string } {
  if (config === undefined) return { band: 'out-of-band', why: 'does not exist (yet): its creation will be a change' };
  if (config.kind === 'SecretProviderClass') return { band: 'out-of-band', why: 'CSI driver rotation never passes through Git' };
  if (config.producer !== undefined) return { band: 'out-of-band', why: `written by ${config.producer.kind}${config.producer.name === '' ? '' : ` ${config.producer.name}`}, not by a sync` };
  if (!stamped) return { band: 'out-of-band', why: 'the pod template has no driftless.dev/config-hash: the plugin did not render this workload' };
  if (config.tracking === undefined || !config.tracking.namesItself) return { band: 'out-of-band', why: 'not tracked by Argo CD' };
  if (workload.tracking === undefined || workload.tracking.app !== config.tracking.app) {
    return { band: 'out-of-band', why: `tracked by Application ${config.tracking.app}, not by this workload's` };
  }
  return { band: 'in-band', why: `rendered by Application ${config.tracking.app} with the workload: the plugin's hash covers it` };
}

/**
 * Applies `core/`'s policy to a workload's references (from `templateSource`:
 * the workload itself, or the Deployment a Rollout's workloadRef borrows) and
 * classifies each selected config. Throws ManifestError for a bad regex in a
 * Reloader annotation, as the plugin would.
 */
export function selectConfigs(workload: WorkloadSummary, templateSource: WorkloadSummary, lookup: ConfigLookup, mode: PolicyMode): Selection {
  // A Rollout that borrows a Deployment's template is read like the plugin reads it (the Deployment's
  // annotations), unless the Rollout carries Reloader annotations itself: users annotate what they restart.
  const policySource = workload !== templateSource && hasReloaderAnnotation(workload) ? workload : templateSource;
  const policy = readWorkloadPolicy(policySource.policyManifest);
  const candidates = new Map<string, { kind: ConfigKind; name: string; referenced: boolean }>();
  for (const reference of templateSource.references) {
    candidates.set(configKey(reference.kind, reference.name), { kind: reference.kind, name: reference.name, referenced: true });
  }
  for (const kind of CONFIG_KINDS) {
    if (policy.kinds[kind].named.length === 0) continue;
    for (const name of lookup.names(kind)) {
      const key = configKey(kind, name);
      if (!candidates.has(key) && namedMatch(policy, kind, name) !== undefined) candidates.set(key, { kind, name, referenced: false });
    }
  }
  const configs: SelectedConfig[] = [];
  const skipped: { kind: ConfigKind; name: string; decision: PolicyDecision }[] = [];
  const sorted = [...candidates.values()].sort((a, b) => (a.kind !== b.kind ? (a.kind < b.kind ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const candidate of sorted) {
    const summary = lookup.get(candidate.kind, candidate.name);
    const decision = decidePolicy(policy, { kind: candidate.kind, name: candidate.name, annotations: summary?.annotations ?? {} }, candidate.referenced, mode);
    if (!decision.selected) {
      skipped.push({ kind: candidate.kind, name: candidate.name, decision });
      continue;
    }
    configs.push(Object.freeze({ kind: candidate.kind, name: candidate.name, decision, ...classify(workload, templateSource.stamped, summary), summary }));
  }
  return Object.freeze({ configs: Object.freeze(configs), skipped: Object.freeze(skipped) });
}

function hasReloaderAnnotation(workload: WorkloadSummary): boolean {
  const annotations = (workload.policyManifest.object.metadata as { annotations?: Record<string, string> } | undefined)?.annotations ?? {};
  const policyKeys = [ANNOTATIONS.auto, ANNOTATIONS.search, ...Object.values(ANNOTATIONS.typedAuto), ...Object.values(ANNOTATIONS.named), ...Object.values(ANNOTATIONS.exclude)];
  return policyKeys.some((key) => Object.hasOwn(annotations, key));
}

/** The digests of the out-of-band configs of a selection. */
export function outOfBandDigests(selection: Selection): DigestMap {
  const map: Record<string, string> = {};
  for (const config of selection.configs) {
    if (config.band === 'out-of-band') map[configKey(config.kind, config.name)] = config.summary?.digest ?? ABSENT;
  }
  return Object.freeze(map);
}

/** What the recorded and the current digests call for. */
export type Verdict =
  /** Nothing changed. */
  | { readonly action: 'none' }
  /** Write the current digests and restart nothing: first sight, or only the set of configs changed. */
  | { readonly action: 'write-digests'; readonly why: 'first-sight' | 'set-changed' }
  /** Content changed, but less than the debounce ago: look again after `afterMs`. */
  | { readonly action: 'debounce'; readonly afterMs: number; readonly changed: readonly string[] }
  /** Content changed: restart at `restartAt`, replacing pods created before it. */
  | { readonly action: 'restart'; readonly restartAt: number; readonly changed: readonly string[] };

/**
 * Compares what the pods are current with (`recorded`) to the live digests.
 * Only content changes restart: a config that joined the set (a template that
 * gained a reference rolls by itself) or left it is recorded, not restarted
 * for, and a config that disappeared restarts nothing (new pods could not
 * start with it either). T is the latest first sight of the changed contents.
 */
export function compareDigests(
  recorded: DigestMap | undefined,
  current: DigestMap,
  seenAt: (key: string) => number,
  now: number,
  debounceMs: number,
  writtenAt: (key: string) => number | undefined = () => undefined,
): Verdict {
  // A workload that selects no out-of-band config gets no bookkeeping at all: in mode `annotated` that is
  // every workload nobody opted in, and a write would bump each Deployment's generation for nothing.
  if (recorded === undefined) return Object.keys(current).length === 0 ? { action: 'none' } : { action: 'write-digests', why: 'first-sight' };
  const changed: string[] = [];
  for (const [key, digest] of Object.entries(current)) {
    const before = recorded[key];
    if (before !== undefined && before !== digest && digest !== ABSENT) changed.push(key);
  }
  changed.sort();
  if (changed.length > 0) {
    const latest = Math.max(...changed.map(seenAt));
    if (now - latest < debounceMs) return { action: 'debounce', afterMs: debounceMs - (now - latest), changed };
    // T on the API server's clock where the write says when it happened (pods' creation times are on that
    // clock too); the controller's first sight only for content without managedFields (ADR 0007).
    const restartAt = Math.max(...changed.map((key) => {
      const written = writtenAt(key);
      return written === undefined ? restartTimeFor(seenAt(key)) : restartTimeForWrite(written);
    }));
    return { action: 'restart', restartAt, changed };
  }
  const sameKeys = Object.keys(recorded).length === Object.keys(current).length && Object.keys(current).every((key) => recorded[key] === current[key]);
  return sameKeys ? { action: 'none' } : { action: 'write-digests', why: 'set-changed' };
}

/** How a workload is restarted, resolved from its annotations and the default; `git`: by a commit (ADR 0016). */
export type ResolvedStrategy = 'evict' | 'restart-at' | 'template' | 'record-only' | 'git';

/**
 * The strategy for a workload: `driftless.dev/restart-strategy`, Reloader's Rollout strategy, then the default.
 * `git` is true when the Git write-back selects the workload (controller/writeback/select.ts, which reads the
 * annotation `git` and the `--write-back-*` defaults); without it, a workload annotated `git` resolves to the
 * in-cluster strategy its write-back falls back to.
 */
export function resolveStrategy(workload: WorkloadSummary, fallback: RestartStrategy, git = false): { strategy: ResolvedStrategy; problem?: string } {
  if (workload.kind === 'CronJob') return { strategy: 'record-only' };
  if (git) return { strategy: 'git' };
  const own = workload.annotations[BOOKKEEPING.strategy];
  let chosen: RestartStrategy = fallback;
  let problem: string | undefined;
  if (own !== undefined) {
    if (own === 'evict' || own === 'rollout' || own === 'none') chosen = own;
    else if (own !== GIT_STRATEGY) problem = `${BOOKKEEPING.strategy}: ${JSON.stringify(own)} is not evict, rollout, none or git; using ${fallback}`;
  } else if (workload.kind === 'Rollout') {
    const reloader = workload.annotations[RELOADER_ROLLOUT_STRATEGY];
    if (reloader === 'rollout') chosen = 'rollout';
    else if (reloader === 'restart') chosen = 'evict';
  }
  const strategy: ResolvedStrategy = chosen === 'none' ? 'record-only' : chosen === 'rollout' ? 'template' : workload.kind === 'Rollout' ? 'restart-at' : 'evict';
  return problem === undefined ? { strategy } : { strategy, problem };
}
