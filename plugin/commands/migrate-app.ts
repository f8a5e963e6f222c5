/**
 * `driftless migrate-app [FILE|-]`: rewrites an Argo CD Application whose
 * source is native Helm or Kustomize to the equivalent Driftless plugin source,
 * `plugin: {name: driftless-v1, parameters: [...]}`. Only the text of the
 * `helm:` or `kustomize:` entry of each migrated source is replaced, spliced by
 * its source range: the rest of the file (comments, spacing, line breaks, other
 * documents) stays byte for byte, and a JSON file stays JSON. Fields the plugin
 * cannot carry over with the same meaning are refused, all of them at once,
 * each with its document, path and reason, instead of being silently dropped.
 */
import { readFile } from 'node:fs/promises';
import { Document, isMap, isScalar, isSeq, parseAllDocuments } from 'yaml';
import type { Node, Pair, YAMLMap } from 'yaml';
import type { PluginConfig } from '../config.ts';
import { InvalidInputError, UsageError } from '../errors.ts';
import { PARSE_OPTIONS } from '../yaml/documents.ts';
import type { CommandResult } from './generate.ts';

/** The plugin name Applications select (manifests/plugin/plugin.yaml: metadata.name + "-" + spec.version). */
export const PLUGIN_NAME = 'driftless-v1';

/** One Argo CD plugin parameter, as `spec.source.plugin.parameters[]` holds it. */
export type PluginParameter =
  | { readonly name: string; readonly string: string }
  | { readonly name: string; readonly array: readonly string[] }
  | { readonly name: string; readonly map: Readonly<Record<string, string>> };

/** What migrating a stream did: the new text and notes for stderr. */
export interface Migration {
  readonly text: string;
  readonly notes: readonly string[];
}

/** The command: reads the file (or stdin for `-`) named in the config and prints the migrated stream. */
export async function migrateAppCommand(config: PluginConfig, stdin: AsyncIterable<Buffer | string>): Promise<CommandResult> {
  const label = config.migrateInput === '-' ? '<stdin>' : config.migrateInput;
  let text: string;
  try {
    text = config.migrateInput === '-' ? await readStdin(stdin) : await readFile(config.migrateInput, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${label}: ${(error as Error).message}`, { cause: error });
  }
  const { text: stdout, notes } = migrateApplications(text, label);
  return { stdout, stderr: notes };
}

async function readStdin(stdin: AsyncIterable<Buffer | string>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Migrates every Application in a YAML (or JSON) stream. Only the text of each
 * migrated `helm:`/`kustomize:` entry changes: everything else — other
 * documents, comments, spacing, line breaks — stays byte for byte, and a JSON
 * Application stays JSON. Throws InvalidInputError (exit 4) for unreadable YAML
 * or no Application, UsageError (exit 2) listing every field of the stream
 * that cannot be carried over, or when no source needs migrating.
 */
export function migrateApplications(text: string, label = '<input>'): Migration {
  // Read as Argo CD reads the Application (YAML 1.1 the Go way): `skipCrds: yes` is true there, and so here.
  const documents = parseAllDocuments(text, PARSE_OPTIONS);
  if (!Array.isArray(documents)) throw new InvalidInputError({ file: label }, 'no YAML documents');
  const notes: string[] = [];
  const refusals: string[] = [];
  const edits: Edit[] = [];
  const style = textStyle(text);
  let applications = 0;
  let migrated = 0;
  for (const [index, document] of documents.entries()) {
    const [error] = document.errors;
    // Numbered from #0, as generate numbers documents.
    if (error !== undefined) throw new InvalidInputError({ file: label, document: index }, `not valid YAML: ${error.message.split('\n')[0]}`);
    const root = document.contents;
    if (!isMap(root) || scalarText(root.get('kind', true)) !== 'Application' || !String(scalarText(root.get('apiVersion', true)) ?? '').startsWith('argoproj.io/')) continue;
    applications++;
    const spec = root.get('spec', true);
    if (!isMap(spec)) throw new InvalidInputError({ file: label, document: index }, 'the Application has no spec mapping');
    const source = spec.get('source', true);
    const sources = spec.get('sources', true);
    const targets: { node: YAMLMap; where: string }[] = [];
    if (isMap(source)) targets.push({ node: source, where: 'spec.source' });
    if (isSeq(sources)) {
      sources.items.forEach((item, itemIndex) => {
        if (isMap(item)) targets.push({ node: item, where: `spec.sources[${itemIndex}]` });
      });
    }
    for (const { node, where } of targets) {
      const found: string[] = [];
      const outcome = migrateSource(node, where, (reason) => found.push(reason), (note) => notes.push(`${label}#${index} ${note}`));
      refusals.push(...found.map((reason) => `#${index} ${reason}`));
      if (outcome === undefined || found.length > 0) continue;
      migrated++;
      const oneLine = node.range !== null && node.range !== undefined && !/[\r\n]/.test(text.slice(node.range[0], node.range[1]));
      edits.push(pluginEdit(text, outcome.pair, outcome.plugin, { json: root.flow === true, flow: node.flow === true, oneLine, style }));
    }
  }
  if (applications === 0) throw new InvalidInputError({ file: label }, 'no Argo CD Application (apiVersion argoproj.io/v1alpha1, kind Application) found');
  if (refusals.length > 0) {
    throw new UsageError(`${label}: cannot be migrated, nothing was written (${refusals.length} problem${refusals.length === 1 ? '' : 's'}):\n  ${refusals.join('\n  ')}`);
  }
  if (migrated === 0) {
    throw new UsageError(`${label}: no source with a helm or kustomize block to migrate${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`);
  }
  return { text: applyEdits(text, edits), notes };
}

