/**
 * The write-back's errors, classified in one place from git's stderr, with
 * every URL's user-info and every known secret removed before anything is
 * put into a message. simple-git's own errors quote git's output (and, for
 * some failures, its command line); none of them is ever passed on: the
 * cause of a WriteBackError is a fresh Error holding only redacted text.
 */

/**
 * What went wrong, as data for the restart path: `auth` (credentials refused
 * or missing), `non-fast-forward` (someone pushed first; retried here, so the
 * caller sees it only when the retries ran out), `rejected` (a hook or a
 * protected branch refused the push), `network` (no answer, DNS, TLS,
 * timeout), `not-found` (no such repository or branch), `file` (the
 * out-of-band file in Git is not valid, or its path leaves the repository:
 * nothing is written over it), `git` (anything else git reported),
 * `stopped` (the write-back was closed before the submission ran).
 */
export type WriteBackErrorKind = 'auth' | 'non-fast-forward' | 'rejected' | 'network' | 'not-found' | 'file' | 'git' | 'stopped';

/** A failed write-back. The message names the repository (redacted) and the step, never a credential or a value. */
export class WriteBackError extends Error {
  override readonly name = 'WriteBackError';
  readonly kind: WriteBackErrorKind;
  /** The repository URL without user-info. */
  readonly repo: string;
  /** The step that failed: `ls-remote`, `clone`, `fetch`, `commit`, `push`, `edit`. */
  readonly step: string;

  constructor(kind: WriteBackErrorKind, repo: string, step: string, detail: string, options?: ErrorOptions) {
    super(`write-back to ${repo}: ${step} failed (${kind})${detail === '' ? '' : `: ${detail}`}`, options);
    this.kind = kind;
    this.repo = repo;
    this.step = step;
  }
}

/** The ordered rules: the first that matches git's stderr decides. Lower-cased input. */
const RULES: readonly (readonly [WriteBackErrorKind, RegExp])[] = Object.freeze([
  // First: someone else moved the branch. Client-side ("fetch first", "non-fast-forward") or, when the
  // push raced them on the server, receive-pack's failed ref lock ("cannot lock ref … but expected").
  ['non-fast-forward', /non-fast-forward|\((fetch first|stale info)\)|updates were rejected because the|cannot lock ref|failed to lock|incorrect old value|but expected [0-9a-f]{7,}/],
  // A hook's or a server's refusal comes with "[remote rejected]" or "pre-receive hook declined";
  // "protected branch" is GitHub's and GitLab's wording.
  ['rejected', /\[remote rejected\]|pre-receive hook declined|hook declined|protected branch|gh006|denied to update/],
  [
    'auth',
    /authentication failed|could not read username|could not read password|terminal prompts disabled|invalid username or password|permission denied \(publickey|host key verification failed|returned error: 40[13]|http 40[13]|access denied|permission to .* denied/,
  ],
  ['not-found', /repository .* not found|not found|does not appear to be a git repository|couldn't find remote ref|remote branch .* not found|returned error: 404|http 404/],
  ['network', /could not resolve host|connection refused|connection timed out|operation timed out|timed out|network is unreachable|ssl|tls|early eof|the remote end hung up|could not connect|failed to connect|broken pipe|connection reset|block timeout reached/],
]);

/** The kind of a git failure, from its stderr (any case). `git` when nothing matches. */
export function classifyGitFailure(stderr: string): WriteBackErrorKind {
  const text = stderr.toLowerCase();
  for (const [kind, pattern] of RULES) if (pattern.test(text)) return kind;
  return 'git';
}

/** `scheme://user:pass@host/…` → `scheme://host/…`, anywhere in a text. */
const URL_USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi;

/** A repository URL for messages: no user-info (an Application's repoURL may carry a token). */
export function redactUrl(url: string): string {
  return url.replace(URL_USERINFO, '$1');
}

/**
 * A text with every URL's user-info removed and every listed secret (and its
 * URL-encoded form) replaced by `***`. Secrets shorter than 4 characters are
 * still replaced: a redaction that skips short passwords is one a test will
 * never notice failing.
 */
export function redactText(text: string, secrets: readonly string[]): string {
  let out = text.replace(URL_USERINFO, '$1');
  for (const secret of secrets) {
    if (secret === '') continue;
    for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join('***');
  }
  return out;
}

/**
 * The lines of git's stderr worth quoting: `fatal:`, `error:`, `remote:` and
 * the push status lines, redacted, at most 3, each cut to 200 characters.
 */
export function gitDetail(stderr: string, secrets: readonly string[]): string {
  const lines = redactText(stderr, secrets)
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => /^(fatal|error|remote|hint: updates were rejected| ! )|\[(remote )?rejected\]/.test(line) || line.startsWith('! '));
  const picked = (lines.length > 0 ? lines : redactText(stderr, secrets).split(/\r?\n/).filter((l) => l.trim() !== '')).slice(0, 3);
  return picked.map((line) => (line.length > 200 ? `${line.slice(0, 200)}…` : line)).join(' | ');
}

/**
 * A WriteBackError for a failed git command. `failure` is whatever simple-git
 * threw; only its text is read, redacted, and the original is dropped.
 */
export function gitFailure(repo: string, step: string, failure: unknown, secrets: readonly string[], forced?: WriteBackErrorKind): WriteBackError {
  const raw = failure instanceof Error ? failure.message : String(failure);
  const kind = forced ?? classifyGitFailure(raw);
  const detail = gitDetail(raw, secrets);
  return new WriteBackError(kind, redactUrl(repo), step, detail, { cause: new Error(detail) });
}

/**
 * Reading the write-back's credentials from the API server failed (403 without the Role, a timeout, a
 * missing signing Secret): the message names the namespace, the object and the status, never a value.
 */
export class CredentialsReadError extends Error {
  override readonly name = 'CredentialsReadError';
}
