/**
 * Turns argv and the environment into one frozen, validated `PluginConfig`.
 * This is the only place that reads either; everything downstream takes the
 * config. Precedence and the parameter list live in `parameters.ts`.
 */
import path from 'node:path';
import type { PolicyMode } from '../core/index.ts';
// Not through core/index.ts: parsing the config is on the start-up path, before the renderer is spawned, and
// the index would load all of core there (invoke.ts loads core only once kustomize or helm runs).
// oxlint-disable-next-line no-restricted-imports
import { parseGoDuration } from '../core/go-duration.ts';
// oxlint-disable-next-line no-restricted-imports -- as above: core/manifest.ts, not the whole index.
import { isRecord } from '../core/manifest.ts';
import { deepFreeze } from '../cli/deep-freeze.ts';
import { UsageError } from './errors.ts';
import { envsubst } from './source/envsubst.ts';
import { parseArgv as readArgv, parseBoolean, helpRow, type FlagRow } from '../cli/flags.ts';
import { PARAMETERS, SOURCE_TYPES, envName, findParameter } from './parameters.ts';
import type { ParameterSpec } from './parameters.ts';

export { PARAMETERS } from './parameters.ts';
export type { ParameterSpec, ParameterType } from './parameters.ts';

/** What the user asked for. `help` prints `usageText()`; `migrate-app` rewrites an Application (commands/migrate-app.ts). */
export type Command = 'generate' | 'explain' | 'migrate-app' | 'help';

/** How the app is rendered; `auto` is resolved by the source stage (Argo CD's detection order). */
export type SourceType = (typeof SOURCE_TYPES)[number];

/** The output format of `explain`. */
export type ExplainOutput = 'table' | 'json';

/** Directory-source options (Argo CD's `directory` block). */
export interface DirectoryOptions {
  readonly recurse: boolean;
  /** A `path.matchesGlob` pattern against the slash-separated path relative to the app dir; `''` = everything. */
  readonly include: string;
  readonly exclude: string;
}

/** Helm-source options, as given; source/helm.ts validates them before helm runs. */
export interface HelmOptions {
  readonly releaseName: string;
  /** `''` = let helm use its default. */
  readonly namespace: string;
  /** As given: relative to the app dir, or with a leading `/` relative to `repoRoot` (as in Argo CD). */
  readonly valuesFiles: readonly string[];
  /** Inline values YAML, `''` for none. */
  readonly values: string;
  /** Helm `--set` expressions, `key=value`, in order. */
  readonly set: readonly string[];
  /** Helm `--set-string` expressions. */
  readonly setString: readonly string[];
  /** `''` = none. */
  readonly kubeVersion: string;
  readonly apiVersions: readonly string[];
  /** Inline values as a YAML/JSON object (Argo CD valuesObject), `''` for none; when set, `values` is not used. */
  readonly valuesObject: string;
  /** Helm `--set-file` pairs; `path` as given (before `${ARGOCD_APP_*}` substitution), resolved like values files. */
  readonly fileParameters: readonly FileParameter[];
  readonly ignoreMissingValueFiles: boolean;
  readonly skipCrds: boolean;
  readonly skipTests: boolean;
  readonly skipSchemaValidation: boolean;
}

/** One Helm `--set-file`: the values key and the file whose content becomes its value. */
export interface FileParameter {
  readonly key: string;
  readonly path: string;
}

/** One `kustomize edit set replicas` item. */
export interface ReplicaOverride {
  readonly name: string;
  readonly count: number;
}

/**
 * Kustomize-source options. All but `enableHelm` and `buildOptions` are Argo CD's
 * `spec.source.kustomize` overrides, applied with `kustomize edit` to a copy of the app.
 */
