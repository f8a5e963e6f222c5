/**
 * Hub mode under `--leader-elect` (ADR 0023) with real processes: three
 * replicas share four clusters on a Lease each in the hub. One replica is
 * killed (SIGKILL), one frozen (SIGSTOP) past its Leases and resumed; each
 * time a Secret is rotated in every cluster the dead or frozen replica owned,
 * and the others restart there; then two stop (SIGTERM) and hand their
 * clusters to the third, which restarts everywhere; then the two start again
 * (1 → 3) and the clusters spread out once more. The audit logs are the judge: every write a
 * replica made to a cluster fell while it held that cluster's Lease (its last
 * successful write of the Lease came before, within a lease duration, and no
 * other replica's came between), and every pod was evicted once per rotation,
 * none missed or doubled.
 *
 * The four clusters: the hub itself (Argo CD's in-cluster destination), two
 * spokes, and the first spoke registered once more under another address
 * (`https://localhost:<port>`, verified as `serverName: kubernetes.default`)
 * for another namespace, as Argo CD would take it: a cluster of its own. Every replica reaches a spoke with the same
 * cluster Secret, so their requests are told apart by User-Agent.
 */
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import type { ApiClient, KubeObject } from '../cluster/api.ts';
import { auditSucceeded, auditTime, type AuditEvent } from '../cluster/audit.ts';
import { installArgoCdCrds } from '../cluster/argocd.ts';
import { startClusters, type Cluster } from '../cluster/harness.ts';
import { create, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { COLLECTIONS, SECRET_VALUE, rotateSecret, secret, uids, waitForReadyPods, workload } from '../controller/support/fixtures.ts';
import { findLeak } from '../controller/support/leak.ts';
import { startControllerProcess, type ControllerProcess, type LogLine } from '../controller/support/process.ts';
import { clusterLeaseName } from '../../controller/hub/shards.ts';
import { userAgentOf } from '../../controller/wiring/cluster-client.ts';

const ARGOCD = 'argocd';
const MANAGER = 'argocd-manager';
const LEASE_ID = 'shards';
const LEASE_NAMESPACE = 'default';
// Failover within ~8 s of the last renewal; a renew deadline of 6 s holds on a loaded 2-core machine.
const LEASE_DURATION_MS = 8000;
const IN_CLUSTER = 'https://kubernetes.default.svc';
const ARGS = [
  '--argocd-clusters', `--argocd-namespace=${ARGOCD}`,
  '--leader-elect', `--leader-election-namespace=${LEASE_NAMESPACE}`, `--leader-election-id=${LEASE_ID}`,
  `--lease-duration=${LEASE_DURATION_MS / 1000}s`, '--renew-deadline=6s', '--retry-period=1s',
  '--min-restart-interval=0', '--restart-rate=10', '--restart-burst=10',
];
const RESTART_TIMEOUT_MS = 120_000;

/** One of the four clusters: where its workload runs, and the API server whose audit log holds its writes. */
interface Target {
  readonly name: string;
  /** The server URL as registered: the Lease's key. */
  readonly server: string;
  readonly cluster: Cluster;
  readonly ns: string;
  /** Rotations so far: every pod is evicted once per rotation. */
  rotations: number;
}

interface Replica {
  readonly name: string;
  process: ControllerProcess;
  frozen: boolean;
}

interface Scene {
  readonly hub: Cluster;
  readonly spokes: readonly Cluster[];
  readonly targets: readonly Target[];
  readonly replicas: Replica[];
  /** Every cluster credential handed to the replicas: none may appear in what they said. */
  readonly tokens: string[];
}

let scene: Scene | undefined;

async function deployApp(cluster: Cluster, ns: string): Promise<void> {
  await create(cluster.admin, COLLECTIONS.Secret(ns), secret('db', 'v0'));
  await create(cluster.admin, COLLECTIONS.Deployment(ns), workload('Deployment', 'app', { replicas: 2, uses: { secret: 'db' } }));
  await waitForDeploymentRollout(cluster.admin, ns, 'app');
}

function clusterSecret(name: string, server: string, spoke: Cluster, token: string, namespaces: string): KubeObject {
  // The serving certificate names 127.0.0.1, not localhost: the alias says which name to verify, as Argo CD lets it.
  const serverName = server.includes('localhost') ? { serverName: 'kubernetes.default' } : {};
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `cluster-${name}`, namespace: ARGOCD, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
    stringData: {
      name, server, namespaces,
      config: JSON.stringify({ bearerToken: token, tlsClientConfig: { insecure: false, caData: Buffer.from(spoke.ca).toString('base64'), ...serverName } }),
    },
  };
}

