/** The Kustomize source: `kustomize build .` in the app directory. */
import type { PluginConfig } from '../config.ts';
import { runProcess } from './process.ts';
import { secretGeneratorLiterals } from './secret-literals.ts';
import type { RenderedStream } from './types.ts';

export const KUSTOMIZE_LABEL = '<kustomize build>';

/** The argv after `kustomize`. Exported for tests. */
export function kustomizeArgs(config: PluginConfig): string[] {
  const args = ['build', '.'];
  // kustomize runs helm itself for helmCharts; hand it the same helm we use.
  if (config.kustomize.enableHelm) args.push('--enable-helm', `--helm-command=${config.tools.helm}`);
  return args;
}

/**
 * Runs kustomize and returns its output as one stream. secretGenerator
 * literals are redacted from its stderr: kustomize echoes a malformed one.
 */
export async function renderKustomize(config: PluginConfig, signal: AbortSignal): Promise<RenderedStream[]> {
  const text = await runProcess({
    tool: 'kustomize',
    command: config.tools.kustomize,
    args: kustomizeArgs(config),
    display: 'kustomize build',
    cwd: config.appDir,
    env: config.environment,
    signal,
    overrideVariable: 'DRIFTLESS_KUSTOMIZE',
    redact: await secretGeneratorLiterals(config.appDir, config.repoRoot),
  });
  return [{ label: KUSTOMIZE_LABEL, text, rendered: true }];
}
