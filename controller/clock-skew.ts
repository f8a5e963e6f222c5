/**
 * How far the controller's clock may be ahead of the API server's, learnt
 * from what the watches deliver. Every object the API server writes carries
 * its time (a pod's `creationTimestamp`, a managedFields entry's `time`,
 * whole seconds, truncated); the watch delivers it after the write, so
 *
 *     local receipt − API time ≥ offset     (offset = local clock − API clock)
 *
 * for every fresh write, and the smallest such sample over a recent window is
 * an upper bound of the offset, tight to the delivery latency plus up to a
 * second of truncation. `apiNow = localNow − upperBound` is then never ahead
 * of the API server's clock: a restart at T (an API-server time) waits until
 * the API server's clock has certainly passed T before it evicts, so no
 * replacement is created before T and taken for a stale pod (a doubled
 * restart). A sample below zero means the controller's clock is behind.
 *
 * Old objects (a relist) only give larger samples, which never lower the
 * bound; without a sample in the window the clocks are assumed to agree.
 */

/** A sample: the API server's time of a write and when this process received it (epoch ms). */
interface Sample {
  readonly offsetMs: number;
  readonly receivedAt: number;
}

/** The skew estimate, as the metric and the warning give it. */
export interface SkewReading {
  /** Upper bound of (local clock − API server clock) in ms; 0 without a sample. */
  readonly offsetUpperMs: number;
  readonly samples: number;
}

/** Learns the clock offset from fresh writes; one per controller. */
export class ClockSkew {
  readonly #windowMs: number;
  readonly #samples: Sample[] = [];
  /** The window is kept small: the minimum is all that is read. */
  static readonly MAX_SAMPLES = 256;

  /** `windowMs`: how long a sample counts (the clocks drift; an old sample says less). */
  constructor(windowMs = 10 * 60_000) {
    this.#windowMs = windowMs;
  }

  /** A write the API server stamped `apiTimeMs` (whole seconds), received at local `localMs`. */
  observe(apiTimeMs: number, localMs: number): void {
    if (!Number.isFinite(apiTimeMs) || apiTimeMs <= 0) return;
    this.#samples.push({ offsetMs: localMs - apiTimeMs, receivedAt: localMs });
    if (this.#samples.length > ClockSkew.MAX_SAMPLES) this.#samples.shift();
  }

  /** The current estimate at local time `localMs`. */
  reading(localMs: number): SkewReading {
    while (this.#samples.length > 0 && localMs - (this.#samples[0] as Sample).receivedAt > this.#windowMs) this.#samples.shift();
    if (this.#samples.length === 0) return { offsetUpperMs: 0, samples: 0 };
    let min = Number.POSITIVE_INFINITY;
    for (const sample of this.#samples) min = Math.min(min, sample.offsetMs);
    return { offsetUpperMs: min, samples: this.#samples.length };
  }

  /** Local time `localMs` as an API-server time that is certainly not ahead of the API server's clock. */
  apiNow(localMs: number): number {
    return localMs - this.reading(localMs).offsetUpperMs;
  }
}
