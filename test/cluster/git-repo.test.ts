import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { runCommand } from './exec.ts';
import { createGitRepo, filesOf } from './git-repo.ts';

const scratch = mkdtemp(join(tmpdir(), 'driftless-git-repo-test-'));
after(async () => rm(await scratch, { recursive: true, force: true }));

it('commits to a bare repository that a file:// clone reads', async () => {
  const parent = await scratch;
  const repo = await createGitRepo(parent, 'shop');
  const first = await repo.commit({ 'apps/web/a.yaml': 'a: 1\n', 'apps/web/b.yaml': 'b: 1\n' }, 'first');
  const second = await repo.commit({ 'apps/web/a.yaml': 'a: 2\n', 'apps/web/b.yaml': null }, 'second');
  assert.notEqual(first, second);
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', HOME: parent };
  const remote = await runCommand('git', ['ls-remote', repo.url, `refs/heads/${repo.branch}`], { cwd: parent, env });
  assert.equal(remote.stdout.split('\t')[0], second);
  await runCommand('git', ['clone', '--quiet', repo.url, join(parent, 'clone')], { cwd: parent, env });
  assert.deepEqual(await filesOf(join(parent, 'clone', 'apps'), 'apps'), { 'apps/web/a.yaml': 'a: 2\n' });
  assert.equal(await repo.read('apps/web/a.yaml'), 'a: 2\n');
  await assert.rejects(repo.commit({ '../outside.yaml': 'x' }, 'escape'), /outside the repository/);
});
