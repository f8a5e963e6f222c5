/**
 * Joins documents into the stream Argo CD reads. Every document is preceded
 * by a `---` marker (its own when it had one), so the output never starts
 * with `{` (Argo CD would then read it as a JSON stream) and a JSON document
 * stays one YAML document. The stream ends with a newline.
 */

/** A document's final text and whether it already begins with its own `---`. */
export interface OutputDocument {
  readonly text: string;
  readonly explicitStart: boolean;
}

/** The whole stdout of `generate`, built before anything is written. */
export function joinDocuments(documents: readonly OutputDocument[]): string {
  let out = '';
  for (const document of documents) {
    if (!document.explicitStart) out += '---\n';
    out += document.text;
    if (!document.text.endsWith('\n')) out += '\n';
  }
  return out;
}
