/**
 * A destination cluster read from Argo CD's cluster Secret, as Argo CD reads it
 * (argo-cd `util/db/cluster.go` SecretToCluster, and `Cluster.RawRestConfig`
 * in `pkg/apis/application/v1alpha1/types.go` for what the config means for
 * the connection). What Argo CD would reject, or what we cannot do the way
 * Argo CD does it, is refused with a reason — never connected differently.
 * See ADR 0020. Pure.
 */
import { GoJsonError, goBool, goBytes, goJsonText, goString, goStringMap, goStrings, goStruct, parseGoJson, type JsonNode } from './go-json.ts';

/** Argo CD's in-cluster address (`KubernetesInternalAPIServerAddr`): a Secret for it connects with our own service account. */
export const IN_CLUSTER_SERVER = 'https://kubernetes.default.svc';

/** A destination cluster as Argo CD registers it. Holds credentials: never log it whole. */
export interface ArgoCluster {
  /** The cluster Secret's name; '' for the implicit in-cluster destination. */
  readonly secret: string;
  /** data.name ('in-cluster' for the implicit one). */
  readonly name: string;
  /** data.server with trailing slashes cut, as Argo CD compares it (`strings.TrimRight(server, "/")`). */
  readonly server: string;
  /** data.namespaces split at commas, trimmed, empty entries dropped; undefined: every namespace. */
  readonly namespaces: readonly string[] | undefined;
  /** data.clusterResources is exactly "true" (only meaningful with `namespaces`). */
  readonly clusterResources: boolean;
  readonly project: string | undefined;
  /** data.shard as Go's strconv.Atoi reads it; undefined when absent or not an integer (Argo CD then ignores it). */
  readonly shard: number | undefined;
  readonly connection: ClusterConnection;
  /** What Argo CD accepts but ignores (a bad shard, half a client certificate); for a log line. Never a value. */
  readonly warnings: readonly string[];
}

/** How to reach and authenticate to the cluster; every credential field holds a secret. */
export interface ClusterConnection {
  /**
   * The server is Argo CD's in-cluster address: Argo CD then uses its own pod's
   * service account (`rest.InClusterConfig`), ignores `tlsClientConfig` and the
   * exec/AWS providers, and only a username/password/bearerToken replaces the
   * service account's token. We do the same with our pod's service account.
   */
  readonly inCluster: boolean;
  readonly bearerToken?: string;
  readonly username?: string;
  readonly password?: string;
  /** PEM text (the config holds it base64-encoded, as Go writes []byte). */
  readonly tls: { readonly caData?: string; readonly certData?: string; readonly keyData?: string; readonly insecure: boolean; readonly serverName?: string };
  readonly proxyUrl?: string;
  readonly disableCompression: boolean;
  readonly exec?: ExecProvider;
}

/** Argo CD's `execProviderConfig`, run as client-go runs an exec credential plugin (never interactive). */
export interface ExecProvider {
  readonly command: string;
  readonly args: readonly string[];
  /** Added to the controller's environment for the command. */
  readonly env: Readonly<Record<string, string>>;
  /** client.authentication.k8s.io/v1 or /v1beta1. */
  readonly apiVersion: string;
  readonly installHint?: string;
  /** Whether KUBERNETES_EXEC_INFO carries the cluster (server, CA, …) and `config`. */
  readonly provideClusterInfo: boolean;
  /** `execProviderConfig.config` as JSON text, for ExecCredential spec.cluster.config. */
  readonly config?: string;
}

/** Why a cluster Secret is not connected to. */
export type ClusterRefusal =
  | 'aws-auth' // awsAuthConfig: Argo CD runs its own `argocd-k8s-auth aws`, which this image does not have
  | 'no-server' // data.server missing or empty
  | 'bad-server' // data.server is not an http(s) URL
  | 'bad-config' // data.config is not JSON Argo CD can read (syntax, a field of the wrong type)
  | 'bad-auth' // both a username/password and a bearer token: client-go refuses the pair
  | 'bad-tls' // caData together with insecure (client-go refuses), or PEM data that holds no PEM block
  | 'bad-proxy' // proxyUrl not an http, https or socks5 URL (Argo CD's ParseProxyUrl), or socks5 with credentials (client-node drops them)
  | 'bad-exec' // execProviderConfig without a command, or with an apiVersion client-go does not speak
  | 'bad-shard' // reserved: Argo CD ignores a bad shard, so this reader does not refuse one (see `warnings`)
  | 'not-a-secret'; // the object is not a Secret with a name

