/**
 * The flags of the Git write-back (controller/writeback/, ADR 0014) of the git
 * restart strategy (controller/restart/git.ts, ADR 0016): their rows of the
 * flag table, their converters and how they are read, kept together so they
 * move as one block.
 */
import { DEFAULT_MESSAGE_TEMPLATE } from '../writeback/message.ts';
import { MAX_DURATION_MS, flag, positiveDuration, type ControllerFlagSpec } from './flag-spec.ts';
import type { ControllerConfig, WriteBackFallback } from './model.ts';
import type { FlagReader } from './reader.ts';
import { DNS1123_SUBDOMAIN, asDuration, asEnum, asInteger, asNamespaceList, asPath, invalid, quote, type Given } from './validators.ts';

const WRITE_BACK_FALLBACKS = Object.freeze(['restart', 'none'] as const satisfies readonly WriteBackFallback[]);

/** The write-back's rows of the flag table, appended at its end. */
export function writeBackFlags(): readonly ControllerFlagSpec[] {
  return [
    flag({ name: 'write-back-author-name', type: 'text', default: 'driftless', description: 'Author and committer name of write-back commits (strategy git).' }),
    flag({ name: 'write-back-author-email', type: 'text', default: 'driftless@noreply.invalid', description: 'Author and committer e-mail of write-back commits.' }),
    flag({
      name: 'write-back-message',
      type: 'text',
      default: '',
      defaultText: JSON.stringify(DEFAULT_MESSAGE_TEMPLATE),
      description: 'Commit message template of write-backs: {applications}, {configs}, {workloads}, {count}; \\n is a line break. Never holds a value or digest.',
    }),
    flag({
      name: 'write-back-batch-window',
      type: 'duration',
      range: { min: 0, max: MAX_DURATION_MS },
      default: '5s',
      description: 'Write-backs to one repository and branch within this window become one commit (several Applications of a monorepo included).',
    }),
    flag({ name: 'write-back-work-dir', type: 'path', default: '', defaultText: 'the OS temporary directory', description: 'Where write-backs clone, each into a private (0700) directory removed afterwards.' }),
    flag({
      name: 'write-back-push-attempts',
      type: 'integer',
      range: { min: 1, max: 20 },
      default: '5',
      description: 'Push attempts of one write-back when others push first (re-fetch, re-apply, retry); then it fails as non-fast-forward.',
    }),
    flag({ name: 'write-back-retry-backoff', type: 'duration', range: { min: 0, max: 60_000 }, default: '500ms', description: 'Wait before the second push attempt, doubled for each further one (at most 16 times this).' }),
    flag({ name: 'write-back-git-timeout', type: 'duration', range: positiveDuration, default: '60s', description: 'A git command of a write-back that is silent for this long is killed.' }),
    flag({
      name: 'write-back-credentials-secret',
      type: 'object-name',
      default: '',
      defaultText: "none: Argo CD's repository Secrets",
      description: "A Secret in --argocd-namespace holding the write-back's Git credentials (url, and username/password or sshPrivateKey), instead of Argo CD's repository-write, repo-write-creds, repository and repo-creds Secrets; given only to repositories its url covers (exact or prefix).",
    }),
    flag({ name: 'write-back-namespaces', type: 'namespace-list', default: '', defaultText: 'none', description: 'Workloads in these namespaces default to the git strategy (the driftless.dev/restart-strategy annotation wins).' }),
    flag({ name: 'write-back-applications', type: 'name-list', default: '', defaultText: 'none', description: 'Workloads of these Argo CD Applications (name, or namespace/name) default to the git strategy.' }),
    flag({
      name: 'write-back-signing-secret',
      type: 'object-name',
      default: '',
      defaultText: 'none: commits are not signed',
      description: 'A Secret in --argocd-namespace whose sshSigningKey (an OpenSSH private key) or gpgSigningKey (an ASCII-armoured OpenPGP secret key), without passphrase, signs write-back commits.',
    }),
    flag({
      name: 'write-back-fallback-after',
      type: 'duration',
      range: positiveDuration,
      default: '10m',
      description: 'A write-back still failing (bad credentials, protected branch) or unanswered this long after the change: a Warning Event, the driftless_writeback_fallbacks_total metric, and --write-back-fallback (a refused source, such as a Helm chart, falls back at once). A commit Argo CD has not synced this long after it: a Warning, and the restart stops waiting (nothing restarted in the cluster).',
    }),
    flag({
      name: 'write-back-fallback',
      type: 'enum',
      values: WRITE_BACK_FALLBACKS,
      default: 'restart',
      description: "What a change whose write-back keeps failing gets: restart (the workload's in-cluster strategy: evictions, or a Rollout's spec.restartAt) or none (recorded only).",
    }),
    flag({ name: 'write-back-plugin-names', type: 'name-list', default: 'driftless-v1', description: "plugin.name values marking the Application source the plugin renders: the out-of-band file is written to that source's path." }),
  ];
}

