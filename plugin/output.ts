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
    // A CRLF document gets CRLF around it too: no mixed line endings.
    const eol = document.text.includes('\r\n') ? '\r\n' : '\n';
    if (!document.explicitStart) out += `---${eol}`;
    out += document.text;
    if (!document.text.endsWith('\n')) out += eol;
  }
  return out;
}
