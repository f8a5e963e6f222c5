/**
 * The pre-test step of `npm test`: makes sure every external binary the tests
 * spawn is installed (pinned kustomize and helm, the test cluster, then Argo CD), so the
 * tests themselves never skip and never download. Progress goes to stderr.
 */
import { ensureArgoCdBinaries, ensureClusterBinaries } from './cluster/build.ts';
import { ensureFaketime } from './cluster/faketime.ts';
import { ensureTools } from './tools.ts';

const started = Date.now();
const tools = await ensureTools();
process.stderr.write(`setup: kustomize ${tools.kustomize}\nsetup: helm      ${tools.helm}\n`);
await ensureClusterBinaries();
process.stderr.write('setup: cluster binaries ready\n');
// The fault tests run the controller under a shifted clock (installed with apt-get when CI=true).
process.stderr.write(`setup: libfaketime ${await ensureFaketime()}\n`);
// Built here, once, so no test file's before hook waits ~15 minutes for it.
await ensureArgoCdBinaries();
process.stderr.write(`setup: Argo CD binaries ready\nsetup: done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
