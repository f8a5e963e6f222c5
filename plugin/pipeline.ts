import { readHashKeyFile } from '../cli/hash-key.ts';
import { expandLists, planWorkloads, toManifest } from '../core/index.ts';
import type { HashKey, Manifest, OutOfBandIndex, WorkloadPlan } from '../core/index.ts';
import type { PluginConfig } from './config.ts';
import { DEFAULT_LIMITS, parseStream } from './yaml/documents.ts';
import type { DocumentLimits, ParsedDocument, TextStream } from './yaml/documents.ts';
import { InvalidInputError } from './errors.ts';
import { readOutOfBand } from './out-of-band.ts';

/**
 * The stages `generate` and `explain` share: render, parse with limits,
 * expand Lists, identify objects, plan. Pure data out; the commands decide
 * what to print.
 */

/** One Kubernetes object of the render and where it sits in its document. */
export interface LocatedObject {
  readonly manifest: Manifest;
  readonly document: ParsedDocument;
  /** Path from the document root to the object: `[]`, or `['items', 3]` inside a List. */
  readonly path: readonly (string | number)[];
}

/** Everything a command needs to decide its output. */
export interface Analysis {
  readonly documents: readonly ParsedDocument[];
  readonly objects: readonly LocatedObject[];
  readonly plans: readonly WorkloadPlan[];
  /** Whether an HMAC key was configured. */
  readonly keyed: boolean;
  /** The app's out-of-band file (ADR 0013), when it has one. */
  readonly outOfBand: OutOfBandIndex | undefined;
  /** Lines for stderr, each starting with `warning:`. Never a Secret value. */
  readonly warnings: readonly string[];
}

/** The stage that turns the app into text; `renderSource` in production, a stub in unit tests. */
export type Render = (config: PluginConfig, signal: AbortSignal) => Promise<readonly TextStream[]>;

/** Runs every shared stage. Throws the plugin's typed errors (or ManifestError) and `signal.reason` once aborted. */
export async function analyse(
  config: PluginConfig,
  signal: AbortSignal,
  render: Render,
  limits: DocumentLimits = DEFAULT_LIMITS,
): Promise<Analysis> {
  // Read the key before awaiting the render (main.ts may have started it already):
  // a broken installation is reported as such, even when the render fails too.
  const key = config.hashKeyFile === undefined ? undefined : await readHashKeyFile(config.hashKeyFile);
  // Part of the commit, like the manifests: a bad file fails the render before any tool runs.
  const outOfBand = await readOutOfBand(config);
  const streams = await render(config, signal);
  signal.throwIfAborted();

  const documents: ParsedDocument[] = [];
  for (const stream of streams) {
    documents.push(...parseStream(stream, limits));
    signal.throwIfAborted();
  }

  const objects: LocatedObject[] = [];
  for (const document of documents) {
    const origin = document.template === undefined
      ? { file: document.file, document: document.index }
      : { file: document.file, document: document.index, template: document.template };
    const context = { defaultNamespace: config.destinationNamespace, origin };
    // A document read only as far as its identity is planned from that identity (its kind needs no more).
    for (const { object, path } of listEntries(document.identity ?? document.value, AT_ROOT)) {
      objects.push({ manifest: toManifest(object, context), document, path });
    }
  }
  if (objects.length === 0 && !config.allowEmpty) {
    const file = streams.length === 1 ? (streams[0]?.label ?? '<render>') : '<render>';
    throw new InvalidInputError(
      { file },
      'the render produced no Kubernetes objects; refusing to emit an empty app (Argo CD would prune everything). Set allow-empty=true if this is intended',
    );
  }

  const plans = planWorkloads(
    objects.map((o) => o.manifest),
    {
      mode: config.mode,
      includeRollouts: config.includeRollouts,
      ...(key === undefined ? {} : { key }),
      ...(outOfBand === undefined ? {} : { outOfBand }),
    },
  );
  signal.throwIfAborted();
  return { documents, objects, plans, keyed: key !== undefined, outOfBand, warnings: keyWarnings(plans, key) };
}

/** The path of an object that is its whole document: one frozen array for every document that is not a List. */
const AT_ROOT: readonly (string | number)[] = Object.freeze([]);

/** Mirrors core's `expandLists`, keeping each item's path so a stamp can find it in the text. */
function listEntries(value: unknown, path: readonly (string | number)[]): { object: unknown; path: readonly (string | number)[] }[] {
  const expanded = expandLists(value);
  if (expanded.length === 1 && expanded[0] === value) return [{ object: value, path }];
  const items = (value as { items: unknown[] }).items;
  return items.flatMap((item, i) => listEntries(item, [...path, 'items', i]));
}

/** One warning when Secrets are hashed with a plain SHA-256: their hash can be brute-forced by anyone who reads the workload. */
function keyWarnings(plans: readonly WorkloadPlan[], key: HashKey | undefined): string[] {
  if (key !== undefined) return [];
  const secrets = new Set<string>();
  for (const plan of plans) {
    for (const entry of plan.entries) {
      if (entry.kind === 'Secret') secrets.add(`${plan.workload.namespace === '' ? '' : `${plan.workload.namespace}/`}${entry.name}`);
    }
  }
  if (secrets.size === 0) return [];
  const names = [...secrets].sort();
  const shown = names.length > 5 ? `${names.slice(0, 5).join(', ')}, …` : names.join(', ');
  return [
    `warning: hashing Secrets without a key (${names.length}: ${shown}); a plain SHA-256 of a short Secret can be brute-forced by anyone who can read the workload. Set hash-key-file (or DRIFTLESS_HASH_KEY_FILE) to use HMAC-SHA256`,
  ];
}
