/**
 * The row type of the controller's flag table (flags.ts), and how a row is
 * built: a row names its flag, its environment variables, its type and bounds,
 * its default and its line of `--help`.
 */
import { envName } from '../../cli/flags.ts';

/** How a flag's value is read and validated. */
export type ControllerFlagType =
  /** A file path, as given. */
  | 'path'
  /** Comma-separated namespace names (DNS-1123 labels); empty items are dropped. */
  | 'namespace-list'
  /** One namespace name (a DNS-1123 label). */
  | 'namespace'
  /** A Kubernetes label selector. */
  | 'label-selector'
  /** A Kubernetes label key (`[prefix/]name`). */
  | 'label-key'
  | 'enum'
  /** A Go duration (`2s`, `5m`, `1m30s`), as the plugin's timeout. */
  | 'duration'
  /** A whole number in decimal digits. */
  | 'integer'
  /** A decimal number (`20`, `7.5`). */
  | 'number'
  /** `true` or `false`; the bare flag means `true`. */
  | 'boolean'
  /** A listen address: `host:port`, `:port` or `[v6]:port`. */
  | 'address'
  /** An absolute http(s) URL; never quoted in a message (it may hold a token). */
  | 'url'
  /** An API server's http(s) URL, as Argo CD's cluster Secrets hold it (no credentials). */
  | 'server-url'
  /** Comma-separated notification events, or `none`. */
  | 'event-list'
  /** Free text. */
  | 'text'
  /** A Kubernetes object name (a DNS-1123 subdomain). */
  | 'object-name'
  /** Comma-separated object names, each optionally `namespace/name`. */
  | 'name-list';

/** Inclusive bounds, except `min` when `minExclusive` (e.g. a rate `> 0`). Durations are bounded in milliseconds. */
export interface FlagRange {
  readonly min: number;
  readonly minExclusive?: boolean;
  readonly max?: number;
}

/** One row of the flag table. */
export interface ControllerFlagSpec {
  /** The flag without dashes; also the provenance key. */
  readonly name: string;
  /** `--<name>`. */
  readonly flag: string;
  /** Environment variables read when the flag is not given, in order: `DRIFTLESS_<NAME>` first. */
  readonly env: readonly string[];
  readonly type: ControllerFlagType;
  /** The allowed values of an `enum`. */
  readonly values?: readonly string[];
  /** Bounds of an `integer`, `number` or `duration`. */
  readonly range?: FlagRange;
  /** The default as a flag value would be written; `''` = none (the field is undefined, or derived, see `defaultText`). */
  readonly default: string;
  /** What `--help` shows as the default when `default` is `''`. */
  readonly defaultText?: string;
  /** One line for `--help`. */
  readonly description: string;
}

/** The most a timer can wait in Node (2^31 - 1 ms); longer durations are capped well below it. */
export const MAX_DURATION_MS = 24 * 3_600_000;
const MAX_DURATION_TEXT = '24h';

/** A range bound as a user writes it: `0`, `24h`, `10m`, `1s`, else milliseconds. */
export function durationBound(ms: number): string {
  if (ms === 0) return '0';
  if (ms === MAX_DURATION_MS) return MAX_DURATION_TEXT;
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** A row of the table from its name: `--<name>`, and `DRIFTLESS_<NAME>` before any `extraEnv`. */
export function flag(spec: Omit<ControllerFlagSpec, 'flag' | 'env'> & { readonly extraEnv?: readonly string[] }): ControllerFlagSpec {
  const { extraEnv = [], ...rest } = spec;
  return Object.freeze({ ...rest, flag: `--${spec.name}`, env: Object.freeze([`DRIFTLESS_${envName(spec.name)}`, ...extraEnv]) });
}

/** Greater than zero, at most MAX_DURATION_MS: a period or timeout that cannot be off. */
export const positiveDuration: FlagRange = Object.freeze({ min: 0, minExclusive: true, max: MAX_DURATION_MS });
