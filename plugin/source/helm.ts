/**
 * The Helm source: `helm dependency build` when the chart declares
 * dependencies that are not in `charts/`, then `helm template` with the flags
 * native Argo CD passes. Every value goes in `--flag=value` form, so none can
 * be read as another flag, and through argv, so none reaches a shell.
 */
import { readFile, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { isInside } from '../config.ts';
import type { PluginConfig } from '../config.ts';
import { UsageError } from '../errors.ts';
import { runProcess } from './process.ts';
import type { RenderedStream } from './types.ts';

export const HELM_LABEL = '<helm template>';

/** The argv after `helm` for `helm template`. Exported for tests. */
export function helmTemplateArgs(config: PluginConfig): string[] {
  const { helm } = config;
  const args = ['template', helm.releaseName, '.', '--include-crds'];
  if (helm.namespace !== '') args.push(`--namespace=${helm.namespace}`);
  if (helm.kubeVersion !== '') args.push(`--kube-version=${helm.kubeVersion}`);
  for (const apiVersion of helm.apiVersions) args.push(`--api-versions=${apiVersion}`);
  for (const file of helm.valuesFiles) args.push(`--values=${file}`);
  // Inline values come last among values, as in Argo CD, and arrive on stdin: no temp file to clean up.
  if (helm.values !== '') args.push('--values=-');
  for (const expression of helm.set) args.push(`--set=${expression}`);
  for (const expression of helm.setString) args.push(`--set-string=${expression}`);
  return args;
}

/** Renders the chart in the app directory. */
export async function renderHelm(config: PluginConfig, signal: AbortSignal): Promise<RenderedStream[]> {
  await checkValuesFiles(config);
  const common = {
    tool: 'helm',
    command: config.tools.helm,
    cwd: config.appDir,
    env: config.environment,
    signal,
    overrideVariable: 'DRIFTLESS_HELM',
  } as const;
  const missing = await missingDependencies(config.appDir);
  if (missing.length > 0) {
    await runProcess({ ...common, args: ['dependency', 'build', '.'], display: `helm dependency build (for ${missing.join(', ')})` });
  }
  const text = await runProcess({
    ...common,
    args: helmTemplateArgs(config),
    display: 'helm template',
    ...(config.helm.values === '' ? {} : { stdin: config.helm.values }),
  });
  return [{ label: HELM_LABEL, text }];
}

/**
 * The values files must exist and, after following symlinks, stay inside the
 * repository (the config already checked the paths as written).
 */
async function checkValuesFiles(config: PluginConfig): Promise<void> {
  if (config.helm.valuesFiles.length === 0) return;
  const root = await realpath(config.repoRoot);
  const from = config.provenance['values-files'] ?? 'default';
  for (const file of config.helm.valuesFiles) {
    const shown = JSON.stringify(path.relative(config.appDir, file) || file);
    let real: string;
    try {
      real = await realpath(file);
    } catch (error) {
      throw new UsageError(`values file ${shown} in parameter values-files (from ${from}) does not exist`, { cause: error });
    }
    if (!isInside(real, root)) {
      throw new UsageError(`values file ${shown} in parameter values-files (from ${from}) is a symlink to outside the repository`);
    }
    if (!(await stat(real)).isFile()) {
      throw new UsageError(`values file ${shown} in parameter values-files (from ${from}) is not a file`);
    }
  }
}

/**
 * Names of declared dependencies (Chart.yaml `dependencies`, or a v1 chart's
 * requirements.yaml) with neither `charts/<name>/` nor `charts/<name>-<version>.tgz`.
 * A chart file that does not parse is left to helm, which explains it better.
 */
export async function missingDependencies(chartDir: string): Promise<string[]> {
  const names = new Set<string>();
  for (const file of ['Chart.yaml', 'requirements.yaml']) {
    let document: unknown;
    try {
      document = parse(await readFile(path.join(chartDir, file), 'utf8'));
    } catch {
      continue;
    }
    const dependencies = (document as { dependencies?: unknown } | null)?.dependencies;
    if (!Array.isArray(dependencies)) continue;
    for (const dependency of dependencies) {
      const name = (dependency as { name?: unknown } | null)?.name;
      if (typeof name === 'string' && name !== '') names.add(name);
    }
  }
  if (names.size === 0) return [];

  const vendored = new Set<string>();
  let entries: string[] = [];
  try {
    entries = await readdir(path.join(chartDir, 'charts'));
  } catch {
    // no charts/ at all: everything is missing
  }
  for (const entry of entries) {
    for (const name of names) {
      if (entry === name && (await isDirectory(path.join(chartDir, 'charts', entry)))) vendored.add(name);
      else if (entry.startsWith(`${name}-`) && entry.endsWith('.tgz') && /^v?\d/.test(entry.slice(name.length + 1))) vendored.add(name);
    }
  }
  return [...names].filter((name) => !vendored.has(name)).sort();
}

async function isDirectory(file: string): Promise<boolean> {
  return stat(file).then(
    (info) => info.isDirectory(),
    () => false,
  );
}
