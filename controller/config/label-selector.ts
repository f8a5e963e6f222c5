/**
 * Label selectors and label keys, with the grammar of Kubernetes' labels.Parse
 * (without its rarely used `<` and `>`, which only compare integers).
 */
import type { ControllerFlagSpec } from './flag-spec.ts';
import { DNS1123_SUBDOMAIN, invalid, quote, type Given } from './validators.ts';

/**
 * A label-selector requirement, as Kubernetes parses one: `key` (Exists), `!key`
 * (DoesNotExist), `key=value` / `key==value` (Equals), `key!=value` (NotEquals,
 * which also matches objects without the label), `key in (a,b)`, `key notin (a,b)`.
 */
export interface LabelRequirement {
  readonly key: string;
  readonly operator: 'Exists' | 'DoesNotExist' | 'Equals' | 'NotEquals' | 'In' | 'NotIn';
  /** `[]` for Exists/DoesNotExist, one value for Equals/NotEquals, sorted and unique for In/NotIn. */
  readonly values: readonly string[];
}

/** A validated label selector. */
export interface LabelSelector {
  /** The canonical text, for the API's `labelSelector` parameter and for logs. */
  readonly text: string;
  /** Every requirement must hold (Kubernetes ANDs them). */
  readonly requirements: readonly LabelRequirement[];
}

/** A label key (`[prefix/]name`), as Kubernetes validates one. */
export function asLabelKey(given: Given, spec: ControllerFlagSpec): string {
  const problem = labelKeyProblem(given.text);
  if (problem !== undefined) throw invalid(given, spec, problem);
  return given.text;
}

/** A label selector, parsed and in canonical text. */
export function asLabelSelector(given: Given, spec: ControllerFlagSpec): LabelSelector {
  const parsed = parseLabelSelector(given.text);
  if (typeof parsed === 'string') throw invalid(given, spec, parsed);
  return parsed;
}

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
/** Characters that end a key or value in Kubernetes' selector lexer. */
const TOKEN = String.raw`[^\s!=(),<>]+`;
const NOT_EXISTS = new RegExp(String.raw`^!\s*(${TOKEN})$`);
const SET = new RegExp(String.raw`^(${TOKEN})\s+(in|notin)\s*\((.*)\)$`, 's');
const EQUALITY = new RegExp(String.raw`^(${TOKEN})\s*(==|=|!=)\s*(${TOKEN})?$`);
const EXISTS = new RegExp(String.raw`^(${TOKEN})$`);

/** Returns the selector, or the problem with it as a phrase. */
export function parseLabelSelector(text: string): LabelSelector | string {
  const parts = splitRequirements(text);
  if (typeof parts === 'string') return parts;
  const requirements: LabelRequirement[] = [];
  for (const [index, raw] of parts.entries()) {
    const part = raw.trim();
    const which = parts.length === 1 ? 'the requirement' : `requirement ${index + 1}`;
    if (part === '') return `${which} is empty (a leading, trailing or doubled comma)`;
    const requirement = parseRequirement(part);
    if (typeof requirement === 'string') return `${which} ${quote(part)}: ${requirement}`;
    requirements.push(requirement);
  }
  return { text: requirements.map(requirementText).join(','), requirements };
}

/** Splits on the commas outside parentheses (those inside separate the values of in/notin). */
function splitRequirements(text: string): string[] | string {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '(') {
      if (depth > 0) return 'nested parentheses';
      depth++;
    } else if (char === ')') {
      if (depth === 0) return 'a ")" without "("';
      depth--;
    } else if (char === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (depth > 0) return 'a "(" without ")"';
  parts.push(text.slice(start));
  return parts;
}

function parseRequirement(part: string): LabelRequirement | string {
  let match = NOT_EXISTS.exec(part);
  if (match !== null) return withKey(match[1] as string, 'DoesNotExist', []);
  match = SET.exec(part);
  if (match !== null) {
    const values = [...new Set((match[3] as string).split(',').map((value) => value.trim()))].sort();
    return withKey(match[1] as string, match[2] === 'in' ? 'In' : 'NotIn', values);
  }
  match = EQUALITY.exec(part);
  if (match !== null) return withKey(match[1] as string, match[2] === '!=' ? 'NotEquals' : 'Equals', [match[3] ?? '']);
  match = EXISTS.exec(part);
  if (match !== null) return withKey(match[1] as string, 'Exists', []);
  if (/[<>]/.test(part)) return '< and > are not supported';
  return 'not a requirement';
}

function withKey(key: string, operator: LabelRequirement['operator'], values: readonly string[]): LabelRequirement | string {
  const problem = labelKeyProblem(key);
  if (problem !== undefined) return problem;
  for (const value of values) {
    if (value !== '' && (value.length > 63 || !LABEL_NAME.test(value))) {
      return `${quote(value)} is not a label value (at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit)`;
    }
  }
  return { key, operator, values };
}

function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash === -1 ? undefined : key.slice(0, slash);
  const name = slash === -1 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix === '' || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
    return `${quote(key)} is not a label key: its prefix must be a lower-case DNS subdomain`;
  }
  if (name.length > 63 || !LABEL_NAME.test(name)) {
    const hint = name.includes(':') ? ' (Reloader\'s legacy "key:value" is written key=value here)' : '';
    return `${quote(key)} is not a label key: its name must be at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit${hint}`;
  }
  return undefined;
}

function requirementText(requirement: LabelRequirement): string {
  const { key, values } = requirement;
  switch (requirement.operator) {
    case 'Exists':
      return key;
    case 'DoesNotExist':
      return `!${key}`;
    case 'Equals':
      return `${key}=${values[0] ?? ''}`;
    case 'NotEquals':
      return `${key}!=${values[0] ?? ''}`;
    case 'In':
      return `${key} in (${values.join(',')})`;
    case 'NotIn':
      return `${key} notin (${values.join(',')})`;
  }
}
