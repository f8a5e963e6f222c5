/**
 * The one error of a command line or environment that is wrong: the user must
 * change how Driftless is called. Both programs map it to exit 2 (README "Exit codes").
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
