import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { BudgetExceededError, RenderError, UsageError } from '../../plugin/errors.ts';
import { renderSource, resolveSourceType } from '../../plugin/source/index.ts';
import { configFor, fixtureCopy, tempDir } from './source-support.ts';

const never = new AbortController().signal;

async function labels(appDir: string, argv: readonly string[] = [], env = {}): Promise<string[]> {
  const streams = await renderSource(configFor(appDir, argv, env), never);
  return streams.map((stream) => stream.label);
}

describe('directory source', () => {
  it('reads the app dir only by default (Argo CD: recurse false), .yaml/.yml/.json in byte order, hidden files included', async () => {
    const app = await fixtureCopy('directory');
    assert.equal(await resolveSourceType(configFor(app)), 'directory');
    assert.deepEqual(await labels(app), ['.hidden.yaml', 'B.yaml', 'a.yaml', 'b.yml', 'c.json']);
  });

  it('returns each file as it is on disk', async () => {
    const app = await fixtureCopy('directory');
    const streams = await renderSource(configFor(app), never);
    assert.equal(streams.find((stream) => stream.label === 'a.yaml')?.text, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: a\n');
  });

  it('walks subdirectories depth first, sorted by name, with recurse', async () => {
    const app = await fixtureCopy('directory');
    assert.deepEqual(await labels(app, ['--recurse']), [
      '.hidden.yaml',
      'B.yaml',
      'a.yaml',
      'b.yml',
      'c.json',
      'skip/f.yaml',
      'sub/d.yaml',
      'sub/deeper/e.yaml',
    ]);
  });

  it('applies include and exclude globs to the path relative to the app dir', async () => {
    const app = await fixtureCopy('directory');
    assert.deepEqual(await labels(app, ['--recurse', '--include', 'sub/**']), ['sub/d.yaml', 'sub/deeper/e.yaml']);
    assert.deepEqual(await labels(app, ['--recurse', '--exclude', '{skip/**,sub/deeper/*}']), [
      '.hidden.yaml',
      'B.yaml',
      'a.yaml',
      'b.yml',
      'c.json',
      'sub/d.yaml',
    ]);
    // `*` stays within one directory, `**` crosses them.
    assert.deepEqual(await labels(app, ['--recurse', '--include', '*.yml']), ['b.yml']);
    assert.deepEqual(await labels(app, ['--recurse', '--include', '**/e.yaml']), ['sub/deeper/e.yaml']);
    // Exclude wins over include; parameters from Argo CD work the same way.
    assert.deepEqual(
      await labels(app, [], { ARGOCD_APP_PARAMETERS: JSON.stringify([{ name: 'include', string: '{a,b}.*' }, { name: 'exclude', string: 'b.yml' }]) }),
      ['a.yaml'],
    );
  });

  it('follows a symlinked file inside the repository, skips a dangling one, and does not enter symlinked directories', async () => {
    const app = await fixtureCopy('directory');
    await symlink(path.join(app, 'sub', 'd.yaml'), path.join(app, 'linked.yaml'));
    await symlink(path.join(app, 'missing.yaml'), path.join(app, 'dangling.yaml'));
    await symlink(path.join(app, 'sub'), path.join(app, 'linkdir'));
    const streams = await renderSource(configFor(app, ['--recurse']), never);
    const linked = streams.find((stream) => stream.label === 'linked.yaml');
    assert.match(linked?.text ?? '', /name: d/);
    assert.ok(!streams.some((stream) => stream.label.startsWith('dangling') || stream.label.startsWith('linkdir')));
  });

  it('follows an inside symlink also when the app dir itself is reached through a symlink', async () => {
    const real = await fixtureCopy('directory');
    const alias = path.join(await tempDir(), 'alias');
    await symlink(real, alias);
    await symlink(path.join(alias, 'sub', 'd.yaml'), path.join(real, 'linked.yaml'));
    assert.ok((await labels(alias)).includes('linked.yaml'));
  });

  it('refuses a symlinked manifest that points outside the repository', async () => {
    const outside = await tempDir();
    await writeFile(path.join(outside, 'secret.yaml'), 'kind: Secret\n');
    const app = await fixtureCopy('directory');
    await symlink(path.join(outside, 'secret.yaml'), path.join(app, 'evil.yaml'));
    await assert.rejects(renderSource(configFor(app), never), (error: unknown) => {
      assert.ok(error instanceof RenderError);
      assert.match(error.message, /evil\.yaml is a symlink to a file outside the repository/);
      return true;
    });
  });

  it('returns no streams for a directory without manifests (the document stage decides about emptiness)', async () => {
    const app = await tempDir();
    await mkdir(path.join(app, 'nested'));
    await writeFile(path.join(app, 'README.md'), '# nothing\n');
    await writeFile(path.join(app, 'nested', 'x.yaml'), 'a: 1\n');
    assert.deepEqual(await renderSource(configFor(app), never), []);
  });

  it('reports a missing app directory as a usage error', async () => {
    const missing = path.join(await tempDir(), 'nope');
    await assert.rejects(renderSource(configFor(missing, ['--source-type', 'directory']), never), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, /app directory .*nope does not exist/);
      return true;
    });
  });

  it('stops with BudgetExceededError when the signal is aborted', async () => {
    const app = await fixtureCopy('directory');
    const controller = new AbortController();
    controller.abort(new Error('time budget of 1s exceeded'));
    await assert.rejects(renderSource(configFor(app), controller.signal), (error: unknown) => {
      assert.ok(error instanceof BudgetExceededError);
      assert.match(error.message, /time budget of 1s exceeded/);
      return true;
    });
  });
});
