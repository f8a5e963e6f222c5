/**
 * The harness leaves nothing behind: after `stop()` no component process of
 * the cluster is left and its temp dir is gone; a ServiceAccount
 * kubeconfig from `kubeconfigFor` authenticates as that account; and the
 * controller manager stops and starts again (bench/scale.ts fills a cluster in between).
 */
import assert from 'node:assert/strict';
import { readdir, readFile, stat } from 'node:fs/promises';
import test from 'node:test';
import { parse } from 'yaml';
import { createApiClient } from './api.ts';
import { startCluster } from './harness.ts';
import { podTemplate, waitForDeploymentRollout } from './testing.ts';

/** Pids of processes whose command line mentions `needle` (the cluster's state dir). */
async function processesMentioning(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const commandLine = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (commandLine.includes(needle)) pids.push(Number(entry));
  }
  return pids;
}

test('stop() ends every component and removes the state dir', { timeout: 60 * 60_000 }, async () => {
  const cluster = await startCluster();
  let stopped = false;
  try {
    const running = await processesMentioning(cluster.stateDir);
    // etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (setpriv execs, so no wrappers).
    assert.equal(running.length, 5, `components running: ${running.join(' ')}`);

    const namespace = await cluster.newNamespace();
    await cluster.admin.request('POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'robot' },
    });
    const kubeconfig = parse(await cluster.kubeconfigFor(namespace, 'robot')) as {
      users: { user: { token: string } }[];
    };
    const token = kubeconfig.users[0]?.user.token ?? '';
    const robot = createApiClient({ server: cluster.server, ca: cluster.ca, token });
    try {
      const review = await robot.request<{ status: { userInfo: { username: string } } }>(
        'POST',
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      );
      assert.equal(review.status.userInfo.username, `system:serviceaccount:${namespace}:robot`);
    } finally {
      robot.close();
    }

    await cluster.stopControllerManager();
    assert.equal((await processesMentioning(cluster.stateDir)).length, 4, 'the controller manager stopped, the rest runs');
    await cluster.startControllerManager();
    assert.equal((await processesMentioning(cluster.stateDir)).length, 5, 'the controller manager runs again');
    // Started again, it does its work: a Deployment gets its ReplicaSet and a Ready pod.
    await cluster.admin.request('POST', `/apis/apps/v1/namespaces/${namespace}/deployments`, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'after-restart' },
      spec: { replicas: 1, selector: { matchLabels: { app: 'after-restart' } }, template: podTemplate({ app: 'after-restart' }) },
    });
    await waitForDeploymentRollout(cluster.admin, namespace, 'after-restart');

    await cluster.stop();
    stopped = true;
    assert.deepEqual(await processesMentioning(cluster.stateDir), []);
    await assert.rejects(stat(cluster.stateDir), { code: 'ENOENT' });
  } finally {
    if (!stopped) await cluster.stop();
  }
});
