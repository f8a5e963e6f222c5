/**
 * The Helm source: `helm template` with the flags native Argo CD passes, and,
 * as Argo CD does, `helm dependency build` and a second `helm template` only
 * when the first one fails because dependencies are missing. Every value goes in `--flag=value` form, so none can
 * be read as another flag, and through argv, so none reaches a shell.
 */
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { isInside } from '../config.ts';
import type { PluginConfig } from '../config.ts';
import { RenderError, UsageError } from '../errors.ts';
import { envsubst } from './envsubst.ts';
import { loadYaml } from '../yaml/lazy-yaml.ts';
import { expandGlob, GlobPatternError, isGlobPath } from './values-glob.ts';
import { decodeSource } from './decode.ts';
import { runProcess } from './process.ts';
import type { RenderedStream } from './types.ts';

export const HELM_LABEL = '<helm template>';

/**
 * The argv after `helm` for `helm template`, after checking every option
 * (UsageError naming the parameter and where it came from). `valuesFiles` are
 * the resolved values files to pass (renderHelm leaves out missing ones under
 * ignore-missing-value-files). Exported for tests.
 */
export function helmTemplateArgs(config: PluginConfig, valuesFiles: readonly string[] = resolveValuesFiles(config)): string[] {
  const { helm } = config;
  const from = (name: string): string => config.provenance[name] ?? 'default';
  checkPattern(helm.releaseName, RELEASE_NAME, 'release-name', from('release-name'), 53,
    'a Helm release name: lower-case letters, digits, "-" and ".", starting and ending with a letter or digit, at most 53 characters');
  if (helm.namespace !== '') {
    checkPattern(helm.namespace, DNS_LABEL, 'namespace', from('namespace'), 63,
      'a namespace name: lower-case letters, digits and "-", starting and ending with a letter or digit, at most 63 characters');
  }
  if (helm.kubeVersion !== '') {
    checkPattern(helm.kubeVersion, KUBE_VERSION, 'kube-version', from('kube-version'), 64, 'a Kubernetes version such as 1.31.0 or v1.31.0');
  }
  for (const apiVersion of helm.apiVersions) {
    checkPattern(apiVersion, API_VERSION, 'api-versions', from('api-versions'), 512, 'group/version or group/version/Kind items');
  }

  const fileParameters = resolveFileParameters(config);

  // The flags of Argo CD's helm.TemplateOpts (util/helm/cmd.go): --include-crds unless skipCrds.
  const args = ['template', helm.releaseName, '.'];
  if (!helm.skipCrds) args.push('--include-crds');
  if (helm.skipSchemaValidation) args.push('--skip-schema-validation');
  if (helm.skipTests) args.push('--skip-tests');
  if (helm.namespace !== '') args.push(`--namespace=${helm.namespace}`);
  if (helm.kubeVersion !== '') args.push(`--kube-version=${helm.kubeVersion}`);
  for (const apiVersion of helm.apiVersions) args.push(`--api-versions=${apiVersion}`);
  for (const file of valuesFiles) args.push(`--values=${file}`);
  // Inline values come last among values, as in Argo CD, and arrive on stdin: no temp file to clean up.
  if (inlineValues(config) !== '') args.push('--values=-');
  for (const expression of helm.set) args.push(`--set=${expression}`);
  for (const expression of helm.setString) args.push(`--set-string=${expression}`);
  // Commas escaped as Argo CD's cleanSetParameters does: helm would split the assignment at one.
  for (const { key, file } of fileParameters) args.push(`--set-file=${key}=${file.replace(/(?<!\\),/g, '\\,')}`);
  return args;
}

/**
 * The inline values helm reads on stdin: valuesObject when given, else values,
 * as Argo CD's `ValuesYAML` picks one (they are never merged). valuesObject
 * must be a mapping, as Argo CD's API requires of it.
 */
function inlineValues(config: PluginConfig): string {
  const { valuesObject, values } = config.helm;
  if (valuesObject === '') return values;
  const { isMap, parseDocument } = loadYaml();
  const document = parseDocument(valuesObject, { prettyErrors: false });
  if (document.errors.length > 0 || !isMap(document.contents)) {
    const from = config.provenance['values-object'] ?? 'default';
    throw new UsageError(`parameter values-object (from ${from}) must be a YAML or JSON object`);
  }
  return valuesObject;
}

