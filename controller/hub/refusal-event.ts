/**
 * A refused cluster Secret is never silent (ADR 0019): a Warning Event on the
 * Secret in the hub, once per Secret version and reason, written by the
 * leader only. The detail comes from the parser and names no credential.
 */
import type { KubeClient } from '../kube/client.ts';
import type { Refusal } from './destinations.ts';
import { recordHubEvent, type HubEventDeps } from './hub-event.ts';

/** The Event's reason. */
export const CLUSTER_REFUSED_REASON = 'ClusterRefused';

/** Writes the Warning Event; a failure is logged, never thrown. */
export function recordRefusal(client: KubeClient, namespace: string, refusal: Refusal, deps: HubEventDeps): Promise<void> {
  return recordHubEvent(client, { kind: 'Secret', namespace, name: refusal.secret, uid: refusal.uid }, {
    type: 'Warning',
    reason: CLUSTER_REFUSED_REASON,
    message: `Driftless does not manage this cluster (${refusal.reason}): ${refusal.detail}`,
  }, deps);
}
