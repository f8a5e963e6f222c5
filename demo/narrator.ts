/**
 * The demo's voice: plain lines on stdout, each stamped with the time since
 * the demo started, so a reader sees both what happened and how long it took.
 */

/** Writes the demo's story. */
export interface Narrator {
  /** One event: `[ 12.3s] text`. */
  say(text: string): void;
  /** A heading between the steps. */
  section(title: string): void;
  /** Output of a command, indented and unstamped (e.g. `driftless explain`). */
  block(text: string): void;
  /** Plain text as it is, for the closing hints. */
  raw(text: string): void;
  /** Milliseconds since the demo started. */
  elapsedMs(): number;
}

/** A narrator writing to `write`, with time measured by `now` from the moment of creation. */
export function createNarrator(write: (text: string) => void, now: () => number = Date.now): Narrator {
  const startedAt = now();
  const elapsedMs = (): number => now() - startedAt;
  const stamp = (): string => `[${(elapsedMs() / 1000).toFixed(1).padStart(6)}s]`;
  return {
    say(text) {
      write(`${stamp()} ${text}\n`);
    },
    section(title) {
      write(`\n== ${title}\n`);
    },
    block(text) {
      const lines = text.replace(/\n+$/, '').split('\n');
      write(`${lines.map((line) => `    ${line}`).join('\n')}\n`);
    },
    raw(text) {
      write(text);
    },
    elapsedMs,
  };
}