async function startScene(): Promise<Scene> {
  const [hub, a, b] = await startClusters([{ auditLog: true }, { auditLog: true }, { auditLog: true }]) as [Cluster, Cluster, Cluster];
  await hub.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ARGOCD } });
  await installArgoCdCrds(hub);
  const [nsHub, nsA, nsAlias, nsB] = await Promise.all([hub.newNamespace('hub'), a.newNamespace('a'), a.newNamespace('alias'), b.newNamespace('b')]);
  const alias = a.server.replace('127.0.0.1', 'localhost');
  const targets: Target[] = [
    { name: 'in-cluster', server: IN_CLUSTER, cluster: hub, ns: nsHub, rotations: 0 },
    { name: 'spoke-a', server: a.server, cluster: a, ns: nsA, rotations: 0 },
    { name: 'spoke-a-alias', server: alias, cluster: a, ns: nsAlias, rotations: 0 },
    { name: 'spoke-b', server: b.server, cluster: b, ns: nsB, rotations: 0 },
  ];
  await Promise.all(targets.map((target) => deployApp(target.cluster, target.ns)));
  for (const spoke of [a, b]) await spoke.createServiceAccount('kube-system', MANAGER);
  const tokens: string[] = [];
  for (const target of targets.slice(1)) {
    const token = await target.cluster.tokenFor('kube-system', MANAGER);
    tokens.push(token);
    await create(hub.admin, COLLECTIONS.Secret(ARGOCD), clusterSecret(target.name, target.server, target.cluster, token, target.ns));
  }
  // The in-cluster destination would manage every namespace of the hub: scoped to the app's by its own Secret.
  await create(hub.admin, COLLECTIONS.Secret(ARGOCD), {
    apiVersion: 'v1', kind: 'Secret',
    metadata: { name: 'cluster-in-cluster', namespace: ARGOCD, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
    stringData: { name: 'in-cluster', server: IN_CLUSTER, namespaces: nsHub, config: '{"tlsClientConfig":{"insecure":false}}' },
  });
  const replicas: Replica[] = [];
  for (const name of ['replica-1', 'replica-2', 'replica-3']) replicas.push({ name, process: await startControllerProcess(hub, { args: ARGS, env: { POD_NAME: name } }), frozen: false });
  return { hub, spokes: [a, b], targets, replicas, tokens };
}

/** Who holds each cluster's Lease now, by server ('' when nobody, or the holder's renewal is older than the lease). */
async function holders(hub: Cluster, targets: readonly Target[]): Promise<Map<string, string>> {
  const list = await hub.admin.request<{ items: { metadata: { name: string }; spec?: { holderIdentity?: string; renewTime?: string } }[] }>('GET', `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases`);
  const byName = new Map(list.items.map((lease) => [lease.metadata.name, lease.spec]));
  return new Map(targets.map((target) => {
    const spec = byName.get(clusterLeaseName(LEASE_ID, target.server));
    const fresh = spec?.renewTime !== undefined && Date.now() - Date.parse(spec.renewTime) < LEASE_DURATION_MS;
    return [target.server, fresh ? (spec.holderIdentity ?? '') : ''];
  }));
}

/** Waits until every cluster is held by one of `live`, each of them holding at least one. */
async function waitForShares(hub: Cluster, targets: readonly Target[], live: readonly string[], what: string): Promise<Map<string, string>> {
  return waitFor(`every cluster held by ${live.join(', ')} (${what})`, async () => {
    const now = await holders(hub, targets);
    const owners = [...now.values()];
    return owners.every((owner) => live.includes(owner)) && live.every((name) => owners.includes(name)) ? now : undefined;
  }, { timeoutMs: 90_000, intervalMs: 250 });
}

/** The digest recorded on the workload (first sight, or a restart's end), other than `not`. */
function recordedDigest(api: ApiClient, ns: string, not?: string): Promise<string> {
  return waitFor(`the digest recorded on ${ns}/app`, async () => {
    const object = await api.request<KubeObject>('GET', `${COLLECTIONS.Deployment(ns)}/app`);
    const digest = object.metadata?.annotations?.['driftless.dev/restarted-for'];
    return digest !== undefined && digest !== not ? digest : undefined;
  }, { timeoutMs: RESTART_TIMEOUT_MS });
}