export type ClusterSecretResult =
  | { readonly kind: 'cluster'; readonly cluster: ArgoCluster }
  | { readonly kind: 'refused'; readonly secret: string; readonly server: string | undefined; readonly reason: ClusterRefusal; readonly detail: string /* names the field, never a credential */ };

/** The exec credential API versions client-go accepts (v1alpha1 was removed in Kubernetes 1.24). */
export const EXEC_API_VERSIONS: readonly string[] = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];

class Refusal extends Error {
  readonly reason: ClusterRefusal;
  constructor(reason: ClusterRefusal, detail: string) {
    super(detail);
    this.reason = reason;
  }
}

/** ClusterConfig decoded with Go's rules, before it means anything. */
interface GoClusterConfig {
  username: string;
  password: string;
  bearerToken: string;
  tls: { insecure: boolean; serverName: string; caData: Buffer | undefined; certData: Buffer | undefined; keyData: Buffer | undefined };
  aws: { clusterName: string; roleARN: string; profile: string } | undefined;
  exec: GoExecConfig | undefined;
  disableCompression: boolean;
  proxyUrl: string;
}

interface GoExecConfig {
  command: string;
  args: string[] | undefined;
  env: Record<string, string> | undefined;
  apiVersion: string;
  installHint: string;
  provideClusterInfo: boolean;
  config: string | undefined;
}

const CONFIG_FIELDS = ['username', 'password', 'bearerToken', 'tlsClientConfig', 'awsAuthConfig', 'execProviderConfig', 'disableCompression', 'proxyUrl'] as const;
const TLS_FIELDS = ['insecure', 'serverName', 'certData', 'keyData', 'caData'] as const;
const AWS_FIELDS = ['clusterName', 'roleARN', 'profile'] as const;
const EXEC_FIELDS = ['command', 'args', 'env', 'apiVersion', 'installHint', 'provideClusterInfo', 'config'] as const;

function decodeTls(node: JsonNode, tls: GoClusterConfig['tls']): void {
  goStruct(node, 'tlsClientConfig', TLS_FIELDS, (field, value) => {
    const where = `tlsClientConfig.${field}`;
    if (field === 'insecure') tls.insecure = goBool(value, where, tls.insecure);
    else if (field === 'serverName') tls.serverName = goString(value, where, tls.serverName);
    else tls[field] = goBytes(value, where);
  });
}

function decodeAws(node: JsonNode, previous: GoClusterConfig['aws']): GoClusterConfig['aws'] {
  // A pointer field: null makes it nil; an object decodes into the struct already there (Go reuses a non-nil pointer).
  if (node.kind === 'null') return undefined;
  const aws = previous ?? { clusterName: '', roleARN: '', profile: '' };
  goStruct(node, 'awsAuthConfig', AWS_FIELDS, (field, value) => {
    aws[field] = goString(value, `awsAuthConfig.${field}`, aws[field]);
  });
  return aws;
}

function decodeExec(node: JsonNode, previous: GoExecConfig | undefined): GoExecConfig | undefined {
  if (node.kind === 'null') return undefined;
  const exec = previous ?? { command: '', args: undefined, env: undefined, apiVersion: '', installHint: '', provideClusterInfo: false, config: undefined };
  goStruct(node, 'execProviderConfig', EXEC_FIELDS, (field, value) => {
    const where = `execProviderConfig.${field}`;
    if (field === 'args') exec.args = goStrings(value, where);
    else if (field === 'env') exec.env = goStringMap(value, where, exec.env);
    else if (field === 'provideClusterInfo') exec.provideClusterInfo = goBool(value, where, exec.provideClusterInfo);
    else if (field === 'config') exec.config = value.kind === 'null' ? undefined : goJsonText(value);
    else exec[field] = goString(value, where, exec[field]);
  });
  return exec;
}

/** `json.Unmarshal(data.config, &ClusterConfig{})`; throws GoJsonError. */
function decodeConfig(text: string): GoClusterConfig {
  const config: GoClusterConfig = {
    username: '', password: '', bearerToken: '',
    tls: { insecure: false, serverName: '', caData: undefined, certData: undefined, keyData: undefined },
    aws: undefined, exec: undefined, disableCompression: false, proxyUrl: '',
  };
  // Argo CD skips an empty config; `null` decodes to the zero config.
  if (text === '') return config;
  goStruct(parseGoJson(text), 'config', CONFIG_FIELDS, (field, value) => {
    if (field === 'tlsClientConfig') decodeTls(value, config.tls);
    else if (field === 'awsAuthConfig') config.aws = decodeAws(value, config.aws);
    else if (field === 'execProviderConfig') config.exec = decodeExec(value, config.exec);
    else if (field === 'disableCompression') config.disableCompression = goBool(value, field, config.disableCompression);
    else config[field] = goString(value, field, config[field]);
  });
  return config;
}

