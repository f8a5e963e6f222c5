import { loadYaml } from './lazy-yaml.ts';
import { describeObject } from '../../core/index.ts';
import type { InputLocation } from '../errors.ts';
import { splitDocuments } from './split.ts';

/**
 * Where a problem in the input is, said so that a user can find it: the
 * document's object (kind, namespace/name), for Helm the template file from
 * helm's `# Source:` comment, and a line. In a file, lines count from the top
 * of the file; in a renderer's output, which the user never sees, they count
 * from the document's own `---` line, which is what `helm template
 * --show-only <that file>` prints first. Only used on the way to an error:
 * nothing here runs for valid input.
 */

/** A stream as the locator needs it. `rendered`: the text is a renderer's output, not a file in the repository. */
export interface LocatedStream {
  readonly label: string;
  readonly text: string;
  readonly rendered?: boolean;
}

/** Turns offsets into messages for one stream (or one segment of it: a JSON object, one fast-path document). */
export class Locator {
  readonly #stream: LocatedStream;
  readonly #segment: readonly [number, number] | undefined;
  #regions: readonly (readonly [number, number])[] | undefined;
  #lineStarts: number[] | undefined;

  /** `segment`: [start, end) of the one document the offsets may fall in; by default any document of the stream. */
  constructor(stream: LocatedStream, segment?: readonly [number, number]) {
    this.#stream = stream;
    this.#segment = segment;
  }

  /** `line L, column C` (of the file), or `line L of the document, column C` (of rendered output). */
  at(offset: number): string {
    const text = this.#stream.text;
    if (this.#stream.rendered === true) {
      const [start] = this.#regionAt(offset);
      let line = 1;
      let lineStart = start;
      for (let i = text.indexOf('\n', start); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
        line++;
        lineStart = i + 1;
      }
      return `line ${line} of the document, column ${offset - lineStart + 1}`;
    }
    this.#lineStarts ??= lineStarts(text);
    const starts = this.#lineStarts;
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((starts[mid] as number) <= offset) low = mid;
      else high = mid - 1;
    }
    return `line ${low + 1}, column ${offset - (starts[low] as number) + 1}`;
  }

  /** The location of document `document` (its index in the stream), which holds `offset` when one is known. */
  where(document: number, offset?: number): InputLocation {
    const [start, end] = offset === undefined ? this.#regionOf(document) : this.#regionAt(offset);
    return { file: this.#stream.label, document, ...describeDocument(this.#stream.text.slice(start, end)) };
  }

  #allRegions(): readonly (readonly [number, number])[] {
    this.#regions ??= this.#segment === undefined ? splitDocuments(this.#stream.text).map(([start, , end]) => [start, end] as const) : [this.#segment];
    return this.#regions;
  }

  #regionAt(offset: number): readonly [number, number] {
    const regions = this.#allRegions();
    return regions.findLast(([start]) => start <= offset) ?? regions[0] ?? [0, this.#stream.text.length];
  }

  #regionOf(document: number): readonly [number, number] {
    const regions = this.#allRegions();
    return (this.#segment === undefined ? regions[document] : regions[0]) ?? [0, 0];
  }
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** The location of a document that was read: its object from its value, and its template file. */
export function parsedLocation(document: { readonly file: string; readonly index: number; readonly value: unknown; readonly template?: string }): InputLocation {
  const value = document.value as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } } | null;
  const safe = (item: unknown, shape: RegExp): string | undefined => (typeof item === 'string' && shape.test(item) ? item : undefined);
  const kind = safe(value?.kind, SAFE_KIND);
  const metadata = typeof value?.metadata === 'object' && value.metadata !== null ? value.metadata : {};
  const object = kind === undefined ? undefined
    : describeObject({ kind, name: safe(metadata.name, SAFE_NAME) ?? '', namespace: safe(metadata.namespace, SAFE_NAME) ?? '' });
  return {
    file: document.file,
    document: document.index,
    ...(object === undefined ? {} : { object }),
    ...(document.template === undefined ? {} : { template: document.template }),
  };
}

/** What a message may say about a document: its object and its template file, each only when it looks like one. */
export function describeDocument(text: string): { object?: string; template?: string } {
  const template = helmTemplateOf(text);
  const object = text.length > 1024 * 1024 ? undefined : objectOf(text);
  return { ...(object === undefined ? {} : { object }), ...(template === undefined ? {} : { template }) };
}

/**
 * The template file helm names in the comment it puts before every document
 * (`# Source: chart/templates/x.yaml`), looked for only in the document's
 * leading `---`, blank and comment lines. A path with unusual characters is
 * not shown: messages never quote arbitrary input.
 */
export function helmTemplateOf(text: string): string | undefined {
  let i = 0;
  while (i < text.length) {
    const end = text.indexOf('\n', i);
    const line = text.slice(i, end === -1 ? text.length : end).replace(/\r$/, '');
    if (line.startsWith('# Source: ')) {
      const path = line.slice('# Source: '.length).trim();
      return SAFE_PATH.test(path) ? path : undefined;
    }
    if (!/^(?:---(?:[ \t].*)?|[ \t]*(?:#.*)?)$/.test(line)) return undefined;
    if (end === -1) return undefined;
    i = end + 1;
  }
  return undefined;
}

const SAFE_PATH = /^[\w.@+-][\w./@+-]{0,300}$/;
const SAFE_KIND = /^[A-Za-z][A-Za-z0-9]{0,62}$/;
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,252}$/;

/**
 * `Kind namespace/name` of a document that may not even parse, as far as
 * yaml's error-tolerant reading gets (no aliases expanded). The last of
 * repeated keys, as Go reads them.
 */
function objectOf(text: string): string | undefined {
  try {
    const document = loadYaml().parseDocument(text, { version: '1.1', uniqueKeys: false, prettyErrors: false, strict: false });
    const kind = stringAt(document.contents, 'kind', SAFE_KIND);
    if (kind === undefined) return undefined;
    const metadata = lastValue(document.contents, 'metadata');
    return describeObject({ kind, name: stringAt(metadata, 'name', SAFE_NAME) ?? '', namespace: stringAt(metadata, 'namespace', SAFE_NAME) ?? '' });
  } catch {
    return undefined;
  }
}

function lastValue(node: unknown, key: string): unknown {
  const { isMap, isScalar } = loadYaml();
  if (!isMap(node)) return undefined;
  return node.items.findLast((pair) => isScalar(pair.key) && pair.key.value === key)?.value;
}

function stringAt(node: unknown, key: string, shape: RegExp): string | undefined {
  const value = lastValue(node, key);
  return loadYaml().isScalar(value) && typeof value.value === 'string' && shape.test(value.value) ? value.value : undefined;
}
