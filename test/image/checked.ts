/**
 * How an image test gets the images: built once per run (build.ts), or, on a
 * developer's machine that cannot build them (not root, no buildah), a
 * diagnostic in the test output that says what to install, instead of a
 * failure of the whole suite. In CI (`CI=true`, as root) there is no way
 * out: a missing tool is installed, and a build that fails fails the test.
 */
import type { TestContext } from 'node:test';
import { ensureImages, ImageToolsMissingError, type Images } from './build.ts';

/** The images, or undefined after telling the test output why the check cannot run here. */
export async function imagesOrDiagnostic(t: TestContext): Promise<Images | undefined> {
  try {
    return await ensureImages();
  } catch (error) {
    if (!(error instanceof ImageToolsMissingError) || process.env['CI'] === 'true') throw error;
    t.diagnostic(`the image check did not run on this machine: ${error.message}`);
    return undefined;
  }
}
