import { ANNOTATIONS } from './annotations.ts';
import { ManifestError } from './errors.ts';
import { getPath, isRecord } from './manifest.ts';
import type { ConfigKind, Manifest, PolicyDecision, PolicyMode } from './model.ts';
import { podTemplatePath } from './workloads.ts';

/** The config kinds, in the order Reloader's annotation families list them. */
export const CONFIG_KINDS: readonly ConfigKind[] = Object.freeze(['ConfigMap', 'Secret', 'SecretProviderClass']);

/** One compiled item of a named `.../reload` annotation. */
export interface NamedPattern {
  /** The trimmed item as written. */
  readonly source: string;
  /** `^item$`, compiled exactly as Reloader concatenates it. */
  readonly regex: RegExp;
}

/** The workload's annotations that govern one config kind, after Reloader's metadata→template fallback. */
export interface KindPolicy {
  /** Where named/auto/typed-auto/search were read: the workload's metadata or its pod template. */
  readonly source: 'metadata' | 'template';
  /** The named annotation's key, and its patterns (empty when the annotation is absent). */
  readonly namedAnnotation: string;
  readonly named: readonly NamedPattern[];
  readonly hasNamed: boolean;
  /** Raw values, `undefined` when absent (Reloader treats absent and `""` alike). */
  readonly auto: string | undefined;
  readonly typedAuto: string | undefined;
  readonly search: string | undefined;
  /** Exact names from the exclude annotation, always read from the workload's metadata. */
  readonly exclude: readonly string[];
}

/** The Reloader annotations of one workload, parsed once, for every config kind. */
export interface WorkloadPolicy {
  readonly workload: { readonly kind: string; readonly name: string; readonly namespace: string };
  readonly kinds: Readonly<Record<ConfigKind, KindPolicy>>;
}

/** A config object as the policy sees it: its identity and its (or its source's) annotations. */
export interface PolicyConfig {
  readonly kind: ConfigKind;
  readonly name: string;
  readonly annotations: Readonly<Record<string, string>>;
  /** Where `annotations` came from when not the object itself, e.g. `the template of SealedSecret db`. */
  readonly annotationsFrom?: string;
}

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Reads an annotations map at `path`, rejecting values that are not strings:
 * the API server would refuse the object, and an unquoted YAML `true` is the
 * usual cause, so saying so early is kinder than a failed sync.
 */
export function readAnnotations(m: Manifest, path: readonly string[]): Readonly<Record<string, string>> {
  const value = getPath(m.object, path);
  if (value === undefined || value === null) return EMPTY;
  const field = path.join('.');
  if (!isRecord(value)) throw new ManifestError(m, field, 'must be a mapping of strings');
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') {
      throw new ManifestError(m, `${field}[${key}]`, `annotation values must be strings (quote the value), got ${item === null ? 'null' : Array.isArray(item) ? 'a list' : typeof item === 'object' ? 'a mapping' : `a ${typeof item}`}`);
    }
  }
  return value as Readonly<Record<string, string>>;
}

/** Go's strconv.ParseBool, which Reloader uses for `auto`; anything else is "not true". */
export function parseGoBool(value: string | undefined): boolean | undefined {
  switch (value) {
    case '1': case 't': case 'T': case 'TRUE': case 'true': case 'True':
      return true;
    case '0': case 'f': case 'F': case 'FALSE': case 'false': case 'False':
      return false;
    default:
      return undefined;
  }
}

/** Splits a Reloader comma list the way Go's strings.Split + TrimSpace does. */
function commaList(value: string): string[] {
  return value.split(',').map((item) => item.trim());
}

