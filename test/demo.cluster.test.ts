/**
 * `npm run demo -- --exit` end to end: the real clusters (the first, with
 * Argo CD and the controller in hub mode, and the second, registered by a
 * cluster Secret), as a user runs it. The narration must reach every step, the run
 * must exit 0 having stopped everything (its temp dir gone), and no Secret
 * value may appear in anything it printed. The write-back scene is checked
 * across its lines: the commit announced is the one shown and the one Argo CD
 * synced, and the Rollout paused with a canary of a new hash and completed on
 * that canary (the demo itself checks one commit, no eviction, no restartAt).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { access } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';

const script = join(import.meta.dirname, '..', 'demo', 'run.ts');
/** Generous: two loaded cores shared with other runs; a warm demo takes about 1.5-2.5 minutes. */
const deadlineMs = 20 * 60_000;

interface DemoRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

async function runDemo(): Promise<DemoRun> {
  // SIGTERM at the deadline, so the demo still stops what it started.
  const child = spawn(process.execPath, [script, '--exit'], { stdio: ['ignore', 'pipe', 'pipe'], timeout: deadlineMs, killSignal: 'SIGTERM' });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

test('npm run demo -- --exit narrates the whole loop and stops everything', { timeout: deadlineMs + 60_000 }, async () => {
  const run = await runDemo();
  const output = `${run.stdout}\n${run.stderr}`;
  assert.equal(run.code, 0, `the demo exited ${String(run.code)}:\n${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`);

  const steps = [
    /cluster ready/,
    /Argo CD v3\.6\.1 ready/,
    /second cluster edge ready \(kube-apiserver https:\/\/127\.0\.0\.1:\d+, started beside Argo CD\) and registered as `argocd cluster add` does: ServiceAccount kube-system\/argocd-manager/,
    /driftless controller ready in in-cluster .*hub mode: --argocd-clusters .*one pipeline each for in-cluster and edge, namespace demo/,
    /Application api registered: the same plugin, destination\.name edge/,
    /Application web Synced\/Healthy at [0-9a-f]{7}; Deployment web's pod template has driftless\.dev\/config-hash: v1:/,
    /Application checkout Synced\/Healthy at [0-9a-f]{7}; Rollout checkout's pod template has driftless\.dev\/config-hash: v1:/,
    /Application api Synced\/Healthy at [0-9a-f]{7}: Argo CD deployed Deployment api into edge, as system:serviceaccount:kube-system:argocd-manager/,
    /== 1\. ConfigMap web-settings changed in Git/,
    /Argo CD compared [0-9a-f]{7}: OutOfSync/,
    /rolling update: ReplicaSet web-\S+ → web-\S+, 2\/2 new pods ready/,
    /== 2\. Secret web-tls rotated out of band/,
    /controller Event RestartStarted: Secret web-tls changed/,
    /pods restarted by eviction \(2 evictions\)/,
    /no new ReplicaSet/,
    /during the restart: Synced at (\d+) of \1 polls/,
    /hard refresh .*: still Synced/,
    /== 3\. Secret api-tls rotated in the second cluster edge → the controller in in-cluster restarts the pods there by eviction/,
    /controller, its edge pipeline: Secret api-tls is out of band for Deployment api in edge/,
    /Secret api-tls rotated in edge/,
    /controller Event RestartStarted, in edge: Secret api-tls changed/,
    /pods in edge restarted by eviction from in-cluster \(2 evictions by the controller's edge pipeline; edge's audit log has 2, as system:serviceaccount:kube-system:argocd-manager, the cluster Secret's identity\): api-\S+, api-\S+ → api-\S+, api-\S+, 2\/2 ready/,
    /controller Event RestartFinished, in edge: every pod created before/,
    /Application api \(destination edge\) during the restart: Synced at (\d+) of \1 polls/,
    /nothing of Driftless or Argo CD runs in edge, only its workloads: 2 pods and 1 Deployment in all of edge's namespaces, all api's/,
    /== 4\. Secret checkout-tls \(kubernetes\.io\/tls\) rotated out of band for a canary Rollout with the git strategy/,
    /controller Event RestartStarted: Secret checkout-tls changed: .* goes through Git/,
    /controller Event WriteBackCommitted: .*committed [0-9a-f]{12} in the demo repository on main/,
    /\n {4}driftless: roll Rollout demo\/checkout\n {4}\n {4}Out-of-band change of Secret demo\/checkout-tls\.\n/,
    /\n {4}\+\+\+ b\/apps\/checkout\/\.driftless\/out-of-band\n/,
    /\n {4}\+ {2}name: "checkout-tls"\n {4}\+ {2}digest: v1:[0-9a-f]{64}\n/,
    /Argo CD compared [0-9a-f]{7}, where the plugin folds the listed digest/,
    /Rollout checkout paused at its canary step/,
    /promoted, as `kubectl argo rollouts promote checkout` does/,
    /the Rollout completed: stable checkout-/,
    /controller Event RestartFinished: Argo CD synced the write-back \(commit [0-9a-f]{12}\) and the Rollout rolled/,
    /Application checkout Synced\/Healthy at [0-9a-f]{7}; one rollout, .*no eviction, no spec\.restartAt, no second commit/,
    /== 5\. driftless explain/,
    /Secret\s+web-tls\s+no\s+yes\s+auto/,
    /Secret\s+web-tls\s+yes\s+yes\s+auto\s+out-of-band/,
    /stopped everything\./,
  ];
  let from = 0;
  for (const step of steps) {
    const match = step.exec(run.stdout.slice(from));
    assert.ok(match, `the narration reaches ${step} (after what came before):\n${run.stdout}`);
    from += match.index + match[0].length;
  }

  // The write-back scene, across its lines: the commit the controller announced is the one shown and the one
  // Argo CD synced; the Rollout paused with a canary of a new hash and promoted that very canary.
  const committed = /controller Event WriteBackCommitted: .*committed ([0-9a-f]{12}) /.exec(run.stdout)?.[1] ?? '';
  assert.match(run.stdout, new RegExp(`\\$ git show ${committed.slice(0, 7)} .*\\n {4}commit ${committed.slice(0, 7)}`), 'the commit shown is the one announced');
  assert.match(run.stdout, new RegExp(`Application checkout Synced/Healthy at ${committed.slice(0, 7)}; one rollout`), 'Argo CD synced that commit');
  const paused = /Rollout checkout paused at its canary step .*: canary (checkout-[0-9a-f]+) \(1 pod, hash (v1:[0-9a-f]{8})…\) beside stable (checkout-[0-9a-f]+) \(\d pods?, hash (v1:[0-9a-f]{8})…\)/.exec(run.stdout);
  assert.ok(paused, `the pause line names the canary and the stable ReplicaSet with their hashes:\n${run.stdout}`);
  const [, canary, newHash, stable, oldHash] = paused as unknown as [string, string, string, string, string];
  assert.notEqual(canary, stable);
  assert.notEqual(newHash, oldHash, 'the canary runs a new hash');
  assert.ok(run.stdout.includes(`Rollout checkout's pod template has driftless.dev/config-hash: ${oldHash}…`), 'the stable hash is the one deployed at the start');
  assert.ok(run.stdout.includes(`the Rollout completed: stable ${canary}, 2/2 pods with hash ${newHash}…, Healthy`), 'the canary was promoted, every pod on the new hash');

  // The Secret's values are random PEM blocks: neither their armour nor its base64 may show.
  for (const needle of ['-----BEGIN', 'LS0tLS1CRUdJTi']) assert.equal(output.includes(needle), false, `no Secret value (${needle}) in the output`);

  const stateDir = /file:\/\/(\/\S+)\/argocd\/repos\/demo\.git/.exec(run.stdout)?.[1];
  assert.ok(stateDir, 'the narration names the Git repository in the cluster\'s temp dir');
  await assert.rejects(access(stateDir), { code: 'ENOENT' }, `${stateDir} was removed`);
  // The second cluster was stopped with the rest: its API server's port refuses connections.
  const spokePort = Number(/second cluster edge ready \(kube-apiserver https:\/\/127\.0\.0\.1:(\d+)/.exec(run.stdout)?.[1]);
  const refused = await new Promise<string | undefined>((resolve) => {
    const socket = connect(spokePort, '127.0.0.1', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code));
  });
  assert.equal(refused, 'ECONNREFUSED', `the second cluster's API server (port ${spokePort}) was stopped`);
});
