/**
 * The pre-test step of `npm test`: makes sure every external binary the tests
 * spawn is installed (pinned kustomize and helm, then the test cluster), so the
 * tests themselves never skip and never download. Progress goes to stderr.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ensureTools } from './tools.ts';

const started = Date.now();
const tools = await ensureTools();
process.stderr.write(`setup: kustomize ${tools.kustomize}\nsetup: helm      ${tools.helm}\n`);

// TEMPORARY: test/cluster/build.ts is being written in parallel; the final
// version imports it unconditionally.
const clusterBuild = join(import.meta.dirname, 'cluster', 'build.ts');
if (existsSync(clusterBuild)) {
  const specifier = './cluster/build.ts';
  const { ensureClusterBinaries } = (await import(specifier)) as { ensureClusterBinaries: () => Promise<unknown> };
  await ensureClusterBinaries();
  process.stderr.write('setup: cluster binaries ready\n');
} else {
  process.stderr.write('setup: NOTE test/cluster/build.ts does not exist yet; skipping the cluster binaries\n');
}
process.stderr.write(`setup: done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