/** Rotates `db` in each target and waits until every pod of each was replaced and the new digest recorded. */
async function rotateAndWait(targets: readonly Target[], value: string): Promise<void> {
  const before = await Promise.all(targets.map(async (target) => ({
    pods: uids(await waitForReadyPods(target.cluster.admin, target.ns, 'app', 2)),
    digest: await recordedDigest(target.cluster.admin, target.ns),
  })));
  for (const target of targets) {
    await rotateSecret(target.cluster.admin, target.ns, 'db', value);
    target.rotations++;
  }
  await Promise.all(targets.map(async (target, index) => {
    const old = before[index]?.pods ?? [];
    await waitFor(`every pod of ${target.name}'s app replaced`, async () => {
      const pods = await waitForReadyPods(target.cluster.admin, target.ns, 'app', 2, 5_000).catch(() => undefined);
      return pods !== undefined && uids(pods).every((uid) => !old.includes(uid)) ? pods : undefined;
    }, { timeoutMs: RESTART_TIMEOUT_MS });
    await recordedDigest(target.cluster.admin, target.ns, before[index]?.digest);
  }));
}

/**
 * Every successful write `replica` made to `target`'s workloads: in its namespace of its API server.
 * (Restart records live in the hub's own namespace, written by the same fenced path; they are left out here.)
 */
function writesTo(events: readonly AuditEvent[], target: Target): AuditEvent[] {
  return events.filter((event) => auditSucceeded(event) && event.objectRef?.namespace === target.ns && event.userAgent?.startsWith('driftless-controller (') === true);
}

/**
 * The violations of the fence in `target`: a write by a replica whose last successful write of the cluster's
 * Lease was not the last one before the write (another replica had taken it), or was a lease duration old.
 */
function fenceViolations(leaseWrites: readonly AuditEvent[], writes: readonly AuditEvent[], target: Target): string[] {
  const violations: string[] = [];
  for (const write of writes) {
    const at = auditTime(write.requestReceivedTimestamp);
    const last = leaseWrites.filter((lease) => auditTime(lease.stageTimestamp) <= at).at(-1);
    const what = `${write.verb} ${write.objectRef?.resource ?? ''}/${write.objectRef?.subresource ?? ''} ${write.objectRef?.name ?? ''} by ${write.userAgent ?? ''} in ${target.name} at ${write.requestReceivedTimestamp}`;
    if (last === undefined) violations.push(`${what}: before any Lease was held`);
    else if (last.userAgent !== write.userAgent) violations.push(`${what}: the Lease was last written by ${last.userAgent ?? ''} at ${last.stageTimestamp}`);
    else if (at - auditTime(last.stageTimestamp) >= LEASE_DURATION_MS) violations.push(`${what}: its last renewal was at ${last.stageTimestamp}`);
  }
  return violations;
}

before(async () => {
  scene = await startScene();
});

after(async () => {
  if (scene === undefined) return;
  await Promise.all(scene.replicas.map(async (replica) => {
    if (replica.frozen) process.kill(replica.process.pid, 'SIGCONT');
    // Bounded: a replica that does not stop within 60 s is killed (and the test has said what it saw).
    const stopped = replica.process.stop().then(() => true, () => false);
    const inTime = await Promise.race([stopped, new Promise<boolean>((resolve) => setTimeout(resolve, 60_000, false).unref())]);
    if (!inTime) await replica.process.kill();
  }));
  await Promise.all([scene.hub, ...scene.spokes].map((cluster) => cluster.stop()));
});

/** On a failure: what the replicas warned about and said of Leases and clusters, to say why. */
function warnings(replicas: readonly Replica[]): string {
  const telling = (line: LogLine): boolean => Number(line['level'] ?? 0) >= 40 || /Lease|cluster/.test(line.msg ?? '');
  return replicas.map((replica) => `${replica.name}:\n${replica.process.lines.filter(telling).slice(-40).map((line) => JSON.stringify(line)).join('\n')}`).join('\n');
}

test('three replicas share four clusters on Leases: one killed, one frozen past its Leases, scaled to one and back to three; every restart done once, no write by a replica after it lost a cluster\'s Lease', async (t) => {
  try {
    await sharedKilledFrozen(t);
  } catch (error) {
    t.diagnostic(`${String(error)}\n${warnings((scene as Scene).replicas)}`);
    throw error;
  }
});

