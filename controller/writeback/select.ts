/**
 * Which workloads the `git` strategy is for (issue 15 §1), pure. In the
 * order the other strategies resolve (decide.ts `resolveStrategy`): the
 * workload's own `driftless.dev/restart-strategy` first — `git` opts in, and
 * `evict`/`rollout`/`none` opt out of any default — then Reloader's
 * per-Rollout strategy (also an explicit choice), then the defaults of
 * `--write-back-namespaces` and `--write-back-applications`, which stand in
 * for `--restart-strategy` for the workloads they name. An annotation value
 * that is no strategy falls through to the defaults, as it falls back to
 * `--restart-strategy` there.
 */
import { BOOKKEEPING, RELOADER_ROLLOUT_STRATEGY } from '../../core/index.ts';
import type { ApplicationSummary, WorkloadSummary } from '../model.ts';

/** The annotation value that selects the write-back. */
export const GIT_STRATEGY = 'git';

/** The strategies the annotation knows besides `git` (an explicit choice against the write-back). */
const OTHER_STRATEGIES: ReadonlySet<string> = new Set(['evict', 'rollout', 'none']);

/** `--write-back-namespaces` and `--write-back-applications`. */
export interface WriteBackDefaults {
  readonly namespaces: readonly string[];
  /** `name` (an Application in Argo CD's namespace) or `namespace/name`. */
  readonly applications: readonly string[];
}

/** Whether a workload's out-of-band changes go to Git, and what chose it. */
export type GitSelection =
  | { readonly git: true; readonly via: 'annotation' | 'namespace' | 'application' }
  | { readonly git: false };

/**
 * Whether `workload` uses the `git` strategy. `app` is the Application that
 * tracks it (`undefined`: untracked or not watched — only the annotation or
 * the namespace can select it then; the write-back itself needs the
 * Application, and says so when it is missing).
 */
export function selectGit(
  workload: Pick<WorkloadSummary, 'kind' | 'namespace' | 'annotations'>,
  app: Pick<ApplicationSummary, 'namespace' | 'name' | 'trackingIds'> | undefined,
  defaults: WriteBackDefaults,
): GitSelection {
  if (workload.kind === 'CronJob') return { git: false };
  const own = workload.annotations[BOOKKEEPING.strategy];
  if (own === GIT_STRATEGY) return { git: true, via: 'annotation' };
  if (own !== undefined && OTHER_STRATEGIES.has(own)) return { git: false };
  if (workload.kind === 'Rollout' && workload.annotations[RELOADER_ROLLOUT_STRATEGY] !== undefined) return { git: false };
  if (defaults.namespaces.includes(workload.namespace)) return { git: true, via: 'namespace' };
  if (app !== undefined && defaults.applications.some((entry) => (entry.includes('/') ? entry === `${app.namespace}/${app.name}` : app.trackingIds.includes(entry)))) {
    return { git: true, via: 'application' };
  }
  return { git: false };
}