export interface KustomizeOptions {
  readonly enableHelm: boolean;
  /** The operator's extra `kustomize build` arguments (Argo CD `kustomize.buildOptions`), from DRIFTLESS_KUSTOMIZE_BUILD_OPTIONS only. */
  readonly buildOptions: readonly string[];
  readonly namePrefix: string;
  readonly nameSuffix: string;
  readonly images: readonly string[];
  readonly replicas: readonly ReplicaOverride[];
  readonly commonLabels: Readonly<Record<string, string>>;
  readonly forceCommonLabels: boolean;
  readonly labelWithoutSelector: boolean;
  readonly labelIncludeTemplates: boolean;
  readonly commonAnnotations: Readonly<Record<string, string>>;
  readonly commonAnnotationsEnvsubst: boolean;
  readonly forceCommonAnnotations: boolean;
  readonly namespace: string;
  /**
   * A YAML/JSON list of patches as given, `''` for none; parsed and checked against Argo CD's KustomizePatch
   * shape only when kustomize renders (source/kustomize-edit.ts), so no YAML reader loads before the render starts.
   */
  readonly patches: string;
  readonly components: readonly string[];
  readonly ignoreMissingComponents: boolean;
}

/** Where one parameter's value came from, for messages: `flag --mode`, `ARGOCD_APP_PARAMETERS`, `default`, … */
export type Provenance = string;

/** Everything a command needs, parsed once. Deeply frozen. */
export interface PluginConfig {
  readonly command: Command;
  /** `explain` only; `table` otherwise. */
  readonly output: ExplainOutput;
  /** `migrate-app` only: the Application file (absolute), or `-` for stdin; `''` otherwise. */
  readonly migrateInput: string;
  /** Absolute app directory (`--path`, default the working directory: Argo CD runs the plugin there). */
  readonly appDir: string;
  /**
   * Absolute repository root: the app dir minus `ARGOCD_APP_SOURCE_PATH` when that
   * matches its tail (Argo CD unpacks the whole repository), else the app dir.
   * Values files may not leave it.
   */
  readonly repoRoot: string;
  /** `ARGOCD_APP_NAME` as given (may be `<namespace>_<name>`), `''` when unset. */
  readonly appName: string;
  /**
   * The destination namespace, where namespace-less objects land: `ARGOCD_APP_NAMESPACE`, else (a local run)
   * the `namespace` parameter, since Argo CD gives its destination namespace to both. `''` when neither is set.
   */
  readonly destinationNamespace: string;
  readonly mode: PolicyMode;
  readonly sourceType: SourceType;
  readonly directory: DirectoryOptions;
  readonly helm: HelmOptions;
  readonly kustomize: KustomizeOptions;
  readonly includeRollouts: boolean;
  readonly allowEmpty: boolean;
  /** Absolute path of the HMAC key file, or undefined for a plain SHA-256. */
  readonly hashKeyFile: string | undefined;
  /** The whole command's time budget in milliseconds (> 0). */
  readonly timeoutMs: number;
  /** The budget as written (`90s`), for messages. */
  readonly timeoutText: string;
  /** Renderer executables: a name looked up on PATH, or `DRIFTLESS_KUSTOMIZE` / `DRIFTLESS_HELM`. */
  readonly tools: { readonly kustomize: string; readonly helm: string };
  /** The environment renderers run with (the sidecar's, as given: HOME, PATH, HELM_* caches). */
  readonly environment: Readonly<Record<string, string>>;
  /** For each parameter name, where its value came from. */
  readonly provenance: Readonly<Record<string, Provenance>>;
}

/** A value before typing: the three shapes of an Argo CD parameter. */
type RawValue =
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'array'; readonly value: readonly string[] }
  | { readonly kind: 'map'; readonly value: Readonly<Record<string, string>> };

interface Found {
  readonly raw: RawValue;
  readonly from: Provenance;
}

type Env = Readonly<Record<string, string | undefined>>;

const COMMANDS: readonly Command[] = ['generate', 'explain', 'migrate-app'];

/** Every command of the `driftless` executable, for messages: serve (plugin/main.ts) and controller (bin/driftless.js) are routed before this parser. */
const EVERY_COMMAND = 'generate, explain, migrate-app, serve or controller';

/** Flags that are not parameters. */
const PATH_FLAG = '--path';
const OUTPUT_FLAG = '--output';

/**
 * Parses argv (without node and script) and the environment.
 * Throws UsageError naming the parameter and where its bad value came from.
 */
