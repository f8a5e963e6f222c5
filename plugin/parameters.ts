/**
 * Every plugin parameter, in one table. `parseConfig` reads values through it,
 * `--help` prints it, and a test checks `manifests/plugin/plugin.yaml`'s static
 * announcements against it, so the three cannot disagree.
 *
 * Where a value comes from, first match wins (see `parseConfig`):
 *   1. the command-line flag (`--<name>`), for local runs: an explicit flag beats everything;
 *   2. the Application's plugin parameters (`ARGOCD_APP_PARAMETERS`), the source of truth in Argo CD;
 *   3. `ARGOCD_ENV_<NAME>` (the Application's `plugin.env`; name upper-cased, `-` → `_`);
 *   4. the sidecar's own environment, in the order of `env` below (the operator's defaults,
 *      then facts Argo CD puts in the build environment such as `KUBE_VERSION`);
 *   5. the default.
 * An empty string counts as "not given" at every level (Argo CD ≥ 3.0 passes empty env values).
 */

/** How a parameter's value is read and validated. */
export type ParameterType =
  | 'enum'
  | 'boolean'
  | 'string'
  /** A file path; relative paths resolve against the working directory. */
  | 'path'
  /** A Go duration (`90s`, `2m`, `1m30s`), like `ARGOCD_EXEC_TIMEOUT`. */
  | 'duration'
  /** A list: an Argo CD `array` parameter, a repeated flag, or a comma-separated string. */
  | 'array'
  /** Helm `--set` expressions: an Argo CD `map` (key → literal value) or `array` (`key=value` items), a repeated flag. */
  | 'map';

/** One row of the parameter table. */
export interface ParameterSpec {
  /** The Argo CD parameter name (`spec.source.plugin.parameters[].name`). */
  readonly name: string;
  /** The command-line flag for local runs. */
  readonly flag: string;
  /** Plain environment variables read when neither a flag, a parameter nor `ARGOCD_ENV_<NAME>` is given, in order. */
  readonly env: readonly string[];
  readonly type: ParameterType;
  /** The allowed values of an `enum`. */
  readonly values?: readonly string[];
  /**
   * The default as Argo CD's UI would show it (announcement defaults are never sent
   * to the plugin, so the plugin applies these itself). `''` when the default is
   * derived at run time; the description says from what.
   */
  readonly default: string | readonly string[] | Readonly<Record<string, string>>;
  /** One line for `--help` and the plugin.yaml tooltip. */
  readonly description: string;
  /** Argo CD's `collectionType` for the announcement. */
  readonly collectionType: 'string' | 'array' | 'map';
}

function parameter(spec: Omit<ParameterSpec, 'flag' | 'collectionType'>): ParameterSpec {
  const collectionType = spec.type === 'array' ? 'array' : spec.type === 'map' ? 'map' : 'string';
  return Object.freeze({ ...spec, flag: `--${spec.name}`, collectionType, env: Object.freeze([...spec.env]) });
}

/** The name `ARGOCD_ENV_<NAME>` and `DRIFTLESS_<NAME>` use for a parameter (the controller derives its names the same way). */
export { envName } from '../cli/flags.ts';

/** The source types, in `--source-type`'s order. */
export const SOURCE_TYPES = Object.freeze(['auto', 'directory', 'kustomize', 'helm', 'stdin'] as const);

