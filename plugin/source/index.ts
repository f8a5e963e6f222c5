/**
 * The source stage: turns the app (a directory, a kustomization, a chart, or
 * stdin) into text streams for the document stage, in a deterministic order.
 */
import type { PluginConfig } from '../config.ts';
import { detectSourceType } from './detect.ts';
import type { DetectedSourceType } from './detect.ts';
import type { RenderedStream, SourceIo } from './types.ts';

export type { RenderedStream, SourceIo } from './types.ts';
export { detectSourceType } from './detect.ts';
export type { DetectedSourceType } from './detect.ts';

/**
 * Renders the app. Throws RenderError (renderer failed, unreadable source),
 * UsageError (bad app path or values file) or BudgetExceededError (`signal`
 * aborted; running renderers are stopped first).
 */
export async function renderSource(
  config: PluginConfig,
  signal: AbortSignal,
  io: SourceIo = { stdin: process.stdin },
): Promise<RenderedStream[]> {
  const type = await resolveSourceType(config);
  // Each renderer is loaded only when chosen: a process renders one source
  // type, and the Helm and Kustomize modules pull in the `yaml` package, whose
  // loading would otherwise delay every start (Argo CD starts one per render).
  switch (type) {
    // Read in this process, and mostly waiting on I/O: the rest of the plugin may load meanwhile.
    case 'stdin':
      io.onRendererStarted?.();
      return (await import('./stdin.ts')).renderStdin(io, signal);
    case 'kustomize':
      return (await import('./kustomize.ts')).renderKustomize(config, signal, io.onRendererStarted);
    case 'helm':
      return (await import('./helm.ts')).renderHelm(config, signal, io.onRendererStarted);
    case 'directory':
      io.onRendererStarted?.();
      return (await import('./directory.ts')).renderDirectory(config, signal);
  }
}

/** The concrete source type: `auto` resolved by Argo CD's detection order. */
export async function resolveSourceType(config: PluginConfig): Promise<DetectedSourceType | 'stdin'> {
  return config.sourceType === 'auto' ? detectSourceType(config.appDir) : config.sourceType;
}