export function parseConfig(argv: readonly string[], env: Env, cwd: string): PluginConfig {
  const cli = parseArgv(argv);
  // --help must work whatever else is set: it ignores parameter values and the environment.
  if (cli.command === 'help') return buildConfig({ ...cli, flags: new Map(), output: undefined, stdinArgument: false, file: undefined }, {}, cwd);
  if (cli.command === 'migrate-app') {
    // It reads an Application, not an app: parameters and Argo CD's build environment do not apply.
    if (cli.flags.size > 0 || cli.path !== undefined || cli.output !== undefined) {
      throw new UsageError('migrate-app takes only an Application file or "-" (see driftless --help)');
    }
    if (cli.file === undefined && !cli.stdinArgument) throw new UsageError('migrate-app needs an Application file, or "-" for stdin');
    const config = buildConfig({ ...cli, stdinArgument: false }, {}, cwd);
    return { ...config, migrateInput: cli.file === undefined ? '-' : path.resolve(cwd, cli.file) };
  }
  return buildConfig(cli, env, cwd);
}

function buildConfig(cli: Cli, env: Env, cwd: string): PluginConfig {
  const parameters = parseAppParameters(env['ARGOCD_APP_PARAMETERS']);
  const lookup = (spec: ParameterSpec): Found | undefined => {
    const flag = cli.flags.get(spec.name);
    if (flag !== undefined && !isEmpty(flag)) return { raw: flag, from: `flag ${spec.flag}` };
    const parameter = parameters.get(spec.name);
    if (parameter !== undefined && !isEmpty(parameter)) return { raw: parameter, from: `ARGOCD_APP_PARAMETERS (${spec.name})` };
    const argocdEnv = `ARGOCD_ENV_${envName(spec.name)}`;
    const fromArgocdEnv = env[argocdEnv];
    if (fromArgocdEnv !== undefined && fromArgocdEnv !== '') return { raw: { kind: 'string', value: fromArgocdEnv }, from: argocdEnv };
    for (const name of spec.env) {
      const value = env[name];
      if (value !== undefined && value !== '') return { raw: { kind: 'string', value }, from: name };
    }
    return undefined;
  };

  const provenance: Record<string, Provenance> = {};
  const read = <T>(name: string, convert: (found: Found, spec: ParameterSpec) => T, fallback: T): T => {
    const spec = findParameter(name);
    if (spec === undefined) throw new Error(`internal: unknown parameter ${name}`);
    const found = lookup(spec);
    if (found === undefined) {
      provenance[name] = 'default';
      return fallback;
    }
    provenance[name] = found.from;
    return convert(found, spec);
  };

  const appDir = path.resolve(cwd, cli.path ?? '.');
  const repoRoot = findRepoRoot(appDir, env['ARGOCD_APP_SOURCE_PATH'] ?? '');
  const appName = env['ARGOCD_APP_NAME'] ?? '';
  const argocdNamespace = env['ARGOCD_APP_NAMESPACE'] ?? '';

  const mode = read('mode', asEnum, 'all') as PolicyMode;
  let sourceType = read('source-type', asEnum, 'auto') as SourceType;
  if (cli.stdinArgument) {
    if (provenance['source-type'] !== 'default' && sourceType !== 'stdin') {
      throw new UsageError(`the "-" argument (read stdin) conflicts with source-type ${sourceType} from ${provenance['source-type']}`);
    }
    sourceType = 'stdin';
    provenance['source-type'] = 'argument -';
  }

  const directory: DirectoryOptions = {
    recurse: read('recurse', asBoolean, false),
    include: read('include', asString, ''),
    exclude: read('exclude', asString, ''),
  };

  // Helm options are only checked when helm renders (source/helm.ts): a long
  // Application name or an odd KUBE_VERSION must not break a Kustomize app.
  const releaseName = read('release-name', asString, releaseNameFromAppName(appName));
  if (provenance['release-name'] === 'default' && appName !== '') provenance['release-name'] = 'ARGOCD_APP_NAME';
  const namespace = read('namespace', asString, argocdNamespace);
  if (provenance['namespace'] === 'default' && argocdNamespace !== '') provenance['namespace'] = 'ARGOCD_APP_NAMESPACE';
  // Argo CD renders with `helm template --namespace <destination>` and applies objects without a namespace
  // there, so a local `--namespace prod` must match workloads to configs as Argo CD with destination prod
  // does. Inside Argo CD the destination wins: a `namespace` parameter only changes what helm is told.
  const destinationNamespace = argocdNamespace !== '' ? argocdNamespace : namespace;
  // Argo CD's helmTemplate expands its build environment (Env.Envsubst) in values-file paths and in the value
  // of every --set/--set-string, and in nothing else of the Helm source (not values, release name or namespace).
  const substitute = (text: string): string => envsubst(text, env as Readonly<Record<string, string>>);
  const valuesFiles = read('values-files', asList, []).map(substitute);
  const kubeVersion = read('kube-version', asString, '');
  const apiVersions = read('api-versions', asList, []);
  const helm: HelmOptions = {
    releaseName,
    namespace,
    valuesFiles,
    values: read('values', asString, ''),
    set: read('set', setExpressionsReader(substitute), []),
    setString: read('set-string', setExpressionsReader(substitute), []),
    kubeVersion,
    apiVersions,
    valuesObject: read('values-object', asString, ''),
    fileParameters: read('file-parameters', asFileParameters, []),
    ignoreMissingValueFiles: read('ignore-missing-value-files', asBoolean, false),
    skipCrds: read('skip-crds', asBoolean, false),
    skipTests: read('skip-tests', asBoolean, false),
    skipSchemaValidation: read('skip-schema-validation', asBoolean, false),
  };
  const kustomize: KustomizeOptions = {
    enableHelm: read('kustomize-enable-helm', asBoolean, false),
    // Operator-only, as in Argo CD (argocd-cm kustomize.buildOptions): an Application that could pass build
    // flags could pass --helm-command and run a program of its choosing in the sidecar.
    buildOptions: (env['DRIFTLESS_KUSTOMIZE_BUILD_OPTIONS'] ?? '').split(/\s+/).filter((option) => option !== ''),
    namePrefix: read('name-prefix', asString, ''),
    nameSuffix: read('name-suffix', asString, ''),
    images: read('images', asList, []),
    replicas: read('replicas', asReplicas, []),
    commonLabels: read('common-labels', asStringMap, {}),
    forceCommonLabels: read('force-common-labels', asBoolean, false),
    labelWithoutSelector: read('label-without-selector', asBoolean, false),
    labelIncludeTemplates: read('label-include-templates', asBoolean, false),
    commonAnnotations: read('common-annotations', asStringMap, {}),
    commonAnnotationsEnvsubst: read('common-annotations-envsubst', asBoolean, false),
    forceCommonAnnotations: read('force-common-annotations', asBoolean, false),
    namespace: read('kustomize-namespace', asString, ''),
    patches: read('patches', asString, ''),
    components: read('components', asList, []),
    ignoreMissingComponents: read('ignore-missing-components', asBoolean, false),
  };

  const includeRollouts = read('include-rollouts', asBoolean, true);
  const allowEmpty = read('allow-empty', asBoolean, false);
  const hashKeyFileText = read('hash-key-file', asString, '');
  const hashKeyFile = hashKeyFileText === '' ? undefined : path.resolve(cwd, hashKeyFileText);
  const timeoutText = read('timeout', asString, '90s');
  const timeoutMs = parseGoDuration(timeoutText);
  if (timeoutMs === undefined || timeoutMs <= 0) {
    throw new UsageError(
      `invalid value ${JSON.stringify(timeoutText)} for parameter timeout (from ${provenance['timeout']}): expected a positive Go duration such as 90s, 2m or 1m30s`,
    );
  }

  if (cli.output !== undefined && cli.command === 'generate') {
    throw new UsageError(`${OUTPUT_FLAG} only applies to explain`);
  }

  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) environment[name] = value;

  return deepFreeze({
    command: cli.command,
    output: cli.output ?? 'table',
    migrateInput: '',
    appDir,
    repoRoot,
    appName,
    destinationNamespace,
    mode,
    sourceType,
    directory,
    helm,
    kustomize,
    includeRollouts,
    allowEmpty,
    hashKeyFile,
    timeoutMs,
    timeoutText,
    tools: {
      kustomize: env['DRIFTLESS_KUSTOMIZE'] || 'kustomize',
      helm: env['DRIFTLESS_HELM'] || 'helm',
    },
    environment,
    provenance,
  });
}

