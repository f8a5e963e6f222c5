/**
 * The controller's logger: pino, JSON lines on stdout. Nothing the controller
 * logs carries a config value by construction (summaries hold digests only);
 * the redact list is the second line of defence for paths that could, should
 * an error or a raw object ever reach a log call.
 */
import { pino, type Logger } from 'pino';
import type { LogLevel } from './config/model.ts';

/** Paths whose values are replaced by `[redacted]` wherever they appear one or two levels down. */
export const REDACT_PATHS: readonly string[] = Object.freeze([
  'data', 'stringData', 'binaryData', '*.data', '*.stringData', '*.binaryData', '*.*.data', '*.*.stringData',
  'token', '*.token', 'headers.authorization', '*.headers.authorization', 'hashKey', '*.hashKey', 'key', '*.key',
  'err.body', 'body',
]);

/** Creates the process logger. `destination` defaults to stdout (tests pass a stream). */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { component: 'driftless-controller' },
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