const PEM_BLOCK = /-----BEGIN [A-Z0-9 ]+-----[\s\S]*?-----END [A-Z0-9 ]+-----/;

/** PEM bytes as text; refuses bytes without a PEM block (client-go's TLS setup would fail on them). */
function pem(bytes: Buffer | undefined, field: string): string | undefined {
  if (bytes === undefined || bytes.length === 0) return undefined;
  const text = bytes.toString('latin1');
  if (!PEM_BLOCK.test(text)) throw new Refusal('bad-tls', `tlsClientConfig.${field} holds no PEM block (it must be base64 of PEM text)`);
  return text;
}

function checkProxy(proxyUrl: string): void {
  let scheme: string;
  try {
    scheme = new URL(proxyUrl).protocol;
  } catch {
    throw new Refusal('bad-proxy', 'proxyUrl is not a URL');
  }
  if (!['http:', 'https:', 'socks5:'].includes(scheme)) {
    throw new Refusal('bad-proxy', `proxyUrl has the scheme ${JSON.stringify(scheme.slice(0, -1))}; Argo CD accepts http, https and socks5`);
  }
  const url = new URL(proxyUrl);
  if (scheme === 'socks5:' && (url.username !== '' || url.password !== '')) {
    // Go's SOCKS5 dialer authenticates with them; client-node's SOCKS connector drops them.
    throw new Refusal('bad-proxy', 'proxyUrl is a socks5 proxy with credentials, which client-node cannot send');
  }
}

function execProvider(exec: GoExecConfig): ExecProvider {
  if (exec.command === '') throw new Refusal('bad-exec', 'execProviderConfig.command is empty');
  if (!EXEC_API_VERSIONS.includes(exec.apiVersion)) {
    throw new Refusal('bad-exec', `execProviderConfig.apiVersion ${JSON.stringify(exec.apiVersion)} is not one client-go accepts (${EXEC_API_VERSIONS.join(', ')})`);
  }
  return {
    command: exec.command,
    args: Object.freeze([...(exec.args ?? [])]),
    env: Object.freeze({ ...exec.env }),
    apiVersion: exec.apiVersion,
    ...(exec.installHint === '' ? {} : { installHint: exec.installHint }),
    provideClusterInfo: exec.provideClusterInfo,
    ...(exec.config === undefined ? {} : { config: exec.config }),
  };
}

function nonEmpty<K extends string>(key: K, value: string): { [P in K]?: string } {
  return (value === '' ? {} : { [key]: value }) as { [P in K]?: string };
}

/** What the decoded config means for the connection, as `Cluster.RawRestConfig` builds the rest.Config. */
function connectionOf(server: string, config: GoClusterConfig, warnings: string[]): ClusterConnection {
  const basic = config.username !== '' || config.password !== '';
  const common = { disableCompression: config.disableCompression, ...nonEmpty('proxyUrl', config.proxyUrl) };
  if (config.proxyUrl !== '') checkProxy(config.proxyUrl);
  const userAuth = (): Pick<ClusterConnection, 'bearerToken' | 'username' | 'password'> => {
    // client-go's HTTPWrappersForConfig: "username/password or bearer token may be set, but not both".
    if (basic && config.bearerToken !== '') throw new Refusal('bad-auth', 'config sets both username/password and bearerToken; client-go accepts only one');
    return { ...nonEmpty('bearerToken', config.bearerToken), ...nonEmpty('username', config.username), ...nonEmpty('password', config.password) };
  };
  if (server === IN_CLUSTER_SERVER) {
    return { inCluster: true, ...userAuth(), tls: { insecure: false }, ...common };
  }
  if (config.aws !== undefined) {
    throw new Refusal('aws-auth', 'config.awsAuthConfig needs Argo CD\'s own `argocd-k8s-auth aws`; give the cluster an execProviderConfig (for example `aws eks get-token`) or a bearerToken instead');
  }
  const tls = config.tls;
  if (tls.insecure && tls.caData !== undefined && tls.caData.length > 0) {
    throw new Refusal('bad-tls', 'tlsClientConfig sets both insecure and caData; client-go refuses a root certificate with the insecure flag');
  }
  let certData = pem(tls.certData, 'certData');
  let keyData = pem(tls.keyData, 'keyData');
  if ((certData === undefined) !== (keyData === undefined)) {
    // client-go only uses a client certificate when it has both halves, and ignores one alone.
    warnings.push(`tlsClientConfig.${certData === undefined ? 'keyData' : 'certData'} is set without its pair; Argo CD ignores it, and so does this controller`);
    certData = undefined;
    keyData = undefined;
  }
  const tlsOut = {
    insecure: tls.insecure,
    ...nonEmpty('serverName', tls.serverName),
    ...(pem(tls.caData, 'caData') === undefined ? {} : { caData: pem(tls.caData, 'caData') }),
    ...(certData === undefined ? {} : { certData, keyData }),
  };
  // With an exec provider Argo CD builds the rest.Config without the username, password and token.
  if (config.exec !== undefined) return { inCluster: false, tls: tlsOut, ...common, exec: execProvider(config.exec) };
  return { inCluster: false, ...userAuth(), tls: tlsOut, ...common };
}

