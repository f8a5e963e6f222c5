/**
 * The edit of one out-of-band file (pure): the text in Git and the digests to
 * hold in, the new text (or none) out. Entries not named by the change are
 * kept as they are; an entry named gets the new digest. When the file already
 * holds every digest nothing is rewritten, so a person's comments and layout
 * survive and no empty commit is made. A file that is not valid is never
 * written over: the change fails, naming the file and line.
 */
import { formatOutOfBandFile, outOfBandKey, parseOutOfBandFile } from '../../core/index.ts';
import type { OutOfBandEntry } from '../../core/index.ts';
import type { ConfigDigest } from './model.ts';

/** The new text and the configs whose digest it changes; `text` undefined = nothing to write. */
export interface FileEdit {
  readonly text: string | undefined;
  readonly changed: readonly ConfigDigest[];
}

/**
 * Merges `configs` into the file's text (`undefined` = no file yet). Later
 * items of `configs` win over earlier ones for the same config. Throws
 * OutOfBandFileError (from core) when the existing text is not valid.
 */
export function editOutOfBandFile(existing: string | undefined, label: string, configs: readonly ConfigDigest[]): FileEdit {
  const entries = new Map<string, Omit<OutOfBandEntry, 'origin'>>();
  if (existing !== undefined) {
    for (const e of parseOutOfBandFile(existing, label).entries) {
      entries.set(outOfBandKey(e.namespace, e.kind, e.name), { kind: e.kind, namespace: e.namespace, name: e.name, digest: e.digest });
    }
  }
  const wanted = new Map<string, ConfigDigest>();
  for (const c of configs) wanted.set(outOfBandKey(c.namespace, c.kind, c.name), c);
  const changed: ConfigDigest[] = [];
  for (const [key, c] of wanted) {
    if (entries.get(key)?.digest === c.digest) continue;
    entries.set(key, { kind: c.kind, namespace: c.namespace, name: c.name, digest: c.digest });
    changed.push(c);
  }
  if (changed.length === 0) return { text: undefined, changed };
  const text = formatOutOfBandFile([...entries.values()]);
  // Validate what is written with the reader the plugin uses: a bad digest or name is refused here, not at render time.
  parseOutOfBandFile(text, label);
  return { text, changed };
}
