/**
 * Feeds the API server's clock, as learnt from the times it writes (ADR 0007),
 * with the fresh writes the watches deliver, and warns when the offset passes
 * `--max-clock-skew`. T and pod creation times are on the API server's clock.
 */
import type { Logger } from 'pino';
import type { ClockSkew } from '../clock-skew.ts';
import type { Clock } from '../clock.ts';
import type { ControllerConfig } from '../config/model.ts';

/** How often the skew warning may repeat. */
const WARN_EVERY_MS = 10 * 60_000;

/** Takes samples of the API server's clock. */
export interface SkewSampler {
  /** A write the API server made at `apiTimeMs` (its clock) has just been seen; ignored before `start()`. */
  observe(apiTimeMs: number): void;
  /** Every first list has completed: from now on a delivered write is fresh. */
  start(): void;
}

/** A sampler into `skew`. */
export function createSkewSampler(skew: ClockSkew, deps: { readonly clock: Clock; readonly log: Logger; readonly maxClockSkew: ControllerConfig['maxClockSkew'] }): SkewSampler {
  const { clock, log, maxClockSkew } = deps;
  let warnedAt = Number.NEGATIVE_INFINITY;
  // Only writes the watches deliver after the first lists: a first list's objects are old, and with no fresh
  // sample yet the youngest of them would pass for the offset (a false warning, evictions seconds late).
  let sampling = false;
  return {
    observe(apiTimeMs) {
      if (!sampling) return;
      const now = clock.now();
      skew.observe(apiTimeMs, now);
      const { offsetUpperMs } = skew.reading(now);
      // Above the bound in either direction, once per ten minutes: an upper bound below -bound is certainly behind.
      if (Math.abs(offsetUpperMs) > maxClockSkew.ms && now - warnedAt >= WARN_EVERY_MS) {
        warnedAt = now;
        log.warn({ offsetMs: offsetUpperMs, bound: maxClockSkew.text }, offsetUpperMs > 0
          ? 'this clock may be ahead of the API server\'s (or every watch event arrives late): restarts wait for the API server\'s clock to reach T'
          : 'this clock is behind the API server\'s: restarts use the API server\'s clock');
      }
    },
    start() {
      sampling = true;
    },
  };
}
