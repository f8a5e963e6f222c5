/**
 * Go itself as the oracle: `test/tools/goyaml` reads streams exactly as Argo CD
 * reads a plugin's output (apimachinery's YAMLReader, sigs.k8s.io/yaml on go-yaml v2).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

/** One document as Go read it: its JSON, or the error that stopped the stream. */
export type GoDocument = { readonly json: unknown } | { readonly error: string };

/** Reads many streams with one Go process (`goyaml` is `ensureTools().goyaml`). */
export function readWithGo(goyaml: string, streams: readonly string[]): GoDocument[][] {
  for (const s of streams) assert.ok(!s.includes('\0'), 'a stream with a NUL byte cannot be batched');
  const result = spawnSync(goyaml, ['-batch'], { input: streams.join('\0'), encoding: 'utf8', maxBuffer: 1 << 30 });
  assert.equal(result.status, 0, result.stderr);
  const out: GoDocument[][] = [];
  for (const line of result.stdout.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('=== ')) out.push([]);
    // -0 and 0 are the same JSON number (JavaScript's JSON.stringify writes -0 as 0).
    else out[out.length - 1]?.push(JSON.parse(line, (_, v: unknown) => (Object.is(v, -0) ? 0 : v)) as GoDocument);
  }
  assert.equal(out.length, streams.length);
  return out;
}

/** Reads one stream given as bytes (any bytes, a NUL or invalid UTF-8 included) with one Go process. */
export function readBytesWithGo(goyaml: string, stream: Uint8Array): GoDocument[] {
  const result = spawnSync(goyaml, [], { input: stream, encoding: 'utf8', maxBuffer: 1 << 30 });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as GoDocument);
}
