/**
 * What the demo prints once the narration is over and everything keeps
 * running: where the kubeconfigs of both clusters are, and a few commands to
 * look around with.
 */
import { join } from 'node:path';
import { argoCdNamespace } from '../test/cluster/argocd.ts';
import { canaryWorkloadName, spokeWorkloadName, workloadName, type DemoApp } from './app.ts';
import { spokeName, type DemoBinaries, type DemoEnvironment } from './environment.ts';

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
    `  kubectl -n ${argoCdNamespace} get applications                # ${applicationName}, ${app.spoke.name}, ${app.canary.name}: Synced, Healthy`,
    `  kubectl -n ${argoCdNamespace} get secrets -l argocd.argoproj.io/secret-type=cluster    # ${spokeName}'s cluster Secret (the controller reads it too)`,
    `  kubectl -n ${ns} get deployments,replicasets,pods`,
    `  kubectl -n ${ns} get events --sort-by=.lastTimestamp       # RestartStarted / RestartFinished from driftless`,
    `  kubectl -n ${ns} get deployment ${workloadName} -o yaml             # the hash in the template, the bookkeeping on metadata`,
    `  kubectl -n ${ns} get rollout ${canaryWorkloadName} -o yaml         # the write-back record: driftless.dev/write-back (commit, branch)`,
    `  kubectl --kubeconfig=${env.spoke.cluster.kubeconfigPath} get pods -A    # the second cluster, ${spokeName}: only ${spokeWorkloadName}'s pods`,
    `  kubectl --kubeconfig=${env.spoke.cluster.kubeconfigPath} -n ${ns} get events    # RestartStarted / RestartFinished there`,
    `  npx driftless explain --live --kubeconfig="$KUBECONFIG" --hash-key-file=${env.argocd.hashKeyFile} --namespace=${ns} deployment/${workloadName}`,
    '',
    `  the app's Git clone: ${app.repo.workDir} (the controller's commit pulled: git log -p -1 ${app.canary.path};`,
    '  commit and push, then refresh and sync:)',
    `  kubectl -n ${argoCdNamespace} annotate application ${applicationName} argocd.argoproj.io/refresh=normal --overwrite`,
    `  kubectl -n ${argoCdNamespace} patch application ${applicationName} --type=merge -p '{"operation":{"initiatedBy":{"username":"you"},"sync":{}}}'`,
    `  logs of every component: ${join(env.cluster.stateDir, 'logs')}`,
    `  logs of the second cluster: ${join(env.spoke.cluster.stateDir, 'logs')} (its audit log: the evictions as ${env.spoke.user})`,
    '',
    'Press Ctrl-C to stop everything (both clusters, Argo CD, the controller; their temp dirs are removed).',
    '',
  ].join('\n');
}
