/**
 * The Git write-back (strategy git, ADR 0014), a process-wide part: its
 * credentials are read on demand in Argo CD's namespace only, each request
 * with the client's deadline; nothing runs until the restart path submits.
 * Its pushes are writes like any other: a lost Lease aborts a running git
 * command at once (close), before the process exits.
 */
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';
import type { KubeClient } from '../kube/client.ts';
import { argoCdSecrets } from '../writeback/argocd-secrets.ts';
import { createWriteBack, type WriteBack } from '../writeback/engine.ts';
import type { WriteBackMetrics } from '../writeback/metrics.ts';
import { writeBackSettingsFrom } from '../writeback/settings.ts';

/** The engine, reading Argo CD's Secrets through `client` (the cluster Argo CD runs in). */
export function createGitWriteBack(config: ControllerConfig, deps: { readonly client: KubeClient; readonly clock: Clock; readonly tmpdir: string; readonly metrics: WriteBackMetrics }): WriteBack {
  return createWriteBack(writeBackSettingsFrom(config, deps.tmpdir), {
    clock: deps.clock,
    ...argoCdSecrets(deps.client, {
      namespace: config.argocdNamespace,
      credentialsSecret: config.writeBackCredentialsSecret,
      signingSecret: config.writeBackSigningSecret,
      timeoutMs: config.kubeRequestTimeout.ms,
    }),
    observe: (observation) => deps.metrics.observe(observation),
  });
}
