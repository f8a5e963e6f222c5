/**
 * Where one flag's value comes from, first match wins:
 *   1. the flag (`--name value` or `--name=value`);
 *   2. the environment variables of its row, in order (`DRIFTLESS_<NAME>`, and
 *      for `kubeconfig` also kubectl's `KUBECONFIG`, for the notification flags
 *      Reloader's `ALERT_*`); an empty value counts as unset, as manifests often
 *      render `value: ""`;
 *   3. the row's default.
 * The reader records, per flag, where its value came from, for messages.
 */
import type { ControllerFlagSpec } from './flag-spec.ts';
import { findControllerFlag } from './flags.ts';
import type { Provenance } from './model.ts';
import type { Converter, Given } from './validators.ts';

/** The process environment, or what a test gives instead. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Reads flags through their converters, recording where each value came from. */
export interface FlagReader {
  /** A flag with a default: the default text goes through the same converter, so table and value cannot disagree. */
  readonly read: <T>(name: string, convert: Converter<T>) => T;
  /** A flag without a default: `undefined` when not given. */
  readonly readOptional: <T>(name: string, convert: Converter<T>) => T | undefined;
  /** For each flag read so far, where its value came from (`default` when nowhere). */
  readonly provenance: Record<string, Provenance>;
}

/** A reader over the flags as given on the command line (name → value) and the environment. */
export function flagReader(flags: ReadonlyMap<string, string>, env: Env): FlagReader {
  const provenance: Record<string, Provenance> = {};
  const lookup = (name: string): { spec: ControllerFlagSpec; given: Given | undefined } => {
    const spec = findControllerFlag(name);
    if (spec === undefined) throw new Error(`internal: unknown controller flag ${name}`);
    const fromFlag = flags.get(name);
    if (fromFlag !== undefined) return { spec, given: { text: fromFlag, from: `flag ${spec.flag}` } };
    for (const variable of spec.env) {
      const value = env[variable];
      if (value !== undefined && value !== '') return { spec, given: { text: value, from: variable } };
    }
    return { spec, given: undefined };
  };
  return {
    provenance,
    read: <T>(name: string, convert: Converter<T>): T => {
      const { spec, given } = lookup(name);
      provenance[name] = given?.from ?? 'default';
      if (spec.default === '') throw new Error(`internal: controller flag ${name} has no default`);
      return convert(given ?? { text: spec.default, from: 'default' }, spec);
    },
    readOptional: <T>(name: string, convert: Converter<T>): T | undefined => {
      const { spec, given } = lookup(name);
      provenance[name] = given?.from ?? 'default';
      return given === undefined ? undefined : convert(given, spec);
    },
  };
}
