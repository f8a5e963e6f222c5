/**
 * Which credentials a write-back uses, chosen from Argo CD's own repository
 * Secrets (pure: Secret objects in, a choice out). Argo CD's labels
 * (`argocd.argoproj.io/secret-type`, argo-cd `common/common.go`):
 * `repository` (one repository, exact URL), `repo-creds` (a template for
 * every URL it prefixes), and their write-access twins `repository-write`
 * and `repo-write-creds`, which Argo CD's Source Hydrator pushes with.
 *
 * Order: a Secret named by flag; else `repository-write` (exact URL), then
 * `repo-write-creds` (longest prefix), then `repository` (exact URL, if it
 * holds credentials), then `repo-creds` (longest prefix). Write Secrets come
 * first because they exist for exactly this; the read ones are a fallback an
 * operator may have given write access. URLs compare as Argo CD's
 * `NormalizeGitURL` does (case and a `.git` suffix ignored, scp-like SSH
 * rewritten; a trailing slash counts), prefixes too (its
 * `getRepositoryCredentialIndex`: both normalised, longest wins). A
 * `repository(-write)` Secret scoped to a project (`project`) serves only that
 * project's Applications and wins over an unscoped one, as Argo CD's
 * `getRepositorySecret` does; the `-creds` templates have no project.
 *
 * The Secret named by flag needs a `url` too, matched like a template (exact
 * or prefix): an Application annotation may point the write-back at another
 * repository (`driftless.dev/write-back-repo`), and the credentials must never
 * follow it to a host they were not given for.
 */

export const SECRET_TYPE_LABEL = 'argocd.argoproj.io/secret-type';
/** Argo CD's known-hosts ConfigMap and its key. */
export const KNOWN_HOSTS_CONFIGMAP = 'argocd-ssh-known-hosts-cm';
export const KNOWN_HOSTS_KEY = 'ssh_known_hosts';

/** A Secret as the API returns it: `data` base64, `stringData` never stored but accepted for tests and manifests. */
export interface SecretLike {
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Readonly<Record<string, string>> | null };
  readonly data?: Readonly<Record<string, string>> | null;
  readonly stringData?: Readonly<Record<string, string>> | null;
}

/** What git is given. Values never leave this module family except into 0600 files. */
export type GitCredentials =
  | { readonly kind: 'https'; readonly username: string; readonly password: string; readonly from: string }
  | { readonly kind: 'ssh'; readonly privateKey: string; readonly from: string }
  | { readonly kind: 'none'; readonly from: string };

/** No usable credentials, as data: `unsupported` names a form we do not speak (GitHub App, bearer token). */
export interface CredentialsRefusal {
  readonly refused: 'unsupported-credentials' | 'incomplete-credentials' | 'credentials-not-for-repository';
  /** Names the Secret and the missing or unsupported field, never a value. */
  readonly message: string;
}

const TYPES_IN_ORDER = Object.freeze([
  { type: 'repository-write', match: 'exact' },
  { type: 'repo-write-creds', match: 'prefix' },
  { type: 'repository', match: 'exact' },
  { type: 'repo-creds', match: 'prefix' },
] as const);

/** Whose credentials are wanted, beyond the repository URL. */
export interface CredentialsQuery {
  /** The Application's `spec.project` (`''` when unset). */
  readonly project?: string;
  /** The Secret named by `--write-back-credentials-secret`, any labels: used instead of Argo CD's, for the URLs its `url` covers. */
  readonly named?: SecretLike;
}

/**
 * The credentials for `repoURL`: from `query.named` when given, else from Argo
 * CD's repository Secrets as described above. No matching Secret →
 * `{kind: 'none'}` (a public repository, or one reached without credentials).
 */
export function selectCredentials(repoURL: string, secrets: readonly SecretLike[], query: CredentialsQuery = {}): GitCredentials | CredentialsRefusal {
  const wanted = normaliseGitUrl(repoURL);
  const { named, project = '' } = query;
  if (named !== undefined) {
    const url = field(named, 'url') ?? '';
    const from = `Secret ${named.metadata.name}`;
    if (url.trim() === '') return Object.freeze({ refused: 'incomplete-credentials', message: `${from} has no url: say which repository (or URL prefix) its credentials are for` });
    // Both normalised and neither refused by it: '' would be a prefix of every repository.
    const covered = normaliseGitUrl(url);
    if (wanted === '' || covered === '' || !wanted.startsWith(covered)) {
      return Object.freeze({ refused: 'credentials-not-for-repository', message: `the url of ${from} does not cover the repository written to: its credentials are not given to another host or repository` });
    }
    return credentialsOf(named, from, true);
  }
  if (wanted === '') return Object.freeze({ kind: 'none', from: 'no matching repository Secret' });
  for (const { type, match } of TYPES_IN_ORDER) {
    const candidates = secrets.filter((s) => s.metadata.labels?.[SECRET_TYPE_LABEL] === type);
    let best: SecretLike | undefined;
    let bestLength = -1;
    let bestScoped = false;
    for (const secret of candidates) {
      const url = field(secret, 'url');
      if (url === undefined || url === '') continue;
      const normal = normaliseGitUrl(url);
      if (normal === '') continue;
      if (match === 'exact') {
        // A `repository` Secret without credentials only registers the repository: look further, as Argo CD does.
        if (normal !== wanted || !hasCredentials(secret)) continue;
        // Argo CD's getRepositorySecret: the project's own Secret first, an unscoped one as fallback, another project's never.
        const scope = field(secret, 'project') ?? '';
        if (scope !== '' && scope !== project) continue;
        const scoped = scope !== '';
        if (best === undefined || (scoped && !bestScoped)) {
          best = secret;
          bestScoped = scoped;
        }
      } else if (wanted.startsWith(normal) && normal.length > bestLength) {
        // As Argo CD's getRepositoryCredentialIndex: both normalised, then the longest prefix.
        best = secret;
        bestLength = normal.length;
      }
    }
    if (best !== undefined) return credentialsOf(best, `${type} Secret ${best.metadata.name}`, false);
  }
  return Object.freeze({ kind: 'none', from: 'no matching repository Secret' });
}