/** One replacement in the input text: `[start, end)` becomes `text`. */
interface Edit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** How the input writes what the edits add: its line break and, for JSON, its indentation unit. */
interface TextStyle {
  readonly newline: '\n' | '\r\n';
  /** The indentation of the first nested line, or '' when the JSON is on one line. */
  readonly jsonIndent: string;
}

function textStyle(text: string): TextStyle {
  const newline = text.includes('\r\n') ? '\r\n' : '\n';
  // The first line that starts with whitespace and holds something: its whitespace is one level.
  const indent = /\n([ \t]+)\S/.exec(text)?.[1] ?? '';
  return { newline, jsonIndent: indent };
}

/** The edit that replaces the `helm:`/`kustomize:` entry `pair` with `plugin: <plugin>`, written as its surroundings are. */
function pluginEdit(text: string, pair: Pair, plugin: Record<string, unknown>, context: { json: boolean; flow: boolean; oneLine: boolean; style: TextStyle }): Edit {
  const key = pair.key as Node;
  const value = pair.value as Node | null;
  const start = key.range?.[0] ?? 0;
  let end = value?.range?.[1] ?? key.range?.[1] ?? start;
  // A block collection's range ends after its last line break; the break belongs to what follows.
  while (end > start && /[\r\n]/.test(text[end - 1] as string)) end--;
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  const { newline, jsonIndent } = context.style;
  let inserted: string;
  if (context.json) {
    // JSON in, JSON out: the same indentation unit, nested lines under the key's line.
    const lineIndent = /^[ \t]*/.exec(text.slice(lineStart, start))?.[0] ?? '';
    // A source written on one line gets the plugin on that line too.
    const indent = context.oneLine || jsonIndent === '' ? undefined : jsonIndent;
    const body = JSON.stringify(plugin, null, indent).replaceAll('\n', `\n${lineIndent}`);
    inserted = `"plugin":${jsonIndent === '' ? '' : ' '}${body}`;
  } else if (context.flow) {
    // Inside a flow mapping a block cannot start: one line of flow.
    const flow = new Document(plugin, { version: '1.1' }).toString({ collectionStyle: 'flow', flowCollectionPadding: false, lineWidth: 0 });
    inserted = `plugin: ${flow.replace(/\n$/, '')}`;
  } else {
    // YAML 1.1 quoting, so a value such as `yes` or `on` stays a string for Argo CD's Go reader.
    const block = new Document({ plugin }, { version: '1.1' }).toString({ flowCollectionPadding: false }).replace(/\n$/, '');
    inserted = block.replaceAll('\n', `\n${' '.repeat(start - lineStart)}`);
  }
  return { start, end, text: inserted.replaceAll('\n', newline) };
}

