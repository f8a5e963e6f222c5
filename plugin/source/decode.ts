/**
 * The one place where a source's bytes become text: a file of a directory
 * app, stdin, and the output of `kustomize build` and `helm template`.
 *
 * Argo CD reads the plugin's output with go-yaml, which refuses bytes that
 * are not UTF-8 ("invalid trailing UTF-8 octet" and the like). A lenient
 * decoder would put U+FFFD in their place instead: the output would not be
 * the input byte for byte, and `caf\xe9` and `caf\xe8` would hash alike, so a
 * change in Git would not roll the workload. So the decoder is fatal, and
 * such input is refused (exit 4) naming the stream, the document and the line.
 *
 * A byte order mark is kept: the document stage decides about it
 * (documents.ts). Characters that are UTF-8 but that go-yaml refuses
 * (control characters) are refused there too, in the scan it already makes.
 */
import { InvalidInputError } from '../errors.ts';
import type { RenderedStream } from './types.ts';

/**
 * The stream `label` holds, as text. `rendered`: a renderer's output (lines
 * in messages count within the document). Throws InvalidInputError for bytes
 * that are not UTF-8.
 */
export async function decodeSource(label: string, bytes: Uint8Array, rendered: boolean): Promise<RenderedStream> {
  let text: string;
  try {
    // One native pass that validates and decodes; `ignoreBOM` keeps a byte order mark in the text.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (cause) {
    throw await notUtf8(label, bytes, rendered, cause);
  }
  return rendered ? { label, text, rendered } : { label, text };
}

/** The refusal, built only on the way to an error: where the first bad byte is, and what to do. */
async function notUtf8(label: string, bytes: Uint8Array, rendered: boolean, cause: unknown): Promise<InvalidInputError> {
  // Loaded here only: the source modules are loaded before the renderer starts, and a valid render never needs these.
  const [{ Locator }, { splitDocuments }] = await Promise.all([import('../yaml/locate.ts'), import('../yaml/split.ts')]);
  const at = firstInvalidUtf8(bytes) ?? 0;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The text up to the bad byte is valid, so its length is the bad byte's offset in the (lenient) text.
  const offset = buffer.toString('utf8', 0, at).length;
  const stream = { label, text: buffer.toString('utf8'), rendered };
  const locator = new Locator(stream);
  const document = Math.max(0, splitDocuments(stream.text.slice(0, offset + 1)).length - 1);
  const utf16 = bytes.length >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff));
  const what = rendered ? `the output of ${label.replace(/^<|>$/g, '')}` : label === '<stdin>' ? 'the input' : 'the file';
  const problem = utf16
    ? `UTF-16 (it starts with a UTF-16 byte order mark), which Driftless does not read: Argo CD would read only its first document; save it as UTF-8`
    : `bytes that are not valid UTF-8, which Argo CD's YAML parser refuses; save ${what} as UTF-8 ` +
      '(text in another encoding must be converted; binary data belongs base64-encoded under a ConfigMap\'s binaryData or a Secret\'s data)';
  return new InvalidInputError(locator.where(document, offset), `${locator.at(offset)}: ${problem}`, { cause });
}

/**
 * The offset of the first byte that does not start a well-formed UTF-8
 * sequence (Unicode's table 3-7: no overlong forms, no surrogates, nothing
 * past U+10FFFF; a sequence cut short counts from its first byte), or
 * undefined when all of `bytes` is UTF-8. go-yaml refuses the same sequences.
 */
export function firstInvalidUtf8(bytes: Uint8Array): number | undefined {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] as number;
    if (b < 0x80) {
      i++;
      continue;
    }
    // The range the second byte must fall in, and how many bytes the sequence has.
    let low = 0x80;
    let high = 0xbf;
    let length: number;
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b === 0xe0) low = 0xa0;
      if (b === 0xed) high = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b === 0xf0) low = 0x90;
      if (b === 0xf4) high = 0x8f;
    } else return i;
    if (i + length > bytes.length) return i;
    const second = bytes[i + 1] as number;
    if (second < low || second > high) return i;
    for (let k = 2; k < length; k++) {
      const next = bytes[i + k] as number;
      if (next < 0x80 || next > 0xbf) return i;
    }
    i += length;
  }
  return undefined;
}
