/**
 * The write-back's credentials, read from the API server in Argo CD's
 * namespace only, when a write-back runs (ADR 0014 §6): nothing is watched
 * or cached, so no Secret payload outlives the git operation that needs it,
 * and the controller needs no more than a Role there (`list` on Secrets,
 * every request selected; `get` on the known-hosts ConfigMap by name).
 *
 * Every request has its own deadline. A failure to read is a
 * `CredentialsReadError` whose message names the namespace, what was read
 * and the API's status, never a value.
 */
import type { KubeClient } from '../kube/client.ts';
import { KubeApiError } from '../kube/errors.ts';
import { collectionPath, objectPath, OTHER_RESOURCES } from '../kube/resources.ts';
import { KNOWN_HOSTS_CONFIGMAP, knownHostsOf, SECRET_TYPE_LABEL, selectCredentials, type CredentialsRefusal, type GitCredentials, type SecretLike } from './credentials.ts';
import type { WriteBackDeps } from './engine.ts';
import { CredentialsReadError } from './errors.ts';
import type { SigningKey } from './signing.ts';

/** Argo CD's repository Secret types the selection reads (credentials.ts). */
const REPOSITORY_SECRET_SELECTOR = `${SECRET_TYPE_LABEL} in (repository,repository-write,repo-creds,repo-write-creds)`;

/** The Secret fields a signing key may be given in, and what git signs with for each. */
const SIGNING_KEYS: readonly (readonly [string, SigningKey['format']])[] = Object.freeze([
  ['sshSigningKey', 'ssh'],
  ['gpgSigningKey', 'openpgp'],
]);

/** Where and how the credentials are read. */
export interface ArgoCdSecretsOptions {
  /** `--argocd-namespace`. */
  readonly namespace: string;
  /** `--write-back-credentials-secret`: this Secret instead of Argo CD's repository Secrets. */
  readonly credentialsSecret: string | undefined;
  /** `--write-back-signing-secret`: the Secret whose `sshSigningKey` or `gpgSigningKey` signs the commits. */
  readonly signingSecret: string | undefined;
  /** The deadline of each request (ms). */
  readonly timeoutMs: number;
}

/** The engine's credential dependencies, reading through `client`. */
export function argoCdSecrets(client: KubeClient, options: ArgoCdSecretsOptions): Pick<WriteBackDeps, 'credentialsFor' | 'knownHosts' | 'signingKey'> {
  const { namespace, timeoutMs } = options;
  const secretsPath = collectionPath(OTHER_RESOURCES.secrets, namespace);
  const list = async (query: Record<string, string>, what: string): Promise<SecretLike[]> => {
    try {
      const answer = await client.request<{ items?: SecretLike[] }>('GET', secretsPath, { query, timeoutMs });
      return answer.items ?? [];
    } catch (error) {
      throw new CredentialsReadError(`listing ${what} in namespace ${namespace} failed: ${describe(error)}`, { cause: error });
    }
  };
  const named = async (name: string, flag: string): Promise<SecretLike | undefined> => {
    const found = await list({ fieldSelector: `metadata.name=${name}` }, `the Secret ${name} (${flag})`);
    return found[0];
  };

  return {
    async credentialsFor(repoURL: string, project: string): Promise<GitCredentials | CredentialsRefusal> {
      if (options.credentialsSecret !== undefined) {
        const secret = await named(options.credentialsSecret, '--write-back-credentials-secret');
        if (secret === undefined) {
          return Object.freeze({ refused: 'incomplete-credentials', message: `the Secret ${options.credentialsSecret} (--write-back-credentials-secret) does not exist in namespace ${namespace}` });
        }
        return selectCredentials(repoURL, [], { named: secret, project });
      }
      return selectCredentials(repoURL, await list({ labelSelector: REPOSITORY_SECRET_SELECTOR }, "Argo CD's repository Secrets"), { project });
    },
    async knownHosts(): Promise<string | undefined> {
      try {
        return knownHostsOf(await client.request<{ data?: Record<string, string> }>('GET', objectPath(OTHER_RESOURCES.configMaps, namespace, KNOWN_HOSTS_CONFIGMAP), { timeoutMs }));
      } catch (error) {
        // No ConfigMap: no known hosts, and an SSH write-back is refused by the engine (strict host key checking).
        if (error instanceof KubeApiError && error.status === 404) return undefined;
        throw new CredentialsReadError(`reading the ConfigMap ${KNOWN_HOSTS_CONFIGMAP} in namespace ${namespace} failed: ${describe(error)}`, { cause: error });
      }
    },
    async signingKey(): Promise<SigningKey | undefined> {
      if (options.signingSecret === undefined) return undefined;
      const secret = await named(options.signingSecret, '--write-back-signing-secret');
      const where = `the Secret ${options.signingSecret} (--write-back-signing-secret) in namespace ${namespace}`;
      if (secret === undefined) throw new CredentialsReadError(`${where} does not exist`);
      const given = SIGNING_KEYS.filter(([field]) => (secret.data?.[field] ?? '') !== '');
      const [only] = given;
      if (only === undefined || given.length > 1) {
        throw new CredentialsReadError(`${where} ${only === undefined ? 'has neither sshSigningKey nor gpgSigningKey' : 'has both sshSigningKey and gpgSigningKey: give one'}`);
      }
      const [field, format] = only;
      return { format, key: Buffer.from(secret.data?.[field] ?? '', 'base64').toString('utf8') };
    },
  };
}

/** The status of a failed request, without its body (a Status message may quote what was sent). */
function describe(error: unknown): string {
  if (error instanceof KubeApiError) return `${error.status} ${error.reason}`;
  return error instanceof Error ? error.name : 'unknown error';
}