/** Characters JavaScript's `u` mode lets you escape outside a class (`-` only inside one). */
const JS_SYNTAX = new Set(['^', '$', '\\', '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '/']);

/** RE2's ASCII classes (`[[:alpha:]]`), as JavaScript class contents. */
const POSIX_CLASSES: Readonly<Record<string, string>> = Object.freeze({
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  ascii: '\\x00-\\x7F',
  blank: '\\t ',
  cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z',
  word: '0-9A-Za-z_',
  xdigit: '0-9A-Fa-f',
});

/** RE2's limit on a repetition count. */
const MAX_REPEAT = 1000;

/** A `{n}`, `{n,}` or `{n,m}` repetition at the start of `text`, as RE2 parses it. */
const REPEAT = /^\{(\d+)(?:(,)(\d*))?\}/;

function repeatProblem(match: RegExpExecArray): string | undefined {
  const min = Number(match[1]);
  const max = match[3] === undefined || match[3] === '' ? undefined : Number(match[3]);
  if (min > MAX_REPEAT || (max !== undefined && (max > MAX_REPEAT || max < min))) return `invalid repeat count ${match[0]}`;
  return undefined;
}

/**
 * Compiles one item of a Reloader `.../reload` annotation the way Reloader
 * does, `^` + item + `$` in Go's RE2, as a JavaScript `u`-mode RegExp that
 * accepts the same names. RE2 quirks that Reloader users may rely on are
 * reproduced: a repetition right after that `^` repeats the anchor, so `*`
 * or `?x` leave the start unanchored (`*` matches every name); escaped ASCII
 * punctuation (`\-`, `\_`) is a literal; a `]` right after `[`/`[^`, a lone
 * `]`, and a `{`/`}` that is not a repetition are literals; `(?P<name>` is a
 * named group; a leading `(?i)` is the `i` flag. Lookaround and
 * backreferences exist only in JavaScript and are rejected. Other RE2-only
 * syntax (`\z`, `[[:alpha:]]`, inline flags elsewhere) is left for the
 * RegExp constructor to reject. Returns the problem as a string when the
 * item cannot be accepted.
 */
export function reloaderPatternToJs(item: string): { readonly source: string; readonly flags: string } | { readonly problem: string } {
  let pattern = item;
  let flags = 'u';
  if (pattern.startsWith('(?i)')) {
    flags = 'iu';
    pattern = pattern.slice(4);
  }
  let start = '^';
  const lead = /^(?:[*+?]|\{(\d+)(?:,(\d*))?\})\??/.exec(pattern);
  if (lead !== null) {
    const brace = REPEAT.exec(lead[0]);
    const problem = brace === null ? undefined : repeatProblem(brace);
    if (problem !== undefined) return { problem };
    const min = lead[0][0] === '+' ? 1 : brace === null ? 0 : Number(brace[1]);
    // `\A*` may match zero times: the item is then unanchored at the start, exactly as in Go.
    start = min === 0 ? '' : '^';
    pattern = pattern.slice(lead[0].length);
  }
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\') {
      const next = pattern[i + 1];
      i++;
      if (next === undefined) return { problem: 'trailing backslash' };
      if (!inClass && (/[1-9]/.test(next) || next === 'k')) return { problem: 'backreferences are not supported (Reloader uses Go RE2)' };
      const punctuation = /[!-/:-@[-`{-~]/.test(next);
      const keepEscape = !punctuation || JS_SYNTAX.has(next) || (inClass && next === '-');
      out += keepEscape ? `\\${next}` : next;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      if (c === '[' && pattern[i + 1] === ':') {
        const posix = /^\[:(\^?)([a-z]+):\]/.exec(pattern.slice(i));
        const contents = posix === null ? undefined : POSIX_CLASSES[posix[2] as string];
        if (posix !== null && (contents === undefined || posix[1] === '^')) {
          return { problem: `the character class ${posix[0]} is not supported` };
        }
        if (posix !== null && contents !== undefined) {
          out += contents;
          i += posix[0].length - 1;
          continue;
        }
      }
      out += c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      const negated = pattern[i + 1] === '^';
      out += negated ? '[^' : '[';
      if (negated) i++;
      if (pattern[i + 1] === ']') {
        out += '\\]';
        i++;
      }
      continue;
    }
    if (c === '(') {
      const rest = pattern.slice(i + 1);
      if (/^\?(?:=|!|<=|<!)/.test(rest)) return { problem: 'lookaround is not supported (Reloader uses Go RE2)' };
      if (rest.startsWith('?P<')) {
        out += '(?<';
        i += 3;
        continue;
      }
    } else if (c === '{') {
      const repeat = REPEAT.exec(pattern.slice(i));
      if (repeat === null) {
        out += '\\{';
        continue;
      }
      const problem = repeatProblem(repeat);
      if (problem !== undefined) return { problem };
      out += repeat[0];
      i += repeat[0].length - 1;
      continue;
    } else if (c === '}' || c === ']') {
      out += `\\${c}`;
      continue;
    }
    out += c;
  }
  if (inClass) return { problem: 'missing closing ]' };
  return { source: `${start}${out}$`, flags };
}

function compileNamed(m: Manifest, field: string, annotation: string, value: string): NamedPattern[] {
  return commaList(value).map((item) => {
    const where = `${field}[${annotation}]`;
    const adapted = reloaderPatternToJs(item);
    if ('problem' in adapted) {
      throw new ManifestError(m, where, `invalid regular expression ${JSON.stringify(item)}: ${adapted.problem}`);
    }
    try {
      // Reloader concatenates without a group, so `a|b` means `^a` or `b$`; kept for compatibility (ADR 0001).
      return Object.freeze({ source: item, regex: new RegExp(adapted.source, adapted.flags) });
    } catch (error) {
      throw new ManifestError(m, where, `invalid regular expression ${JSON.stringify(item)}: ${(error as Error).message}`, { cause: error });
    }
  });
}

/**
 * Parses a workload's Reloader annotations. For each config kind, named,
 * auto, typed auto and search are read from `metadata.annotations`, or from
 * the pod template's annotations when none of them is on the metadata
 * (Reloader's fallback, decided per kind as Reloader does); exclude lists are
 * read from the metadata only. Throws ManifestError on an invalid regex in an
 * annotation in effect, naming the workload and the annotation.
 */
export function readWorkloadPolicy(workload: Manifest): WorkloadPolicy {
  const metadata = readAnnotations(workload, ['metadata', 'annotations']);
  const templatePath = podTemplatePath(workload);
  const templateAnnotationsPath = templatePath === undefined ? undefined : [...templatePath, 'metadata', 'annotations'];
  let template: Readonly<Record<string, string>> | undefined;
  const kinds = {} as Record<ConfigKind, KindPolicy>;
  for (const kind of CONFIG_KINDS) {
    const namedKey = ANNOTATIONS.named[kind];
    const typedKey = ANNOTATIONS.typedAuto[kind];
    const onMetadata = [namedKey, ANNOTATIONS.auto, typedKey, ANNOTATIONS.search].some((key) => Object.hasOwn(metadata, key));
    let source: 'metadata' | 'template' = 'metadata';
    let annotations = metadata;
    let field = 'metadata.annotations';
    if (!onMetadata && templateAnnotationsPath !== undefined) {
      template ??= readAnnotations(workload, templateAnnotationsPath);
      source = 'template';
      annotations = template;
      field = templateAnnotationsPath.join('.');
    }
    const namedValue = annotations[namedKey];
    const excludeValue = metadata[ANNOTATIONS.exclude[kind]];
    kinds[kind] = Object.freeze({
      source,
      namedAnnotation: namedKey,
      hasNamed: namedValue !== undefined,
      named: Object.freeze(namedValue === undefined ? [] : compileNamed(workload, field, namedKey, namedValue)),
      auto: annotations[ANNOTATIONS.auto],
      typedAuto: annotations[typedKey],
      search: annotations[ANNOTATIONS.search],
      exclude: Object.freeze(excludeValue === undefined || excludeValue === '' ? [] : commaList(excludeValue)),
    });
  }
  return Object.freeze({
    workload: Object.freeze({ kind: workload.kind, name: workload.name, namespace: workload.namespace }),
    kinds: Object.freeze(kinds),
  });
}

function decision(selected: boolean, rule: PolicyDecision['rule'], reason: string): PolicyDecision {
  return Object.freeze({ selected, rule, reason });
}

/** The named pattern that selects `name`, if any. */
export function namedMatch(policy: WorkloadPolicy, kind: ConfigKind, name: string): NamedPattern | undefined {
  return policy.kinds[kind].named.find((pattern) => pattern.regex.test(name));
}

/**
 * Whether a config object feeds a workload's hash, in Reloader's order:
 * ignore, exclude, named, search/match, auto (`auto`, typed auto, or mode
 * `all` when neither is set). Named needs no reference; search and auto do,
 * so an unreferenced config they would select is reported `not-referenced`.
 */
export function decide(policy: WorkloadPolicy, config: PolicyConfig, referenced: boolean, mode: PolicyMode): PolicyDecision {
  const kind = policy.kinds[config.kind];
  const where = kind.source === 'metadata' ? 'the workload' : 'the pod template';
  const onConfig = config.annotationsFrom ?? `the ${config.kind}`;
  if (config.annotations[ANNOTATIONS.ignore] === 'true') {
    return decision(false, 'ignore', `${ANNOTATIONS.ignore}: "true" on ${onConfig}`);
  }
  if (kind.exclude.includes(config.name)) {
    return decision(false, 'exclude', `listed in ${ANNOTATIONS.exclude[config.kind]}`);
  }
  const pattern = namedMatch(policy, config.kind, config.name);
  if (pattern !== undefined) {
    return decision(true, 'named', `matched ${JSON.stringify(pattern.source)} in ${kind.namedAnnotation} on ${where}`);
  }
  const needsReference = (rule: PolicyDecision['rule'], why: string): PolicyDecision =>
    referenced ? decision(true, rule, why) : decision(false, 'not-referenced', `${why}, but the pod template does not reference it`);
  if (kind.search === 'true' && config.annotations[ANNOTATIONS.match] === 'true') {
    return needsReference('search', `${ANNOTATIONS.search}: "true" on ${where} and ${ANNOTATIONS.match}: "true" on ${onConfig}`);
  }
  const typedKey = ANNOTATIONS.typedAuto[config.kind];
  if (parseGoBool(kind.auto) === true) {
    return needsReference('auto', `${ANNOTATIONS.auto}: ${JSON.stringify(kind.auto)} on ${where}`);
  }
  if (parseGoBool(kind.typedAuto) === true) {
    return needsReference('typed-auto', `${typedKey}: ${JSON.stringify(kind.typedAuto)} on ${where}`);
  }
  const autoUnset = (kind.auto ?? '') === '' && (kind.typedAuto ?? '') === '';
  if (autoUnset && mode === 'all') {
    return needsReference('auto-all', 'mode "all" reloads every workload that does not opt out');
  }
  if (!autoUnset) {
    const [key, value] = (kind.auto ?? '') !== '' ? [ANNOTATIONS.auto, kind.auto] : [typedKey, kind.typedAuto];
    return decision(false, 'auto-disabled', `${key}: ${JSON.stringify(value)} on ${where} opts out`);
  }
  if (kind.hasNamed || kind.search === 'true') {
    return decision(false, 'not-matched', kind.hasNamed
      ? `no pattern in ${kind.namedAnnotation} matches`
      : `${ANNOTATIONS.search} is on but ${onConfig} lacks ${ANNOTATIONS.match}: "true"`);
  }
  return decision(false, 'not-annotated', `mode "annotated" and ${where} has no Reloader annotation for ${config.kind}s`);
}
