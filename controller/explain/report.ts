/**
 * The live explanation, built purely from a LiveSnapshot with the
 * controller's own deciding (selectConfigs, compareDigests, resolveStrategy)
 * and restart (`nextStep`, the function the reconciler executes) code, so what it says is what the controller
 * would do. Built only from names, rules, counts and digests: the digests are
 * keyed hashes (HMAC with the controller's key), shortened, never a value.
 */
import { BOOKKEEPING, ManifestError, WRITE_BACK_ANNOTATION, type PolicyMode } from '../../core/index.ts';
import { ABSENT, configKey, formatTime, parseDigestMap, parseRestartAt, type DigestMap } from '../bookkeeping.ts';
import { parseWorkloadKey, workloadKey } from '../cache/cluster-view.ts';
import { compareDigests, outOfBandDigests, resolveStrategy, selectConfigs, type ConfigLookup, type ResolvedStrategy, type Selection } from '../decide.ts';
import type { AppProjectSummary, PodSummary, RestartStrategy, WorkloadSummary } from '../model.ts';
import { rolledAway } from '../restart/git.ts';
import { isStalePod } from '../restart/stale-pods.ts';
import { nextStep, type RestartStep } from '../restart/step.ts';
import { matchesSelector } from '../scope.ts';
import { parseWriteBackRecord, type WriteBackRecord } from '../writeback/record.ts';
import { selectGit, type WriteBackDefaults } from '../writeback/select.ts';
import type { LiveTarget } from './args.ts';
import type { BudgetSummary, LiveSnapshot } from './collect.ts';

/** The stable JSON shape of `explain --live --output json` (version 1). */
export interface LiveExplainReport {
  readonly version: 1;
  readonly live: true;
  readonly namespace: string;
  /** The controller's `--mode`. */
  readonly mode: PolicyMode;
  readonly restartStrategy: RestartStrategy;
  /** Whether digests are HMAC-SHA256 with a key (else plain SHA-256). */
  readonly keyed: boolean;
  /** `kind/name` as asked, `null` for the whole namespace. */
  readonly target: string | null;
  readonly workloads: readonly LiveWorkload[];
  readonly configs: readonly LiveConfig[];
  readonly warnings: readonly string[];
}

/** How a recorded digest compares with the live one; `null` when the controller records none (in-band, not selected). */
export type DigestComparison = 'equal' | 'different' | 'not-recorded' | null;

/** How one workload depends on one config: the same facts whether read from the workload's side or the config's. */
export interface LiveDependency {
  readonly kind: string;
  readonly name: string;
  readonly selected: boolean;
  /** The policy rule (`auto`, `named`, `auto-all`, `ignore`, …) and its reason, as the plugin's explain gives them. */
  readonly rule: string;
  readonly reason: string;
  readonly band: 'in-band' | 'out-of-band' | null;
  readonly why: string | null;
  /** Shortened digests: `v1:` and 12 hex digits, or `absent`. */
  readonly recorded: string | null;
  readonly live: string | null;
  readonly digests: DigestComparison;
}

/** One config as one workload sees it (`kind`/`name` are the config's). */
export interface LiveWorkloadConfig extends LiveDependency {
  readonly exists: boolean;
}

/** Why a restart in progress does not move now. */
export interface LiveBlocker {
  readonly kind: 'PodDisruptionBudget' | 'argocd-sync' | 'sync-window' | 'availability' | 'pending-revision' | 'rollout-in-progress' | 'strategy';
  /** The PodDisruptionBudget's, the Argo CD Application's or (sync-window) the AppProject's name; `null` otherwise. */
  readonly name: string | null;
  readonly reason: string;
}

