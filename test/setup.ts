/**
 * The pre-test step of `npm test`: makes sure every external binary the tests
 * spawn is installed (pinned kustomize and helm, the test cluster, then Argo CD), so the
 * tests themselves never skip and never download. Progress goes to stderr.
 *
 * `npm run setup -- --tools` installs only the pinned kustomize and helm (what
 * the plugin runs) and prints, on stdout, the shell line that puts them first
 * on PATH: `eval "$(npm run --silent setup -- --tools)"`.
 */
import { ensureArgoCdBinaries, ensureClusterBinaries, ensureRolloutsControllerBinary } from './cluster/build.ts';
import { ensureFaketime } from './cluster/faketime.ts';
import { ensureImages, ImageToolsMissingError, prepareImageInputs } from './image/build.ts';
import { ensureRenderers, ensureTools } from './tools.ts';

const USAGE = [
  'Usage: npm run setup [-- --tools]',
  '',
  '  (no flag)  install everything the tests need: kustomize, helm, the Go YAML oracle, the test cluster, Argo CD,',
  '             and build the Dockerfile\'s two images with buildah (as root)',
  '  --tools    install only the pinned kustomize and helm, into ${XDG_CACHE_HOME:-~/.cache}/driftless/tools/,',
  '             and print the line that puts them first on PATH: eval "$(npm run --silent setup -- --tools)"',
  '',
].join('\n');

/** Single-quoted for a POSIX shell, so any path survives `eval`. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

async function main(argv: readonly string[]): Promise<number> {
  const unknown = argv.find((arg) => arg !== '--tools' && arg !== '--help' && arg !== '-h');
  if (unknown !== undefined) {
    process.stderr.write(`setup: unknown argument ${JSON.stringify(unknown)}\n${USAGE}`);
    return 2;
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  const started = Date.now();
  if (argv.includes('--tools')) {
    const tools = await ensureRenderers();
    process.stderr.write(`setup: kustomize ${tools.kustomize}\nsetup: helm      ${tools.helm}\nsetup: both in   ${tools.binDir}\n`);
    process.stdout.write(`export PATH=${shellQuote(tools.binDir)}:"$PATH"\n`);
    return 0;
  }
  // The fault tests run the controller under a shifted clock (installed with apt-get when CI=true). First,
  // alone: the image lane may run apt-get too, and two at once would fight over dpkg's lock.
  process.stderr.write(`setup: libfaketime ${await ensureFaketime()}\n`);
  // Two lanes at once: the renderers, the cluster and the images in one, Argo CD and then the Argo Rollouts
  // controller in the other. Each Go build alone leaves a core idle for much of its time (module downloads,
  // single-threaded links), so on 2 cores the lanes together finish minutes sooner than one after the other;
  // within a lane the builds are kept in order, so no package compiles twice at once. The Rollouts
  // controller is in the Argo CD lane to balance the two (test/cluster/README.md, "CI time budget"): with it
  // in the cluster lane, that lane ran ~10 min after Argo CD was done, with a core mostly idle.
  // The images' inputs that need no Go build (buildah, the stand-in bases, the npm and apt downloads) in a third
  // lane from the start: they wait on the network, not the cores, and cost ~10 min after the cluster lane
  // when made there (a cold setup measured 1,191 s for the images alone).
  const imageInputs = prepareImageInputs().catch((error: unknown) => {
    if (!(error instanceof ImageToolsMissingError) || process.env['CI'] === 'true') throw error;
  });
  const cluster = (async () => {
    const tools = await ensureTools();
    process.stderr.write(`setup: kustomize ${tools.kustomize}\nsetup: helm      ${tools.helm}\n`);
    await ensureClusterBinaries({ rolloutsController: false });
    process.stderr.write('setup: cluster binaries ready\n');
    // The Dockerfile's two images (test/image), after the tools: their tools stage links helm and kustomize
    // from the Go build cache ensureTools filled. In CI (root) buildah and mmdebstrap are installed if missing;
    // a developer's machine without them gets the same note from the image tests, which then pass.
    await imageInputs;
    const imageStarted = Date.now();
    try {
      const images = await ensureImages();
      const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(0)} MB`;
      process.stderr.write(
        `setup: images ready in ${((Date.now() - imageStarted) / 1000).toFixed(1)} s (plugin ${mb(images.plugin.sizeBytes)}, controller ${mb(images.controller.sizeBytes)})\n`,
      );
    } catch (error) {
      if (!(error instanceof ImageToolsMissingError) || process.env['CI'] === 'true') throw error;
      process.stderr.write(`setup: images not built: ${error.message}\n`);
    }
  })();
  const argocd = (async () => {
    // Built here, once, so no test file's before hook waits ~15 minutes for it.
    await ensureArgoCdBinaries();
    process.stderr.write('setup: Argo CD binaries ready\n');
    await ensureRolloutsControllerBinary();
    process.stderr.write('setup: Argo Rollouts controller ready\n');
  })();
  // allSettled: a failure in one lane must not leave the other's go build running unowned.
  const failed = (await Promise.allSettled([cluster, argocd, imageInputs])).find((lane) => lane.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  process.stderr.write(`setup: done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