/** Narrows a selection result. */
export function isCredentialsRefusal(result: GitCredentials | CredentialsRefusal): result is CredentialsRefusal {
  return 'refused' in result;
}

/** The known-hosts text of Argo CD's `argocd-ssh-known-hosts-cm` (a ConfigMap's `data`), or undefined. */
export function knownHostsOf(configMap: { readonly data?: Readonly<Record<string, string>> | null } | undefined): string | undefined {
  const text = configMap?.data?.[KNOWN_HOSTS_KEY];
  return text === undefined || text.trim() === '' ? undefined : text;
}

/**
 * Argo CD's `NormalizeGitURL` (util/git/git.go), for comparing repositories:
 * trimmed, lower-case; an SSH URL without `ssh://` (`git@host:org/repo`) gets
 * its first colon made a slash; one `.git` suffix removed; `ssh://` dropped.
 * A trailing slash is kept, as Go's url.URL.String() keeps it: `https://host/`
 * is a prefix of `https://host/x` but not of `https://host.evil/x`. `''` for
 * what Go's url.Parse refuses (control characters, a space in the host); a
 * space elsewhere becomes `%20`, as url.URL.String() writes it. (Checked
 * against argo-cd v3.6.1's function: test/controller/writeback/credentials.test.ts.)
 */
export function normaliseGitUrl(url: string): string {
  let out = url.trim().toLowerCase();
  // Argo CD's sshURLRegex: `^(ssh://)?([^/:]*?)@[^@]+$`.
  if (/^(ssh:\/\/)?([^/:]*?)@[^@]+$/.test(out) && !out.startsWith('ssh://')) out = `ssh://${out.replace(':', '/')}`;
  if (out.endsWith('.git')) out = out.slice(0, -4);
  let control = false;
  for (let i = 0; i < out.length; i++) control ||= out.charCodeAt(i) < 0x20 || out.charCodeAt(i) === 0x7f;
  if (control || /^[a-z][a-z0-9+.-]*:\/\/[^/]*\s/.test(out)) return '';
  out = out.replaceAll(' ', '%20');
  return out.startsWith('ssh://') ? out.slice('ssh://'.length) : out;
}

function credentialsOf(secret: SecretLike, from: string, requireSome: boolean): GitCredentials | CredentialsRefusal {
  const name = secret.metadata.name;
  for (const unsupported of ['githubAppPrivateKey', 'bearerToken', 'gcpServiceAccountKey'] as const) {
    if ((field(secret, unsupported) ?? '') !== '' && (field(secret, 'password') ?? '') === '' && (field(secret, 'sshPrivateKey') ?? '') === '') {
      return Object.freeze({ refused: 'unsupported-credentials', message: `Secret ${name} holds ${unsupported}, which the write-back does not support yet: give username and password (or a token as password), or sshPrivateKey` });
    }
  }
  const privateKey = field(secret, 'sshPrivateKey') ?? '';
  if (privateKey !== '') return Object.freeze({ kind: 'ssh', privateKey: privateKey.endsWith('\n') ? privateKey : `${privateKey}\n`, from });
  const password = field(secret, 'password') ?? '';
  const username = field(secret, 'username') ?? '';
  if (password !== '') {
    // A token alone: GitHub, GitLab and Gitea accept any non-empty user name with a token as the password.
    return Object.freeze({ kind: 'https', username: username === '' ? 'x-access-token' : username, password, from });
  }
  if (username !== '' || requireSome) {
    return Object.freeze({ refused: 'incomplete-credentials', message: `Secret ${name} has ${username === '' ? 'neither password nor sshPrivateKey' : 'username but no password'}` });
  }
  return Object.freeze({ kind: 'none', from });
}

function hasCredentials(secret: SecretLike): boolean {
  return ['password', 'sshPrivateKey', 'githubAppPrivateKey', 'bearerToken', 'username'].some((key) => (field(secret, key) ?? '') !== '');
}

/** A field's text: `stringData` first (as the API server merges it), else `data` decoded from base64. */
function field(secret: SecretLike, key: string): string | undefined {
  const plain = secret.stringData?.[key];
  if (plain !== undefined) return plain;
  const encoded = secret.data?.[key];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8');
}
