/**
 * What a log line says of an error: its class, message and own scalar fields
 * (errno `code`, HTTP `status`, `reason`, `method`, `path`…), and each cause of
 * its chain in one short string. No stack by default: every reflector, the
 * leader election and every reconcile retry log a failure at each backoff, and an
 * API server that is down must give one readable line per failure, not a page
 * of frames. The stack is for `--log-level=debug` (the logger asks for it) and
 * for the sites that log a bug (`stackOf`).
 *
 * Pure: no I/O, the same error gives the same summary.
 */

/** How many causes a summary names; a chain longer than that ends with "…". */
const MAX_CAUSES = 5;

/** Own fields that are not copied as they are: the text is already in `message`, the stack only on request. */
const SKIPPED_FIELDS = new Set(['name', 'message', 'stack', 'cause', 'errors']);

/** An error as a log line shows it. */
export interface ErrorSummary {
  /** The class (`KubeTransportError`), else `name`. */
  readonly type: string;
  /** Its own message (the causes' messages are in `causes`). */
  readonly message: string;
  /** The chain below it, nearest first: `Type code|status: message` each (AggregateError's errors included). */
  readonly causes?: readonly string[];
  /** The stack of the error and of its causes, only when asked for. */
  readonly stack?: string;
  /** Its own scalar fields: `code`, `errno`, `syscall`, `status`, `reason`, `method`, `path`, `kind`… */
  readonly [field: string]: string | number | boolean | readonly string[] | undefined;
}

interface ErrorLike {
  readonly message: string;
  readonly name?: unknown;
  readonly stack?: unknown;
  readonly cause?: unknown;
  readonly errors?: unknown;
}

function isErrorLike(value: unknown): value is ErrorLike {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}

function typeOf(error: ErrorLike): string {
  const constructorName = (error as { constructor?: { name?: unknown } }).constructor?.name;
  if (typeof constructorName === 'string' && constructorName !== '' && constructorName !== 'Object') return constructorName;
  return typeof error.name === 'string' && error.name !== '' ? error.name : 'Error';
}

/** `code` (ECONNREFUSED) or `status` (503), whichever the error has: what an operator greps for. */
function codeOf(error: ErrorLike): string | undefined {
  const { code, status } = error as { code?: unknown; status?: unknown };
  if (typeof code === 'string' || typeof code === 'number') return String(code);
  if (typeof status === 'number') return String(status);
  return undefined;
}

/** One cause on one line: `Error ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1`. */
function causeLine(error: unknown): string {
  if (!isErrorLike(error)) return typeof error === 'string' ? error : typeof error;
  const code = codeOf(error);
  return `${typeOf(error)}${code === undefined ? '' : ` ${code}`}: ${error.message}`;
}

/** The errors below `error`, nearest first: its `cause`, then an AggregateError's `errors`, depth first; each error once. */
function causesOf(error: ErrorLike): unknown[] {
  const found: unknown[] = [];
  const seen = new Set<unknown>([error]);
  const visit = (parent: ErrorLike): void => {
    const below = [...(parent.cause === undefined ? [] : [parent.cause]), ...(Array.isArray(parent.errors) ? (parent.errors as unknown[]) : [])];
    for (const next of below) {
      if (seen.has(next) || found.length > MAX_CAUSES) continue;
      seen.add(next);
      found.push(next);
      if (isErrorLike(next)) visit(next);
    }
  };
  visit(error);
  return found;
}

/** The stack of `error` and of each cause below it, as Node prints a chain ("caused by: …"). Undefined for a value that is not an error. */
export function stackOf(error: unknown): string | undefined {
  if (!isErrorLike(error)) return undefined;
  const own = typeof error.stack === 'string' ? error.stack : causeLine(error);
  const below = causesOf(error).map((cause) => (isErrorLike(cause) && typeof cause.stack === 'string' ? cause.stack : causeLine(cause)));
  return [own, ...below].join('\ncaused by: ');
}

/**
 * The summary of `error` for a log line, with `stackOf(error)` when `stack` is
 * set; undefined for a value that is not an error (the logger shows it as it is).
 */
export function summariseError(error: unknown, options: { readonly stack: boolean } = { stack: false }): ErrorSummary | undefined {
  if (!isErrorLike(error)) return undefined;
  const fields: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(error)) {
    if (SKIPPED_FIELDS.has(key)) continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') fields[key] = value;
  }
  const below = causesOf(error);
  const causes = below.slice(0, MAX_CAUSES).map(causeLine);
  if (below.length > MAX_CAUSES) causes.push('…');
  return {
    ...fields,
    type: typeOf(error),
    message: error.message,
    ...(causes.length === 0 ? {} : { causes }),
    ...(options.stack ? { stack: stackOf(error) } : {}),
  };
}