function applyEdits(text: string, edits: readonly Edit[]): string {
  let out = text;
  for (const edit of [...edits].sort((a, b) => b.start - a.start)) out = `${out.slice(0, edit.start)}${edit.text}${out.slice(edit.end)}`;
  return out;
}

/** A migrated source: the entry to replace and the plugin source that replaces it. */
interface SourceMigration {
  readonly pair: Pair;
  readonly plugin: Record<string, unknown>;
}

/**
 * Works out one source's plugin source. Every field that cannot be carried over
 * is passed to `reject` (all of them, not the first only); a source left as it
 * is returns undefined, with a note when the user should know why.
 */
function migrateSource(source: YAMLMap, where: string, reject: (reason: string) => void, note: (text: string) => void): SourceMigration | undefined {
  const has = (key: string): boolean => source.has(key);
  if (has('plugin')) return undefined;
  const kinds = ['helm', 'kustomize', 'directory'].filter(has);
  if (kinds.length > 1) {
    reject(`${where}: has both ${kinds.join(' and ')}; Argo CD refuses such a source too`);
    return undefined;
  }
  if (has('chart')) {
    if (!has('helm')) note(`${where} is a chart from a Helm repository (chart:); left as it is`);
    else reject(`${where}.chart: a chart from a Helm repository cannot be carried over: the plugin renders a path in Git (vendor the chart into the repository)`);
    return undefined;
  }
  if (kinds[0] === 'directory') {
    note(`${where} is a directory source; left as it is`);
    return undefined;
  }
  const kind = kinds[0];
  if (kind === undefined) {
    if (has('path')) note(`${where} has no helm or kustomize block; left as it is (Argo CD detects its type; add plugin: {name: ${PLUGIN_NAME}} if it is Helm or Kustomize)`);
    return undefined;
  }
  const block = source.get(kind, true);
  const blockWhere = `${where}.${kind}`;
  const check = (step: () => void): void => {
    try {
      step();
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      reject(error.message);
    }
  };
  let parameters: PluginParameter[] = [];
  if (block === null || block === undefined || (isScalar(block) && block.value === null)) parameters = [];
  else if (!isMap(block)) reject(`${blockWhere}: must be a mapping`);
  else parameters = kind === 'helm' ? helmParameters(block, blockWhere, check, note) : kustomizeParameters(block, blockWhere, check);
  const pair = source.items.find((item) => scalarText(item.key as Node) === kind) as Pair;
  // Pinned, so an app whose path holds both a kustomization and Chart.yaml renders as it did before.
  return { pair, plugin: { name: PLUGIN_NAME, parameters: [{ name: 'source-type', string: kind }, ...parameters] } };
}

/** A field that cannot be carried over: thrown by the field's reader, collected by `check` so every one is reported. */
class Refusal extends Error {
  override readonly name = 'Refusal';
}

/** Runs one field's step, collecting its refusal instead of stopping at it. */
type Check = (step: () => void) => void;

function refuse(where: string, reason: string): never {
  throw new Refusal(`${where}: ${reason}`);
}

/** A field's reader: the value as JSON plus its node, for YAML text. */
type Fields = Map<string, { value: unknown; node: unknown }>;

function fieldsOf(block: YAMLMap): Fields {
  const fields: Fields = new Map();
  for (const item of block.items) {
    const key = scalarText(item.key);
    if (key === undefined) continue;
    const node = item.value;
    const value = node !== null && typeof node === 'object' && 'toJSON' in node ? (node as { toJSON(): unknown }).toJSON() : node;
    fields.set(key, { value, node });
  }
  return fields;
}

