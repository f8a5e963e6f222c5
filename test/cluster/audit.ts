/**
 * The API server's audit log, for fault tests that must prove who wrote what
 * and when: with `startCluster({ auditLog: true })` kube-apiserver logs every
 * write (create, update, patch, delete, deletecollection — evictions and Lease
 * renewals included) at Metadata level, one JSON event per line, with the
 * requesting user. Reads, watches and request bodies are not logged, so the log
 * stays small and holds no Secret value.
 *
 * Every timestamp in it is the API server's clock, so ordering entries by it
 * is exact even when the processes under test run with shifted clocks.
 */
import { readFile } from 'node:fs/promises';
import { stringify } from 'yaml';

/** The verbs that change state; everything else (get, list, watch) is not logged. */
export const WRITE_VERBS = Object.freeze(['create', 'update', 'patch', 'delete', 'deletecollection'] as const);

/**
 * The audit policy file: writes at Metadata level (who, what object, which
 * verb, the response code), nothing else. Only the ResponseComplete stage is
 * kept (and Panic), so one request is one entry.
 */
export function renderAuditPolicy(): string {
  return stringify({
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived', 'ResponseStarted'],
    rules: [
      { level: 'Metadata', verbs: [...WRITE_VERBS] },
      { level: 'None' },
    ],
  });
}

/** The flags that turn the audit log on, writing to `logPath` with the policy in `policyPath`. */
export function auditFlags(policyPath: string, logPath: string): string[] {
  return [
    `--audit-policy-file=${policyPath}`,
    `--audit-log-path=${logPath}`,
    '--audit-log-format=json',
    // Blocking: an entry is on disk before the response is sent, so a test reads
    // every write it has seen answered. (No --audit-log-maxsize: never rotated.)
    '--audit-log-mode=blocking',
  ];
}

/** One audit event, the fields the tests read (audit.k8s.io/v1 Event). */
export interface AuditEvent {
  readonly auditID: string;
  readonly stage: string;
  readonly verb: string;
  readonly requestURI: string;
  readonly user: { readonly username: string; readonly groups?: readonly string[] };
  /** The client's User-Agent: tells apart replicas that share one credential. */
  readonly userAgent?: string;
  readonly objectRef?: {
    readonly resource?: string;
    readonly subresource?: string;
    readonly namespace?: string;
    readonly name?: string;
    readonly apiGroup?: string;
  };
  readonly responseStatus?: { readonly code?: number };
  /** RFC 3339 with microseconds, the API server's clock. */
  readonly requestReceivedTimestamp: string;
  readonly stageTimestamp: string;
}

/** What to keep of the audit log; every given field must match. */
export interface AuditFilter {
  /** Exact username, e.g. `system:serviceaccount:ns:replica-a`. */
  readonly user?: string;
  readonly verbs?: readonly string[];
  /** e.g. `pods`, `leases`, `deployments`. */
  readonly resource?: string;
  /** e.g. `eviction`; `''` means "no subresource". */
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** Only requests the server received at or after this time (epoch ms, server clock). */
  readonly since?: number;
  /** Only answers with a status below 300 (true) or at or above it (false). */
  readonly succeeded?: boolean;
}

/** The ServiceAccount's username in audit entries and RBAC subjects. */
export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** Epoch ms of an audit timestamp (microsecond precision is cut to ms). */
export function auditTime(timestamp: string): number {
  return Date.parse(timestamp);
}

/** True when the entry's response status is 2xx. */
export function auditSucceeded(event: AuditEvent): boolean {
  const code = event.responseStatus?.code ?? 0;
  return code >= 200 && code < 300;
}

/** Keeps the entries that match every field of `filter`, in log order. */
export function filterAudit(events: readonly AuditEvent[], filter: AuditFilter): AuditEvent[] {
  return events.filter((event) => {
    const ref = event.objectRef ?? {};
    if (filter.user !== undefined && event.user.username !== filter.user) return false;
    if (filter.verbs !== undefined && !filter.verbs.includes(event.verb)) return false;
    if (filter.resource !== undefined && ref.resource !== filter.resource) return false;
    if (filter.subresource !== undefined && (ref.subresource ?? '') !== filter.subresource) return false;
    if (filter.namespace !== undefined && ref.namespace !== filter.namespace) return false;
    if (filter.name !== undefined && ref.name !== filter.name) return false;
    if (filter.since !== undefined && auditTime(event.requestReceivedTimestamp) < filter.since) return false;
    if (filter.succeeded !== undefined && auditSucceeded(event) !== filter.succeeded) return false;
    return true;
  });
}

/**
 * Reads every complete entry of the audit log. A line still being written (no
 * newline yet) is left for the next read; a missing file is an empty log.
 */
export async function readAuditLog(logPath: string): Promise<AuditEvent[]> {
  let text: string;
  try {
    text = await readFile(logPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const complete = text.slice(0, text.lastIndexOf('\n') + 1);
  return complete
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((event) => event.stage === 'ResponseComplete' || event.stage === 'Panic');
}

/** One line per entry, for assertion messages: time, user, verb, object, code. */
export function describeAudit(events: readonly AuditEvent[]): string {
  return events
    .map((event) => {
      const ref = event.objectRef ?? {};
      const object = `${ref.resource ?? '?'}${ref.subresource ? `/${ref.subresource}` : ''} ${ref.namespace ?? ''}/${ref.name ?? ''}`;
      return `${event.requestReceivedTimestamp} ${event.user.username} ${event.verb} ${object} → ${event.responseStatus?.code ?? '?'}`;
    })
    .join('\n');
}
