/**
 * Watches every pod of a namespace for the length of a fault test and keeps
 * what the assertions need: each pod's UID, workload (label `app`), creation
 * and deletion, and per workload the most pods unavailable at once.
 *
 * The watch reconnects when the API server restarts (resuming from its last
 * resourceVersion, or relisting after 410 Gone); a pod that vanished during a
 * gap is still recorded as deleted when the relist no longer has it. Events of
 * one watch stream are in resourceVersion order, so the availability counted
 * after each event is a state the cluster really was in: no timing involved.
 */
import type { ApiClient, KubeList, KubeObject } from '../../cluster/api.ts';
import { ApiError } from '../../cluster/api.ts';
import { podIsReady } from '../../cluster/testing.ts';

/** What the tracker knows of one pod. */
export interface TrackedPod {
  readonly uid: string;
  readonly name: string;
  /** The `app` label: the workload's name in the fault tests' fixtures. */
  readonly app: string;
  /** creationTimestamp, epoch ms (whole seconds: the API server's precision). */
  readonly createdAt: number;
  /** True once the pod had a deletionTimestamp or was gone. */
  deleting: boolean;
  gone: boolean;
  ready: boolean;
  /** Local time (epoch ms) when the tracker first saw the pod deleting; the only local-clock field. */
  deletingSeenAt: number | undefined;
}

/** Availability bookkeeping of one workload being measured. */
interface Measure {
  readonly desired: number;
  readonly budget: number;
  worst: number;
  /** How many times the unavailable count went above the budget. */
  breaches: number;
  above: boolean;
}

/** A namespace's pods, kept current by a watch. */
export interface PodTracker {
  /** Every pod seen, by UID. */
  readonly pods: ReadonlyMap<string, TrackedPod>;
  /** UIDs of the workload's pods that are live now (not deleting, not gone). */
  live(app: string): string[];
  /** Starts counting the workload's unavailable pods (desired − Ready and not deleting) against `budget`. */
  measure(app: string, desired: number, budget: number): void;
  /** The most pods unavailable at once and how many times it rose above the budget, since `measure`. */
  disruption(app: string): { worst: number; breaches: number; budget: number };
  /** Of `old` (UIDs), how many are deleting or gone. */
  replacedOf(old: readonly string[]): number;
  /**
   * The verdict on one restart of `app`: pods of `old` never deleted (missed), and pods not in
   * `old` that began deleting at or after `since` (local epoch ms; doubled: a replacement evicted).
   */
  verdict(app: string, old: readonly string[], since: number): { missed: string[]; doubled: string[] };
  /** Resolves once the tracker has caught up with the cluster (first list done). */
  ready(): Promise<void>;
  /** Stops the watch. */
  stop(): void;
}

function toTracked(pod: KubeObject): TrackedPod {
  return {
    uid: String(pod.metadata?.uid),
    name: String(pod.metadata?.name),
    app: pod.metadata?.labels?.['app'] ?? '',
    createdAt: Date.parse(String(pod.metadata?.['creationTimestamp'])),
    deleting: pod.metadata?.deletionTimestamp !== undefined,
    gone: false,
    ready: podIsReady(pod),
    deletingSeenAt: pod.metadata?.deletionTimestamp !== undefined ? Date.now() : undefined,
  };
}

/** Starts tracking the pods of `namespace`. */
export function trackPods(client: ApiClient, namespace: string): PodTracker {
  const pods = new Map<string, TrackedPod>();
  const measures = new Map<string, Measure>();
  const abort = new AbortController();
  const collection = `/api/v1/namespaces/${namespace}/pods`;
  let resolveReady: () => void = () => {};
  const firstList = new Promise<void>((resolve) => {
    resolveReady = resolve;
  });

  const recount = (app: string): void => {
    const measure = measures.get(app);
    if (measure === undefined) return;
    const available = [...pods.values()].filter((pod) => pod.app === app && !pod.deleting && !pod.gone && pod.ready).length;
    const unavailable = Math.max(0, measure.desired - available);
    measure.worst = Math.max(measure.worst, unavailable);
    const above = unavailable > measure.budget;
    if (above && !measure.above) measure.breaches++;
    measure.above = above;
  };

  const upsert = (object: KubeObject, deleted: boolean): void => {
    const seen = toTracked(object);
    const known = pods.get(seen.uid);
    const pod = known ?? seen;
    if (known !== undefined) {
      pod.ready = seen.ready;
      if (seen.deleting && !pod.deleting) {
        pod.deleting = true;
        pod.deletingSeenAt = Date.now();
      }
    }
    if (deleted) {
      pod.gone = true;
      pod.deleting = true;
      pod.deletingSeenAt ??= Date.now();
    }
    pods.set(pod.uid, pod);
    recount(pod.app);
  };

  /** Lists, marks pods missing from the list as gone, and returns the list's resourceVersion. */
  const relist = async (): Promise<string> => {
    const list = await client.request<KubeList>('GET', collection);
    const present = new Set(list.items.map((item) => String(item.metadata?.uid)));
    for (const pod of pods.values()) {
      if (!present.has(pod.uid) && !pod.gone) {
        pod.gone = true;
        pod.deleting = true;
        pod.deletingSeenAt ??= Date.now();
        recount(pod.app);
      }
    }
    for (const item of list.items) upsert(item, false);
    return list.metadata.resourceVersion;
  };

  const run = async (): Promise<void> => {
    let resourceVersion: string | undefined;
    while (!abort.signal.aborted) {
      try {
        resourceVersion ??= await relist();
        resolveReady();
        for await (const event of client.watch(`${collection}?resourceVersion=${resourceVersion}&allowWatchBookmarks=true`, abort.signal)) {
          if (event.type === 'ERROR') {
            // 410 Gone inside the stream: the version is too old, relist.
            resourceVersion = undefined;
            break;
          }
          resourceVersion = String(event.object.metadata?.resourceVersion ?? resourceVersion);
          if (event.type === 'BOOKMARK') continue;
          upsert(event.object, event.type === 'DELETED');
        }
        // The server ended the watch (its timeout, or a restart): reconnect, not in a tight loop.
        if (!abort.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 100));
      } catch (error) {
        if (error instanceof ApiError && error.status === 410) resourceVersion = undefined;
        // Anything else (the API server restarting): try again shortly, from the same version.
        if (!abort.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  };
  void run();

  return {
    pods,
    live: (app) => [...pods.values()].filter((pod) => pod.app === app && !pod.deleting && !pod.gone).map((pod) => pod.uid),
    measure(app, desired, budget) {
      measures.set(app, { desired, budget, worst: 0, breaches: 0, above: false });
      recount(app);
    },
    disruption(app) {
      const measure = measures.get(app);
      if (measure === undefined) throw new Error(`the disruption of ${app} is not measured`);
      return { worst: measure.worst, breaches: measure.breaches, budget: measure.budget };
    },
    replacedOf: (old) => old.filter((uid) => pods.get(uid)?.deleting === true).length,
    verdict(app, old, since) {
      const oldSet = new Set(old);
      const missed = old.filter((uid) => pods.get(uid)?.deleting !== true).map((uid) => pods.get(uid)?.name ?? uid);
      const doubled = [...pods.values()]
        .filter((pod) => pod.app === app && !oldSet.has(pod.uid) && pod.deletingSeenAt !== undefined && pod.deletingSeenAt >= since)
        .map((pod) => pod.name);
      return { missed, doubled };
    },
    ready: () => firstList,
    stop: () => abort.abort(),
  };
}