// ---------------------------------------------------------------------------
// argv

interface Cli {
  readonly command: Command;
  readonly flags: ReadonlyMap<string, RawValue>;
  readonly path: string | undefined;
  readonly output: ExplainOutput | undefined;
  readonly stdinArgument: boolean;
  /** migrate-app's file argument. */
  readonly file: string | undefined;
}

/** What the argv reader knows of the plugin's flags: every parameter, and the two that choose what is read or printed. */
const ARGV_FLAGS: readonly FlagRow[] = Object.freeze([
  { name: PATH_FLAG.slice(2) },
  { name: OUTPUT_FLAG.slice(2) },
  ...PARAMETERS.map((spec) => ({
    name: spec.name,
    boolean: spec.type === 'boolean',
    // Repeatable: each occurrence is one item, never split, so a file name or a --set value may hold a comma.
    repeatable: spec.type === 'array' || spec.type === 'map',
  })),
]);

function parseArgv(argv: readonly string[]): Cli {
  let command: Command | undefined;
  let helpCommand = false;
  let stdinArgument = false;
  let file: string | undefined;
  const onPositional = (arg: string): void => {
    if (arg === '-') {
      if (stdinArgument || file !== undefined) throw new UsageError(file === undefined ? '"-" given twice' : '"-" and a file given together');
      stdinArgument = true;
      return;
    }
    if (command === undefined && arg === 'help') {
      helpCommand = true;
      command = 'help';
      return;
    }
    if (command === undefined && (COMMANDS as readonly string[]).includes(arg)) {
      command = arg as Command;
      return;
    }
    if (command === undefined) {
      throw new UsageError(`unknown command ${JSON.stringify(arg)}: expected ${EVERY_COMMAND} (see driftless --help)`);
    }
    if (command === 'migrate-app' && file === undefined && !stdinArgument) {
      file = arg;
      return;
    }
    throw new UsageError(`unexpected argument ${JSON.stringify(arg)} (only "-", for stdin, is accepted; see driftless --help)`);
  };
  const given = readArgv(argv, { flags: ARGV_FLAGS, onPositional, helpCommand: 'driftless' });

  const appPath = given.values.get(PATH_FLAG.slice(2))?.[0];
  if (appPath === '') throw new UsageError(`${PATH_FLAG} needs a value`);
  const outputText = given.values.get(OUTPUT_FLAG.slice(2))?.[0];
  if (outputText !== undefined && outputText !== 'table' && outputText !== 'json') {
    throw new UsageError(`invalid value ${JSON.stringify(outputText)} for ${OUTPUT_FLAG}: expected table or json`);
  }
  const flags = new Map<string, RawValue>();
  for (const spec of PARAMETERS) {
    const values = given.values.get(spec.name);
    if (values === undefined) continue;
    const repeatable = spec.type === 'array' || spec.type === 'map';
    flags.set(spec.name, repeatable ? { kind: 'array', value: values } : { kind: 'string', value: values[0] as string });
  }

  if (given.help || helpCommand) command = 'help';
  if (command === undefined) throw new UsageError(`missing command: expected ${EVERY_COMMAND} (see driftless --help)`);
  return { command, flags, path: appPath, output: outputText, stdinArgument, file };
}

