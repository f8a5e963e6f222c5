/**
 * Every annotation key Driftless reads or writes, named once: its own
 * `driftless.dev/...` keys and the Stakater Reloader vocabulary it honours.
 * They live in core (plain data) because both programs read them: the plugin
 * stamps the config hash and reads Reloader's policy, the controller reads both
 * and writes its bookkeeping. What a key's value means is documented where it
 * is parsed and formatted (controller/bookkeeping.ts, controller/fleet/safety.ts,
 * controller/writeback/record.ts, controller/writeback/source.ts, policy.ts).
 */

/** The prefix of every key Driftless owns. */
export const DRIFTLESS_PREFIX = 'driftless.dev/';

/** The pod template annotation that carries a workload's hash (written by the plugin, ADR 0002). */
export const HASH_ANNOTATION = 'driftless.dev/config-hash';

/** The keys the controller writes on a workload's own metadata (ADR 0007), and the strategy it reads there. */
export const BOOKKEEPING = Object.freeze({
  /** Per out-of-band config, the keyed digest the workload's pods are (being made) current with. */
  restartedFor: 'driftless.dev/restarted-for',
  /** T of the last restart started. */
  restartAt: 'driftless.dev/restart-at',
  /** Pod-template annotation of the opt-in `rollout` strategy. */
  templateRestartedAt: 'driftless.dev/restarted-at',
  /** Per-workload strategy: `evict`, `rollout`, `none`, or `git` (controller/writeback/select.ts). */
  strategy: 'driftless.dev/restart-strategy',
} as const);

/** Annotation keys of fleet safety (ADR 0010). */
export const FLEET_ANNOTATIONS = Object.freeze({
  /** Written by the controller when a restart's replacement pods failed the health gate: JSON `{"at","reason"}`. */
  restartHalted: 'driftless.dev/restart-halted',
  /** Reloader's per-Deployment pause period (a Go duration); honoured here on every kind. */
  pausePeriod: 'deployment.reloader.stakater.com/pause-period',
} as const);

/** The git strategy's record on the workload (ADR 0016). Also the prefix of the Application keys below. */
export const WRITE_BACK_ANNOTATION = 'driftless.dev/write-back';

/** On an Application: `branch`, `base:target` or `:target`, as Image Updater's `branch` (ADR 0014). */
export const WRITE_BACK_BRANCH_ANNOTATION = 'driftless.dev/write-back-branch';
/** On an Application: another repository to write to. */
export const WRITE_BACK_REPO_ANNOTATION = 'driftless.dev/write-back-repo';
/** On an Application: the `name` of the source in `spec.sources` to write for, when several are rendered by the plugin. */
export const WRITE_BACK_SOURCE_ANNOTATION = 'driftless.dev/write-back-source';

/**
 * Stakater Reloader's annotation keys, so that a workload annotated for
 * Reloader means the same thing here without editing a manifest.
 */
export const ANNOTATIONS = Object.freeze({
  auto: 'reloader.stakater.com/auto',
  search: 'reloader.stakater.com/search',
  match: 'reloader.stakater.com/match',
  ignore: 'reloader.stakater.com/ignore',
  typedAuto: Object.freeze({
    ConfigMap: 'configmap.reloader.stakater.com/auto',
    Secret: 'secret.reloader.stakater.com/auto',
    SecretProviderClass: 'secretproviderclass.reloader.stakater.com/auto',
  }),
  named: Object.freeze({
    ConfigMap: 'configmap.reloader.stakater.com/reload',
    Secret: 'secret.reloader.stakater.com/reload',
    SecretProviderClass: 'secretproviderclass.reloader.stakater.com/reload',
  }),
  exclude: Object.freeze({
    ConfigMap: 'configmaps.exclude.reloader.stakater.com/reload',
    Secret: 'secrets.exclude.reloader.stakater.com/reload',
    SecretProviderClass: 'secretproviderclasses.exclude.reloader.stakater.com/reload',
  }),
} as const);

/** Reloader's per-Rollout strategy: `restart` (spec.restartAt) or `rollout` (template change). */
export const RELOADER_ROLLOUT_STRATEGY = 'reloader.stakater.com/rollout-strategy';
