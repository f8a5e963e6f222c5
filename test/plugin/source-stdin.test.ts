import assert from 'node:assert/strict';
import { PassThrough, Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { BudgetExceededError, RenderError } from '../../plugin/errors.ts';
import { renderSource } from '../../plugin/source/index.ts';
import { renderStdin } from '../../plugin/source/stdin.ts';
import { configFor, tempDir } from './source-support.ts';

const never = new AbortController().signal;

describe('stdin source', () => {
  it('reads all of stdin as one stream labelled <stdin>, for "-" and for source-type stdin', async () => {
    const app = await tempDir();
    const input = 'apiVersion: v1\nkind: ConfigMap\n---\n# ünïcode split across chunks\n';
    const bytes = Buffer.from(input);
    // Split inside a multi-byte character: decoding must happen once, at the end.
    const chunks = [bytes.subarray(0, 30), bytes.subarray(30, 33), bytes.subarray(33)];
    for (const argv of [['-'], ['--source-type', 'stdin']]) {
      const streams = await renderSource(configFor(app, argv), never, { stdin: Readable.from(chunks.map((chunk) => Buffer.from(chunk))) });
      assert.deepEqual(streams, [{ label: '<stdin>', text: input }]);
    }
  });

  it('reads empty stdin as one empty stream', async () => {
    assert.deepEqual(await renderStdin({ stdin: Readable.from([]) }, never), [{ label: '<stdin>', text: '' }]);
  });

  it('refuses more input than the limit with a clear error', async () => {
    await assert.rejects(renderStdin({ stdin: Readable.from([Buffer.alloc(600), Buffer.alloc(600)]) }, never, 1024), (error: unknown) => {
      assert.ok(error instanceof RenderError);
      assert.match(error.message, /stdin carries more than .* refusing to read more/);
      return true;
    });
  });

  it('stops waiting for stdin when the signal aborts', async () => {
    const stdin = new PassThrough();
    stdin.write('kind: Partial\n');
    const controller = new AbortController();
    const reading = renderStdin({ stdin }, controller.signal);
    setImmediate(() => controller.abort(new Error('received SIGTERM')));
    await assert.rejects(reading, (error: unknown) => {
      assert.ok(error instanceof BudgetExceededError);
      assert.match(error.message, /reading stdin was stopped: received SIGTERM/);
      return true;
    });
  });
});
