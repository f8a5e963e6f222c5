/**
 * Which renderer an app needs, in Argo CD's order: a kustomization file wins
 * over Chart.yaml, and anything else is a plain directory.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';

/** The file names kustomize accepts for a kustomization, as Argo CD checks them. */
export const KUSTOMIZATION_FILES = Object.freeze(['kustomization.yaml', 'kustomization.yml', 'Kustomization']);

/** The source types `auto` resolves to. */
export type DetectedSourceType = 'kustomize' | 'helm' | 'directory';

/** Looks at the app directory's own files only (not subdirectories), as Argo CD does. */
export async function detectSourceType(appDir: string): Promise<DetectedSourceType> {
  for (const name of KUSTOMIZATION_FILES) {
    if (await exists(path.join(appDir, name))) return 'kustomize';
  }
  if (await exists(path.join(appDir, 'Chart.yaml'))) return 'helm';
  return 'directory';
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}
