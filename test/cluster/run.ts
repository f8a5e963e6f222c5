/**
 * `npm run cluster`: starts a test cluster for local use, prints how to reach
 * it, and runs until Ctrl-C (the harness stops everything on SIGINT/SIGTERM).
 *
 * Options: `--nodes=N` fake nodes (default 1), `--rollouts` to also run the
 * Argo Rollouts controller.
 */
import { parseArgs } from 'node:util';
import { startCluster } from './harness.ts';

const { values } = parseArgs({
  options: { nodes: { type: 'string', default: '1' }, rollouts: { type: 'boolean', default: false } },
});

const started = Date.now();
const cluster = await startCluster({ nodes: Number(values.nodes), rolloutsController: values.rollouts });
process.stdout.write(
  [
    `Cluster ready in ${((Date.now() - started) / 1000).toFixed(1)} s; logs and state in ${cluster.stateDir}`,
    '',
    `export KUBECONFIG=${cluster.kubeconfigPath}`,
    '',
    'Press Ctrl-C to stop it.',
    '',
  ].join('\n'),
);
// Keep the event loop alive until a signal arrives; the harness's handler tears down and exits.
setInterval(() => {}, 1 << 30);
