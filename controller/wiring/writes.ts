/**
 * A pipeline's API writes: fenced by the election, logged only under
 * `--dry-run`, and a write refused for good (403 from an admission webhook,
 * 422) reported as a Warning Event and a metric, with the restart it would
 * have started giving its `--restart-rate` token back.
 */
import type { Logger } from 'pino';
import { warningEvent, type EventRecorder } from '../events.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Fence } from '../kube/fence.ts';
import type { CounterHandle } from '../metrics.ts';
import { createWrites, dryRunWrites, reportRejectedWrites, type RejectedWrite, type Writes } from '../kube/writes.ts';

/** Replaces the API writes (tests); given the fence the real writes would consult. */
export type WritesOverride = (client: KubeClient, fence: Fence) => Writes;

/** What the writes need. */
export interface WritesDeps {
  readonly client: KubeClient;
  readonly fence: Fence;
  readonly timeoutMs: number;
  readonly dryRun: boolean;
  readonly override: WritesOverride | undefined;
  readonly log: Logger;
  readonly events: EventRecorder;
  readonly writeFailures: CounterHandle<'operation' | 'code'>;
  /** Gives back the token of a restart whose first write was refused. */
  refundRestart(): void;
}

/** The writes the reconciler is given. */
export function createClusterWrites(deps: WritesDeps): Writes {
  const { client, fence, log } = deps;
  const base = deps.override?.(client, fence) ?? (deps.dryRun ? dryRunWrites((what) => log.info({ dryRun: true }, what)) : createWrites(client, { fence, timeoutMs: deps.timeoutMs }));
  return reportRejectedWrites(base, (rejected) => reportRejected(rejected, deps));
}

function reportRejected(rejected: RejectedWrite, deps: WritesDeps): void {
  deps.writeFailures.inc({ operation: rejected.operation, code: String(rejected.status) });
  if (rejected.startedRestart) deps.refundRestart();
  const workload = rejected.workload === undefined ? undefined : `${rejected.workload.kind}/${rejected.workload.namespace}/${rejected.workload.name}`;
  deps.log.warn({ operation: rejected.operation, status: rejected.status, workload }, 'the API server refused a write');
  if (rejected.workload !== undefined) {
    void deps.events.record(rejected.workload, warningEvent('WriteRejected', `the API server refused the ${rejected.operation} write (${rejected.status}): ${rejected.message}`));
  }
}