/**
 * A path Argo CD would read from another source of a multi-source Application (`$values/x.yaml`): `$name/`
 * where name is not a build-environment variable, which the plugin (and Argo CD, for one source) would
 * expand to nothing.
 */
function checkNotRefSource(where: string, text: string): void {
  const match = /^\$([A-Za-z0-9_]+)(\/|$)/.exec(text);
  if (match !== null && !match[1]?.startsWith('ARGOCD_APP_')) {
    refuse(where, `refers to another source ($${match[1]}): the plugin reads files of its own source only`);
  }
}

/**
 * A field Argo CD types as a string. A number or a boolean there (`yes`, `on`, `1.0` unquoted, as Go's
 * YAML 1.1 reads them) is refused, as the API server refuses it, rather than turned into other text.
 */
function asText(where: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') {
    return refuse(where, `must be a string, and Argo CD reads this value as a ${typeof value} (YAML 1.1: yes/no/on/off are booleans): quote it`);
  }
  return refuse(where, 'must be a string');
}

function asBool(where: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  return refuse(where, 'must be true or false');
}

function asStrings(where: string, value: unknown): string[] {
  if (!Array.isArray(value)) return refuse(where, 'must be a list');
  return value.map((item, index) => asText(`${where}[${index}]`, item));
}

function asStringRecord(where: string, value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return refuse(where, 'must be a map');
  const result: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value)) result[key] = asText(`${where}.${key}`, entry);
  return result;
}

/** YAML text of a node (comments and scalar styles kept), for a string parameter holding a YAML object or list. */
function yamlText(node: unknown): string {
  const document = new Document();
  document.contents = node as Node;
  return document.toString({ flowCollectionPadding: false });
}

const HELM_FIELDS = [
  'releaseName', 'namespace', 'valueFiles', 'values', 'valuesObject', 'parameters', 'fileParameters',
  'ignoreMissingValueFiles', 'skipCrds', 'skipTests', 'skipSchemaValidation', 'kubeVersion', 'apiVersions',
  'version', 'passCredentials',
];

