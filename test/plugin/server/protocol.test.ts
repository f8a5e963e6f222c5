/** The render server's wire format: frames survive any chunking, and a broken request is named without its values. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeRequest, encodeChunked, encodeFrame, FRAME, FrameReader, MAX_CHUNK_BYTES, PROTOCOL_VERSION, ProtocolError } from '../../../plugin/server/protocol.ts';

const wire = (...frames: Buffer[][]): Buffer => Buffer.concat(frames.flat());

describe('render server protocol: frames', () => {
  it('reassembles frames from chunks split at every possible byte', () => {
    const bytes = wire(encodeFrame(FRAME.stderr, 'warn\n'), encodeFrame(FRAME.stdout, 'kind: A\n'), encodeFrame(FRAME.exit, '0'));
    for (let cut = 0; cut <= bytes.length; cut++) {
      const reader = new FrameReader();
      const frames = [...reader.push(bytes.subarray(0, cut)), ...reader.push(bytes.subarray(cut))];
      assert.deepEqual(frames.map((f) => [String.fromCharCode(f.type), f.payload.toString()]), [['e', 'warn\n'], ['o', 'kind: A\n'], ['x', '0']], `cut at ${cut}`);
      assert.equal(reader.partial, false);
    }
  });

  it('reassembles one byte at a time, and knows when a frame was cut off', () => {
    const bytes = wire(encodeFrame(FRAME.request, '{"a":1}'));
    const reader = new FrameReader();
    const frames = [];
    for (let i = 0; i < bytes.length - 1; i++) frames.push(...reader.push(bytes.subarray(i, i + 1)));
    assert.equal(frames.length, 0);
    assert.equal(reader.partial, true);
    frames.push(...reader.push(bytes.subarray(bytes.length - 1)));
    assert.equal(frames.length, 1);
    assert.equal(frames[0]?.payload.toString(), '{"a":1}');
  });

  it('splits large output into pieces that join back byte for byte, multi-byte characters included', () => {
    const text = 'ü'.repeat(MAX_CHUNK_BYTES) + 'end';
    const frames = encodeChunked(FRAME.stdout, text);
    assert.equal(frames.length, 6, 'three frames of header and payload');
    const decoded = new FrameReader().push(Buffer.concat(frames));
    assert.ok(decoded.every((f) => f.payload.length <= MAX_CHUNK_BYTES));
    assert.equal(Buffer.concat(decoded.map((f) => f.payload)).toString('utf8'), text);
    assert.deepEqual(encodeChunked(FRAME.stdout, ''), [], 'empty output sends nothing');
  });

  it('refuses a frame longer than any peer writes', () => {
    const header = Buffer.from([FRAME.stdout, 0xff, 0xff, 0xff, 0xff]);
    assert.throws(() => new FrameReader().push(header), ProtocolError);
  });
});

describe('render server protocol: the request', () => {
  const encode = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

  it('reads a well-formed request', () => {
    const request = { version: PROTOCOL_VERSION, argv: ['generate', '-'], env: { A: 'b' }, cwd: '/app' };
    assert.deepEqual(decodeRequest(encode(request)), request);
  });

  it('names what is wrong with a request, never a value of its environment', () => {
    const secret = 'Zebra-s3cr3t-4242';
    const cases: [unknown, RegExp][] = [
      [{ version: 2, argv: [], env: {}, cwd: '/' }, /protocol version 2, this server 1/],
      [{ version: 1, argv: 'generate', env: {}, cwd: '/' }, /argv is not a list of strings/],
      [{ version: 1, argv: [], env: { TOKEN: secret, N: 1 }, cwd: '/' }, /env is not a map of strings/],
      [{ version: 1, argv: [], env: { TOKEN: secret }, cwd: 'relative' }, /cwd is not an absolute path/],
      [[secret], /protocol version undefined/],
    ];
    for (const [value, message] of cases) {
      assert.throws(() => decodeRequest(encode(value)), (error: unknown) => {
        assert.ok(error instanceof ProtocolError);
        assert.match(error.message, message);
        assert.ok(!error.message.includes(secret), error.message);
        return true;
      });
    }
    assert.throws(() => decodeRequest(Buffer.from(`{"env":{"TOKEN":"${secret}"`)), (error: unknown) => error instanceof ProtocolError && /not JSON/.test(error.message) && !error.message.includes(secret));
  });
});
