/**
 * Controller replicas for fault tests: each `driftless controller
 * --leader-elect` a real process under its own ServiceAccount (so the audit
 * log tells their writes apart), optionally under a shifted clock, and each
 * can be frozen (SIGSTOP), resumed (SIGCONT), killed (SIGKILL) or stopped.
 */
import type { Cluster } from '../../cluster/harness.ts';
import { shiftedClockEnv } from '../../cluster/faketime.ts';
import { waitFor } from '../../support/wait.ts';
import { startControllerProcess, type ControllerProcess } from '../../controller/support/process.ts';

/** Leader election fast enough for tests: failover within ~4 s of the last renewal. */
export const FAST_LEASE = Object.freeze({ leaseDuration: '4s', renewDeadline: '3s', retryPeriod: '500ms' });

/** The Lease's name (the controller's default --leader-election-id). */
export const LEASE_NAME = 'driftless-controller';

/** One replica: a name (its POD_NAME, the Lease holder identity, and its ServiceAccount). */
export interface Replica {
  readonly name: string;
  /** Its username in the audit log. */
  readonly user: string;
  /** The running process; replaced by `start()`. */
  readonly process: ControllerProcess;
  /** True between `freeze()` and `resume()`. */
  readonly frozen: boolean;
  /** True while the process runs (it may exit by itself, e.g. on losing the Lease). */
  alive(): boolean;
  /** Starts a new process of this replica (after `stop()` or `kill()`). */
  start(): Promise<void>;
  /** SIGSTOP: the process stops dead, its sockets stay open. */
  freeze(): void;
  /** SIGCONT. */
  resume(): void;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (after SIGCONT if frozen) and wait for the exit. */
  stop(): Promise<void>;
}

/** Options of `startReplicas`. */
export interface ReplicaOptions {
  /** How many (default 2). */
  readonly count?: number;
  /** Flags on top of the namespace, leader election and test defaults. */
  readonly args?: readonly string[];
  /** Each replica's wall clock offset from the API server's, in seconds (default none). */
  readonly clockShiftSeconds?: readonly number[];
  /** Names of the replicas (default replica-a, replica-b, …). */
  readonly names?: readonly string[];
}

/**
 * Creates one ServiceAccount per replica (cluster-admin: these tests are about
 * faults, not RBAC) and starts the replicas, all watching `namespace` and
 * campaigning for the Lease in it.
 */
export async function startReplicas(cluster: Cluster, namespace: string, options: ReplicaOptions = {}): Promise<Replica[]> {
  const count = options.count ?? 2;
  const names = options.names ?? Array.from({ length: count }, (_, index) => `replica-${String.fromCharCode(97 + index)}`);
  const args = [
    `--namespaces=${namespace}`,
    '--leader-elect',
    `--leader-election-namespace=${namespace}`,
    `--lease-duration=${FAST_LEASE.leaseDuration}`,
    `--renew-deadline=${FAST_LEASE.renewDeadline}`,
    `--retry-period=${FAST_LEASE.retryPeriod}`,
    ...(options.args ?? []),
  ];
  const replicas: Replica[] = [];
  for (const [index, name] of names.entries()) {
    const user = await cluster.createServiceAccount(namespace, name);
    const shift = options.clockShiftSeconds?.[index];
    const env = { POD_NAME: name, POD_NAMESPACE: namespace, ...(shift === undefined || shift === 0 ? {} : await shiftedClockEnv(shift)) };
    const launch = async (): Promise<ControllerProcess> =>
      startControllerProcess(cluster, { kubeconfig: await cluster.kubeconfigFor(namespace, name), args, env });
    let current = await launch();
    let frozen = false;
    const signal = (sig: NodeJS.Signals): void => {
      try {
        process.kill(current.pid, sig);
      } catch {
        // Already gone.
      }
    };
    replicas.push({
      name,
      user,
      get process() {
        return current;
      },
      get frozen() {
        return frozen;
      },
      alive() {
        try {
          // Signal 0 checks existence; Node reaps the child at exit, so an exited pid is gone.
          process.kill(current.pid, 0);
          return true;
        } catch {
          return false;
        }
      },
      async start() {
        current = await launch();
        frozen = false;
      },
      freeze() {
        signal('SIGSTOP');
        frozen = true;
      },
      resume() {
        signal('SIGCONT');
        frozen = false;
      },
      async kill() {
        await current.kill();
        frozen = false;
      },
      async stop() {
        if (frozen) signal('SIGCONT');
        frozen = false;
        await current.stop();
      },
    });
  }
  return replicas;
}

/** Stops every replica, frozen ones included; for `finally` blocks. */
export async function stopAll(replicas: readonly Replica[]): Promise<void> {
  for (const replica of replicas) await replica.stop().catch(() => replica.kill());
}

/** The Lease's holder identity, or '' when none. */
export async function leaseHolder(cluster: Cluster, namespace: string): Promise<string> {
  const response = await cluster.admin.send<{ spec?: { holderIdentity?: string } }>('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${LEASE_NAME}`);
  return response.status === 200 ? (response.body.spec?.holderIdentity ?? '') : '';
}

/**
 * Waits until one of the replicas holds the Lease and has finished its first
 * reconcile pass as leader; returns it. Read together each time, so a holder
 * that has just been replaced (killed, restarted) is not waited on forever.
 */
export function waitForLeader(cluster: Cluster, namespace: string, replicas: readonly Replica[], timeoutMs = 60_000): Promise<Replica> {
  return waitFor('a leader among the replicas that has reconciled', async () => {
    const holder = await leaseHolder(cluster, namespace);
    const leader = replicas.find((replica) => replica.name === holder);
    return leader?.process.lines.some((line) => line.msg === 'initial reconcile finished') === true ? leader : undefined;
  }, { timeoutMs });
}
