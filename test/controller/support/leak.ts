/**
 * The leak check every test of a secret shares: a canary string planted in a
 * Secret value or a credential file must appear nowhere in what a process
 * said, neither as it is nor base64-encoded.
 */

/**
 * The canary (or one of its base64 forms) found in `said`, else undefined.
 * Base64 of a value shifts with its offset; the canary's encodings at offsets
 * 0, 1 and 2, cut to their stable middle, cover every position.
 */
export function findLeak(said: string, canary: string): string | undefined {
  const encodings = [0, 1, 2].map((shift) => Buffer.from(`${'x'.repeat(shift)}${canary}`).toString('base64').slice(4, -4));
  return [canary, ...encodings].find((needle) => said.includes(needle));
}