/** Renders the chart in the app directory; `onStarted` hears when the first `helm template` is spawned. */
export async function renderHelm(config: PluginConfig, signal: AbortSignal, onStarted?: () => void): Promise<RenderedStream[]> {
  const templateArgs = helmTemplateArgs(config, await checkValuesFiles(config));
  await checkFileParameters(config);
  const stdin = inlineValues(config);
  // KUBE_API_VERSIONS can be huge on CRD-heavy clusters and helm gets it as
  // --api-versions already: passing both could overflow the kernel's argv+env limit.
  const { KUBE_API_VERSIONS: _duplicate, ...env } = config.environment;
  const common = {
    tool: 'helm',
    command: config.tools.helm,
    cwd: config.appDir,
    env,
    signal,
    overrideVariable: 'DRIFTLESS_HELM',
    redact: helmSecretValues(config),
  } as const;
  const template = (): Promise<Buffer> => runProcess({
    ...common,
    args: templateArgs,
    display: 'helm template',
    ...(stdin === '' ? {} : { stdin }),
    ...(onStarted === undefined ? {} : { onSpawn: onStarted }),
  });
  let output: Buffer;
  try {
    output = await template();
  } catch (error) {
    // Argo CD's order (reposerver helmTemplate): render first, build dependencies only when helm says they
    // are missing. Guessing from charts/ instead would build (and so fetch, and fail offline) for a
    // dependency vendored under another directory name, which helm finds by its Chart.yaml name.
    if (!isMissingDependencyError(error)) throw error;
    await runProcess({ ...common, args: ['dependency', 'build', '.'], display: 'helm dependency build (helm template reported missing dependencies)' });
    output = await template();
  }
  return [await decodeSource(HELM_LABEL, output, true)];
}

/**
 * Whether helm failed because the chart's dependencies are not in `charts/`: the two messages Argo CD's
 * `helm.IsMissingDependencyErr` looks for (Chart.yaml for v2 charts, requirements.yaml for v1).
 */
export function isMissingDependencyError(error: unknown): boolean {
  if (!(error instanceof RenderError)) return false;
  return error.stderrTail.includes('found in Chart.yaml, but missing in charts/ directory') ||
    error.stderrTail.includes('found in requirements.yaml, but missing in charts');
}

/**
 * The values the Application hands helm directly: the value side of every
 * `set`/`set-string` expression (and each item of a `{a,b}` list) and every
 * string or number leaf of the inline `values`. Any may be a Secret's value,
 * and a template can print it (`{{ fail .Values.pw }}`), so they are redacted
 * from helm's stderr. Booleans and null are not: they cannot be secrets, and
 * `true` is a word helm's messages use. Values files are repository content
 * and are not redacted (ADR 0005). Exported for tests.
 */
export function helmSecretValues(config: PluginConfig): string[] {
  const values: string[] = [];
  for (const expression of [...config.helm.set, ...config.helm.setString]) values.push(...setExpressionValues(expression));
  if (config.helm.values !== '') values.push(...inlineValueLeaves(config.helm.values));
  if (config.helm.valuesObject !== '') values.push(...inlineValueLeaves(config.helm.valuesObject));
  return values.filter((value) => !/^(true|false|null|~)$/i.test(value));
}

/**
 * Helm's strvals syntax, as far as values go: assignments separated by
 * unescaped commas, `key=value` split at the first `=`, `{a,b}` a list. Both
 * the text as written and with `\,` unescaped are returned, since helm prints
 * the unescaped value but a malformed expression may be echoed as written.
 */
function setExpressionValues(expression: string): string[] {
  const values: string[] = [];
  for (const assignment of splitUnescaped(expression)) {
    const equals = assignment.indexOf('=');
    if (equals === -1) continue;
    const value = assignment.slice(equals + 1);
    values.push(value, unescapeCommas(value));
    if (value.startsWith('{') && value.endsWith('}')) {
      for (const item of splitUnescaped(value.slice(1, -1))) values.push(item, unescapeCommas(item));
    }
  }
  return values;
}

/** Splits at commas that are neither escaped (`\,`) nor inside `{...}`. */
function splitUnescaped(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (char === '\\') index++;
    else if (char === '{') depth++;
    else if (char === '}') depth = Math.max(0, depth - 1);
    else if (char === ',' && depth === 0) {
      parts.push(text.slice(start, index));
      start = index + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

function unescapeCommas(text: string): string {
  return text.replace(/\\,/g, ',');
}

/**
 * String and number scalars of the inline values that are not map keys, as
 * parsed and as written. parseDocument does not throw and keeps what it could
 * read of a broken document, which helm will then fail on; aliases are not
 * expanded, so a hostile document stays small.
 */
function inlineValueLeaves(text: string): string[] {
  const leaves: string[] = [];
  const { isScalar, parseDocument, visit } = loadYaml();
  visit(parseDocument(text, { prettyErrors: false }), {
    Scalar(key, node) {
      if (key === 'key' || !isScalar(node)) return;
      if (typeof node.value !== 'string' && typeof node.value !== 'number') return;
      leaves.push(String(node.value));
      if (node.source !== undefined) leaves.push(node.source);
    },
  });
  return leaves;
}

/** Helm's own release-name rule; the others are Kubernetes' name and version shapes. */
const RELEASE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const KUBE_VERSION = /^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.+-]*)?$/;
const API_VERSION = /^[A-Za-z0-9][A-Za-z0-9.-]*(\/[A-Za-z0-9][A-Za-z0-9.-]*){0,2}$/;

/** None of these may start with `-`, so helm can never read one as a flag. */
function checkPattern(value: string, pattern: RegExp, name: string, from: string, maxLength: number, expected: string): void {
  if (value.length > maxLength || !pattern.test(value)) {
    throw new UsageError(`invalid value ${JSON.stringify(value.slice(0, 100))} for parameter ${name} (from ${from}): expected ${expected}`);
  }
}