/** Go's strconv.Atoi on a 64-bit platform: an optional sign and decimal digits, in int64's range. */
function atoi(text: string): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const value = BigInt(text);
  if (value > 9223372036854775807n || value < -9223372036854775808n) return undefined;
  return Number(value);
}

function checkServer(server: string): void {
  if (server === '') throw new Refusal('no-server', 'data.server is missing or empty');
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new Refusal('bad-server', 'data.server is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Refusal('bad-server', 'data.server is not an http(s) URL');
  if (url.username !== '' || url.password !== '') throw new Refusal('bad-server', 'data.server carries user information; put credentials in data.config');
}

interface SecretLike {
  readonly name: string;
  readonly data: Readonly<Record<string, string>>;
}

function secretFields(raw: unknown): SecretLike | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { metadata, data } = raw as { metadata?: { name?: unknown }; data?: unknown };
  if (typeof metadata?.name !== 'string' || metadata.name === '') return undefined;
  const decoded: Record<string, string> = {};
  if (typeof data === 'object' && data !== null) {
    for (const [key, value] of Object.entries(data)) if (typeof value === 'string') decoded[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return { name: metadata.name, data: decoded };
}

function clusterOf(secret: SecretLike, server: string): ArgoCluster {
  const { data } = secret;
  const warnings: string[] = [];
  let config: GoClusterConfig;
  try {
    config = decodeConfig(data.config ?? '');
  } catch (error) {
    if (error instanceof GoJsonError) throw new Refusal('bad-config', `data.config: ${error.message}`);
    throw error;
  }
  const connection = connectionOf(server, config, warnings);
  let shard: number | undefined;
  if (data.shard !== undefined) {
    shard = atoi(data.shard);
    if (shard === undefined) warnings.push('data.shard is not an integer; Argo CD ignores it and places the cluster by hashing');
  }
  const namespaces = (data.namespaces ?? '').split(',').map((namespace) => namespace.trim()).filter((namespace) => namespace !== '');
  return Object.freeze({
    secret: secret.name,
    name: data.name ?? '',
    server,
    namespaces: namespaces.length === 0 ? undefined : Object.freeze(namespaces),
    clusterResources: data.clusterResources === 'true',
    project: data.project === undefined || data.project === '' ? undefined : data.project,
    shard,
    connection: Object.freeze(connection),
    warnings: Object.freeze(warnings),
  });
}

/** Reads a v1 Secret object as the API returns it (base64 `data`). Pure. */
export function readClusterSecret(raw: unknown): ClusterSecretResult {
  const secret = secretFields(raw);
  if (secret === undefined) return { kind: 'refused', secret: '', server: undefined, reason: 'not-a-secret', detail: 'not a Secret with metadata.name' };
  const server = (secret.data.server ?? '').replace(/\/+$/, '');
  try {
    checkServer(server);
    return { kind: 'cluster', cluster: clusterOf(secret, server) };
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    return { kind: 'refused', secret: secret.name, server: server === '' ? undefined : server, reason: error.reason, detail: error.message };
  }
}

/**
 * The destination Argo CD adds when no Secret names its in-cluster address
 * (unless `cluster.inClusterEnabled: "false"` in argocd-cm): our own service account.
 */
export function inClusterDestination(): ArgoCluster {
  return Object.freeze({
    secret: '', name: 'in-cluster', server: IN_CLUSTER_SERVER, namespaces: undefined, clusterResources: false,
    project: undefined, shard: undefined, warnings: Object.freeze([]),
    connection: Object.freeze({ inCluster: true, tls: { insecure: false }, disableCompression: false }),
  });
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

/** Whether two clusters connect the same way (a change means reconnect). */
export function sameConnection(a: ArgoCluster, b: ArgoCluster): boolean {
  return a.server === b.server && canonical(a.connection) === canonical(b.connection);
}
