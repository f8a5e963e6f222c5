/**
 * The commit message (pure): a template with `{applications}`, `{configs}`,
 * `{workloads}` and `{count}` (the number of configs changed), each list
 * sorted, comma-separated, and cut after 10 names ("and 3 more"), so a batch
 * of 90 Applications still gives a readable message. Configs are named by
 * kind, namespace and name; never a value and never a digest (the file
 * holds the digests; the message is for people).
 */
import type { ConfigDigest, WorkloadRef } from './model.ts';

/** The default template: a subject line, then the lists. */
export const DEFAULT_MESSAGE_TEMPLATE = 'driftless: roll {workloads}\n\nOut-of-band change of {configs}.\nApplications: {applications}.';

const LIST_LIMIT = 10;

/** What the message names. */
export interface MessageSubject {
  readonly applications: readonly { readonly namespace: string; readonly name: string }[];
  readonly configs: readonly ConfigDigest[];
  readonly workloads: readonly WorkloadRef[];
}

/** The message for a commit. Unknown `{placeholders}` are left as written. */
export function commitMessage(template: string, subject: MessageSubject): string {
  const values: Record<string, string> = {
    applications: list(subject.applications.map((a) => (a.namespace === '' ? a.name : `${a.namespace}/${a.name}`))),
    configs: list(subject.configs.map((c) => `${c.kind} ${c.namespace}/${c.name}`)),
    workloads: list(subject.workloads.map((w) => `${w.kind} ${w.namespace}/${w.name}`)),
    count: String(new Set(subject.configs.map((c) => `${c.kind}/${c.namespace}/${c.name}`)).size),
  };
  const text = template.replace(/\{(applications|configs|workloads|count)\}/g, (_, key: string) => values[key] ?? '');
  return text.endsWith('\n') ? text : `${text}\n`;
}

function list(items: readonly string[]): string {
  const unique = [...new Set(items)].sort();
  if (unique.length === 0) return 'nothing';
  if (unique.length <= LIST_LIMIT) return unique.join(', ');
  return `${unique.slice(0, LIST_LIMIT).join(', ')} and ${unique.length - LIST_LIMIT} more`;
}