function helmParameters(block: YAMLMap, where: string, check: Check, note: (text: string) => void): PluginParameter[] {
  const fields = fieldsOf(block);
  for (const key of fields.keys()) {
    check(() => {
      if (!HELM_FIELDS.includes(key)) refuse(`${where}.${key}`, 'is not a field the plugin knows how to carry over');
    });
  }
  const out: PluginParameter[] = [];
  const get = (key: string): unknown => fields.get(key)?.value;
  const text = (key: string, name: string): void => check(() => {
    const value = get(key);
    if (value === undefined || value === null || value === '') return;
    out.push({ name, string: asText(`${where}.${key}`, value) });
  });
  const flag = (key: string, name: string): void => check(() => {
    const value = get(key);
    if (value === undefined || value === null) return;
    if (asBool(`${where}.${key}`, value)) out.push({ name, string: 'true' });
  });

  check(() => {
    const version = get('version');
    const versionText = version === undefined || version === null ? '' : asText(`${where}.version`, version);
    if (versionText !== '' && !/^v?3$/.test(versionText)) {
      refuse(`${where}.version`, `Helm ${versionText} is not available: the plugin renders with its own pinned helm`);
    }
    // Argo CD's only Helm is 3; the plugin's is 4, which renders Helm 3 charts but is not Helm 3: say so, do not drop it silently.
    if (versionText !== '') note(`${where}.version: ${versionText} dropped: the plugin renders with its pinned Helm 4, which reads Helm 3 charts but may differ in details; compare the rendered output before switching`);
  });
  check(() => {
    if (get('passCredentials') === true) {
      refuse(`${where}.passCredentials`, 'the plugin never fetches from Helm repositories, so it has no credentials to pass; vendor the dependencies (charts/)');
    }
  });
  text('releaseName', 'release-name');
  text('namespace', 'namespace');
  check(() => {
    const valueFiles = get('valueFiles');
    if (valueFiles === undefined || valueFiles === null) return;
    const files = asStrings(`${where}.valueFiles`, valueFiles);
    let refused = false;
    files.forEach((file, index) => check(() => {
      const at = `${where}.valueFiles[${index}]`;
      try {
        checkNotRefSource(at, file);
        if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(file)) refuse(at, 'is a URL: the plugin reads values files from the repository only');
      } catch (error) {
        refused = true;
        throw error;
      }
    }));
    if (!refused && files.length > 0) out.push({ name: 'values-files', array: files });
  });
  flag('ignoreMissingValueFiles', 'ignore-missing-value-files');
  text('values', 'values');
  check(() => {
    const valuesObject = fields.get('valuesObject');
    if (valuesObject === undefined || valuesObject.value === null) return;
    if (typeof valuesObject.value !== 'object' || Array.isArray(valuesObject.value)) refuse(`${where}.valuesObject`, 'must be a mapping');
    out.push({ name: 'values-object', string: yamlText(valuesObject.node) });
  });
  check(() => {
    const parameters = get('parameters');
    if (parameters === undefined || parameters === null) return;
    if (!Array.isArray(parameters)) refuse(`${where}.parameters`, 'must be a list');
    const set: Record<string, string> = {};
    const setString: Record<string, string> = {};
    parameters.forEach((item: unknown, index) => check(() => {
      const at = `${where}.parameters[${index}]`;
      if (typeof item !== 'object' || item === null) refuse(at, 'must be {name, value, forceString}');
      const { name, value, forceString, ...rest } = item as Record<string, unknown>;
      const extra = Object.keys(rest)[0];
      if (extra !== undefined) refuse(`${at}.${extra}`, 'is not a field of a Helm parameter');
      const key = asText(`${at}.name`, name ?? '');
      if (key === '') refuse(`${at}.name`, 'is empty');
      const literal = value === undefined || value === null ? '' : asText(`${at}.value`, value);
      // Argo CD keeps --set and --set-string in two maps, so a later parameter with the same name wins, as here.
      const force = forceString === undefined || forceString === null ? false : asBool(`${at}.forceString`, forceString);
      (force ? setString : set)[key] = literal;
    }));
    if (Object.keys(set).length > 0) out.push({ name: 'set', map: set });
    if (Object.keys(setString).length > 0) out.push({ name: 'set-string', map: setString });
  });
  check(() => {
    const fileParameters = get('fileParameters');
    if (fileParameters === undefined || fileParameters === null) return;
    if (!Array.isArray(fileParameters)) refuse(`${where}.fileParameters`, 'must be a list');
    const files: Record<string, string> = {};
    fileParameters.forEach((item: unknown, index) => check(() => {
      const at = `${where}.fileParameters[${index}]`;
      if (typeof item !== 'object' || item === null) refuse(at, 'must be {name, path}');
      const { name, path, ...rest } = item as Record<string, unknown>;
      const extra = Object.keys(rest)[0];
      if (extra !== undefined) refuse(`${at}.${extra}`, 'is not a field of a Helm file parameter');
      const filePath = asText(`${at}.path`, path ?? '');
      checkNotRefSource(`${at}.path`, filePath);
      files[asText(`${at}.name`, name ?? '')] = filePath;
    }));
    if (Object.keys(files).length > 0) out.push({ name: 'file-parameters', map: files });
  });
  flag('skipCrds', 'skip-crds');
  flag('skipTests', 'skip-tests');
  flag('skipSchemaValidation', 'skip-schema-validation');
  text('kubeVersion', 'kube-version');
  check(() => {
    const apiVersions = get('apiVersions');
    if (apiVersions === undefined || apiVersions === null) return;
    const list = asStrings(`${where}.apiVersions`, apiVersions);
    if (list.length > 0) out.push({ name: 'api-versions', array: list });
  });
  return out;
}

