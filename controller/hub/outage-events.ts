/**
 * Says in the hub when a cluster is down and when it is back (ADR 0027): every
 * second the running clusters are sampled (the registry's `health()`), the
 * pure rule of outage.ts decides, and each notice becomes a log line and an
 * Event on the cluster's Argo CD cluster Secret — or, for the in-cluster
 * destination Argo CD has without a Secret, on argocd-cm, the object that
 * turns it on and off. Only the leader samples and speaks: a standby's Events
 * would repeat the leader's, and a replica that becomes leader starts from no
 * outage (it warns once its grace has passed; the old leader may have warned
 * too, once).
 */
import type { Logger } from 'pino';
import type { Clock, Timer } from '../clock.ts';
import type { Destination } from './destinations.ts';
import type { HubObject } from './hub-event.ts';
import { decideOutages, outageEvent, type Outage } from './outage.ts';

/** How often the clusters are sampled. */
const SAMPLE_MS = 1000;

/** What the sampler needs. */
export interface OutageEventsDeps {
  /** Each running cluster and why it is down (undefined: up). */
  clusters(): readonly { readonly destination: Destination; readonly whyDown: string | undefined }[];
  isLeader(): boolean;
  /** The object in the hub an Event about the destination goes on. */
  about(destination: Destination): HubObject;
  write(about: HubObject, event: ReturnType<typeof outageEvent>): Promise<void>;
  readonly clock: Clock;
  readonly log: Logger;
  /** How long a cluster is down before its Warning (`--cluster-down-warning`). */
  readonly graceMs: number;
}

/** Starts sampling; `stop()` ends it. */
export function startOutageEvents(deps: OutageEventsDeps): { stop(): void } {
  let outages: ReadonlyMap<string, Outage> = new Map();
  let timer: Timer | undefined;
  let stopped = false;
  const sample = (): void => {
    if (!deps.isLeader()) {
      outages = new Map();
      return;
    }
    const clusters = deps.clusters();
    const byServer = new Map(clusters.map((c) => [c.destination.server, c.destination]));
    const samples = clusters.map((c) => ({ server: c.destination.server, name: c.destination.name, whyDown: c.whyDown }));
    const decision = decideOutages(outages, samples, deps.clock.monotonic(), deps.graceMs);
    outages = decision.outages;
    for (const notice of decision.notices) {
      const destination = byServer.get(notice.server);
      if (destination === undefined) continue;
      const event = outageEvent(notice);
      if (notice.kind === 'down') deps.log.warn({ cluster: notice.name, why: notice.why }, 'cluster down');
      else deps.log.info({ cluster: notice.name, downForMs: notice.downForMs }, 'cluster back');
      void deps.write(deps.about(destination), event);
    }
  };
  const arm = (): void => {
    if (stopped) return;
    timer = deps.clock.setTimer(() => {
      sample();
      arm();
    }, SAMPLE_MS);
  };
  arm();
  return {
    stop() {
      stopped = true;
      timer?.cancel();
    },
  };
}