// ---------------------------------------------------------------------------
// ARGOCD_APP_PARAMETERS

/**
 * Parses Argo CD's parameter JSON: `null` or an array of
 * `{name, string?, array?, map?}`. Unknown names are an error: a typo in an
 * Application should fail loudly, not silently fall back to a default.
 */
function parseAppParameters(text: string | undefined): ReadonlyMap<string, RawValue> {
  const result = new Map<string, RawValue>();
  if (text === undefined || text.trim() === '') return result;
  const where = 'ARGOCD_APP_PARAMETERS';
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${where} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (parsed === null) return result;
  if (!Array.isArray(parsed)) throw new UsageError(`${where} must be a JSON array of {name, string|array|map} (or null)`);

  parsed.forEach((item: unknown, index: number) => {
    if (!isRecord(item) || typeof item['name'] !== 'string') {
      throw new UsageError(`${where}[${index}] must be an object with a string "name"`);
    }
    const name = item['name'];
    if (findParameter(name) === undefined) {
      throw new UsageError(
        `${where}: unknown parameter ${JSON.stringify(name)}; known parameters: ${PARAMETERS.map((spec) => spec.name).join(', ')}`,
      );
    }
    if (result.has(name)) throw new UsageError(`${where}: parameter ${name} is given twice`);
    const present = (['string', 'array', 'map'] as const).filter((key) => item[key] !== undefined && item[key] !== null);
    if (present.length > 1) throw new UsageError(`${where}: parameter ${name} has more than one of string, array and map`);
    const shape = present[0];
    if (shape === undefined) return; // a name with no value: as if not given
    const value = item[shape];
    if (shape === 'string') {
      if (typeof value !== 'string') throw new UsageError(`${where}: parameter ${name}: "string" must be a string`);
      result.set(name, { kind: 'string', value });
    } else if (shape === 'array') {
      if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string')) {
        throw new UsageError(`${where}: parameter ${name}: "array" must be an array of strings`);
      }
      result.set(name, { kind: 'array', value });
    } else {
      if (!isRecord(value) || !Object.values(value).every((entry) => typeof entry === 'string')) {
        throw new UsageError(`${where}: parameter ${name}: "map" must be an object of strings`);
      }
      result.set(name, { kind: 'map', value: value as Record<string, string> });
    }
  });
  return result;
}

