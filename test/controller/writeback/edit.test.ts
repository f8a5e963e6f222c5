/** The edit of the out-of-band file and the commit message (pure), pinned to exact bytes. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatOutOfBandFile } from '../../../core/index.ts';
import { editOutOfBandFile } from '../../../controller/writeback/edit.ts';
import { commitMessage, DEFAULT_MESSAGE_TEMPLATE } from '../../../controller/writeback/message.ts';
import type { ConfigDigest } from '../../../controller/writeback/model.ts';

const d = (c: string): string => `v1:${c.repeat(64)}`;
const s = (namespace: string, name: string, digest: string): ConfigDigest => ({ kind: 'Secret', namespace, name, digest });

describe('editOutOfBandFile', () => {
  it('creates the file, replaces a listed digest, keeps other entries, and writes nothing when every digest is held', () => {
    const created = editOutOfBandFile(undefined, 'f', [s('prod', 'db', d('a'))]);
    assert.equal(created.text, formatOutOfBandFile([s('prod', 'db', d('a'))]));
    const updated = editOutOfBandFile(created.text, 'f', [s('prod', 'db', d('b')), s('dev', 'tls', d('c'))]);
    assert.equal(updated.text, formatOutOfBandFile([s('dev', 'tls', d('c')), s('prod', 'db', d('b'))]));
    assert.equal(updated.changed.length, 2);
    const same = editOutOfBandFile(updated.text, 'f', [s('prod', 'db', d('b'))]);
    assert.deepEqual(same, { text: undefined, changed: [] });
  });

  it('leaves a hand-edited file with the same digests alone (comments and order kept), and refuses an invalid one', () => {
    const hand = `# reviewed by ops\nversion: 1\nconfigs:\n- name: "db"\n  kind: Secret\n  digest: ${d('a')}\n  namespace: "prod"\n`;
    assert.equal(editOutOfBandFile(hand, 'f', [s('prod', 'db', d('a'))]).text, undefined);
    assert.throws(() => editOutOfBandFile('version: 1\nconfigs: [', 'apps/x/.driftless/out-of-band', [s('prod', 'db', d('a'))]), /apps\/x\/\.driftless\/out-of-band:\d+: not valid YAML/);
    assert.throws(() => editOutOfBandFile(undefined, 'f', [s('prod', 'db', 'v1:short')]), /digest must be/);
  });
});

describe('commitMessage', () => {
  it('names Applications, configs and workloads, sorted and deduplicated, never a digest', () => {
    const message = commitMessage(DEFAULT_MESSAGE_TEMPLATE, {
      applications: [{ namespace: 'argocd', name: 'web' }, { namespace: 'argocd', name: 'api' }],
      configs: [s('prod', 'db', d('a')), s('prod', 'db', d('a')), { kind: 'ConfigMap', namespace: 'prod', name: 'flags', digest: d('b') }],
      workloads: [{ kind: 'Rollout', namespace: 'prod', name: 'web' }, { kind: 'Deployment', namespace: 'prod', name: 'api' }],
    });
    assert.equal(
      message,
      'driftless: roll Deployment prod/api, Rollout prod/web\n\nOut-of-band change of ConfigMap prod/flags, Secret prod/db.\nApplications: argocd/api, argocd/web.\n',
    );
    assert.ok(!message.includes(d('a')));
  });

  it('cuts long lists and fills {count}', () => {
    const workloads = Array.from({ length: 13 }, (_, i) => ({ kind: 'Deployment', namespace: 'prod', name: `w${String(i).padStart(2, '0')}` }));
    const message = commitMessage('{count} configs for {workloads}', { applications: [], configs: [s('a', 'x', d('a'))], workloads });
    assert.equal(message, `1 configs for ${workloads.slice(0, 10).map((w) => `Deployment prod/${w.name}`).join(', ')} and 3 more\n`);
  });
});