/** The restart of one workload: the one in progress, and the one the live digests call for. */
export interface LiveRestart {
  readonly strategy: ResolvedStrategy;
  /** `driftless.dev/restart-at`, as recorded. */
  readonly restartAt: string | null;
  /**
   * `idle`: nothing to do; `in-progress`: pods created before restart-at are left;
   * `pending`: a live digest differs from the recorded one, so the controller starts a restart;
   * `first-sight`: the controller has recorded nothing yet (it records, and restarts nothing).
   */
  readonly state: 'idle' | 'in-progress' | 'pending' | 'first-sight';
  /** Pods created before restart-at still running, by name. */
  readonly stalePods: readonly string[];
  /** The pods the controller evicts next, when nothing blocks them. */
  readonly nextEvictions: readonly string[];
  readonly blockedBy: readonly LiveBlocker[];
  /** `Kind/name` of the configs whose live content differs from the recorded. */
  readonly changed: readonly string[];
  /** The git strategy's record (`driftless.dev/write-back`): the last write-back and where it stands; `null`: none. */
  readonly writeBack: LiveWriteBack | null;
}

/** A write-back as `explain --live` shows it (ADR 0016): never a value, only keyed digests' config names. */
export interface LiveWriteBack {
  /** `pending`, `committed`, `failed`, `fallback` or `synced` (done: Argo CD synced it and the workload rolled). */
  readonly state: string;
  /** The restart it is for. */
  readonly restartAt: string;
  /** `Kind/name` of the configs it writes. */
  readonly configs: readonly string[];
  readonly sha: string | null;
  readonly branch: string | null;
  readonly repo: string | null;
  /** The last failure's kind (`failed`), or why it was given up (`fallback`). */
  readonly error: string | null;
  /** Seconds since its last state change. */
  readonly ageSeconds: number;
  /** Seconds since its first submission. */
  readonly sinceSeconds: number;
}

/** A PodDisruptionBudget that selects some of a workload's pods. */
export interface LiveBudget {
  readonly name: string;
  readonly minAvailable: string | null;
  readonly maxUnavailable: string | null;
  readonly disruptionsAllowed: number;
  readonly currentHealthy: number;
  readonly desiredHealthy: number;
  readonly expectedPods: number;
}

/** One workload. */
export interface LiveWorkload {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** The pod template carries `driftless.dev/config-hash`. */
  readonly stamped: boolean;
  /** The Argo CD Application tracking it, `null` when untracked. */
  readonly application: string | null;
  /** The Deployment a Rollout's workloadRef borrows its template from. */
  readonly templateFrom: string | null;
  readonly configs: readonly LiveWorkloadConfig[];
  readonly restart: LiveRestart;
  readonly budgets: readonly LiveBudget[];
  readonly warnings: readonly string[];
}

/** A workload that depends on a config, and how (`kind`/`name` are the workload's). */
export type LiveDependant = LiveDependency;

/** One config and every workload that depends on it. */
export interface LiveConfig {
  readonly kind: string;
  readonly name: string;
  readonly exists: boolean;
  readonly digest: string | null;
  /** `ExternalSecret db`, when an operator writes it. */
  readonly producer: string | null;
  readonly application: string | null;
  readonly dependants: readonly LiveDependant[];
}

/** The settings the explanation is made with (the controller's). */
export interface ReportOptions {
  readonly mode: PolicyMode;
  readonly restartStrategy: RestartStrategy;
  /** `--argocd-sync-wait` in ms (0: off), as the controller has it. */
  readonly argocdSyncWaitMs: number;
  readonly keyed: boolean;
  readonly target: LiveTarget;
  /** `--write-back-namespaces`/`--write-back-applications`, so the strategy is the controller's (absent: none). */
  readonly writeBackDefaults?: WriteBackDefaults;
}

/** A digest as shown: enough to tell two apart, short enough for a table. */
export function shortDigest(digest: string): string {
  const match = /^(v1:)([0-9a-f]{12})[0-9a-f]*$/.exec(digest);
  return match === null ? digest : `${match[1]}${match[2]}`;
}

function targetText(target: LiveTarget): string | null {
  return target.type === 'namespace' ? null : `${target.kind.toLowerCase()}/${target.name}`;
}

/** Builds the report for the snapshot's target. */
export function buildLiveReport(snapshot: LiveSnapshot, options: ReportOptions): LiveExplainReport {
  const { target } = options;
  const workloads = snapshot.workloadKeys.flatMap((key) => {
    const workload = snapshot.view.workload(key);
    return workload === undefined ? [] : [explainWorkload(snapshot, workload, options)];
  });
  const configs = target.type === 'config' ? [explainConfig(snapshot, target.kind, target.name, options)] : [];
  return Object.freeze({
    version: 1,
    live: true,
    namespace: snapshot.namespace,
    mode: options.mode,
    restartStrategy: options.restartStrategy,
    keyed: options.keyed,
    target: targetText(target),
    workloads,
    configs,
    warnings: snapshot.warnings,
  });
}