function isEmpty(raw: RawValue): boolean {
  if (raw.kind === 'string') return raw.value === '';
  if (raw.kind === 'array') return raw.value.length === 0;
  return Object.keys(raw.value).length === 0;
}

// ---------------------------------------------------------------------------
// converters: each names the parameter and the source of a bad value

function wrongShape(found: Found, spec: ParameterSpec, expected: string): UsageError {
  return new UsageError(`parameter ${spec.name} (from ${found.from}) must be ${expected}, got ${found.raw.kind === 'array' ? 'an array' : `a ${found.raw.kind}`}`);
}

function asString(found: Found, spec: ParameterSpec): string {
  if (found.raw.kind !== 'string') throw wrongShape(found, spec, 'a string');
  return found.raw.value;
}

function asEnum(found: Found, spec: ParameterSpec): string {
  const value = asString(found, spec);
  const allowed = spec.values ?? [];
  if (!allowed.includes(value)) {
    throw new UsageError(`invalid value ${JSON.stringify(value)} for parameter ${spec.name} (from ${found.from}): expected ${allowed.join(', ')}`);
  }
  return value;
}

function asBoolean(found: Found, spec: ParameterSpec): boolean {
  const value = parseBoolean(asString(found, spec));
  if (value !== undefined) return value;
  throw new UsageError(`invalid value ${JSON.stringify(found.raw.value)} for parameter ${spec.name} (from ${found.from}): expected true or false`);
}

/** An Argo CD array, or a comma-separated string (the form env vars such as KUBE_API_VERSIONS use). */
function asList(found: Found, spec: ParameterSpec): string[] {
  if (found.raw.kind === 'array') return [...found.raw.value];
  if (found.raw.kind === 'string') return found.raw.value.split(',').map((item) => item.trim()).filter((item) => item !== '');
  throw wrongShape(found, spec, 'an array or a comma-separated string');
}

