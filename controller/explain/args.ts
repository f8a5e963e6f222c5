/**
 * The command line of `driftless explain --live [--namespace NS] [KIND/NAME]
 * [--output table|json]`. Its own flags are parsed here; the flags that change
 * what the controller decides (mode, hash key, tracking, strategy, label
 * selector, client rate) are handed to the controller's own parser, so the
 * explanation is made with exactly the controller's settings — the same
 * `--hash-key-file` gives digests that compare with the recorded ones.
 */
import { UsageError } from '../../cli/errors.ts';
import { parseArgv as readArgv } from '../../cli/flags.ts';
import type { ControllerConfig } from '../config/model.ts';
import { parseControllerConfig } from '../config/parse.ts';
import type { WorkloadKindName } from '../model.ts';

/** What to explain: one workload, one config, or every workload of the namespace. */
export type LiveTarget =
  | { readonly type: 'workload'; readonly kind: WorkloadKindName; readonly name: string }
  | { readonly type: 'config'; readonly kind: 'ConfigMap' | 'Secret'; readonly name: string }
  | { readonly type: 'namespace' };

/** The parsed command line. */
export interface LiveExplainOptions {
  readonly command: 'explain';
  /** `undefined`: the kubeconfig context's namespace, else `default`. */
  readonly namespace: string | undefined;
  readonly target: LiveTarget;
  readonly output: 'table' | 'json';
  /** The controller's settings (only the flags in `CONTROLLER_FLAGS_USED` can be given). */
  readonly controller: ControllerConfig;
}

/** `--help`. */
export interface LiveExplainHelp {
  readonly command: 'help';
}

/** The controller flags that change an explanation; any other controller flag is refused, not silently ignored. */
export const CONTROLLER_FLAGS_USED: readonly string[] = Object.freeze([
  'kubeconfig',
  'mode',
  'hash-key-file',
  'restart-strategy',
  'argocd-tracking-method',
  'argocd-tracking-label',
  'argocd-namespace',
  'argocd-kubeconfig',
  'argocd-destination-server',
  'argocd-destination-name',
  'argocd-sync-wait',
  'argocd-sync-windows',
  'write-back-namespaces',
  'write-back-applications',
  'resource-label-selector',
  'kube-qps',
  'kube-burst',
  'list-page-size',
]);

/** Accepted spellings of a kind, as kubectl accepts them (lower case). */
const KIND_ALIASES: Readonly<Record<string, { readonly type: 'workload' | 'config'; readonly kind: string }>> = Object.freeze({
  deployment: { type: 'workload', kind: 'Deployment' },
  deployments: { type: 'workload', kind: 'Deployment' },
  deploy: { type: 'workload', kind: 'Deployment' },
  statefulset: { type: 'workload', kind: 'StatefulSet' },
  statefulsets: { type: 'workload', kind: 'StatefulSet' },
  sts: { type: 'workload', kind: 'StatefulSet' },
  daemonset: { type: 'workload', kind: 'DaemonSet' },
  daemonsets: { type: 'workload', kind: 'DaemonSet' },
  ds: { type: 'workload', kind: 'DaemonSet' },
  cronjob: { type: 'workload', kind: 'CronJob' },
  cronjobs: { type: 'workload', kind: 'CronJob' },
  cj: { type: 'workload', kind: 'CronJob' },
  rollout: { type: 'workload', kind: 'Rollout' },
  rollouts: { type: 'workload', kind: 'Rollout' },
  ro: { type: 'workload', kind: 'Rollout' },
  deploymentconfig: { type: 'workload', kind: 'DeploymentConfig' },
  deploymentconfigs: { type: 'workload', kind: 'DeploymentConfig' },
  dc: { type: 'workload', kind: 'DeploymentConfig' },
  secret: { type: 'config', kind: 'Secret' },
  secrets: { type: 'config', kind: 'Secret' },
  configmap: { type: 'config', kind: 'ConfigMap' },
  configmaps: { type: 'config', kind: 'ConfigMap' },
  cm: { type: 'config', kind: 'ConfigMap' },
});

