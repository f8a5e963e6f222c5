/**
 * A soak on the real test cluster: 10 Deployments over 3 out-of-band
 * Secrets, two `--leader-elect` controller replicas, and N rounds. Each round
 * rotates a random non-empty set of the Secrets and injects a random fault
 * once the restarts are under way: none, the leader frozen past the lease,
 * the leader killed, the API server restarted, both replicas stopped and
 * started, or a `kubectl replace` of one of the restarting Deployments —
 * dealt from shuffled decks, so every fault comes once in each run of six
 * rounds. It prints what went wrong over all rounds — missed (a workload
 * with a pre-rotation pod left), doubled (a pod deleted that was not due),
 * over-disrupted (more pods down at once than max(maxUnavailable, 1)) — and
 * asserts 0 / 0 / 0.
 *
 * DRIFTLESS_SOAK_ROUNDS sets N (default 6, one of each fault: about a minute
 * and a half of CI time; grow it outside CI); DRIFTLESS_SOAK_SEED replays a
 * run (the seed is printed).
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import type { Cluster } from '../cluster/harness.ts';
import { useCluster } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { rotateSecret } from '../controller/support/fixtures.ts';
import { trackPods, type PodTracker } from './support/pod-tracker.ts';
import { leaseHolder, startReplicas, stopAll, waitForLeader, type Replica } from './support/replicas.ts';
import { appManifest, createSecret, kubectlReplace, deployApps, elapsed, waitForRecords, waitForReplaced, waitForSettled } from './support/scene.ts';
import { prng } from '../support/prng.ts';

const fixture = useCluster({ auditLog: true });

const SECRETS = ['s0', 's1', 's2'];
const APPS = Array.from({ length: 10 }, (_, index) => ({ name: `w${index}`, secret: SECRETS[index % SECRETS.length] as string }));
const REPLICAS = 3;
const READY_DELAY = '2s';
const FAULTS = ['none', 'freeze-leader', 'kill-leader', 'restart-apiserver', 'stop-all', 'replace-workload'] as const;
type Fault = (typeof FAULTS)[number];
const ROUND_TIMEOUT_MS = 150_000;

function rounds(): number {
  const text = process.env['DRIFTLESS_SOAK_ROUNDS'] ?? String(FAULTS.length);
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`DRIFTLESS_SOAK_ROUNDS=${JSON.stringify(text)} is not a positive integer`);
  return value;
}


/** Injects the fault; returns a note for the round's line. `target`: the Deployment a workload fault hits. */
async function inject(fault: Fault, cluster: Cluster, namespace: string, replicas: readonly Replica[], target: string): Promise<string> {
  switch (fault) {
    case 'none':
      return 'no fault';
    case 'freeze-leader': {
      const leader = await currentLeader(cluster, namespace, replicas);
      const standby = replicas.find((replica) => replica !== leader) as Replica;
      leader.freeze();
      await waitFor('the standby to take the Lease', async () => (await leaseHolder(cluster, namespace)) === standby.name, { timeoutMs: 60_000 });
      leader.resume();
      return `froze ${leader.name} until ${standby.name} held the Lease`;
    }
    case 'kill-leader': {
      const leader = await currentLeader(cluster, namespace, replicas);
      await leader.kill();
      return `killed ${leader.name}`;
    }
    case 'restart-apiserver':
      await cluster.restartApiServer();
      return 'restarted the API server';
    case 'stop-all':
      for (const replica of replicas) await replica.stop();
      for (const replica of replicas) await replica.start();
      return 'stopped and started both replicas';
    case 'replace-workload': {
      // The manifest as created: the same pod template, none of what the controller wrote on the object.
      const name = target;
      const app = APPS.find((candidate) => candidate.name === name) as (typeof APPS)[number];
      await kubectlReplace(cluster, namespace, appManifest(name, { secret: app.secret, replicas: REPLICAS, readyDelay: READY_DELAY }));
      return `kubectl replace of ${name}`;
    }
  }
}

/** A seeded Fisher-Yates shuffle of a copy of `items`. */
function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let index = copy.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [copy[index], copy[other]] = [copy[other] as T, copy[index] as T];
  }
  return copy;
}

async function currentLeader(cluster: Cluster, namespace: string, replicas: readonly Replica[]): Promise<Replica> {
  const holder = await leaseHolder(cluster, namespace);
  const leader = replicas.find((replica) => replica.name === holder);
  if (leader === undefined) throw new Error(`no replica holds the Lease (holder ${JSON.stringify(holder)})`);
  return leader;
}

/** Restarts replicas that are not running (killed, or exited on losing the Lease). */
async function reviveAll(replicas: readonly Replica[]): Promise<void> {
  for (const replica of replicas) if (!replica.alive()) await replica.start();
}

/** Of the old pods of every affected app, how many are replaced. */
function replacedOfAll(tracker: PodTracker, old: ReadonlyMap<string, string[]>): { replaced: number; total: number } {
  let replaced = 0;
  let total = 0;
  for (const uids of old.values()) {
    replaced += tracker.replacedOf(uids);
    total += uids.length;
  }
  return { replaced, total };
}

