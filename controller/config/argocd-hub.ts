/**
 * The flags of the spoke option (ADR 0025): a controller that runs in one
 * cluster, not in Argo CD's, reads Argo CD's Applications and AppProjects
 * (and, for the `git` strategy, its repository Secrets) from the hub through
 * a second kubeconfig, keeping only the Applications whose destination is
 * this cluster as the hub's Argo CD names it. Their rows of the flag table,
 * their converters and how they are read and checked together, kept in one
 * place so they move as one block.
 */
import { UsageError } from '../../cli/errors.ts';
import { flag, type ControllerFlagSpec } from './flag-spec.ts';
import type { ControllerConfig } from './model.ts';
import type { FlagReader } from './reader.ts';
import { asPath, invalid, type Given } from './validators.ts';

/** The spoke option's rows, listed right after `--argocd-clusters`. */
export function argocdHubFlags(): readonly ControllerFlagSpec[] {
  return [
    flag({
      name: 'argocd-kubeconfig',
      type: 'path',
      default: '',
      defaultText: 'none: Argo CD runs in this cluster',
      description:
        "The spoke option (ADR 0025), for one controller per cluster: a kubeconfig (one file) of the cluster Argo CD runs in. Argo CD's Applications and AppProjects in --argocd-namespace are read there (list/watch; with the git strategy its repository Secrets too), never written, and only Applications deploying to this cluster (--argocd-destination-server, --argocd-destination-name) count. Workloads, Events and restart records stay in this cluster. Not with --argocd-clusters.",
    }),
    flag({
      name: 'argocd-destination-server',
      type: 'server-url',
      default: '',
      defaultText: 'none',
      description:
        "With --argocd-kubeconfig: this cluster's API server URL as the hub's Argo CD knows it (its cluster Secret's server): Applications whose spec.destination.server is this URL (trailing slashes ignored) count.",
    }),
    flag({
      name: 'argocd-destination-name',
      type: 'text',
      default: '',
      defaultText: 'none',
      description:
        "With --argocd-kubeconfig: this cluster's name in the hub's Argo CD (its cluster Secret's name): Applications whose spec.destination names it (and no server) count. Give both when your Applications use both forms.",
    }),
  ];
}

type ArgoCdHubSettings = Pick<ControllerConfig, 'argocdKubeconfig' | 'argocdDestinationServer' | 'argocdDestinationName'>;

/**
 * Reads the spoke option's flags and checks them together: the destination flags only with a hub
 * kubeconfig, a hub kubeconfig only with a destination (the hub's Argo CD deploys to many clusters), and
 * never in hub mode (whose Argo CD is its own cluster).
 */
export function readArgoCdHubSettings({ readOptional, provenance }: FlagReader, argocdClusters: boolean): ArgoCdHubSettings {
  const argocdKubeconfig = readOptional('argocd-kubeconfig', asPath);
  const argocdDestinationServer = readOptional('argocd-destination-server', asServerUrl);
  const argocdDestinationName = readOptional('argocd-destination-name', asClusterName);
  const from = (name: string): string => `--${name} (from ${provenance[name]})`;
  if (argocdKubeconfig === undefined) {
    const stray = argocdDestinationServer !== undefined ? 'argocd-destination-server' : argocdDestinationName !== undefined ? 'argocd-destination-name' : undefined;
    if (stray !== undefined) throw new UsageError(`${from(stray)} is only used with --argocd-kubeconfig: without it Argo CD runs in this cluster and every Application here counts`);
  } else {
    if (argocdClusters) {
      throw new UsageError(`${from('argocd-kubeconfig')} and --argocd-clusters (from ${provenance['argocd-clusters']}) exclude each other: hub mode runs in Argo CD's cluster and reads it there`);
    }
    if (argocdDestinationServer === undefined && argocdDestinationName === undefined) {
      throw new UsageError(`${from('argocd-kubeconfig')} needs --argocd-destination-server or --argocd-destination-name: Argo CD in that cluster deploys to many, and only Applications deploying to this one count`);
    }
  }
  return { argocdKubeconfig, argocdDestinationServer, argocdDestinationName };
}

/**
 * An API server URL as Argo CD's cluster Secrets hold it: http(s), a host, no user or password (a URL with
 * credentials is refused without quoting it), trailing slashes cut as Argo CD compares servers.
 */
export function asServerUrl(given: Given, spec: ControllerFlagSpec): string {
  let url: URL;
  try {
    url = new URL(given.text);
  } catch {
    throw invalid({ ...given, text: '…' }, spec, 'not a URL');
  }
  if (url.username !== '' || url.password !== '') throw invalid({ ...given, text: '…' }, spec, 'a URL with credentials');
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hostname === '') throw invalid(given, spec, 'not an http(s) URL with a host');
  return given.text.trim().replace(/\/+$/, '');
}

/** A cluster name as Argo CD's cluster Secret gives it: any one line, not empty. */
function asClusterName(given: Given, spec: ControllerFlagSpec): string {
  const text = given.text.trim();
  if (text === '' || text.includes('\n')) throw invalid(given, spec, 'one non-empty line');
  return text;
}
