/**
 * The engine's settings from the controller's parsed flags: the one place
 * that maps `--write-back-*` to `WriteBackSettings`.
 */
import path from 'node:path';
import type { ControllerConfig } from '../config/model.ts';
import type { WriteBackSettings } from './engine.ts';

/** `tmpdir` is the OS temporary directory (passed in: reading it is the entry point's business). */
export function writeBackSettingsFrom(config: ControllerConfig, tmpdir: string): WriteBackSettings {
  return Object.freeze({
    workDir: config.writeBackWorkDir ?? path.join(tmpdir, 'driftless-write-back'),
    authorName: config.writeBackAuthorName,
    authorEmail: config.writeBackAuthorEmail,
    messageTemplate: config.writeBackMessage,
    batchWindowMs: config.writeBackBatchWindow.ms,
    pushAttempts: config.writeBackPushAttempts,
    retryBaseMs: config.writeBackRetryBackoff.ms,
    retryMaxMs: config.writeBackRetryBackoff.ms * 16,
    commandTimeoutMs: config.writeBackGitTimeout.ms,
    sourceOptions: Object.freeze({ pluginNames: config.writeBackPluginNames }),
  });
}