fixture.test('soak: random rotations with a random fault each round; missed / doubled / over-disrupted are 0 / 0 / 0', async ({ cluster, namespace }) => {
  const startedAt = Date.now();
  const roundCount = rounds();
  const seed = Number(process.env['DRIFTLESS_SOAK_SEED'] ?? randomInt(2 ** 31));
  const random = prng(seed);
  process.stderr.write(`soak: ${roundCount} rounds, seed ${seed} (DRIFTLESS_SOAK_SEED=${seed} replays it)\n`);
  const tracker = trackPods(cluster.admin, namespace);
  for (const secret of SECRETS) await createSecret(cluster, namespace, secret);
  for (const secret of SECRETS) await deployApps(cluster, namespace, APPS.filter((app) => app.secret === secret).map((app) => app.name), { secret, replicas: REPLICAS, readyDelay: READY_DELAY });
  await tracker.ready();
  const replicas = await startReplicas(cluster, namespace, { args: ['--min-restart-interval=0', '--restart-rate=10', '--restart-burst=10'] });
  const totals = { missed: 0, doubled: 0, overDisrupted: 0, missedFaultWindow: 0 };
  const faultsUsed = new Map<Fault, number>();
  try {
    await waitForLeader(cluster, namespace, replicas);
    await waitForRecords(cluster, namespace, APPS.map((app) => app.name));
    // Measured from here to the end, between rounds included.
    for (const app of APPS) tracker.measure(app.name, REPLICAS, 1);
    const breaches = (): number => APPS.reduce((sum, app) => sum + tracker.disruption(app.name).breaches, 0);
    // Every deletion after this is either of a round's old pod (due) or doubled.
    let countedUntil = Date.now();
    // Faults are dealt from shuffled decks: random order, and every fault once in each run of FAULTS.length rounds.
    let deck: Fault[] = [];
    let breachesBefore = 0;
    for (let round = 1; round <= roundCount; round++) {
      const roundStartedAt = Date.now();
      await reviveAll(replicas);
      await waitForLeader(cluster, namespace, replicas);
      for (const app of APPS) assert.ok(await waitForSettled(cluster, namespace, app.name, REPLICAS, 60_000), `round ${round}: ${app.name} settles before the rotation`);

      let rotated = SECRETS.filter(() => random() < 0.5);
      if (rotated.length === 0) rotated = [SECRETS[Math.floor(random() * SECRETS.length)] as string];
      if (deck.length === 0) deck = shuffled(FAULTS, random);
      const fault = deck.pop() as Fault;
      faultsUsed.set(fault, (faultsUsed.get(fault) ?? 0) + 1);
      const affected = APPS.filter((app) => rotated.includes(app.secret)).map((app) => app.name);
      const old = new Map(affected.map((name) => [name, tracker.live(name)]));
      const rotatedAt = Date.now();
      for (const secret of rotated) await rotateSecret(cluster.admin, namespace, secret, `round-${round}`);

      let note = 'no fault';
      if (fault !== 'none') {
        const progress = await waitFor('the restarts to be under way', () => {
          const now = replacedOfAll(tracker, old);
          return now.replaced >= 1 ? now : undefined;
        }, { timeoutMs: 90_000, intervalMs: 50 });
        // A fault after every pod is replaced tests nothing; it is counted and reported, and fails the soak.
        if (progress.replaced >= progress.total) totals.missedFaultWindow++;
        // A workload fault goes to a Deployment in the middle of its restart, when there is one.
        const target = affected.find((name) => {
          const replaced = tracker.replacedOf(old.get(name) ?? []);
          return replaced > 0 && replaced < REPLICAS;
        }) ?? affected[0];
        if (target === undefined) throw new Error('a round rotated no workload');
        note = `${await inject(fault, cluster, namespace, replicas, target)} with ${progress.replaced} of ${progress.total} pods replaced`;
        await reviveAll(replicas);
      }

      let missed = 0;
      for (const name of affected) {
        const left = Math.max(1_000, rotatedAt + ROUND_TIMEOUT_MS - Date.now());
        if (!(await waitForReplaced(cluster, tracker, namespace, name, old.get(name) ?? [], REPLICAS, left))) missed++;
      }
      let doubled = 0;
      for (const app of APPS) doubled += tracker.verdict(app.name, old.get(app.name) ?? [], countedUntil).doubled.length;
      countedUntil = Date.now();
      const overDisrupted = breaches() - breachesBefore;
      breachesBefore += overDisrupted;
      totals.missed += missed;
      totals.doubled += doubled;
      totals.overDisrupted += overDisrupted;
      process.stderr.write(`soak round ${round}: rotated ${rotated.join(',')} (${affected.length} workloads), ${note}; missed ${missed}, doubled ${doubled}, over-disrupted ${overDisrupted}; ${elapsed(roundStartedAt)}\n`);
    }
    await stopAll(replicas);
    // Whatever was deleted after the last round's check was not due: doubled (the controllers are stopped now).
    for (const app of APPS) totals.doubled += tracker.verdict(app.name, [], countedUntil).doubled.length;
    totals.overDisrupted += breaches() - breachesBefore;
  } finally {
    await stopAll(replicas);
    tracker.stop();
  }
  process.stderr.write(
    `soak: ${roundCount} rounds, faults ${[...faultsUsed.entries()].map(([fault, count]) => `${fault}×${count}`).join(' ')}; ` +
      `missed ${totals.missed} / doubled ${totals.doubled} / over-disrupted ${totals.overDisrupted}; faults after the restart had ended ${totals.missedFaultWindow}; took ${elapsed(startedAt)}\n`,
  );
  assert.deepEqual({ missed: totals.missed, doubled: totals.doubled, overDisrupted: totals.overDisrupted }, { missed: 0, doubled: 0, overDisrupted: 0 });
  assert.equal(totals.missedFaultWindow, 0, 'every fault hit a restart in progress');
}, { timeout: 30 * 60_000 });