async function sharedKilledFrozen(t: TestContext): Promise<void> {
  const { hub, targets, replicas } = scene as Scene;
  const names = replicas.map((replica) => replica.name);
  const shares = await waitForShares(hub, targets, names, 'three replicas');
  t.diagnostic(`shares: ${JSON.stringify(Object.fromEntries(shares))}`);
  await rotateAndWait(targets, 'v1');

  // SIGKILL the replica with the most clusters; rotate where it was.
  const counts = (owner: string): number => [...shares.values()].filter((holder) => holder === owner).length;
  const killed = replicas.reduce((most, replica) => (counts(replica.name) > counts(most.name) ? replica : most));
  const killedTargets = targets.filter((target) => shares.get(target.server) === killed.name);
  await killed.process.kill();
  const afterKill = await waitForShares(hub, targets, names.filter((name) => name !== killed.name), 'after the kill');
  t.diagnostic(`killed ${killed.name} (${killedTargets.map((target) => target.name).join(', ')}); shares: ${JSON.stringify(Object.fromEntries(afterKill))}`);
  await rotateAndWait(killedTargets, 'v2');

  // SIGSTOP another past its Leases; rotate where it was; then resume it.
  const frozen = replicas.find((replica) => replica !== killed && [...afterKill.values()].includes(replica.name)) as Replica;
  const frozenTargets = targets.filter((target) => afterKill.get(target.server) === frozen.name);
  process.kill(frozen.process.pid, 'SIGSTOP');
  frozen.frozen = true;
  const last = names.find((name) => name !== killed.name && name !== frozen.name) as string;
  await waitForShares(hub, targets, [last], 'the frozen one\'s Leases expired');
  await rotateAndWait(frozenTargets, 'v3');
  process.kill(frozen.process.pid, 'SIGCONT');
  frozen.frozen = false;
  await frozen.process.waitForLog('the frozen replica saw its Leases gone', (line) => line.msg === 'lost the cluster\'s Lease: stopped managing it', { timeoutMs: 60_000 });

  // The killed one comes back; all three share the clusters again, and a rotation everywhere restarts once.
  killed.process = await startControllerProcess(hub, { args: ARGS, env: { POD_NAME: killed.name } });
  await waitForShares(hub, targets, names, 'three replicas again');
  await rotateAndWait(targets, 'v4');

  // Scaled down to one (SIGTERM): the two leaving hand their clusters over; a rotation everywhere restarts once.
  for (const leaving of replicas.filter((replica) => replica.name !== last)) await leaving.process.stop();
  await waitForShares(hub, targets, [last], 'scaled down to one');
  await rotateAndWait(targets, 'v5');

  // And up to three again (1 → 3): the clusters spread out once more; a rotation everywhere restarts once.
  for (const joining of replicas.filter((replica) => replica.name !== last)) joining.process = await startControllerProcess(hub, { args: ARGS, env: { POD_NAME: joining.name } });
  await waitForShares(hub, targets, names, 'scaled up to three');
  await rotateAndWait(targets, 'v6');

  const hubLeases = await hub.audit({ resource: 'leases', namespace: LEASE_NAMESPACE, succeeded: true });
  const violations: string[] = [];
  for (const target of targets) {
    const leaseWrites = hubLeases.filter((event) => event.objectRef?.name === clusterLeaseName(LEASE_ID, target.server) && event.verb !== 'delete');
    const events = await target.cluster.audit({ namespace: target.ns });
    violations.push(...fenceViolations(leaseWrites, writesTo(events, target), target));
    const evictions = events.filter((event) => auditSucceeded(event) && event.objectRef?.subresource === 'eviction');
    assert.equal(evictions.length, 2 * target.rotations, `${target.name}: every pod evicted once per rotation (${target.rotations} rotations): ${evictions.map((e) => `${e.objectRef?.name ?? ''} by ${e.userAgent ?? ''}`).join(', ')}`);
    assert.ok(names.some((name) => evictions.some((e) => e.userAgent === userAgentOf(name))), `${target.name}: evicted by a replica`);
  }
  assert.deepEqual(violations, [], 'a write by a replica that did not hold the cluster\'s Lease');
  for (const replica of replicas) {
    const said = `${replica.process.lines.map((line) => JSON.stringify(line)).join('\n')}\n${replica.process.stderr()}`;
    assert.equal(findLeak(said, ...(scene as Scene).tokens, SECRET_VALUE), undefined, `a cluster Secret's token in ${replica.name}'s output`);
  }
}
