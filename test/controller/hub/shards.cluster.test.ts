/**
 * Clusters shared out across replicas on real Leases in a real API server (controller/hub/shards.ts):
 * every cluster held by exactly one replica, a replica cut off from the API server loses its clusters
 * to the others, a replica joining takes its share by hand-over, and a replica leaving releases its
 * Leases. The replicas here are coordinators in one process, each with its own client; one of them
 * reaches the API server through a proxy that the test closes (a real partition: its connections are
 * refused). Whole controller processes killed and frozen are the hub tests' part.
 */
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { useCluster } from '../../cluster/testing.ts';
import type { Cluster } from '../../cluster/harness.ts';
import { waitFor } from '../../support/wait.ts';
import { systemClock } from '../../../controller/clock.ts';
import { createKubeClient, type KubeClient } from '../../../controller/kube/client.ts';
import type { Fence } from '../../../controller/kube/fence.ts';
import { FencedError } from '../../../controller/kube/fence.ts';
import { ShardCoordinator, clusterLeaseName, type ShardCallbacks } from '../../../controller/hub/shards.ts';
import { startApiProxy } from '../support/api-proxy.ts';

const fixture = useCluster();

const TIMING = { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 400 };
const CLUSTERS = ['https://spoke-a:6443', 'https://spoke-b:6443', 'https://spoke-c:6443', 'https://spoke-d:6443'];

function clientFor(kubeconfig: string): KubeClient {
  const config = new KubeConfig();
  config.loadFromString(kubeconfig);
  return createKubeClient(config, { take: () => Promise.resolve() }, undefined, { requestTimeoutMs: 2000 });
}

/**
 * What the replicas were told, checked as it happens: a cluster acquired while another replica can still prove
 * that it holds it (its fence passes) is a violation. Whether the old owner's `lost` callback ran first is timer
 * order on a loaded machine; its fence is what stops its writes, and it closes on the monotonic clock.
 */
class Ledger {
  readonly holders = new Map<string, string>();
  readonly fences = new Map<string, Fence>();
  readonly violations: string[] = [];

  callbacks(identity: string): ShardCallbacks {
    return {
      acquired: (key, fence) => {
        const other = this.holders.get(key);
        if (other !== undefined && provenBy(this.fences.get(`${other} ${key}`))) this.violations.push(`${identity} acquired ${key} while ${other} could still write to it`);
        this.holders.set(key, identity);
        this.fences.set(`${identity} ${key}`, fence);
      },
      lost: (key) => this.#release(identity, key),
      handOver: async (key) => this.#release(identity, key),
    };
  }

  held(identity: string): string[] {
    return [...this.holders].filter(([, holder]) => holder === identity).map(([key]) => key).sort();
  }

  #release(identity: string, key: string): void {
    if (this.holders.get(key) === identity) this.holders.delete(key);
  }
}

/** Whether a fence still lets writes through. */
function provenBy(fence: Fence | undefined): boolean {
  try {
    fence?.check('probe');
    return fence !== undefined;
  } catch {
    return false;
  }
}

interface Replica {
  readonly identity: string;
  readonly coordinator: ShardCoordinator;
  readonly client: KubeClient;
}

function startReplica(identity: string, client: KubeClient, namespace: string, ledger: Ledger): Replica {
  const coordinator = new ShardCoordinator(client, { namespace, id: 'driftless', identity, ...TIMING }, systemClock(), pino({ level: 'silent' }));
  coordinator.setClusters(CLUSTERS.map((key) => ({ key, shard: undefined })));
  coordinator.start(ledger.callbacks(identity));
  return { identity, coordinator, client };
}

/** Waits until every cluster is held, by the replicas named, with loads differing by at most one. */
async function balancedOver(ledger: Ledger, replicas: readonly Replica[], what: string): Promise<void> {
  await waitFor(what, () => {
    const loads = replicas.map((replica) => ledger.held(replica.identity).length);
    // The coordinators' own view agrees with what they were told.
    const agreed = replicas.every((replica) => replica.coordinator.held.join() === ledger.held(replica.identity).join());
    return ledger.holders.size === CLUSTERS.length && agreed && Math.max(...loads) - Math.min(...loads) <= 1 && loads.reduce((a, b) => a + b, 0) === CLUSTERS.length;
  }, { timeoutMs: 30_000, intervalMs: 100 });
}

async function leaseHolder(cluster: Cluster, namespace: string, key: string): Promise<string> {
  const lease = await cluster.admin.request<{ spec?: { holderIdentity?: string } }>('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${clusterLeaseName('driftless', key)}`);
  return lease.spec?.holderIdentity ?? '';
}

fixture.test('every cluster has exactly one owner while replicas are cut off, join and leave', async ({ cluster, namespace }) => {
  const ledger = new Ledger();
  const proxy = await startApiProxy(cluster, { matches: () => false, meanwhile: async () => undefined });
  const replicas = [
    startReplica('replica-0', clientFor(cluster.kubeconfig), namespace, ledger),
    startReplica('replica-1', clientFor(cluster.kubeconfig), namespace, ledger),
    startReplica('replica-2', clientFor(proxy.kubeconfig), namespace, ledger),
  ];
  const [zero, one, cutOff] = replicas as [Replica, Replica, Replica];
  try {
    await balancedOver(ledger, replicas, 'the four clusters shared out over three replicas');
    assert.deepEqual(zero.coordinator.members, ['replica-0', 'replica-1', 'replica-2']);
    for (const key of CLUSTERS) assert.equal(await leaseHolder(cluster, namespace, key), ledger.holders.get(key), `the Lease of ${key} names its owner`);

    // A partition: replica-2's connections are refused. Its fences close; the others take its clusters.
    const itsClusters = ledger.held(cutOff.identity);
    assert.ok(itsClusters.length >= 1);
    const partitioned = Date.now();
    await proxy.close();
    await balancedOver(ledger, [zero, one], 'replica-2\'s clusters taken over by the others');
    process.stdout.write(`# the cut-off replica's clusters moved in ${Date.now() - partitioned} ms (lease duration ${TIMING.leaseDurationMs} ms)\n`);
    for (const key of itsClusters) {
      const fence = ledger.fences.get(`${cutOff.identity} ${key}`);
      assert.throws(() => fence?.check(`PATCH ${key}`), FencedError, 'the cut-off replica can no longer write to its old cluster');
    }

    // A replica joins: it gets its share by hand-over, and nobody holds a cluster twice meanwhile.
    const three = startReplica('replica-3', clientFor(cluster.kubeconfig), namespace, ledger);
    replicas.push(three);
    await balancedOver(ledger, [zero, one, three], 'the newcomer\'s share handed over');
    assert.ok(ledger.held(three.identity).length >= 1);

    // A replica leaves: it releases its Leases, and the others take them without waiting for expiry.
    const leaving = ledger.held(zero.identity);
    await zero.coordinator.stop(ledger.callbacks(zero.identity));
    await balancedOver(ledger, [one, three], 'replica-0\'s clusters taken over after it left');
    for (const key of leaving) assert.notEqual(await leaseHolder(cluster, namespace, key), zero.identity);
    assert.deepEqual(ledger.violations, [], 'no cluster was acquired while another replica held it');
  } finally {
    await Promise.all(replicas.map(async (replica) => {
      await replica.coordinator.stop(ledger.callbacks(replica.identity));
      await replica.client.close();
    }));
    await proxy.close();
  }
}, { timeout: 120_000 });
