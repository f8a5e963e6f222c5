import { createRequire } from 'node:module';

/**
 * The `yaml` package, loaded on first use. Most renders never need it (the
 * fast reader and the identity skim read them), and loading it is a good
 * part of the start-up of every `driftless generate` (Argo CD starts one per
 * render). `require` keeps the load synchronous for the synchronous readers,
 * and caches the module, so every later call is a lookup.
 */
export function loadYaml(): typeof import('yaml') {
  return createRequire(import.meta.url)('yaml') as typeof import('yaml');
}