/**
 * Resolves a file parameter like Argo CD's `ResolveValueFilePathOrUrl`: relative to the app dir, a leading `/`
 * relative to the repository root; it must stay inside the repository. URLs are refused: fetching at render time
 * would make the output depend on something outside the commit that Argo CD caches by.
 */
function resolveRepoFile(config: PluginConfig, file: string, parameter: string, noun: string): string {
  const from = config.provenance[parameter] ?? 'default';
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(file)) {
    throw new UsageError(`${noun} ${JSON.stringify(file)} in parameter ${parameter} (from ${from}) is a URL; only files in the repository are allowed`);
  }
  const resolved = path.isAbsolute(file) ? path.join(config.repoRoot, file) : path.resolve(config.appDir, file);
  if (!isInside(resolved, config.repoRoot)) {
    throw new UsageError(`${noun} ${JSON.stringify(file)} in parameter ${parameter} (from ${from}) is outside the repository (${config.repoRoot})`);
  }
  return resolved;
}

/** The values files, resolved (see resolveRepoFile). */
function resolveValuesFiles(config: PluginConfig): string[] {
  return config.helm.valuesFiles.map((file) => resolveRepoFile(config, file, 'values-files', 'values file'));
}

/** The `--set-file` pairs with resolved paths; Argo CD substitutes `${ARGOCD_APP_*}` in the path first. */
function resolveFileParameters(config: PluginConfig): { key: string; shown: string; file: string }[] {
  return config.helm.fileParameters.map(({ key, path: given }) => {
    const shown = envsubst(given, config.environment);
    return { key, shown, file: resolveRepoFile(config, shown, 'file-parameters', 'file') };
  });
}

/** Where a resolved repository file really is: undefined when it does not exist; refused when a symlink leaves the repository. */
async function checkRepoFile(root: string, file: string, describe: () => string): Promise<string | undefined> {
  let real: string;
  try {
    real = await realpath(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsageError(`${describe()} cannot be read`, { cause: error });
  }
  if (!isInside(real, root)) throw new UsageError(`${describe()} is a symlink to outside the repository`);
  if (!(await stat(real)).isFile()) throw new UsageError(`${describe()} is not a file`);
  return real;
}

/**
 * The values files to pass, as Argo CD's `getResolvedValueFiles` picks them: in order, each once (a repeat
 * keeps its first place); a glob entry (`*`, `?`, `[`) is expanded in doublestar's order and leaves out files
 * listed explicitly elsewhere, which keep their own place; a glob that matches nothing fails unless
 * ignore-missing-value-files. A plain file must exist (unless ignore-missing-value-files, which leaves it
 * out); every file must stay inside the repository after following symlinks.
 */
async function checkValuesFiles(config: PluginConfig): Promise<string[]> {
  const files = resolveValuesFiles(config);
  if (files.length === 0) return files;
  const root = await realpath(config.repoRoot);
  const from = config.provenance['values-files'] ?? 'default';
  const explicit = new Set(files.filter((file) => !isGlobPath(file)));
  const kept: string[] = [];
  const keep = (file: string): void => {
    if (!kept.includes(file)) kept.push(file);
  };
  for (const [index, file] of files.entries()) {
    const describe = (): string => `values file ${JSON.stringify(config.helm.valuesFiles[index])} in parameter values-files (from ${from})`;
    if (isGlobPath(file)) {
      let matches: string[];
      try {
        matches = await expandGlob(file);
      } catch (error) {
        if (error instanceof GlobPatternError) throw new UsageError(`${describe()} is not a valid glob: ${error.message}`, { cause: error });
        throw error;
      }
      if (matches.length === 0) {
        if (config.helm.ignoreMissingValueFiles) continue;
        throw new UsageError(`${describe()} is a glob that matched no files`);
      }
      for (const match of matches) {
        const describeMatch = (): string => `${describe()} matched ${JSON.stringify(path.relative(config.repoRoot, match))}, which`;
        // A match that vanished or is a broken symlink: Argo CD's EvalSymlinks fails on it too.
        if ((await checkRepoFile(root, match, describeMatch)) === undefined) throw new UsageError(`${describeMatch()} cannot be resolved`);
        if (!explicit.has(match)) keep(match);
      }
      continue;
    }
    const real = await checkRepoFile(root, file, describe);
    if (real !== undefined) keep(file);
    else if (!config.helm.ignoreMissingValueFiles) throw new UsageError(`${describe()} does not exist`);
  }
  return kept;
}

/** Every `--set-file` file must exist and stay inside the repository after following symlinks. */
async function checkFileParameters(config: PluginConfig): Promise<void> {
  const files = resolveFileParameters(config);
  if (files.length === 0) return;
  const root = await realpath(config.repoRoot);
  const from = config.provenance['file-parameters'] ?? 'default';
  for (const { key, shown, file } of files) {
    const describe = (): string => `file ${JSON.stringify(shown)} for ${JSON.stringify(key)} in parameter file-parameters (from ${from})`;
    if ((await checkRepoFile(root, file, describe)) === undefined) throw new UsageError(`${describe()} does not exist`);
  }
}
