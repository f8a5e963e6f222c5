/**
 * Where documents begin and end in a stream, as Argo CD's splitter sees it.
 * Shared by both readers (documents.ts: the fast one, and yaml, which reads
 * one region at a time), the size check, and the messages that point into a
 * document (locate.ts, source/decode.ts).
 */

/** One document's place in a stream: [start, bodyStart, end) and whether it has its own `---`. */
export type Region = readonly [start: number, bodyStart: number, end: number, explicit: boolean, marker: number];

/**
 * Splits a stream at line-start `---` markers, the one splitter of the
 * plugin: a `---` at the start of a line always starts a document (YAML
 * forbids it inside scalars). Text before the first marker that holds only
 * comments and blank lines belongs to the first document.
 */
export function splitDocuments(text: string): Region[] {
  const markers: number[] = [];
  for (const match of text.matchAll(/^---(?=[ \t\r\n]|$)/gm)) markers.push(match.index);
  const regions: Region[] = [];
  const first = markers[0];
  if (first !== 0 && !(first !== undefined && /^(?:[ \t]*(?:#[^\n]*)?\r?\n)*$/.test(text.slice(0, first)))) {
    regions.push([0, 0, first ?? text.length, false, -1]);
  }
  markers.forEach((marker, i) => {
    const lineEnd = text.indexOf('\n', marker);
    const bodyStart = lineEnd === -1 ? text.length : lineEnd + 1;
    regions.push([regions.length === 0 ? 0 : marker, bodyStart, markers[i + 1] ?? text.length, true, marker]);
  });
  return regions;
}
