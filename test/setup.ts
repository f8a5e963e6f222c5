/**
 * The pre-test step of `npm test`: makes sure every external binary the tests
 * spawn is installed (pinned kustomize and helm, then the test cluster), so the
 * tests themselves never skip and never download. Progress goes to stderr.
 */
import { ensureClusterBinaries } from './cluster/build.ts';
import { ensureTools } from './tools.ts';

const started = Date.now();
const tools = await ensureTools();
process.stderr.write(`setup: kustomize ${tools.kustomize}\nsetup: helm      ${tools.helm}\n`);
await ensureClusterBinaries();
process.stderr.write(`setup: cluster binaries ready\nsetup: done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
