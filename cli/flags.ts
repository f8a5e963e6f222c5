/**
 * The command-line reader both programs use (the plugin's commands and
 * `driftless controller`): one flag table in, argv read one way. Each program
 * keeps its own table, precedence and messages; what must not differ between
 * them lives here:
 *   - `--name value` and `--name=value` (and `-x value`, `-x=value` for a row with a
 *     short name); a value is never a flag (`--…`, or a short flag of the table), so a
 *     forgotten value does not swallow the next flag;
 *   - a bare boolean flag means true and never takes the next argument;
 *   - a flag given twice is an error unless its row is repeatable;
 *   - `--help`/`-h` anywhere asks for help, after the rest was checked;
 *   - booleans are read by `parseBoolean`, from a flag or the environment alike;
 *   - environment names are derived by `envName`;
 *   - `--help` rows are laid out by `helpRow`.
 */
import { UsageError } from './errors.ts';

/** What the argv reader needs to know of one flag. */
export interface FlagRow {
  /** The flag without its dashes. */
  readonly name: string;
  /** A bare `--name` means `true`; only `--name=false` can say false. */
  readonly boolean?: boolean;
  /** May be given again; each occurrence is one value, never split. */
  readonly repeatable?: boolean;
  /** A one-letter alias, without its dash (`n` for `-n`), as kubectl spells `-n NAMESPACE`. */
  readonly short?: string;
}

/** How one program reads its argv. */
export interface ArgvOptions {
  readonly flags: readonly FlagRow[];
  /** Called with each argument that is not a flag (`-` included), in order; throws to refuse it. */
  readonly onPositional: (arg: string) => void;
  /** Where an unknown flag's message sends the user: `driftless --help`. */
  readonly helpCommand: string;
  /** What a flag's value must be, appended to "needs a value"; nothing when it returns `''`. */
  readonly expects?: (row: FlagRow) => string;
  /** An empty value (`--name=`) is refused rather than passed on. */
  readonly refuseEmpty?: boolean;
}

/** The flags as given. */
export interface ParsedArgv {
  /** `--help` or `-h` was given. */
  readonly help: boolean;
  /** Flag name → its values in argv order (exactly one unless the row is repeatable). */
  readonly values: ReadonlyMap<string, readonly string[]>;
}

/**
 * Reads argv (without node, script and command) against a flag table.
 * Throws UsageError naming the flag for an unknown flag, a missing value or a repeat.
 */
export function parseArgv(argv: readonly string[], options: ArgvOptions): ParsedArgv {
  let help = false;
  const values = new Map<string, string[]>();
  const needsValue = (row: FlagRow): string => {
    const expected = options.expects?.(row) ?? '';
    return `--${row.name} needs a value${expected === '' ? '' : `: ${expected}`}`;
  };
  const isShortFlag = (arg: string): boolean =>
    arg === '-h' || options.flags.some((row) => row.short !== undefined && (arg === `-${row.short}` || arg.startsWith(`-${row.short}=`)));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    // `-` alone is an argument (stdin), not a flag.
    if (!arg.startsWith('-') || arg === '-') {
      options.onPositional(arg);
      continue;
    }
    const long = arg.startsWith('--');
    const equals = arg.indexOf('=');
    const given = arg.slice(long ? 2 : 1, equals === -1 ? undefined : equals);
    const row = options.flags.find((candidate) => (long ? candidate.name === given : candidate.short === given));
    if (row === undefined) throw new UsageError(`unknown flag ${long ? '--' : '-'}${given} (see ${options.helpCommand} --help)`);
    const name = row.name;
    let value: string;
    if (equals !== -1) {
      value = arg.slice(equals + 1);
    } else if (row.boolean === true) {
      value = 'true';
    } else {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith('--') && next.length > 2) || isShortFlag(next)) throw new UsageError(needsValue(row));
      value = next;
      i++;
    }
    if (value === '' && options.refuseEmpty === true) {
      throw new UsageError(`${needsValue(row)} (omit the flag for the default)`);
    }
    const previous = values.get(name);
    if (previous !== undefined && row.repeatable !== true) throw new UsageError(`--${name} given twice`);
    values.set(name, [...(previous ?? []), value]);
  }
  return { help, values };
}

/**
 * A boolean from a flag or an environment variable: `true` or `false`, in any
 * case and with surrounding spaces ignored (`True`, ` FALSE`), as the plugin
 * always read them: Argo CD parameters and Helm-rendered env values often carry
 * YAML's capitalised spellings. Anything else (`yes`, `1`) is `undefined`, for the
 * caller to refuse with its own message.
 */
export function parseBoolean(text: string): boolean | undefined {
  const value = text.trim().toLowerCase();
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}

/** The environment name of a flag: upper-cased, `-` → `_` (`max-renders` → `MAX_RENDERS`), prefixed by the caller. */
export function envName(flagName: string): string {
  return flagName.toUpperCase().replaceAll('-', '_');
}

/** One flag in `--help`. */
export interface HelpEntry {
  /** The flag and its value placeholder, as the user types them: `--mode all|annotated`, `--recurse[=true|false]`. */
  readonly synopsis: string;
  /** Shown as `(default: …)`; nothing when undefined or `''`. */
  readonly shownDefault: string | undefined;
  readonly description: string;
  /** The environment line's text after `env: `. */
  readonly env: string;
}

/** The three `--help` lines of one flag, the same layout in both programs. */
export function helpRow(entry: HelpEntry): string[] {
  const shown = entry.shownDefault === undefined || entry.shownDefault === '' ? '' : `   (default: ${entry.shownDefault})`;
  return [`  ${entry.synopsis}${shown}`, `      ${entry.description}`, `      env: ${entry.env}`];
}
