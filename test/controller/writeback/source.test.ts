/** Which repository, directory and branches an Application's digests go to (pure). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveWriteTarget, type ApplicationLike, type ApplicationSourceLike } from '../../../controller/writeback/source.ts';

const REPO = 'https://git.example.com/org/gitops.git';
const ours = (extra: Partial<ApplicationSourceLike> = {}): ApplicationSourceLike => ({ repoURL: REPO, path: 'apps/web', targetRevision: 'main', plugin: { name: 'driftless-v1' }, ...extra });
const app = (spec: ApplicationLike['spec'], annotations: Record<string, string> = {}): ApplicationLike => ({ metadata: { name: 'web', namespace: 'argocd', annotations }, spec });

describe('resolveWriteTarget', () => {
  it('takes repoURL, path and targetRevision of spec.source', () => {
    assert.deepEqual(resolveWriteTarget(app({ source: ours() })), {
      application: { namespace: 'argocd', name: 'web' },
      project: '',
      repoURL: REPO,
      path: 'apps/web',
      baseBranch: 'main',
      writeBranch: undefined,
    });
  });

  it('HEAD, an empty revision and a missing one mean the default branch; refs/heads/x means x', () => {
    for (const targetRevision of ['HEAD', '', undefined]) {
      const target = resolveWriteTarget(app({ source: ours({ targetRevision }) }));
      assert.equal('baseBranch' in target && target.baseBranch, undefined);
    }
    const target = resolveWriteTarget(app({ source: ours({ targetRevision: 'refs/heads/release' }) }));
    assert.equal('baseBranch' in target && target.baseBranch, 'release');
  });

  it('normalises the path and refuses one leaving the repository', () => {
    for (const [given, want] of [['./apps//web/', 'apps/web'], ['.', ''], ['', '']] as const) {
      const target = resolveWriteTarget(app({ source: ours({ path: given }) }));
      assert.equal('path' in target && target.path, want);
    }
    for (const bad of ['../other', '/abs', 'a/../../b']) {
      assert.equal((resolveWriteTarget(app({ source: ours({ path: bad }) })) as { refused?: string }).refused, 'bad-path');
    }
  });

  it('refuses a Helm chart source, a source without the plugin, and a commit SHA as revision, with typed reasons', () => {
    const refused = (spec: ApplicationLike['spec'], annotations?: Record<string, string>) => (resolveWriteTarget(app(spec, annotations)) as { refused?: string }).refused;
    assert.equal(refused({ source: { repoURL: 'https://charts.example.com', chart: 'redis', targetRevision: '1.2.3' } }), 'not-git');
    assert.equal(refused({ source: ours({ plugin: null }) }), 'not-rendered-by-plugin');
    assert.equal(refused({ source: ours({ plugin: { name: 'other-plugin' } }) }), 'not-rendered-by-plugin');
    assert.equal(refused({ source: ours({ targetRevision: 'a'.repeat(40) }) }), 'revision-not-branch');
    assert.equal(refused({}), 'no-source');
    assert.equal(refused({ source: ours({ repoURL: 'oci://registry/x' }) }), 'not-git');
    assert.equal(refused({ source: ours() }, { 'driftless.dev/write-back-branch': 'main:' }), 'bad-branch');
    assert.equal(refused({ source: ours() }, { 'driftless.dev/write-back-branch': 'main:a..b' }), 'bad-branch');
    assert.equal(refused({ source: ours() }, { 'driftless.dev/write-back-repo': 'not a url' }), 'bad-repo');
  });

  it('in spec.sources picks the one source the plugin renders, ignoring chart and ref sources', () => {
    const target = resolveWriteTarget(
      app({
        source: ours({ path: 'ignored' }),
        sources: [
          { repoURL: 'https://charts.example.com', chart: 'redis', targetRevision: '20.*' },
          ours({ path: 'apps/api' }),
          { repoURL: REPO, ref: 'values', targetRevision: 'main' },
        ],
      }),
    );
    assert.equal('path' in target && target.path, 'apps/api');
  });

  it('refuses several plugin sources as ambiguous unless the annotation names one by its name field', () => {
    const sources = [ours({ name: 'a', path: 'apps/a' }), ours({ name: 'b', path: 'apps/b' })];
    const ambiguous = resolveWriteTarget(app({ sources }));
    assert.equal('refused' in ambiguous && ambiguous.refused, 'ambiguous-source');
    assert.match('message' in ambiguous ? ambiguous.message : '', /driftless\.dev\/write-back-source/);
    const named = resolveWriteTarget(app({ sources }, { 'driftless.dev/write-back-source': 'b' }));
    assert.equal('path' in named && named.path, 'apps/b');
    const missing = resolveWriteTarget(app({ sources }, { 'driftless.dev/write-back-source': 'c' }));
    assert.equal('refused' in missing && missing.refused, 'source-not-found');
  });

  it('write-back-branch takes base:target, :target (base = targetRevision) and a plain branch (both)', () => {
    const branches = (value: string, targetRevision = 'main') => {
      const t = resolveWriteTarget(app({ source: ours({ targetRevision }) }, { 'driftless.dev/write-back-branch': value }));
      return 'baseBranch' in t ? [t.baseBranch, t.writeBranch] : t;
    };
    assert.deepEqual(branches('release:driftless/rotations'), ['release', 'driftless/rotations']);
    assert.deepEqual(branches(':driftless/rotations'), ['main', 'driftless/rotations']);
    assert.deepEqual(branches(':driftless/rotations', 'HEAD'), [undefined, 'driftless/rotations']);
    assert.deepEqual(branches('develop'), ['develop', undefined]);
    assert.deepEqual(branches('main:main'), ['main', undefined]);
  });

  it('write-back-repo writes elsewhere; a URL with user-info is never quoted back', () => {
    const t = resolveWriteTarget(app({ source: ours() }, { 'driftless.dev/write-back-repo': 'git@git.example.com:org/config.git' }));
    assert.equal('repoURL' in t && t.repoURL, 'git@git.example.com:org/config.git');
    const bad = resolveWriteTarget(app({ source: ours({ repoURL: 'https://user:hunter2@host/x y' }) }));
    assert.equal('refused' in bad && bad.refused, 'bad-repo');
    assert.ok(!JSON.stringify(bad).includes('hunter2'));
    // A file:// source is Argo CD's own business; an annotation pointing the controller at its own files is not.
    const local = resolveWriteTarget(app({ source: ours({ repoURL: 'file:///srv/git/shop.git' }) }));
    assert.equal('repoURL' in local && local.repoURL, 'file:///srv/git/shop.git');
    const pointed = resolveWriteTarget(app({ source: ours() }, { 'driftless.dev/write-back-repo': 'file:///var/run/secrets' }));
    assert.equal('refused' in pointed && pointed.refused, 'bad-repo');
  });

  it('carries the Application\'s project, for project-scoped repository Secrets', () => {
    const t = resolveWriteTarget(app({ project: 'team-a', source: ours() }));
    assert.equal('project' in t && t.project, 'team-a');
  });
});
