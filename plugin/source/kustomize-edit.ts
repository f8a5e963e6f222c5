/**
 * Argo CD's Kustomize overrides (`spec.source.kustomize`: namePrefix, images,
 * commonLabels, patches, components, …), applied as Argo CD's
 * `util/kustomize` Build applies them: `kustomize edit` commands in the app
 * directory, in Argo CD's order, then `kustomize build`. Argo CD edits its own
 * per-request checkout; the plugin edits a temporary copy, so a local run never
 * changes the user's files.
 */
import { cp, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isRecord } from '../../core/index.ts';
import { isInside } from '../config.ts';
import type { KustomizeOptions, PluginConfig } from '../config.ts';
import { RenderError, UsageError } from '../errors.ts';
import { envsubst } from './envsubst.ts';
import { loadYaml } from '../yaml/lazy-yaml.ts';
import { runProcess } from './process.ts';

/** Kustomize's file names, in its lookup order (as Argo CD's findKustomizeFile). */
const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];

/** Whether any override is set, i.e. whether the app must be copied and edited before the build. */
export function hasOverrides(options: KustomizeOptions): boolean {
  return options.namePrefix !== '' || options.nameSuffix !== '' || options.images.length > 0 || options.replicas.length > 0 ||
    Object.keys(options.commonLabels).length > 0 || Object.keys(options.commonAnnotations).length > 0 ||
    options.namespace !== '' || options.patches !== '' || options.components.length > 0;
}

/**
 * The `kustomize edit` argv lists for the overrides, in Argo CD's order (nameprefix, namesuffix, image,
 * replicas, label, annotation, namespace; patches and components are applied separately, in that order,
 * after these). Label and annotation values get `${ARGOCD_APP_*}` substituted where Argo CD substitutes
 * them. Positional values follow `--`, so none can be read as a flag. Exported for tests.
 */
export function kustomizeEditCommands(config: PluginConfig): string[][] {
  const options = config.kustomize;
  const environment = config.environment;
  const commands: string[][] = [];
  if (options.namePrefix !== '') commands.push(['edit', 'set', 'nameprefix', '--', options.namePrefix]);
  if (options.nameSuffix !== '') commands.push(['edit', 'set', 'namesuffix', '--', options.nameSuffix]);
  if (options.images.length > 0) {
    commands.push(['edit', 'set', 'image', '--', ...options.images.map((image) => envsubst(image, environment))]);
  }
  if (options.replicas.length > 0) {
    commands.push(['edit', 'set', 'replicas', '--', ...options.replicas.map(({ name, count }) => `${name}=${count}`)]);
  }
  const pairs = (map: Readonly<Record<string, string>>, substitute: boolean): string[] =>
    Object.keys(map).sort().map((key) => `${key}:${substitute ? envsubst(map[key] as string, environment) : map[key]}`);
  if (Object.keys(options.commonLabels).length > 0) {
    commands.push([
      'edit', 'add', 'label',
      ...(options.forceCommonLabels ? ['--force'] : []),
      ...(options.labelWithoutSelector ? ['--without-selector'] : []),
      ...(options.labelIncludeTemplates ? ['--include-templates'] : []),
      '--', ...pairs(options.commonLabels, true),
    ]);
  }
  if (Object.keys(options.commonAnnotations).length > 0) {
    commands.push([
      'edit', 'add', 'annotation',
      ...(options.forceCommonAnnotations ? ['--force'] : []),
      '--', ...pairs(options.commonAnnotations, options.commonAnnotationsEnvsubst),
    ]);
  }
  if (options.namespace !== '') commands.push(['edit', 'set', 'namespace', '--', options.namespace]);
  return commands;
}

/** A copy of the app to edit and build in, and how to remove it. */
export interface EditedCopy {
  /** The copied app directory, where the edited kustomization is. */
  readonly appDir: string;
  readonly dispose: () => Promise<void>;
}

/**
 * The temporary directory of the render's environment, as `os.tmpdir()` picks it from a process's own
 * (TMPDIR, else the system's): the render server runs each request with the request's environment.
 */
function temporaryDirectory(environment: Readonly<Record<string, string | undefined>>): string {
  const given = environment['TMPDIR'];
  return given === undefined || given === '' ? tmpdir() : given.replace(/(.)\/+$/, '$1');
}

/**
 * Copies the tree the app lives in (so `../base` and components still resolve), applies the overrides
 * there, and returns the copied app directory. The tree is the repository root when Argo CD gave one
 * (ARGOCD_APP_SOURCE_PATH), else, on a laptop, the enclosing Git checkout (without `.git`), else the app.
 */
