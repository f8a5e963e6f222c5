/**
 * A refused cluster Secret is never silent (ADR 0019): a Warning Event on the
 * Secret in the hub, once per Secret version and reason, written by the
 * leader only. The detail comes from the parser and names no credential.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.ts';
import type { Refusal } from './destinations.ts';

/** The Event's reason. */
export const CLUSTER_REFUSED_REASON = 'ClusterRefused';

/** Writes the Warning Event; a failure is logged, never thrown. */
export async function recordRefusal(client: KubeClient, namespace: string, refusal: Refusal, deps: { readonly now: () => number; readonly log: Logger; readonly instance: string; readonly timeoutMs: number }): Promise<void> {
  const time = new Date(deps.now()).toISOString().replace(/\.\d+Z$/, 'Z');
  const { secret: name, uid } = refusal;
  try {
    await client.request('POST', `/api/v1/namespaces/${namespace}/events`, {
      timeoutMs: deps.timeoutMs,
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace },
        involvedObject: { apiVersion: 'v1', kind: 'Secret', namespace, name, ...(uid === undefined ? {} : { uid }) },
        type: 'Warning',
        reason: CLUSTER_REFUSED_REASON,
        message: `Driftless does not manage this cluster (${refusal.reason}): ${refusal.detail}`,
        source: { component: 'driftless', host: deps.instance },
        reportingComponent: 'driftless',
        reportingInstance: deps.instance,
        firstTimestamp: time,
        lastTimestamp: time,
        count: 1,
      },
    });
  } catch (error) {
    deps.log.warn({ err: error, secret: `${namespace}/${name}` }, 'could not record the cluster Secret\'s refusal as an Event');
  }
}