/** The parameter table (see the module comment for precedence). */
export const PARAMETERS: readonly ParameterSpec[] = Object.freeze([
  parameter({
    name: 'mode',
    env: ['DRIFTLESS_MODE'],
    type: 'enum',
    values: ['all', 'annotated'],
    default: 'all',
    description:
      'Which workloads get a hash: all (every workload, unless it says reloader.stakater.com/auto: "false") or annotated (only those with Reloader annotations).',
  }),
  parameter({
    name: 'source-type',
    env: ['DRIFTLESS_SOURCE_TYPE'],
    type: 'enum',
    values: SOURCE_TYPES,
    default: 'auto',
    description:
      'How to render the app: auto (a kustomization file → kustomize, Chart.yaml → helm, else directory), directory, kustomize, helm, or stdin (also: a "-" argument).',
  }),
  parameter({
    name: 'recurse',
    env: ['DRIFTLESS_RECURSE'],
    type: 'boolean',
    default: 'false',
    description: 'Directory source: also read manifests in subdirectories (as Argo CD directory.recurse).',
  }),
  parameter({
    name: 'include',
    env: ['DRIFTLESS_INCLUDE'],
    type: 'string',
    default: '',
    description:
      'Directory source: only read files whose path relative to the app matches this glob (e.g. "{a,b}.yaml", "**/*.yaml"; * stays within a directory).',
  }),
  parameter({
    name: 'exclude',
    env: ['DRIFTLESS_EXCLUDE'],
    type: 'string',
    default: '',
    description: 'Directory source: skip files whose path relative to the app matches this glob.',
  }),
  parameter({
    name: 'release-name',
    env: ['DRIFTLESS_RELEASE_NAME'],
    type: 'string',
    default: '',
    description:
      'Helm release name. Default: the Application name from ARGOCD_APP_NAME without its "<namespace>_" prefix, else "release-name".',
  }),
  parameter({
    name: 'namespace',
    env: ['DRIFTLESS_NAMESPACE'],
    type: 'string',
    default: '',
    description: "Helm --namespace (the chart's .Release.Namespace). Default: the destination namespace, ARGOCD_APP_NAMESPACE.",
  }),
  parameter({
    name: 'values-files',
    env: ['DRIFTLESS_VALUES_FILES'],
    type: 'array',
    default: [],
    description:
      'Helm values files, in order, relative to the app directory ("/x.yaml" is relative to the repository root, as in Argo CD); they must stay inside the repository. As in Argo CD, ${ARGOCD_APP_*} is substituted and an entry with *, ? or [ is a glob (each file once; missing files fail unless ignore-missing-value-files).',
  }),
  parameter({
    name: 'values',
    env: ['DRIFTLESS_VALUES'],
    type: 'string',
    default: '',
    description: 'Helm values as an inline YAML document, applied after values-files.',
  }),
  parameter({
    name: 'set',
    env: ['DRIFTLESS_SET'],
    type: 'map',
    default: {},
    description:
      'Helm --set: a map of key → literal value (commas escaped for you), or a list of "key=value" Helm --set expressions; ${ARGOCD_APP_*} is substituted in values, as in Argo CD ($$ for a literal $).',
  }),
  parameter({
    name: 'set-string',
    env: ['DRIFTLESS_SET_STRING'],
    type: 'map',
    default: {},
    description: 'Helm --set-string: like set (${ARGOCD_APP_*} substituted), but values always stay strings.',
  }),
  parameter({
    name: 'values-object',
    env: ['DRIFTLESS_VALUES_OBJECT'],
    type: 'string',
    default: '',
    description:
      'Helm values as a YAML or JSON object (Argo CD valuesObject). As in Argo CD it takes the place of values: when both are given, values is not used.',
  }),
  parameter({
    name: 'file-parameters',
    env: ['DRIFTLESS_FILE_PARAMETERS'],
    type: 'map',
    default: {},
    description:
      'Helm --set-file (Argo CD fileParameters): a map of key → file path, or a list of "key=path"; paths resolve like values-files and must stay inside the repository.',
  }),
  parameter({
    name: 'ignore-missing-value-files',
    env: ['DRIFTLESS_IGNORE_MISSING_VALUE_FILES'],
    type: 'boolean',
    default: 'false',
    description: 'Helm: leave out values files that do not exist instead of failing (Argo CD ignoreMissingValueFiles).',
  }),
  parameter({
    name: 'skip-crds',
    env: ['DRIFTLESS_SKIP_CRDS'],
    type: 'boolean',
    default: 'false',
    description: "Helm: leave out the chart's crds/ directory (Argo CD skipCrds; by default helm template runs with --include-crds).",
  }),
  parameter({
    name: 'skip-tests',
    env: ['DRIFTLESS_SKIP_TESTS'],
    type: 'boolean',
    default: 'false',
    description: 'Helm --skip-tests: leave out test hooks (Argo CD skipTests).',
  }),
  parameter({
    name: 'skip-schema-validation',
    env: ['DRIFTLESS_SKIP_SCHEMA_VALIDATION'],
    type: 'boolean',
    default: 'false',
    description: "Helm --skip-schema-validation: do not check values against the chart's values.schema.json (Argo CD skipSchemaValidation).",
  }),
  parameter({
    name: 'kube-version',
    env: ['DRIFTLESS_KUBE_VERSION', 'KUBE_VERSION'],
    type: 'string',
    default: '',
    description: "Helm --kube-version (.Capabilities.KubeVersion). Default: KUBE_VERSION, the destination cluster's version from Argo CD.",
  }),
  parameter({
    name: 'api-versions',
    env: ['DRIFTLESS_API_VERSIONS', 'KUBE_API_VERSIONS'],
    type: 'array',
    default: [],
    description:
      "Helm --api-versions (.Capabilities.APIVersions). Default: KUBE_API_VERSIONS, the destination cluster's API versions from Argo CD.",
  }),
  parameter({
    name: 'kustomize-enable-helm',
    env: ['DRIFTLESS_KUSTOMIZE_ENABLE_HELM'],
    type: 'boolean',
    default: 'false',
    description: "Kustomize source: kustomize build --enable-helm (the kustomization's helmCharts), with Driftless' helm.",
  }),
  parameter({
    name: 'name-prefix',
    env: ['DRIFTLESS_NAME_PREFIX'],
    type: 'string',
    default: '',
    description: 'Kustomize: kustomize edit set nameprefix before the build (Argo CD namePrefix).',
  }),
  parameter({
    name: 'name-suffix',
    env: ['DRIFTLESS_NAME_SUFFIX'],
    type: 'string',
    default: '',
    description: 'Kustomize: kustomize edit set namesuffix (Argo CD nameSuffix).',
  }),
  parameter({
    name: 'images',
    env: ['DRIFTLESS_IMAGES'],
    type: 'array',
    default: [],
    description:
      'Kustomize: kustomize edit set image, items such as "nginx:1.27" or "app=registry/app@sha256:…" (Argo CD images; ${ARGOCD_APP_*} substituted).',
  }),
  parameter({
    name: 'replicas',
    env: ['DRIFTLESS_REPLICAS'],
    type: 'map',
    default: {},
    description: 'Kustomize: kustomize edit set replicas, a map of workload name → count or a list of "name=count" (Argo CD replicas).',
  }),
  parameter({
    name: 'common-labels',
    env: ['DRIFTLESS_COMMON_LABELS'],
    type: 'map',
    default: {},
    description: 'Kustomize: kustomize edit add label, a map of label → value (Argo CD commonLabels; ${ARGOCD_APP_*} substituted in values).',
  }),
  parameter({
    name: 'force-common-labels',
    env: ['DRIFTLESS_FORCE_COMMON_LABELS'],
    type: 'boolean',
    default: 'false',
    description: 'Kustomize: common-labels overwrite labels the kustomization already sets (Argo CD forceCommonLabels, --force).',
  }),
  parameter({
    name: 'label-without-selector',
    env: ['DRIFTLESS_LABEL_WITHOUT_SELECTOR'],
    type: 'boolean',
    default: 'false',
    description: 'Kustomize: common-labels leave selectors alone (Argo CD labelWithoutSelector, --without-selector).',
  }),
  parameter({
    name: 'label-include-templates',
    env: ['DRIFTLESS_LABEL_INCLUDE_TEMPLATES'],
    type: 'boolean',
    default: 'false',
    description: 'Kustomize: with label-without-selector, still label pod templates (Argo CD labelIncludeTemplates, --include-templates).',
  }),
  parameter({
    name: 'common-annotations',
    env: ['DRIFTLESS_COMMON_ANNOTATIONS'],
    type: 'map',
    default: {},
    description: 'Kustomize: kustomize edit add annotation, a map of annotation → value (Argo CD commonAnnotations).',
  }),
  parameter({
    name: 'common-annotations-envsubst',
    env: ['DRIFTLESS_COMMON_ANNOTATIONS_ENVSUBST'],
    type: 'boolean',
    default: 'false',
    description: 'Kustomize: substitute ${ARGOCD_APP_*} in common-annotations values (Argo CD commonAnnotationsEnvsubst; $$ is a literal $).',
  }),
  parameter({
    name: 'force-common-annotations',
    env: ['DRIFTLESS_FORCE_COMMON_ANNOTATIONS'],
    type: 'boolean',
    default: 'false',
    description: 'Kustomize: common-annotations overwrite annotations the kustomization already sets (Argo CD forceCommonAnnotations).',
  }),
  parameter({
    name: 'kustomize-namespace',
    env: ['DRIFTLESS_KUSTOMIZE_NAMESPACE'],
    type: 'string',
    default: '',
    description: 'Kustomize: kustomize edit set namespace, the namespace put on every object (Argo CD kustomize.namespace).',
  }),
  parameter({
    name: 'patches',
    env: ['DRIFTLESS_PATCHES'],
    type: 'string',
    default: '',
    description:
      "Kustomize: a YAML or JSON list of patches ({path, patch, target, options}) appended to the kustomization's patches (Argo CD kustomize.patches).",
  }),
  parameter({
    name: 'components',
    env: ['DRIFTLESS_COMPONENTS'],
    type: 'array',
    default: [],
    description: 'Kustomize: kustomize edit add component, paths relative to the app directory (Argo CD kustomize.components).',
  }),
  parameter({
    name: 'ignore-missing-components',
    env: ['DRIFTLESS_IGNORE_MISSING_COMPONENTS'],
    type: 'boolean',
    default: 'false',
    description: 'Kustomize: leave out components that do not exist instead of failing (Argo CD ignoreMissingComponents).',
  }),
  parameter({
    name: 'include-rollouts',
    env: ['DRIFTLESS_INCLUDE_ROLLOUTS'],
    type: 'boolean',
    default: 'true',
    description:
      "Stamp Argo Rollouts too, so a config change in Git goes through the Rollout's canary; false leaves Rollouts to the controller.",
  }),
  parameter({
    name: 'allow-empty',
    env: ['DRIFTLESS_ALLOW_EMPTY'],
    type: 'boolean',
    default: 'false',
    description: 'Succeed when the app renders zero documents (by default that is an error, so a broken render never prunes everything).',
  }),
  parameter({
    name: 'hash-key-file',
    env: ['DRIFTLESS_HASH_KEY_FILE'],
    type: 'path',
    default: '',
    description: "File whose bytes are the HMAC key of the config hash. Without one the hash is a plain SHA-256 and a warning is printed when Secrets are hashed.",
  }),
  parameter({
    name: 'timeout',
    env: ['DRIFTLESS_TIMEOUT', 'ARGOCD_EXEC_TIMEOUT'],
    type: 'duration',
    default: '90s',
    description:
      'Time budget for the whole command, a Go duration (90s, 2m). Default: ARGOCD_EXEC_TIMEOUT, else 90s (Argo CD\'s documented default).',
  }),
]);

/** Looks a parameter up by name. */
export function findParameter(name: string): ParameterSpec | undefined {
  return PARAMETERS.find((spec) => spec.name === name);
}