export async function editedCopy(config: PluginConfig, signal: AbortSignal, redact: readonly string[]): Promise<EditedCopy> {
  // Checked before anything is copied: a bad parameter is a usage error, not a half-done render.
  const patches = parsePatches(config);
  const root = await copyRoot(config);
  const temp = await mkdtemp(path.join(temporaryDirectory(config.environment), 'driftless-kustomize-'));
  const dispose = (): Promise<void> => rm(temp, { recursive: true, force: true });
  try {
    const copyOfRoot = path.join(temp, 'repo');
    await cp(root, copyOfRoot, {
      recursive: true,
      verbatimSymlinks: true,
      filter: (source) => path.basename(source) !== '.git',
    });
    const appDir = path.join(copyOfRoot, path.relative(root, config.appDir));
    const edit = (args: readonly string[], display: string): Promise<Buffer> => runProcess({
      tool: 'kustomize',
      command: config.tools.kustomize,
      args,
      display,
      cwd: appDir,
      env: config.environment,
      signal,
      overrideVariable: 'DRIFTLESS_KUSTOMIZE',
      redact,
    });
    for (const args of kustomizeEditCommands(config)) {
      await edit(args, `kustomize ${args.slice(0, args.indexOf('--')).join(' ')}`);
    }
    if (patches.length > 0) await appendPatches(appDir, patches);
    const components = await presentComponents(config);
    if (components.length > 0) await edit(['edit', 'add', 'component', '--', ...components], 'kustomize edit add component');
    return { appDir, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

async function copyRoot(config: PluginConfig): Promise<string> {
  if (config.repoRoot !== config.appDir) return config.repoRoot;
  for (let dir = config.appDir; ; dir = path.dirname(dir)) {
    if (await exists(path.join(dir, '.git'))) return dir;
    if (path.dirname(dir) === dir) return config.appDir;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * The components to add: all of them, or under ignore-missing-components those that exist inside the
 * repository (Argo CD stats each through an os.Root of the repository, so one outside counts as missing).
 */
async function presentComponents(config: PluginConfig): Promise<string[]> {
  const { components, ignoreMissingComponents } = config.kustomize;
  if (!ignoreMissingComponents) return [...components];
  const present: string[] = [];
  for (const component of components) {
    const resolved = path.resolve(config.appDir, component);
    if (isInside(resolved, config.repoRoot) && (await exists(resolved))) present.push(component);
  }
  return present;
}

/** The fields of Argo CD's KustomizePatch and KustomizeSelector; anything else would be pruned by its API. */
const PATCH_FIELDS = ['path', 'patch', 'target', 'options'];
const TARGET_FIELDS = ['group', 'version', 'kind', 'name', 'namespace', 'annotationSelector', 'labelSelector'];

/**
 * The patches parameter as Argo CD's typed KustomizePatch list marshals it: known fields only, empty
 * strings and an empty options map left out (`omitempty`). An unknown field is an error rather than
 * silently dropped, so a typo does not vanish.
 */
function parsePatches(config: PluginConfig): Record<string, unknown>[] {
  const text = config.kustomize.patches;
  if (text === '') return [];
  const from = config.provenance['patches'] ?? 'default';
  const fail = (problem: string, cause?: unknown): UsageError =>
    new UsageError(`parameter patches (from ${from}) ${problem}`, cause === undefined ? undefined : { cause });
  let parsed: unknown;
  try {
    // logLevel 'error': yaml's warnings would be printed by process.emitWarning, quoting the file's lines.
    parsed = loadYaml().parse(text, { prettyErrors: false, logLevel: 'error' });
  } catch (error) {
    throw fail(`is not valid YAML: ${(error as Error).message.split('\n')[0]}`, error);
  }
  if (!Array.isArray(parsed)) throw fail('must be a YAML or JSON list of patches');
  return parsed.map((item: unknown, index) => {
    if (!isRecord(item)) throw fail(`[${index}] must be an object with path or patch, and optionally target and options`);
    const patch: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(item)) {
      if (!PATCH_FIELDS.includes(key)) throw fail(`[${index}] has an unknown field ${JSON.stringify(key)}; known: ${PATCH_FIELDS.join(', ')}`);
      if (value === null || value === undefined) continue;
      if (key === 'path' || key === 'patch') {
        if (typeof value !== 'string') throw fail(`[${index}].${key} must be a string`);
        if (value !== '') patch[key] = value;
      } else if (key === 'target') {
        if (!isRecord(value)) throw fail(`[${index}].target must be an object`);
        const target: Record<string, string> = {};
        for (const [field, selector] of Object.entries(value)) {
          if (!TARGET_FIELDS.includes(field)) throw fail(`[${index}].target has an unknown field ${JSON.stringify(field)}; known: ${TARGET_FIELDS.join(', ')}`);
          if (typeof selector !== 'string') throw fail(`[${index}].target.${field} must be a string`);
          if (selector !== '') target[field] = selector;
        }
        patch['target'] = target;
      } else {
        if (!isRecord(value) || !Object.values(value).every((flag) => typeof flag === 'boolean')) {
          throw fail(`[${index}].options must be a map of booleans`);
        }
        if (Object.keys(value).length > 0) patch['options'] = value;
      }
    }
    return patch;
  });
}

/**
 * Appends the patches to the kustomization's `patches` list (created when absent), as Argo CD does; there is
 * no `kustomize edit` command for patches. The rest of the file is kept as written.
 */
async function appendPatches(appDir: string, patches: readonly Record<string, unknown>[]): Promise<void> {
  let file: string | undefined;
  for (const name of KUSTOMIZATION_FILES) {
    if (await exists(path.join(appDir, name))) {
      file = path.join(appDir, name);
      break;
    }
  }
  if (file === undefined) throw new RenderError('applying parameter patches: kustomization file not found in the app directory');
  const { isMap, isSeq, parseDocument } = loadYaml();
  const document = parseDocument(await readFile(file, 'utf8'), { prettyErrors: false });
  if (document.errors.length > 0 || !isMap(document.contents)) {
    throw new RenderError(`applying parameter patches: ${path.basename(file)} is not a YAML mapping`);
  }
  const existing = document.get('patches', true);
  if (existing === undefined || existing === null) {
    document.set('patches', document.createNode(patches));
  } else if (isSeq(existing)) {
    for (const patch of patches) existing.add(document.createNode(patch));
  } else {
    throw new RenderError(`applying parameter patches: the "patches" field of ${path.basename(file)} is not a list`);
  }
  await writeFile(file, document.toString());
}