/**
 * Helm `--set` expressions. A map gives literal values, so commas (helm's
 * separator) are escaped unless the value is a `{a,b}` list; array items and
 * strings are Helm expressions already and pass through unchanged.
 * `substitute` is applied to the value side only, before escaping, which is
 * Argo CD's order (helmTemplate's Envsubst, then cmd.go's cleanSetParameters).
 */
function setExpressionsReader(substitute: (text: string) => string) {
  return (found: Found, spec: ParameterSpec): string[] => {
    const raw = found.raw;
    const expressions =
      raw.kind === 'map'
        ? Object.keys(raw.value)
            .sort()
            .map((key) => `${key}=${escapeSetValue(substitute(raw.value[key] as string))}`)
        : raw.kind === 'array'
          ? [...raw.value]
          : [raw.value];
    return expressions.map((expression) => {
      const equals = expression.indexOf('=');
      if (equals <= 0) {
        throw new UsageError(`invalid item in parameter ${spec.name} (from ${found.from}): expected key=value, got ${JSON.stringify(expression.slice(0, 80))}`);
      }
      return raw.kind === 'map' ? expression : `${expression.slice(0, equals + 1)}${substitute(expression.slice(equals + 1))}`;
    });
  };
}

/** The identity: file-parameter paths are substituted where they are resolved (source/helm.ts). */
const asSetExpressions = setExpressionsReader((text) => text);

/** Helm `--set-file` pairs: a map of key → path (a literal path), or `key=path` items (Helm syntax, `\\,` for a comma). */
function asFileParameters(found: Found, spec: ParameterSpec): FileParameter[] {
  if (found.raw.kind === 'map') {
    const map = found.raw.value;
    return Object.keys(map).sort().map((key) => ({ key, path: map[key] as string }));
  }
  return asSetExpressions(found, spec).map((expression) => {
    const equals = expression.indexOf('=');
    return { key: expression.slice(0, equals), path: expression.slice(equals + 1).replace(/\\,/g, ',') };
  });
}

/** An Argo CD `map`, or `key=value` items (array or comma-separated string), as a record; a repeated key keeps the last. */
function asStringMap(found: Found, spec: ParameterSpec): Record<string, string> {
  if (found.raw.kind === 'map') return { ...found.raw.value };
  const result: Record<string, string> = {};
  for (const item of asList(found, spec)) {
    const equals = item.indexOf('=');
    if (equals <= 0) {
      throw new UsageError(`invalid item in parameter ${spec.name} (from ${found.from}): expected key=value, got ${JSON.stringify(item.slice(0, 80))}`);
    }
    result[item.slice(0, equals)] = item.slice(equals + 1);
  }
  return result;
}

/** `name=count` items or a map name → count; counts are integers, as Argo CD's GetIntCount requires. */
function asReplicas(found: Found, spec: ParameterSpec): ReplicaOverride[] {
  const map = asStringMap(found, spec);
  const names = found.raw.kind === 'map' ? Object.keys(map).sort() : Object.keys(map);
  return names.map((name) => {
    const text = (map[name] as string).trim();
    if (!/^[+-]?\d+$/.test(text)) {
      throw new UsageError(`invalid count ${JSON.stringify(text.slice(0, 40))} for ${JSON.stringify(name)} in parameter ${spec.name} (from ${found.from}): expected an integer`);
    }
    return { name, count: Number.parseInt(text, 10) };
  });
}

function escapeSetValue(value: string): string {
  if (value.startsWith('{') && value.endsWith('}')) return value;
  return value.replace(/(?<!\\),/g, '\\,');
}

/** Argo CD's `<namespace>_<name>` instance name → the Application name; helm's own default otherwise. */
function releaseNameFromAppName(appName: string): string {
  if (appName === '') return 'release-name';
  const underscore = appName.indexOf('_');
  return underscore === -1 ? appName : appName.slice(underscore + 1);
}

function findRepoRoot(appDir: string, sourcePath: string): string {
  const relative = path.normalize(sourcePath).replace(/^(\.\/|\/)+/, '').replace(/\/+$/, '');
  if (relative === '' || relative === '.' || relative.startsWith('..')) return appDir;
  const suffix = path.sep + relative;
  return appDir.endsWith(suffix) ? appDir.slice(0, -suffix.length) || path.sep : appDir;
}

