/** Which of Argo CD's repository Secrets a write-back uses (pure), and how git's failures are classified and redacted. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { knownHostsOf, normaliseGitUrl, selectCredentials, type SecretLike } from '../../../controller/writeback/credentials.ts';
import { classifyGitFailure, gitFailure, redactText } from '../../../controller/writeback/errors.ts';

const secret = (name: string, type: string, fields: Record<string, string>): SecretLike => ({
  metadata: { name, namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': type } },
  data: Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});
const REPO = 'https://git.example.com/org/gitops.git';
const chosen = (secrets: SecretLike[], repo = REPO, named?: SecretLike, project?: string) => {
  const c = selectCredentials(repo, secrets, { named, project });
  return 'refused' in c ? c.refused : c.kind === 'https' ? `${c.from}:${c.username}` : `${c.from}:${c.kind}`;
};

describe('selectCredentials', () => {
  it('prefers repository-write, then repo-write-creds, then repository, then repo-creds', () => {
    const all = [
      secret('read-exact', 'repository', { url: REPO, username: 'r', password: 'p' }),
      secret('read-prefix', 'repo-creds', { url: 'https://git.example.com/org', username: 'rc', password: 'p' }),
      secret('write-prefix', 'repo-write-creds', { url: 'https://git.example.com/', username: 'wc', password: 'p' }),
      secret('write-exact', 'repository-write', { url: REPO, username: 'w', password: 'p' }),
    ];
    assert.equal(chosen(all), 'repository-write Secret write-exact:w');
    assert.equal(chosen(all.slice(0, 3)), 'repo-write-creds Secret write-prefix:wc');
    assert.equal(chosen(all.slice(0, 2)), 'repository Secret read-exact:r');
    assert.equal(chosen(all.slice(1, 2)), 'repo-creds Secret read-prefix:rc');
    assert.equal(chosen([]), 'no matching repository Secret:none');
  });

  it('normalises URLs exactly as Argo CD v3.6.1 NormalizeGitURL does', () => {
    // Each right-hand side was printed by argo-cd v3.6.1 util/git.NormalizeGitURL (go run, 2026-12-02).
    const fromArgoCd: [string, string][] = [
      ['HTTPS://git.example.com/org/gitops/', 'https://git.example.com/org/gitops/'],
      ['https://git.example.com/org/gitops.git', 'https://git.example.com/org/gitops'],
      ['git@GitHub.com:Org/Repo.git', 'git@github.com/org/repo'],
      ['ssh://git@github.com/org/repo.git', 'git@github.com/org/repo'],
      ['https://git.example.com/', 'https://git.example.com/'],
      ['https://git.example.com', 'https://git.example.com'],
      ['https://git.example.com.evil.org/x', 'https://git.example.com.evil.org/x'],
      ['https://user:pa ss@host/x', ''],
      ['https://host/a b', 'https://host/a%20b'],
      ['https://host/x.git/', 'https://host/x.git/'],
      ['https://host/\u0001', ''],
      ['git@host:2222/x.git', 'git@host/2222/x'],
      ['ssh://git@host:2222/x', 'git@host:2222/x'],
    ];
    for (const [url, normal] of fromArgoCd) assert.equal(normaliseGitUrl(url), normal, url);
  });

  it('matches exact URLs as Argo CD normalises them (a trailing slash counts) and templates by the longest prefix', () => {
    assert.equal(chosen([secret('x', 'repository', { url: 'HTTPS://git.example.com/org/gitops', username: 'u', password: 'p' })]), 'repository Secret x:u');
    assert.equal(chosen([secret('x', 'repository', { url: 'https://git.example.com/org/gitops/', username: 'u', password: 'p' })]), 'no matching repository Secret:none');
    const prefixes = [
      secret('short', 'repo-creds', { url: 'https://git.example.com', username: 'short', password: 'p' }),
      secret('long', 'repo-creds', { url: 'https://git.example.com/org/', username: 'long', password: 'p' }),
      secret('other', 'repo-creds', { url: 'https://git.example.com/other/', username: 'other', password: 'p' }),
    ];
    assert.equal(chosen(prefixes), 'repo-creds Secret long:long');
    // A template for a host with its slash never reaches a host whose name it merely starts.
    const slash = [secret('host', 'repo-creds', { url: 'https://git.example.com/', username: 'h', password: 'p' })];
    assert.equal(chosen(slash, 'https://git.example.com.evil.org/x.git'), 'no matching repository Secret:none');
  });

  it('a project-scoped repository Secret serves only its project, and wins there over an unscoped one', () => {
    const secrets = [
      secret('other-project', 'repository-write', { url: REPO, username: 'b', password: 'p', project: 'team-b' }),
      secret('unscoped', 'repository-write', { url: REPO, username: 'any', password: 'p' }),
      secret('own-project', 'repository-write', { url: REPO, username: 'a', password: 'p', project: 'team-a' }),
    ];
    assert.equal(chosen(secrets, REPO, undefined, 'team-a'), 'repository-write Secret own-project:a');
    assert.equal(chosen(secrets, REPO, undefined, 'team-c'), 'repository-write Secret unscoped:any');
    assert.equal(chosen(secrets.slice(0, 1), REPO, undefined, 'team-a'), 'no matching repository Secret:none');
  });

  it('a repository Secret without credentials only registers the repository: the template is used', () => {
    const secrets = [secret('bare', 'repository', { url: REPO }), secret('tpl', 'repo-creds', { url: 'https://git.example.com/', username: 't', password: 'p' })];
    assert.equal(chosen(secrets), 'repo-creds Secret tpl:t');
  });

  it('SSH keys, a token alone, and a Secret named by flag; GitHub App and bearer token are refused as unsupported', () => {
    assert.equal(chosen([secret('k', 'repository', { url: REPO, sshPrivateKey: '-----BEGIN KEY-----' })]), 'repository Secret k:ssh');
    assert.equal(chosen([secret('t', 'repository', { url: REPO, password: 'ghp_x' })]), 'repository Secret t:x-access-token');
    assert.equal(chosen([secret('app', 'repository', { url: REPO, githubAppID: '1', githubAppPrivateKey: 'k' })]), 'unsupported-credentials');
    const named = { metadata: { name: 'mine' }, stringData: { url: 'https://git.example.com/org/', username: 'me', password: 'p' } };
    assert.equal(chosen([secret('w', 'repository-write', { url: REPO, username: 'w', password: 'p' })], REPO, named), 'Secret mine:me');
    assert.equal(chosen([], REPO, { metadata: { name: 'empty' }, stringData: { url: REPO } }), 'incomplete-credentials');
    // The named Secret says which repositories it is for: an Application pointing the write-back elsewhere does not get it.
    assert.equal(chosen([], 'https://attacker.example/x.git', named), 'credentials-not-for-repository');
    assert.equal(chosen([], REPO, { metadata: { name: 'no-url' }, stringData: { username: 'me', password: 'p' } }), 'incomplete-credentials');
    // A url Argo CD's normalisation refuses (it becomes '', a prefix of everything) covers nothing.
    assert.equal(chosen([], REPO, { metadata: { name: 'bad-url' }, stringData: { url: 'https://git.example.com/\u0001', username: 'me', password: 'p' } }), 'credentials-not-for-repository');
    const refusal = selectCredentials(REPO, [secret('app', 'repository', { url: REPO, githubAppID: '1', githubAppPrivateKey: 'TOPSECRETKEY' })]);
    assert.ok(!JSON.stringify(refusal).includes('TOPSECRETKEY'));
  });

  it('reads known hosts from argocd-ssh-known-hosts-cm', () => {
    assert.equal(knownHostsOf({ data: { ssh_known_hosts: 'github.com ssh-ed25519 AAAA\n' } }), 'github.com ssh-ed25519 AAAA\n');
    assert.equal(knownHostsOf({ data: {} }), undefined);
    assert.equal(knownHostsOf(undefined), undefined);
  });
});

describe('git failure classification and redaction', () => {
  it('classifies git stderr as seen from real servers', () => {
    const cases: [string, string][] = [
      ["fatal: Authentication failed for 'https://h/r.git/'", 'auth'],
      ['fatal: could not read Username for \'https://h\': terminal prompts disabled', 'auth'],
      ['git@h: Permission denied (publickey).', 'auth'],
      ['Host key verification failed.', 'auth'],
      [' ! [rejected]        HEAD -> main (fetch first)\nerror: failed to push some refs', 'non-fast-forward'],
      [' ! [rejected]        HEAD -> main (non-fast-forward)', 'non-fast-forward'],
      ["! [remote rejected] (failed to update ref)\nremote: error: cannot lock ref 'refs/heads/main': is at abc1234 but expected def5678", 'non-fast-forward'],
      ['! [remote rejected] HEAD -> main (pre-receive hook declined)', 'rejected'],
      ['remote: error: GH006: Protected branch update failed for refs/heads/main.', 'rejected'],
      ["fatal: repository 'https://h/x.git/' not found", 'not-found'],
      ["fatal: Remote branch nope not found in upstream origin", 'not-found'],
      ["fatal: unable to access 'https://h/': Could not resolve host: h", 'network'],
      ['fatal: unable to access: Failed to connect to 127.0.0.1 port 1', 'network'],
      ['error: something unheard of', 'git'],
    ];
    for (const [stderr, kind] of cases) assert.equal(classifyGitFailure(stderr), kind, stderr);
  });

  it('removes user-info from URLs and every known secret, also URL-encoded', () => {
    assert.equal(redactText("fatal: unable to access 'https://bot:s3cr%2Ft@h/r.git/'", []), "fatal: unable to access 'https://h/r.git/'");
    assert.equal(redactText('token s3cr/t and s3cr%2Ft', ['s3cr/t']), 'token *** and ***');
    const error = gitFailure('https://bot:tok@h/r.git', 'push', new Error("fatal: Authentication failed for 'https://bot:tok@h/r.git/' with tok"), ['tok']);
    assert.equal(error.kind, 'auth');
    assert.ok(!error.message.includes('tok'), error.message);
    assert.ok(!String((error.cause as Error).message).includes('tok'));
  });
});