/** The workload whose template (references, policy) a workload uses: a Rollout's workloadRef Deployment, else itself. */
function templateSourceOf(snapshot: LiveSnapshot, workload: WorkloadSummary): WorkloadSummary | undefined {
  if (workload.workloadRef === undefined) return workload;
  return snapshot.view.workload(workloadKey(workload.workloadRef.kind, workload.namespace, workload.workloadRef.name));
}

interface Decided {
  readonly selection: Selection | undefined;
  readonly problem: string | undefined;
}

function decideFor(snapshot: LiveSnapshot, workload: WorkloadSummary, mode: PolicyMode): Decided {
  const source = templateSourceOf(snapshot, workload);
  if (source === undefined) return { selection: undefined, problem: `its workloadRef names ${workload.workloadRef?.kind ?? 'Deployment'} ${workload.workloadRef?.name ?? ''}, which does not exist: the controller waits for it` };
  try {
    return { selection: selectConfigs(workload, source, snapshot.view.configLookup(workload.namespace), mode), problem: undefined };
  } catch (error) {
    if (error instanceof ManifestError) return { selection: undefined, problem: `policy error (the controller gives a PolicyError Event): ${error.message}` };
    throw error;
  }
}

/** Each selected and skipped config, with the digest comparison for the out-of-band ones. */
function configRows(selection: Selection, recorded: DigestMap | undefined, lookup: ConfigLookup): LiveWorkloadConfig[] {
  const rows: LiveWorkloadConfig[] = selection.configs.map((config) => {
    const key = configKey(config.kind, config.name);
    const outOfBand = config.band === 'out-of-band';
    const live = outOfBand ? config.summary?.digest ?? ABSENT : undefined;
    const before = outOfBand ? recorded?.[key] : undefined;
    return {
      kind: config.kind,
      name: config.name,
      exists: config.summary !== undefined,
      selected: true,
      rule: config.decision.rule,
      reason: config.decision.reason,
      band: config.band,
      why: config.why,
      recorded: before === undefined ? null : shortDigest(before),
      live: live === undefined ? null : shortDigest(live),
      digests: !outOfBand ? null : before === undefined ? 'not-recorded' : before === live ? 'equal' : 'different',
    };
  });
  for (const skipped of selection.skipped) {
    rows.push({
      kind: skipped.kind,
      name: skipped.name,
      exists: lookup.get(skipped.kind, skipped.name) !== undefined,
      selected: false,
      rule: skipped.decision.rule,
      reason: skipped.decision.reason,
      band: null,
      why: null,
      recorded: null,
      live: null,
      digests: null,
    });
  }
  return rows.sort((a, b) => (a.kind !== b.kind ? (a.kind < b.kind ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Issue 6 §3: the in-band rule assumes the plugin selected at least what the
 * controller selects. The plugin's mode cannot be read from the cluster, so
 * the practical check is the one case where the assumption depends on it:
 * with the controller in `all`, a config that is in-band only because of
 * mode `all` (nothing on the workload or the pod template opts it in) would
 * not have been hashed by a plugin in `annotated` mode — a change to it would
 * then restart nothing, neither by a sync nor by the controller.
 */
function inBandAssumptionWarnings(snapshot: LiveSnapshot, workload: WorkloadSummary, selection: Selection, mode: PolicyMode): string[] {
  if (mode !== 'all' || !workload.stamped) return [];
  const inBand = selection.configs.filter((config) => config.band === 'in-band');
  if (inBand.length === 0) return [];
  const annotated = decideFor(snapshot, workload, 'annotated').selection;
  const selectedAnyway = new Set(annotated?.configs.map((config) => configKey(config.kind, config.name)) ?? []);
  return inBand
    .filter((config) => !selectedAnyway.has(configKey(config.kind, config.name)))
    .map((config) => `${config.kind} ${config.name} is in-band only if the plugin runs in mode all: the controller (mode all) leaves it to the sync, but the workload has no Reloader annotation selecting it, so a plugin in mode annotated did not hash it and a change to it restarts nothing; run the plugin in mode all, or annotate the workload`);
}

function budgetsSelecting(snapshot: LiveSnapshot, pods: readonly PodSummary[]): BudgetSummary[] {
  return snapshot.budgets.filter((budget) => budget.selector !== undefined && pods.some((pod) => {
    const labels = snapshot.podLabels.get(pod.uid);
    return labels !== undefined && matchesSelector({ text: '', requirements: budget.selector ?? [] }, labels);
  }));
}

function liveBudget(budget: BudgetSummary): LiveBudget {
  return {
    name: budget.name,
    minAvailable: budget.minAvailable ?? null,
    maxUnavailable: budget.maxUnavailable ?? null,
    disruptionsAllowed: budget.disruptionsAllowed,
    currentHealthy: budget.currentHealthy,
    desiredHealthy: budget.desiredHealthy,
    expectedPods: budget.expectedPods,
  };
}

/**
 * What the controller's next step (controller/restart/step.ts, the same function the reconciler executes)
 * says about a restart in progress: what holds it, as blockers, and which pods it evicts next.
 */
function stepBlockers(snapshot: LiveSnapshot, workload: WorkloadSummary, step: RestartStep): { blockedBy: LiveBlocker[]; nextEvictions: string[] } {
  const seconds = (until: number | undefined): number => Math.ceil(((until ?? snapshot.now) - snapshot.now) / 1000);
  switch (step.kind) {
    case 'evict': {
      const blockedBy: LiveBlocker[] = [];
      // The planner allows these evictions; the API server still refuses any a budget does not allow.
      for (const budget of budgetsSelecting(snapshot, step.pods)) {
        if (budget.disruptionsAllowed < 1) {
          blockedBy.push({ kind: 'PodDisruptionBudget', name: budget.name, reason: `PodDisruptionBudget ${budget.name} allows ${budget.disruptionsAllowed} disruptions (${budget.currentHealthy} healthy, ${budget.desiredHealthy} desired): evictions are refused (429) until it allows one` });
        }
      }
      return { blockedBy, nextEvictions: step.pods.map((pod) => pod.name) };
    }
    case 'halt':
      return { blockedBy: [step.cause === 'pending-revision'
        ? { kind: 'pending-revision', name: null, reason: `the controller skips this restart (RestartSkipped): ${step.reason}` }
        : { kind: 'availability', name: null, reason: step.reason }], nextEvictions: [] };
    case 'set-restart-at':
      return { blockedBy: [restartAtBlocker(workload)], nextEvictions: [] };
    case 'set-template':
      return { blockedBy: [templateBlocker(workload)], nextEvictions: [] };
    case 'done':
      return { blockedBy: [], nextEvictions: [] };
    case 'wait':
      switch (step.cause) {
        case 'argocd-sync':
          return { blockedBy: [{ kind: 'argocd-sync', name: step.name ?? null, reason: `${step.reason}: the controller waits for its sync to replace the pods, at most ${seconds(step.until)} s more (--argocd-sync-wait)` }], nextEvictions: [] };
        case 'rollout-update':
          return { blockedBy: [{ kind: 'rollout-in-progress', name: null, reason: `${workload.kind} ${workload.name} is still updating (${step.reason}): the controller writes spec.restartAt once the update is done, since the update replaces old pods anyway, at most ${seconds(step.until)} s more (--argocd-sync-wait)` }], nextEvictions: [] };
        case 'sync-window':
          return { blockedBy: [{ kind: 'sync-window', name: step.name ?? null, reason: step.reason }], nextEvictions: [] };
        case 'restarted-at':
          return { blockedBy: [restartAtBlocker(workload)], nextEvictions: [] };
        case 'template-rollout':
          return { blockedBy: [templateBlocker(workload)], nextEvictions: [] };
        case 'rollout-in-progress':
          return { blockedBy: [{ kind: 'rollout-in-progress', name: null, reason: step.reason }], nextEvictions: [] };
        case 'breaker':
        case 'restart-time':
        case 'availability':
        case 'replacements':
          return { blockedBy: [{ kind: 'availability', name: null, reason: step.reason }], nextEvictions: [] };
      }
  }
}

function restartAtBlocker(workload: WorkloadSummary): LiveBlocker {
  return { kind: 'strategy', name: null, reason: `Argo Rollouts replaces the pods (spec.restartAt ${workload.restartAt ?? 'not yet written'})` };
}

function templateBlocker(workload: WorkloadSummary): LiveBlocker {
  return { kind: 'strategy', name: null, reason: `the ${workload.kind} controller rolls the pods (pod template ${BOOKKEEPING.templateRestartedAt})` };
}

function explainRestart(snapshot: LiveSnapshot, workload: WorkloadSummary, selection: Selection | undefined, restartStrategy: RestartStrategy, argocdSyncWaitMs: number, writeBackDefaults: WriteBackDefaults | undefined): LiveRestart {
  const gitSelected = selectGit(workload, snapshot.view.applicationOf(workload), writeBackDefaults ?? { namespaces: [], applications: [] }).git;
  const record = parseWriteBackRecord(workload.annotations[WRITE_BACK_ANNOTATION]);
  const resolved = resolveStrategy(workload, restartStrategy, gitSelected).strategy;
  // A restart through Git that fell back goes on in the cluster with the workload's own strategy.
  const fellBack = resolved === 'git' && record?.state === 'fallback' && record.restartAt === parseRestartAt(workload.annotations[BOOKKEEPING.restartAt]);
  const strategy = fellBack ? resolveStrategy(workload, restartStrategy).strategy : resolved;
  const restartAtText = workload.annotations[BOOKKEEPING.restartAt];
  const restartAt = parseRestartAt(restartAtText);
  const recorded = parseDigestMap(workload.annotations[BOOKKEEPING.restartedFor]);
  const pods = snapshot.view.podsOf(workload);
  const stale = restartAt === undefined || strategy === 'record-only' || strategy === 'git' ? [] : pods.filter((pod) => isStalePod(pod, restartAt));
  let changed: readonly string[] = [];
  let state: LiveRestart['state'] = 'idle';
  if (selection !== undefined) {
    // Debounce 0 and the content's first sight unknown: whether, not when, the controller restarts.
    const verdict = compareDigests(recorded, outOfBandDigests(selection), () => 0, snapshot.now, 0);
    if (verdict.action === 'write-digests' && verdict.why === 'first-sight') state = 'first-sight';
    if (verdict.action === 'restart') {
      changed = verdict.changed;
      state = 'pending';
    }
  }
  if (stale.length > 0) state = 'in-progress';
  if (strategy === 'git' && record !== undefined && record.restartAt === restartAt && (record.state === 'pending' || record.state === 'failed' || (record.state === 'committed' && !rolledAway(workload, record.templateHash)))) state = 'in-progress';
  let blockedBy: LiveBlocker[] = [];
  let nextEvictions: string[] = [];
  if (stale.length > 0 && restartAt !== undefined && strategy !== 'record-only' && strategy !== 'git') {
    // What the controller would do next, by its own function; explain knows neither the breaker nor whether
    // this process runs the restart, so it shows the step of a restart the pods show unfinished.
    const step = nextStep({
      workload,
      pods,
      restartAt,
      strategy,
      now: snapshot.now,
      acting: false,
      app: snapshot.view.applicationOf(workload),
      project: projectOf(snapshot, workload),
      syncWaitMs: argocdSyncWaitMs,
      healthGateTimeoutMs: 0,
      breakerOpen: () => false,
    });
    ({ blockedBy, nextEvictions } = stepBlockers(snapshot, workload, step));
  }
  return {
    strategy,
    restartAt: restartAtText ?? null,
    state,
    stalePods: stale.map((pod) => pod.name),
    nextEvictions: blockedBy.length === 0 ? nextEvictions : [],
    blockedBy,
    changed,
    writeBack: record === undefined ? null : liveWriteBack(record, snapshot.now),
  };
}

function liveWriteBack(record: WriteBackRecord, now: number): LiveWriteBack {
  return {
    state: record.state,
    restartAt: formatTime(record.restartAt),
    configs: Object.keys(record.configs).sort(),
    sha: record.sha ?? null,
    branch: record.branch ?? null,
    repo: record.repo ?? null,
    error: record.error ?? null,
    ageSeconds: Math.max(0, Math.round((now - record.at) / 1000)),
    sinceSeconds: Math.max(0, Math.round((now - record.since) / 1000)),
  };
}

function explainWorkload(snapshot: LiveSnapshot, workload: WorkloadSummary, options: ReportOptions): LiveWorkload {
  const { selection, problem } = decideFor(snapshot, workload, options.mode);
  const recorded = parseDigestMap(workload.annotations[BOOKKEEPING.restartedFor]);
  const warnings: string[] = [];
  if (problem !== undefined) warnings.push(problem);
  const strategyProblem = resolveStrategy(workload, options.restartStrategy).problem;
  if (strategyProblem !== undefined) warnings.push(strategyProblem);
  if (workload.annotations[BOOKKEEPING.restartedFor] !== undefined && recorded === undefined) {
    warnings.push(`${BOOKKEEPING.restartedFor} is not a JSON object of digests: the controller rewrites it`);
  }
  if (selection !== undefined) warnings.push(...inBandAssumptionWarnings(snapshot, workload, selection, options.mode));
  return {
    kind: workload.kind,
    namespace: workload.namespace,
    name: workload.name,
    stamped: templateSourceOf(snapshot, workload)?.stamped ?? workload.stamped,
    application: workload.tracking?.app ?? null,
    templateFrom: workload.workloadRef === undefined ? null : `${workload.workloadRef.kind}/${workload.workloadRef.name}`,
    configs: selection === undefined ? [] : configRows(selection, recorded, snapshot.view.configLookup(workload.namespace)),
    restart: explainRestart(snapshot, workload, selection, options.restartStrategy, options.argocdSyncWaitMs, options.writeBackDefaults),
    budgets: budgetsSelecting(snapshot, snapshot.view.podsOf(workload)).map(liveBudget),
    warnings,
  };
}

function explainConfig(snapshot: LiveSnapshot, kind: 'ConfigMap' | 'Secret', name: string, options: ReportOptions): LiveConfig {
  const summary = snapshot.view.configLookup(snapshot.namespace).get(kind, name);
  const dependants: LiveDependant[] = [];
  for (const key of snapshot.view.dependentsOf(snapshot.namespace, kind, name)) {
    const workload = snapshot.view.workload(key);
    if (workload === undefined) continue;
    const { selection, problem } = decideFor(snapshot, workload, options.mode);
    const { kind: workloadKind, name: workloadName } = parseWorkloadKey(key);
    const row = selection === undefined ? undefined : configRows(selection, parseDigestMap(workload.annotations[BOOKKEEPING.restartedFor]), snapshot.view.configLookup(workload.namespace)).find((r) => r.kind === kind && r.name === name);
    dependants.push(row === undefined
      ? { kind: workloadKind, name: workloadName, selected: false, rule: 'error', reason: problem ?? 'not selected', band: null, why: null, recorded: null, live: null, digests: null }
      : { kind: workloadKind, name: workloadName, selected: row.selected, rule: row.rule, reason: row.reason, band: row.band, why: row.why, recorded: row.recorded, live: row.live, digests: row.digests });
  }
  return {
    kind,
    name,
    exists: summary !== undefined,
    digest: summary === undefined ? null : shortDigest(summary.digest),
    producer: summary?.producer === undefined ? null : `${summary.producer.kind}${summary.producer.name === '' ? '' : ` ${summary.producer.name}`}`,
    application: summary?.tracking?.namesItself === true ? summary.tracking.app : null,
    dependants,
  };
}

/** The AppProject of the workload's Application, when both were read. */
function projectOf(snapshot: LiveSnapshot, workload: WorkloadSummary): AppProjectSummary | undefined {
  const app = snapshot.view.applicationOf(workload);
  return app === undefined ? undefined : snapshot.view.projectOf(app);
}
