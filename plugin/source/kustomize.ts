/**
 * The Kustomize source: `kustomize build .` in the app directory, after Argo CD's
 * overrides are applied with `kustomize edit` to a copy of it (source/kustomize-edit.ts).
 */
import type { PluginConfig } from '../config.ts';
import { editedCopy, hasOverrides } from './kustomize-edit.ts';
import { decodeSource } from './decode.ts';
import { runProcess } from './process.ts';
import { secretGeneratorLiterals } from './secret-literals.ts';
import type { RenderedStream } from './types.ts';

export const KUSTOMIZE_LABEL = '<kustomize build>';

/**
 * The argv after `kustomize`: as Argo CD's Build, the operator's build options after `build <path>`, and,
 * when helm is enabled, the destination's kube and API versions for helm (Argo CD passes them to kustomize
 * ≥ 5.3 when its build options hold --enable-helm). Exported for tests.
 */
export function kustomizeArgs(config: PluginConfig): string[] {
  const args = ['build', '.'];
  // kustomize runs helm itself for helmCharts; hand it the same helm we use.
  if (config.kustomize.enableHelm) args.push('--enable-helm', `--helm-command=${config.tools.helm}`);
  args.push(...config.kustomize.buildOptions);
  const helmEnabled = config.kustomize.enableHelm || config.kustomize.buildOptions.some((option) => option.includes('--enable-helm'));
  if (helmEnabled) {
    if (config.helm.kubeVersion !== '') args.push(`--helm-kube-version=${config.helm.kubeVersion}`);
    for (const apiVersion of config.helm.apiVersions) args.push(`--helm-api-versions=${apiVersion}`);
  }
  return args;
}

/**
 * Runs kustomize and returns its output as one stream. secretGenerator
 * literals are redacted from its stderr: kustomize echoes a malformed one.
 * `onStarted` hears when `kustomize build` is spawned (not the `kustomize edit` runs before it).
 */
export async function renderKustomize(config: PluginConfig, signal: AbortSignal, onStarted?: () => void): Promise<RenderedStream[]> {
  const redact = await secretGeneratorLiterals(config.appDir, config.repoRoot);
  const copy = hasOverrides(config.kustomize) ? await editedCopy(config, signal, redact) : undefined;
  try {
    const output = await runProcess({
      tool: 'kustomize',
      command: config.tools.kustomize,
      args: kustomizeArgs(config),
      display: 'kustomize build',
      cwd: copy?.appDir ?? config.appDir,
      env: config.environment,
      signal,
      overrideVariable: 'DRIFTLESS_KUSTOMIZE',
      redact,
      ...(onStarted === undefined ? {} : { onSpawn: onStarted }),
    });
    return [await decodeSource(KUSTOMIZE_LABEL, output, true)];
  } finally {
    await copy?.dispose();
  }
}
