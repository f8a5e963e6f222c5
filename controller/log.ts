/**
 * The controller's logger: pino, JSON lines on stdout. Nothing the controller
 * logs carries a config value by construction (summaries hold digests only);
 * the redact list is the second line of defence for paths that could, should
 * an error or a raw object ever reach a log call.
 *
 * An error logged as `err` is summarised on one line (class, code or status,
 * message, its causes: error-summary.ts), without its stack: a retry logs at
 * every backoff, and an unreachable API server must not fill the log with
 * frames. At `--log-level=debug` (or trace) the stack comes with it.
 */
import { pino, type Logger } from 'pino';
import type { LogLevel } from './config/model.ts';
import { summariseError } from './error-summary.ts';

/** Paths whose values are replaced by `[redacted]` wherever they appear one or two levels down. */
export const REDACT_PATHS: readonly string[] = Object.freeze([
  'data', 'stringData', 'binaryData', '*.data', '*.stringData', '*.binaryData', '*.*.data', '*.*.stringData',
  'token', '*.token', 'headers.authorization', '*.headers.authorization', 'hashKey', '*.hashKey', 'key', '*.key',
  'err.body', 'body',
]);

/** Creates the process logger. `destination` defaults to stdout (tests pass a stream). */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const stack = level === 'debug' || level === 'trace';
  const options = {
    level,
    base: { component: 'driftless-controller' },
    serializers: { err: (error: unknown): unknown => summariseError(error, { stack }) ?? error },
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