const KUSTOMIZE_FIELDS = [
  'namePrefix', 'nameSuffix', 'images', 'replicas', 'commonLabels', 'forceCommonLabels', 'labelWithoutSelector',
  'labelIncludeTemplates', 'commonAnnotations', 'commonAnnotationsEnvsubst', 'forceCommonAnnotations', 'namespace',
  'patches', 'components', 'ignoreMissingComponents', 'kubeVersion', 'apiVersions', 'version',
];

function kustomizeParameters(block: YAMLMap, where: string, check: Check): PluginParameter[] {
  const fields = fieldsOf(block);
  for (const key of fields.keys()) {
    check(() => {
      if (!KUSTOMIZE_FIELDS.includes(key)) refuse(`${where}.${key}`, 'is not a field the plugin knows how to carry over');
    });
  }
  const out: PluginParameter[] = [];
  const get = (key: string): unknown => fields.get(key)?.value;
  const present = (key: string): boolean => get(key) !== undefined && get(key) !== null;
  const text = (key: string, name: string): void => check(() => {
    if (present(key) && get(key) !== '') out.push({ name, string: asText(`${where}.${key}`, get(key)) });
  });
  const flag = (key: string, name: string): void => check(() => {
    if (present(key) && asBool(`${where}.${key}`, get(key))) out.push({ name, string: 'true' });
  });
  const list = (key: string, name: string): void => check(() => {
    if (!present(key)) return;
    const items = asStrings(`${where}.${key}`, get(key));
    if (items.length > 0) out.push({ name, array: items });
  });
  const map = (key: string, name: string): void => check(() => {
    if (!present(key)) return;
    const record = asStringRecord(`${where}.${key}`, get(key));
    if (Object.keys(record).length > 0) out.push({ name, map: record });
  });

  check(() => {
    if (present('version') && get('version') !== '') {
      refuse(`${where}.version`, 'the plugin renders with its own pinned kustomize; remove the field (or keep the native source)');
    }
  });
  text('namePrefix', 'name-prefix');
  text('nameSuffix', 'name-suffix');
  list('images', 'images');
  check(() => {
    if (!present('replicas')) return;
    const replicas = get('replicas');
    if (!Array.isArray(replicas)) refuse(`${where}.replicas`, 'must be a list of {name, count}');
    const counts: Record<string, string> = {};
    replicas.forEach((item: unknown, index) => check(() => {
      const at = `${where}.replicas[${index}]`;
      if (typeof item !== 'object' || item === null) refuse(at, 'must be {name, count}');
      const { name, count } = item as Record<string, unknown>;
      // An int or a string (intstr.IntOrString in Argo CD).
      const text = typeof count === 'number' ? String(count) : asText(`${at}.count`, count ?? '');
      if (!/^[+-]?\d+$/.test(text.trim())) refuse(`${at}.count`, 'must be an integer');
      counts[asText(`${at}.name`, name ?? '')] = text.trim();
    }));
    if (Object.keys(counts).length > 0) out.push({ name: 'replicas', map: counts });
  });
  map('commonLabels', 'common-labels');
  flag('forceCommonLabels', 'force-common-labels');
  flag('labelWithoutSelector', 'label-without-selector');
  flag('labelIncludeTemplates', 'label-include-templates');
  map('commonAnnotations', 'common-annotations');
  flag('commonAnnotationsEnvsubst', 'common-annotations-envsubst');
  flag('forceCommonAnnotations', 'force-common-annotations');
  text('namespace', 'kustomize-namespace');
  check(() => {
    if (!present('patches')) return;
    if (!Array.isArray(get('patches'))) refuse(`${where}.patches`, 'must be a list');
    if ((get('patches') as unknown[]).length > 0) out.push({ name: 'patches', string: yamlText(fields.get('patches')?.node) });
  });
  list('components', 'components');
  flag('ignoreMissingComponents', 'ignore-missing-components');
  text('kubeVersion', 'kube-version');
  list('apiVersions', 'api-versions');
  return out;
}

function scalarText(node: unknown): string | undefined {
  if (!isScalar(node)) return undefined;
  return typeof node.value === 'string' ? node.value : undefined;
}
