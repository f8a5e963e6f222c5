/**
 * The converters of flag values: each takes a value as given (and where it
 * came from) and returns it typed, or throws a UsageError that names the flag,
 * the source of the bad value, and what is allowed (`allowedText`, which
 * `--help` shows too). The converters of the label-selector, notification and
 * write-back flags live beside what they read (label-selector.ts, notify.ts,
 * write-back.ts).
 */
import path from 'node:path';
import { parseGoDuration } from '../../core/index.ts';
import { UsageError } from '../../cli/errors.ts';
import { parseBoolean } from '../../cli/flags.ts';
import { NOTIFY_EVENTS } from '../notify/message.ts';
import { durationBound, type ControllerFlagSpec, type FlagRange } from './flag-spec.ts';
import type { DurationSetting, Provenance } from './model.ts';

/** A value before typing, and where it came from. */
export interface Given {
  readonly text: string;
  readonly from: Provenance;
}

/** Reads one flag's value: returns it typed, or throws a UsageError. */
export type Converter<T> = (given: Given, spec: ControllerFlagSpec) => T;

/** A namespace name: a lower-case DNS-1123 label (at most 63 characters, checked apart). */
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** An object name or label-key prefix: a lower-case DNS-1123 subdomain (at most 253 characters, checked apart). */
export const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Quotes a piece of a value for a message, cut short: a message is for finding the typo, not for echoing input. */
export function quote(text: string): string {
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text);
}

/** The error of a bad value: the flag, the source unless it is the flag itself, the problem if any, and what is allowed. */
export function invalid(given: Given, spec: ControllerFlagSpec, problem?: string): UsageError {
  const source = given.from === `flag ${spec.flag}` ? '' : ` (from ${given.from})`;
  return new UsageError(`invalid value ${quote(given.text)} for ${spec.flag}${source}: ${problem === undefined ? '' : `${problem}; `}expected ${allowedText(spec)}`);
}

/** A file path, as given (never read here). */
export function asPath(given: Given): string {
  return given.text;
}

/** Free text, as given. */
export function asText(given: Given): string {
  return given.text;
}

/** The flag and `DRIFTLESS_KUBECONFIG` name one file (as kubectl's flag); `KUBECONFIG` is a list (as kubectl reads it). */
export function asKubeconfig(given: Given): readonly string[] {
  if (given.from !== 'KUBECONFIG') return [given.text];
  return given.text.split(path.delimiter).filter((file) => file !== '');
}

/** As the plugin reads booleans (cli/flags.ts): true or false in any case, spaces around ignored. */
export function asBoolean(given: Given, spec: ControllerFlagSpec): boolean {
  const value = parseBoolean(given.text);
  if (value === undefined) throw invalid(given, spec);
  return value;
}

/** A listen address: `host:port`, `:port` or `[v6]:port`, the port at most 65535. */
export function asAddress(given: Given, spec: ControllerFlagSpec): string {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]*):(\d{1,5})$/.exec(given.text);
  const port = Number(match?.[2] ?? Number.NaN);
  if (match === null || !Number.isInteger(port) || port > 65535) throw invalid(given, spec);
  return given.text;
}

/** Exactly one namespace name. */
export function asSingleNamespace(given: Given, spec: ControllerFlagSpec): string {
  const names = asNamespaceList(given, spec);
  if (names.length !== 1) throw invalid(given, spec, 'name exactly one namespace');
  return names[0] as string;
}

/** One of the row's `values`, exactly. */
export function asEnum(given: Given, spec: ControllerFlagSpec): string {
  if (!(spec.values ?? []).includes(given.text)) throw invalid(given, spec);
  return given.text;
}

const INTEGER = /^\d+$/;
const DECIMAL = /^(\d+(\.\d*)?|\.\d+)$/;

/** Decimal digits only, a safe integer within the row's range. */
export function asInteger(given: Given, spec: ControllerFlagSpec): number {
  const value = INTEGER.test(given.text) ? Number(given.text) : Number.NaN;
  if (!Number.isSafeInteger(value) || !inRange(value, spec)) throw invalid(given, spec);
  return value;
}