/** True when `child` is `parent` or below it (both absolute). */
export function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

// ---------------------------------------------------------------------------
// --help

const PLACEHOLDERS: Readonly<Record<ParameterSpec['type'], string>> = {
  enum: '',
  boolean: '',
  string: 'VALUE',
  path: 'FILE',
  duration: 'DURATION',
  array: 'ITEM',
  map: 'KEY=VALUE',
};

/** The `--help` text, generated from PARAMETERS so it cannot drift from them. */
export function usageText(): string {
  const lines = [
    'Usage:',
    '  driftless generate [--path DIR] [options] [-]   render the app and stamp config hashes (stdout: manifests)',
    '  driftless explain  [--path DIR] [options] [--output table|json]',
    '                                                  show every workload, its references, the policy decisions and hashes',
    '  driftless migrate-app FILE|-                     print an Application with its native helm/kustomize source',
    '                                                  rewritten to the driftless-v1 plugin (refuses what cannot be carried over)',
    '  driftless serve [--socket PATH] [--max-renders N]',
    '                                                  run the render server (the sidecar\'s second container): a warm process that',
    '                                                  generate hands its render to when DRIFTLESS_RENDER_SOCKET names its socket;',
    '                                                  beyond N renders at once (default 2) a render is handed back to its own process',
    '  driftless explain --live [--namespace NS] [KIND/NAME] [controller flags]',
    '                                                  explain from the live cluster what the controller does and why',
    '                                                  (see driftless explain --live --help)',
    '  driftless controller [flags]                    run the controller that restarts workloads when a config changes',
    '                                                  out of band (see driftless controller --help)',
    '  driftless COMMAND --help                        the usage of one command',
    '  driftless --help',
    '',
    'Arguments:',
    '  -                    read manifests from stdin (same as --source-type stdin)',
    '  --path DIR           the app directory (default: the working directory, where Argo CD runs the plugin)',
    '  --output table|json  explain only (default: table)',
    '',
    'Parameters (flag > ARGOCD_APP_PARAMETERS > ARGOCD_ENV_<NAME> > environment > default; an empty value counts as unset):',
  ];
  for (const spec of PARAMETERS) {
    const placeholder = spec.type === 'boolean' ? '[=true|false]' : spec.type === 'enum' ? ` ${(spec.values ?? []).join('|')}` : ` ${PLACEHOLDERS[spec.type]}`;
    const shownDefault = Array.isArray(spec.default) ? '' : typeof spec.default === 'string' ? spec.default : '';
    lines.push(
      ...helpRow({
        synopsis: `${spec.flag}${placeholder}`,
        shownDefault,
        description: spec.description,
        env: `ARGOCD_ENV_${envName(spec.name)}, ${spec.env.join(', ')}${spec.type === 'array' || spec.type === 'map' ? '; flag repeatable' : ''}`,
      }),
    );
  }
  lines.push(
    '',
    'Environment (operator):',
    '  DRIFTLESS_KUSTOMIZE, DRIFTLESS_HELM   full paths of the renderers (default: kustomize, helm on PATH)',
    '  DRIFTLESS_KUSTOMIZE_BUILD_OPTIONS     extra kustomize build arguments, split at spaces (Argo CD kustomize.buildOptions,',
    '                                        e.g. --load-restrictor LoadRestrictionsNone); operator only, never from an Application',
    '  DRIFTLESS_RENDER_SOCKET               the render server\'s unix socket: serve listens there, generate renders through it',
    '                                        (in-process when nothing listens)',
    '  ARGOCD_APP_NAME, ARGOCD_APP_NAMESPACE, ARGOCD_APP_SOURCE_PATH, KUBE_VERSION, KUBE_API_VERSIONS   set by Argo CD',
    '',
    'Exit codes: 0 ok, 1 other failure (time budget, interrupted), 2 usage, 3 renderer failed, 4 invalid manifests.',
  );
  return `${lines.join('\n')}\n`;
}
