/**
 * What the demo prints once the narration is over and everything keeps
 * running: where the kubeconfig is, and a few commands to look around with.
 */
import { join } from 'node:path';
import { argoCdNamespace } from '../test/cluster/argocd.ts';
import { canaryWorkloadName, workloadName, type DemoApp } from './app.ts';
import type { DemoBinaries, DemoEnvironment } from './environment.ts';

/** The closing text: KUBECONFIG, a kubectl alias for the cluster's own binary, and what to try. */
export function hints(env: DemoEnvironment, binaries: DemoBinaries, app: DemoApp): string {
  const ns = env.namespace;
  const applicationName = app.name;
  return [
    '',
    'Everything is still running. In another terminal:',
    '',
    `  export KUBECONFIG=${env.cluster.kubeconfigPath}`,
    `  alias kubectl='${binaries.k8s} kubectl'    # the test cluster's multi-call binary includes kubectl`,
    '',
    `  kubectl -n ${argoCdNamespace} get applications                # ${applicationName}, ${app.canary.name}: Synced, Healthy`,
    `  kubectl -n ${ns} get deployments,replicasets,pods`,
    `  kubectl -n ${ns} get events --sort-by=.lastTimestamp       # RestartStarted / RestartFinished from driftless`,
    `  kubectl -n ${ns} get deployment ${workloadName} -o yaml             # the hash in the template, the bookkeeping on metadata`,
    `  kubectl -n ${ns} get rollout ${canaryWorkloadName} -o yaml         # the write-back record: driftless.dev/write-back (commit, branch)`,
    `  npx driftless explain --live --kubeconfig="$KUBECONFIG" --hash-key-file=${env.argocd.hashKeyFile} --namespace=${ns} deployment/${workloadName}`,
    '',
    `  the app's Git clone: ${app.repo.workDir} (the controller's commit pulled: git log -p -1 ${app.canary.path};`,
    '  commit and push, then refresh and sync:)',
    `  kubectl -n ${argoCdNamespace} annotate application ${applicationName} argocd.argoproj.io/refresh=normal --overwrite`,
    `  kubectl -n ${argoCdNamespace} patch application ${applicationName} --type=merge -p '{"operation":{"initiatedBy":{"username":"you"},"sync":{}}}'`,
    `  logs of every component: ${join(env.cluster.stateDir, 'logs')}`,
    '',
    'Press Ctrl-C to stop everything (the cluster, Argo CD, the controller; the temp dir is removed).',
    '',
  ].join('\n');
}
