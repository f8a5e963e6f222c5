import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { UsageError } from '../../cli/errors.ts';
import { HashKeyFileError, readHashKeyFile, type HashKeyFileProblem } from '../../cli/hash-key.ts';

describe('cli readHashKeyFile', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'driftless-hash-key-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function keyFile(name: string, content: string | Uint8Array): Promise<string> {
    const file = join(dir, name);
    await writeFile(file, content, { mode: 0o600 });
    return file;
  }

  async function refuses(file: string, problem: HashKeyFileProblem, message: RegExp): Promise<void> {
    await assert.rejects(readHashKeyFile(file), (error: unknown) => {
      assert.ok(error instanceof HashKeyFileError && error instanceof UsageError, String(error));
      assert.equal(error.file, file);
      assert.equal(error.problem, problem);
      assert.match(error.message, message);
      assert.ok(error.message.startsWith(`hash-key-file ${file}: `), error.message);
      return true;
    });
  }

  it('gives the bytes as they are, a trailing newline and inner spaces included', async () => {
    assert.deepEqual(await readHashKeyFile(await keyFile('plain', 'k1')), { bytes: new Uint8Array(Buffer.from('k1')) });
    assert.deepEqual(await readHashKeyFile(await keyFile('newline', ' k 2\n')), { bytes: new Uint8Array(Buffer.from(' k 2\n')) });
    const binary = Uint8Array.of(0, 0x20, 0xff, 0x0a);
    assert.deepEqual(await readHashKeyFile(await keyFile('binary', binary)), { bytes: binary });
  });

  it('refuses an empty file', async () => {
    await refuses(await keyFile('empty', ''), 'empty', /: the key file is empty \(a Secret mounted without its key\?\)$/);
  });

  for (const [what, content] of [['a newline', '\n'], ['CRLF', '\r\n'], ['spaces and tabs', ' \t \n'], ['vertical tab and form feed', '\v\f']] as const) {
    it(`refuses a file of only whitespace: ${what}`, async () => {
      const file = await keyFile(`blank-${what.replace(/\W+/g, '-')}`, content);
      await refuses(file, 'blank', new RegExp(`: the key file holds only whitespace \\(${Buffer.byteLength(content)} bytes?; a Secret mounted without its key\\?\\)$`));
    });
  }

  it('names an unreadable file with its errno code and keeps the cause', async () => {
    await refuses(join(dir, 'missing'), 'unreadable', /: cannot read the key \(ENOENT\)$/);
    await refuses(dir, 'unreadable', /: cannot read the key \(EISDIR\)$/);
    await assert.rejects(readHashKeyFile(join(dir, 'missing')), (error: unknown) => (error as Error).cause instanceof Error);
  });

});