/** A DNS-1123 subdomain: what every object name here is. */
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function parseTarget(text: string): LiveTarget {
  const slash = text.indexOf('/');
  const alias = slash === -1 ? undefined : KIND_ALIASES[text.slice(0, slash).toLowerCase()];
  const name = text.slice(slash + 1);
  if (alias === undefined || !OBJECT_NAME.test(name)) {
    throw new UsageError(`${JSON.stringify(text)} is not KIND/NAME: KIND is deployment, statefulset, daemonset, cronjob, rollout, deploymentconfig, secret or configmap (or kubectl's short names), NAME an object name`);
  }
  return alias.type === 'workload'
    ? { type: 'workload', kind: alias.kind as WorkloadKindName, name }
    : { type: 'config', kind: alias.kind as 'ConfigMap' | 'Secret', name };
}

/**
 * Parses the arguments after `driftless explain` (which include `--live`).
 * Throws UsageError naming the flag and what is allowed.
 */
export function parseLiveExplainArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): LiveExplainOptions | LiveExplainHelp {
  let target: LiveTarget | undefined;
  const given = readArgv(argv, {
    flags: [
      { name: 'live', boolean: true },
      { name: 'namespace', short: 'n' },
      { name: 'output', short: 'o' },
      ...CONTROLLER_FLAGS_USED.map((name) => ({ name })),
    ],
    onPositional: (arg) => {
      if (target !== undefined) throw new UsageError(`one KIND/NAME at most (got ${JSON.stringify(arg)} as well)`);
      target = parseTarget(arg);
    },
    helpCommand: 'driftless explain --live',
  });
  if (given.help) return Object.freeze({ command: 'help' });
  if (!given.values.has('live')) throw new UsageError('internal: explain without --live is the plugin\'s command');
  const namespace = given.values.get('namespace')?.[0];
  if (namespace !== undefined && !NAMESPACE_NAME.test(namespace)) throw new UsageError(`--namespace ${JSON.stringify(namespace)} is not a namespace name`);
  const output = given.values.get('output')?.[0] ?? 'table';
  if (output !== 'table' && output !== 'json') throw new UsageError(`--output ${JSON.stringify(output)}: table or json`);
  // The controller's parser validates the values and applies its environment variables and defaults.
  const passed = CONTROLLER_FLAGS_USED.flatMap((name) => (given.values.get(name) ?? []).map((value) => `--${name}=${value}`));
  const controller = parseControllerConfig(passed, env);
  if (controller.command !== 'run') return Object.freeze({ command: 'help' });
  return Object.freeze({ command: 'explain', namespace, target: target ?? Object.freeze({ type: 'namespace' }), output, controller });
}

/** `driftless explain --live --help`. */
export function liveExplainUsageText(): string {
  return [
    'Usage: driftless explain --live [--namespace NS] [KIND/NAME] [--output table|json] [controller flags]',
    '',
    'Explains, from the live cluster and with the controller\'s own rules, what the controller does for',
    'the workloads of one namespace: for a workload (deployment/NAME, statefulset/NAME, …) every config it',
    'uses, the rule that selects it, in-band or out-of-band and why, recorded vs live digest, the restart in',
    'progress and what blocks it; for a config (secret/NAME, configmap/NAME) every workload that depends on',
    'it; with no KIND/NAME every workload of the namespace. One-shot: lists, then exits. Never prints a value.',
    '',
    '  -n, --namespace NS      the namespace (default: the kubeconfig context\'s, else "default")',
    '  -o, --output FORMAT     table (default) or json',
    '',
    'These controller flags (and their DRIFTLESS_* environment variables) are read as the controller reads',
    'them; give the controller\'s values so the explanation matches it (the same --hash-key-file, or the',
    'digests do not compare):',
    ...CONTROLLER_FLAGS_USED.map((name) => `  --${name}`),
    '',
  ].join('\n');
}
