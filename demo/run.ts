/**
 * `npm run demo`: the whole Driftless loop on the embedded cluster, narrated.
 *
 * Starts the local test cluster, the real Argo CD with the Driftless plugin
 * sidecar, a second cluster (beside Argo CD) registered in Argo CD by a
 * cluster Secret as `argocd cluster add` does, and the real
 * `driftless controller` in hub mode (`--argocd-clusters`, in the first
 * cluster); deploys examples/directory from a local Git repository through
 * the plugin; then shows a ConfigMap change in Git rolling the Deployment, an
 * out-of-band Secret rotation restarting its pods by eviction while the app
 * stays Synced, the same example deployed by Argo CD into the second cluster
 * and its Secret rotated there, restarted by the controller from the first
 * cluster (nothing of Driftless runs in the second), a TLS Secret rotation that the
 * controller commits to Git for a canary Rollout (the `git` strategy: Argo CD
 * syncs the commit, the Rollout goes through its canary step), and
 * `driftless explain`. Then
 * everything keeps running, with KUBECONFIG printed, until Ctrl-C or SIGTERM,
 * which stop every process and remove the temp dir.
 *
 * `--exit` (or DEMO_EXIT=1) stops after the narration instead of waiting.
 * Exit codes: 0 done, 1 a step failed (everything is stopped), 130/143 interrupted.
 */
import { parseArgs } from 'node:util';
import { deployApplication, type DemoApp } from './app.ts';
import { ensureDemoBinaries, startEnvironment, type DemoEnvironment } from './environment.ts';
import { createNarrator } from './narrator.ts';
import { changeConfigMapInGit, explainWorkload, rotateSecretOutOfBand, rotateSecretThroughGit } from './scenes.ts';
import { rotateSecretInSpoke } from './second-cluster.ts';
import { createTeardown } from './teardown.ts';
import { hints } from './hints.ts';

const { values } = parseArgs({ options: { exit: { type: 'boolean', default: false } } });
const exitAfterNarration = values.exit || process.env['DEMO_EXIT'] === '1';
const narrator = createNarrator((text) => process.stdout.write(text));
const applicationName = 'web';
const namespace = 'demo';

narrator.raw('Driftless demo: the plugin and the controller under the real Argo CD v3.6.1, on two local clusters.\n');
narrator.say('checking the binaries (a first run builds the cluster and Argo CD from Go modules: about 35-50 minutes on 2 cores; seconds when cached)');
const binaries = await ensureDemoBinaries();
narrator.say('binaries ready');

const teardown = createTeardown();
let interruptedBy: NodeJS.Signals | undefined;
/** Stops everything; reports what did not stop cleanly. @returns true when all stopped. */
async function stopEverything(): Promise<boolean> {
  const failures = await teardown.stopAll();
  for (const failure of failures) process.stderr.write(`demo: stopping ${failure.what} failed: ${String(failure.error)}\n`);
  return failures.length === 0;
}
const onSignal = (signal: NodeJS.Signals): void => {
  if (interruptedBy !== undefined) return;
  interruptedBy = signal;
  narrator.raw(`\n${signal}: stopping everything…\n`);
  void stopEverything().then((clean) => {
    narrator.raw(clean ? 'stopped.\n' : 'stopped, with the errors above.\n');
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

let environment: DemoEnvironment | undefined;
let app: DemoApp | undefined;
try {
  environment = await startEnvironment(narrator, teardown, namespace);
  app = await deployApplication(environment, narrator, applicationName);
  app = await changeConfigMapInGit(environment, narrator, app);
  await rotateSecretOutOfBand(environment, narrator, app);
  await rotateSecretInSpoke(environment, narrator, app);
  await rotateSecretThroughGit(environment, narrator, app);
  await explainWorkload(environment, narrator, app, binaries);
  narrator.section('done');
  narrator.say(`the whole loop took ${(narrator.elapsedMs() / 1000).toFixed(1)} s`);
} catch (error) {
  // An interrupt makes the running step fail; the signal handler reports and exits.
  if (interruptedBy === undefined) {
    process.stderr.write(`\ndemo failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}\n`);
    if (environment !== undefined) process.stderr.write(`\n${await environment.argocd.logs(15)}\n`);
    process.stderr.write('stopping everything…\n');
    await stopEverything();
    process.exit(1);
  }
}

if (interruptedBy === undefined) {
  if (exitAfterNarration || environment === undefined || app === undefined) {
    const clean = await stopEverything();
    narrator.raw(clean ? 'stopped everything.\n' : 'stopped, with the errors above.\n');
    process.exit(clean ? 0 : 1);
  }
  narrator.raw(hints(environment, binaries, app));
  // Keep the event loop alive until a signal arrives; its handler stops everything and exits.
  setInterval(() => {}, 1 << 30);
}
