/**
 * mulberry32: a small seeded pseudo-random generator, so that property tests, fault tests and benchmarks
 * draw the same values from the same seed and a failing run can be replayed. Not for anything secret.
 */

/** A generator of numbers in [0, 1) from `seed`. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
