/**
 * The leak check every test of a secret shares: a canary string planted in a
 * Secret value or a credential file, and the real credentials of the files a
 * process reads (its kubeconfig's token and key, its hash key, its webhook
 * URL's path), must appear nowhere in what the process said — neither as they
 * are nor base64-encoded.
 */
import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';

/**
 * Every Secret value the fixtures write ends in this canary, so that every
 * controller process of the whole test run can be checked for a leak of any
 * of them (support/process.ts scans its logs and stderr at stop), not only
 * the one test that looks for SECRET_VALUE.
 */
export const LEAK_CANARY = 'Zq7-leak-canary';

/** Needles shorter than this are not searched base64-encoded: the stable middle of their encoding would be a few characters that match by chance. */
const MIN_ENCODED_LENGTH = 12;

/**
 * The first needle (or one of its base64 forms) found in `said`, else undefined.
 * Base64 of a value shifts with its offset; a needle's encodings at offsets
 * 0, 1 and 2, cut to their stable middle, cover every position.
 */
export function findLeak(said: string, ...needles: readonly string[]): string | undefined {
  for (const needle of needles) {
    if (needle === '') continue;
    const encodings = needle.length < MIN_ENCODED_LENGTH
      ? []
      : [0, 1, 2].map((shift) => Buffer.from(`${'x'.repeat(shift)}${needle}`).toString('base64').slice(4, -4));
    const found = [needle, ...encodings].find((form) => said.includes(form));
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The kubeconfig fields that hold a credential. */
const KUBECONFIG_CREDENTIALS = new Set(['token', 'client-key-data', 'password']);

/** Every credential value in a kubeconfig's text (tokens, keys, passwords), wherever it sits in the file. */
export function kubeconfigCredentials(text: string): string[] {
  const found: string[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      value.forEach(visit);
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        if (KUBECONFIG_CREDENTIALS.has(key) && typeof item === 'string' && item !== '') found.push(item);
        else visit(item);
      }
    }
  };
  for (const document of parseAllDocuments(text)) visit(document.toJS());
  return found;
}

/**
 * The secrets of the credential files named by a controller's flags: the
 * kubeconfig's credentials, the hash key (as text, when it is text), and the
 * path and query of the notification URL (where the receiver's token sits).
 */
export async function credentialsOfFiles(files: { readonly kubeconfig?: string; readonly argocdKubeconfig?: string | undefined; readonly hashKeyFile?: string; readonly notifyUrlFile?: string }): Promise<string[]> {
  const needles: string[] = [];
  for (const kubeconfig of [files.kubeconfig, files.argocdKubeconfig]) if (kubeconfig !== undefined) needles.push(...kubeconfigCredentials(await readFile(kubeconfig, 'utf8')));
  if (files.hashKeyFile !== undefined) needles.push((await readFile(files.hashKeyFile, 'utf8')).trim());
  if (files.notifyUrlFile !== undefined) {
    const text = (await readFile(files.notifyUrlFile, 'utf8')).trim();
    if (URL.canParse(text)) {
      const url = new URL(text);
      const secret = `${url.pathname}${url.search}`;
      if (secret.length > 1) needles.push(secret);
    }
  }
  // A short needle (an empty key file, a URL path of `/hook`) would match ordinary words of a log.
  return needles.filter((needle) => needle.length >= MIN_ENCODED_LENGTH);
}

/** The fields of Argo CD's repository Secrets (and of the write-back's named Secrets) that hold a credential. */
const GIT_SECRET_FIELDS = Object.freeze(['password', 'sshPrivateKey', 'sshSigningKey', 'githubAppPrivateKey', 'bearerToken', 'tlsClientCertKey', 'gcpServiceAccountKey']);

/** Argo CD's repository Secret types, as the write-back lists them (controller/writeback/argocd-secrets.ts). */
const REPOSITORY_SECRET_SELECTOR = 'argocd.argoproj.io/secret-type in (repository,repository-write,repo-creds,repo-write-creds)';

/** A Secret as the API returns it. */
interface SecretObject {
  readonly metadata?: { readonly name?: string };
  readonly data?: Readonly<Record<string, string>> | null;
}

/**
 * The Git credentials a controller can read: every credential field of Argo CD's repository Secrets in
 * `namespace` (`--argocd-namespace`) and of the Secrets named by `--write-back-credentials-secret` and
 * `--write-back-signing-secret`, decoded. A user name counts only when it is long enough to be a token
 * (as the write-back itself redacts it); a multi-line key also by each of its lines, so half a key is
 * found too. `list` reads a collection path (the admin client's GET); a namespace that is gone gives none.
 */
export async function gitCredentialsIn(list: (path: string) => Promise<{ readonly items?: readonly unknown[] }>, namespace: string, named: readonly string[]): Promise<string[]> {
  const base = `/api/v1/namespaces/${namespace}/secrets`;
  const secrets: SecretObject[] = [];
  const read = async (path: string): Promise<void> => {
    try {
      secrets.push(...(((await list(path)).items ?? []) as readonly SecretObject[]));
    } catch {
      // No namespace, no Secret: nothing the controller could have read there.
    }
  };
  await read(`${base}?labelSelector=${encodeURIComponent(REPOSITORY_SECRET_SELECTOR)}`);
  for (const name of named) await read(`${base}?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`);
  const needles: string[] = [];
  for (const secret of secrets) {
    const field = (key: string): string => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
    for (const key of GIT_SECRET_FIELDS) {
      const value = field(key).trim();
      needles.push(value, ...value.split('\n').map((line) => line.trim()).filter((line) => !line.startsWith('-----')));
    }
    needles.push(field('username').trim());
  }
  return [...new Set(needles)].filter((needle) => needle.length >= MIN_ENCODED_LENGTH);
}