type WriteBackSettings = Pick<
  ControllerConfig,
  | 'writeBackAuthorName'
  | 'writeBackAuthorEmail'
  | 'writeBackMessage'
  | 'writeBackBatchWindow'
  | 'writeBackWorkDir'
  | 'writeBackPushAttempts'
  | 'writeBackRetryBackoff'
  | 'writeBackGitTimeout'
  | 'writeBackCredentialsSecret'
  | 'writeBackNamespaces'
  | 'writeBackApplications'
  | 'writeBackPluginNames'
  | 'writeBackSigningSecret'
  | 'writeBackFallbackAfter'
  | 'writeBackFallback'
>;

/** The write-back settings, each from its flag, environment variable or default. */
export function readWriteBackSettings({ read, readOptional }: FlagReader): WriteBackSettings {
  return {
    writeBackAuthorName: read('write-back-author-name', asNonEmptyLine),
    writeBackAuthorEmail: read('write-back-author-email', asNonEmptyLine),
    writeBackMessage: readOptional('write-back-message', asMessageTemplate) ?? DEFAULT_MESSAGE_TEMPLATE,
    writeBackBatchWindow: read('write-back-batch-window', asDuration),
    writeBackWorkDir: readOptional('write-back-work-dir', asPath),
    writeBackPushAttempts: read('write-back-push-attempts', asInteger),
    writeBackRetryBackoff: read('write-back-retry-backoff', asDuration),
    writeBackGitTimeout: read('write-back-git-timeout', asDuration),
    writeBackCredentialsSecret: readOptional('write-back-credentials-secret', asObjectName),
    writeBackNamespaces: readOptional('write-back-namespaces', asNamespaceList) ?? [],
    writeBackApplications: readOptional('write-back-applications', asNameList) ?? [],
    writeBackPluginNames: read('write-back-plugin-names', asNameList),
    writeBackSigningSecret: readOptional('write-back-signing-secret', asObjectName),
    writeBackFallbackAfter: read('write-back-fallback-after', asDuration),
    writeBackFallback: read('write-back-fallback', asEnum) as WriteBackFallback,
  };
}

/** One line of text, not empty (a name or e-mail for git, which refuses an empty ident). */
function asNonEmptyLine(given: Given, spec: ControllerFlagSpec): string {
  const text = given.text.trim();
  if (text === '' || /[\n<>]/.test(text)) throw invalid(given, spec, 'one non-empty line without < or >');
  return text;
}

/** A message template; `\n` (backslash, n) is a line break, so a flag or env value can hold several lines. */
function asMessageTemplate(given: Given, spec: ControllerFlagSpec): string {
  const text = given.text.replace(/\\n/g, '\n');
  if (text.trim() === '') throw invalid(given, spec, 'an empty message');
  return text;
}

function asObjectName(given: Given, spec: ControllerFlagSpec): string {
  if (given.text.length > 253 || !DNS1123_SUBDOMAIN.test(given.text)) throw invalid(given, spec);
  return given.text;
}

function asNameList(given: Given, spec: ControllerFlagSpec): readonly string[] {
  const items = given.text.split(',').map((item) => item.trim()).filter((item) => item !== '');
  if (items.length === 0) throw invalid(given, spec, 'no name given');
  for (const item of items) {
    const [first, second, extra] = item.split('/');
    const ok = extra === undefined && [first, second].every((part) => part === undefined || (part.length <= 253 && DNS1123_SUBDOMAIN.test(part)));
    if (!ok) throw invalid(given, spec, `${quote(item)} is not a name`);
  }
  return [...new Set(items)].sort();
}
