/**
 * The watch stream of the API adapter split into lines: a 1 MiB Secret's event arrives as one line
 * of ~1.4 MB spread over many chunks, and must come out whole, with a multi-byte character that
 * straddles two chunks intact and the small events around it unchanged.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, it } from 'node:test';
import type { KubeClient } from '../../controller/kube/client.ts';
import { loopbackClient } from './support/loopback-client.ts';

const CHUNK = 16 * 1024;
let body: Buffer = Buffer.alloc(0);
const server = createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json' });
  // As a TLS connection delivers it: records of 16 KiB, written one at a time.
  const write = (offset: number): void => {
    if (offset >= body.length) return void response.end();
    response.write(body.subarray(offset, offset + CHUNK), () => write(offset + CHUNK));
  };
  write(0);
});
let client: KubeClient;

before(async () => {
  client = await loopbackClient(server);
});
after(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

it('yields a 1.4 MB event line whole, between small ones, with a character split across chunks intact', async () => {
  const big = JSON.stringify({ type: 'MODIFIED', object: { data: { blob: Buffer.alloc(1024 * 1024, 7).toString('base64') }, note: 'café' } });
  const events = [JSON.stringify({ type: 'ADDED', object: { n: 1 } }), big, JSON.stringify({ type: 'BOOKMARK', object: { n: 2 } }), JSON.stringify({ type: 'DELETED', object: { n: '€' } })];
  body = Buffer.from(`${events.join('\n')}\n`);
  // The é of the big line straddles a chunk boundary.
  const at = body.indexOf(Buffer.from('é'));
  // The padding `"pad":"…",` adds its x's and 9 characters before it: é's first byte ends a chunk.
  const shift = (CHUNK - ((at + 10) % CHUNK)) % CHUNK;
  events[1] = big.replace('"note"', `"pad":"${'x'.repeat(shift)}","note"`);
  body = Buffer.from(`${events.join('\n')}\n`);
  assert.equal((body.indexOf(Buffer.from('é')) + 1) % CHUNK, 0, 'the two bytes of é are in two chunks');
  const stream = await client.watch('/api/v1/secrets', {}, new AbortController().signal);
  const lines: string[] = [];
  for await (const line of stream.lines) lines.push(line);
  assert.equal(lines.length, events.length);
  assert.deepEqual(lines, events);
});
