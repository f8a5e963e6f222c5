/**
 * An Event the hub writes about one of Argo CD's objects in `--argocd-namespace`
 * (a cluster Secret, argocd-cm): a refused cluster Secret (refusal-event.ts), a
 * cluster down and back (outage.ts, ADR 0027). Each is written once by its
 * caller's rule (once per Secret version and reason; once per outage), by the
 * leader only, so there is no series to fold. A failure is logged, never
 * thrown: an Event is a courtesy, never a reason to stop.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.ts';

/** The object an Event is about, in the hub. */
export interface HubObject {
  readonly kind: 'Secret' | 'ConfigMap';
  readonly namespace: string;
  readonly name: string;
  /** Without it `kubectl describe` does not list the Event under the object. */
  readonly uid: string | undefined;
}

/** What the writer needs. */
export interface HubEventDeps {
  readonly now: () => number;
  readonly log: Logger;
  readonly instance: string;
  readonly timeoutMs: number;
}

/** Writes one core/v1 Event as component `driftless`. */
export async function recordHubEvent(client: KubeClient, about: HubObject, event: { readonly type: 'Normal' | 'Warning'; readonly reason: string; readonly message: string }, deps: HubEventDeps): Promise<void> {
  const time = new Date(deps.now()).toISOString().replace(/\.\d+Z$/, 'Z');
  const { kind, namespace, name, uid } = about;
  try {
    await client.request('POST', `/api/v1/namespaces/${namespace}/events`, {
      timeoutMs: deps.timeoutMs,
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${name}.${randomBytes(8).toString('hex')}`, namespace },
        involvedObject: { apiVersion: 'v1', kind, namespace, name, ...(uid === undefined ? {} : { uid }) },
        type: event.type,
        reason: event.reason,
        message: event.message.slice(0, 1024),
        source: { component: 'driftless', host: deps.instance },
        reportingComponent: 'driftless',
        reportingInstance: deps.instance,
        firstTimestamp: time,
        lastTimestamp: time,
        count: 1,
      },
    });
  } catch (error) {
    deps.log.warn({ err: error, object: `${kind}/${namespace}/${name}`, event: event.reason }, 'could not record an Event in the hub');
  }
}