/** A plain decimal (`20`, `7.5`, `.5`; no sign or exponent) within the row's range. */
export function asNumber(given: Given, spec: ControllerFlagSpec): number {
  const value = DECIMAL.test(given.text) ? Number(given.text) : Number.NaN;
  if (!Number.isFinite(value) || !inRange(value, spec)) throw invalid(given, spec);
  return value;
}

/** A Go duration within the row's range (in milliseconds), kept with its text for messages. */
export function asDuration(given: Given, spec: ControllerFlagSpec): DurationSetting {
  const ms = parseGoDuration(given.text);
  if (ms === undefined || !inRange(ms, spec)) throw invalid(given, spec);
  return { ms, text: given.text };
}

function inRange(value: number, spec: ControllerFlagSpec): boolean {
  const range = spec.range;
  if (range === undefined) return true;
  if (range.minExclusive === true ? value <= range.min : value < range.min) return false;
  return range.max === undefined || value <= range.max;
}

/** Comma-separated namespace names, empty items dropped; sorted and unique. */
export function asNamespaceList(given: Given, spec: ControllerFlagSpec): readonly string[] {
  const names = given.text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (names.length === 0) throw invalid(given, spec, 'no namespace named');
  for (const name of names) {
    if (name.length > 63 || !DNS1123_LABEL.test(name)) throw invalid(given, spec, `${quote(name)} is not a namespace name`);
  }
  return [...new Set(names)].sort();
}

/** What `--help` and every error say is allowed. */
export function allowedText(spec: ControllerFlagSpec): string {
  switch (spec.type) {
    case 'path':
      return 'a file path';
    case 'namespace-list':
      return 'comma-separated namespace names (lower-case DNS-1123 labels, e.g. "web,payments")';
    case 'namespace':
      return 'a namespace name (a lower-case DNS-1123 label, e.g. "argocd")';
    case 'label-selector':
      return 'a label selector: comma-separated requirements, each key, !key, key=value, key!=value, key in (v1,v2) or key notin (v1,v2)';
    case 'label-key':
      return 'a label key such as app.kubernetes.io/instance ([DNS subdomain/]name, the name at most 63 characters)';
    case 'enum':
      return joinAlternatives(spec.values ?? []);
    case 'duration':
      return `a Go duration such as 5s, 2m or 1m30s, ${rangeText(spec.range, durationBound)}`;
    case 'integer':
      return `an integer ${rangeText(spec.range, String)}`;
    case 'number':
      return `a number ${rangeText(spec.range, String)}`;
    case 'boolean':
      return 'true or false (the bare flag means true)';
    case 'address':
      return 'host:port, :port (every interface) or [ipv6]:port; port 0 picks a free one (logged at start)';
    case 'url':
      return 'an absolute https or http URL';
    case 'server-url':
      return 'an API server\'s https or http URL as in Argo CD\'s cluster Secret (e.g. "https://10.0.0.1:6443")';
    case 'event-list':
      return `comma-separated ${joinAlternatives(NOTIFY_EVENTS)}, or none`;
    case 'text':
      return 'any text';
    case 'object-name':
      return 'an object name (a lower-case DNS-1123 subdomain, e.g. "git-write-creds")';
    case 'name-list':
      return 'comma-separated names or namespace/name pairs (lower-case DNS-1123 names)';
  }
}

function rangeText(range: FlagRange | undefined, show: (value: number) => string): string {
  if (range === undefined) return '';
  const lower = range.minExclusive === true ? `greater than ${show(range.min)}` : `of at least ${show(range.min)}`;
  if (range.max === undefined) return lower;
  if (range.minExclusive !== true) return `from ${show(range.min)} to ${show(range.max)}`;
  return `${lower} and at most ${show(range.max)}`;
}

function joinAlternatives(values: readonly string[]): string {
  if (values.length <= 1) return values.join('');
  return `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}
