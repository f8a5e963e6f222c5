import { UsageError } from '../cli/errors.ts';
// Not through core/index.ts: this module is on the start-up path, before the renderer is spawned, and the
// index would load all of core there (invoke.ts loads core only once kustomize or helm runs).
// oxlint-disable-next-line no-restricted-imports
import { ManifestError } from '../core/errors.ts';

/** Bad flags, parameters or environment: the user must change how Driftless is called. Exit 2. Shared with the controller. */
export { UsageError };

/**
 * The plugin's failure classes. Every error that leaves a command is one of
 * these (or a core ManifestError); `exitCodeFor` is the one place that maps
 * them to exit codes, so the contract in the README cannot drift per call site.
 */

/** kustomize/helm (or reading the source) failed. Exit 3. `stderrTail` is the end of the tool's stderr. */
export class RenderError extends Error {
  override readonly name = 'RenderError';
  readonly stderrTail: string;

  constructor(message: string, stderrTail = '', options?: ErrorOptions) {
    super(stderrTail === '' ? message : `${message}\n${stderrTail}`, options);
    this.stderrTail = stderrTail;
  }
}

/** Where in the input a problem is: a file (or stream label) and, when known, a document and what it holds. */
export interface InputLocation {
  readonly file: string;
  readonly document?: number;
  /** The document's object as far as it could be read, `StatefulSet prod/db`; never a value. */
  readonly object?: string;
  /** The template file the renderer names for the document (helm's `# Source:` comment). */
  readonly template?: string;
}

/**
 * The rendered input is not valid manifests: unparsable YAML, a document over
 * the size or alias limit, zero documents. Exit 4, like core's ManifestError.
 */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  readonly location: InputLocation;

  constructor(location: InputLocation, problem: string, options?: ErrorOptions) {
    // The same shape as core's describeObject: `file#2 Kind ns/name`, then helm's template file.
    const where = [
      location.document === undefined ? location.file : `${location.file}#${location.document}`,
      ...(location.object === undefined ? [] : [location.object]),
      ...(location.template === undefined ? [] : [`from ${location.template}`]),
    ].join(' ');
    super(`${where}: ${problem}`, options);
    this.location = location;
  }
}

/** The time budget (ARGOCD_EXEC_TIMEOUT or --timeout) ran out, or a stop signal arrived. Exit 1. */
export class BudgetExceededError extends Error {
  override readonly name = 'BudgetExceededError';
}

/** Exit codes, part of the CLI contract (README "Exit codes"). */
export const EXIT = Object.freeze({
  ok: 0,
  failure: 1,
  usage: 2,
  render: 3,
  invalidManifests: 4,
});

/** Maps any thrown value to the documented exit code. */
export function exitCodeFor(error: unknown): number {
  if (error instanceof UsageError) return EXIT.usage;
  if (error instanceof RenderError) return EXIT.render;
  if (error instanceof InvalidInputError || error instanceof ManifestError) return EXIT.invalidManifests;
  return EXIT.failure;
}
