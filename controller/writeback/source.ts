/**
 * Where a write-back goes, decided from an Argo CD Application alone (pure):
 * the repository, the directory and the branches. The out-of-band file is
 * read by the plugin from the source it renders (ADR 0013), so the source
 * written to is the one whose `plugin.name` is one of ours.
 *
 * Application annotations (documented in ADR 0014):
 * - `driftless.dev/write-back-branch`: `branch`, `base:target` or `:target`,
 *   as Image Updater's `branch` (an empty base = the source's targetRevision);
 * - `driftless.dev/write-back-repo`: another repository to write to;
 * - `driftless.dev/write-back-source`: the `name` of the source in
 *   `spec.sources` to write for, when several are rendered by the plugin.
 */
import path from 'node:path';
import { WRITE_BACK_BRANCH_ANNOTATION, WRITE_BACK_REPO_ANNOTATION, WRITE_BACK_SOURCE_ANNOTATION } from '../../core/index.ts';
import { redactUrl } from './errors.ts';

/** The fields of an Argo CD ApplicationSource read here. */
export interface ApplicationSourceLike {
  readonly repoURL?: string;
  readonly path?: string;
  readonly targetRevision?: string;
  readonly chart?: string;
  readonly ref?: string;
  readonly name?: string;
  readonly plugin?: { readonly name?: string } | null;
}

/** The fields of an Argo CD Application read here (a plain object, as the API returns it). */
export interface ApplicationLike {
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly annotations?: Readonly<Record<string, string>> | null };
  readonly spec?: { readonly project?: string | null; readonly source?: ApplicationSourceLike | null; readonly sources?: readonly ApplicationSourceLike[] | null } | null;
}

/** Where one Application's digests are written. */
export interface WriteTarget {
  readonly application: { readonly namespace: string; readonly name: string };
  /** The Application's `spec.project` (`''` when unset): project-scoped repository Secrets serve only it. */
  readonly project: string;
  /** The URL git is given (as written in the Application or the annotation). */
  readonly repoURL: string;
  /** The directory, relative to the repository root, normalised, `''` for the root. */
  readonly path: string;
  /** The branch cloned from; `undefined` = the remote's default branch (`HEAD` or empty targetRevision). */
  readonly baseBranch: string | undefined;
  /** The branch pushed to; `undefined` = the base branch. */
  readonly writeBranch: string | undefined;
}

/** Why an Application has no write target, as data. */
export type SourceRefusalReason =
  | 'no-source'
  | 'not-git'
  | 'not-rendered-by-plugin'
  | 'ambiguous-source'
  | 'source-not-found'
  | 'bad-path'
  | 'revision-not-branch'
  | 'bad-branch'
  | 'bad-repo';

/** An Application the write-back cannot serve, and why, in words for an Event. */
export interface SourceRefusal {
  readonly refused: SourceRefusalReason;
  readonly message: string;
}

/** How sources are recognised as ours. */
export interface SourceOptions {
  /** `spec.source(s)[].plugin.name` values of the driftless plugin (default `driftless-v1`). */
  readonly pluginNames: readonly string[];
}

export const DEFAULT_SOURCE_OPTIONS: SourceOptions = Object.freeze({ pluginNames: Object.freeze(['driftless-v1']) });

const FULL_SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/i;
/** A conservative subset of git-check-ref-format: what a person writes as a branch name. */
const BRANCH = /^(?!\/|.*\/\/|.*\/$|.*\.\.|.*@\{|.*\.lock$|.*\.$|-)[A-Za-z0-9._/-]{1,255}$/;

/** Resolves an Application to where its digests are written, or says why not. Pure. */
export function resolveWriteTarget(app: ApplicationLike, options: SourceOptions = DEFAULT_SOURCE_OPTIONS): WriteTarget | SourceRefusal {
  const name = app.metadata.name;
  const annotations = app.metadata.annotations ?? {};
  const single = app.spec?.source ?? undefined;
  const many = app.spec?.sources ?? [];
  const sourceName = annotations[WRITE_BACK_SOURCE_ANNOTATION];

  let source: ApplicationSourceLike;
  if (many.length > 0) {
    // Argo CD ignores spec.source when spec.sources is set; so do we.
    if (sourceName !== undefined) {
      const named = many.filter((s) => s.name === sourceName);
      if (named.length === 0) return refuse('source-not-found', `no source named ${JSON.stringify(sourceName)} in spec.sources (from ${WRITE_BACK_SOURCE_ANNOTATION})`);
      if (named.length > 1) return refuse('ambiguous-source', `${named.length} sources named ${JSON.stringify(sourceName)} in spec.sources`);
      source = named[0] as ApplicationSourceLike;
    } else {
      const ours = many.filter((s) => isOurs(s, options));
      if (ours.length === 0) return refuse('not-rendered-by-plugin', `no entry of spec.sources uses the plugin ${options.pluginNames.join(' or ')}: the plugin would never read the file`);
      if (ours.length > 1) {
        return refuse('ambiguous-source', `${ours.length} entries of spec.sources use the plugin: name one with ${WRITE_BACK_SOURCE_ANNOTATION} (the source's name field)`);
      }
      source = ours[0] as ApplicationSourceLike;
    }
  } else if (single !== undefined) {
    source = single;
  } else {
    return refuse('no-source', 'the Application has neither spec.source nor spec.sources');
  }

  if (source.chart !== undefined && source.chart !== '') return refuse('not-git', `the source is the Helm chart ${JSON.stringify(source.chart)} from a chart repository, not a Git directory`);
  if (!isOurs(source, options)) return refuse('not-rendered-by-plugin', `the source does not use the plugin ${options.pluginNames.join(' or ')}: the plugin would never read the file`);
  const sourceRepo = source.repoURL ?? '';
  if (sourceRepo === '' || sourceRepo.startsWith('oci://')) return refuse('not-git', 'the source has no Git repoURL');

  const repoOverride = annotations[WRITE_BACK_REPO_ANNOTATION];
  const repoURL = repoOverride !== undefined && repoOverride.trim() !== '' ? repoOverride.trim() : sourceRepo;
  if (!looksLikeGitUrl(repoURL)) return refuse('bad-repo', `${JSON.stringify(redactUrl(repoURL))} is not a Git URL (https://, http://, ssh://, git:// or user@host:path)`);
  // A file:// source is what Argo CD itself reads (local set-ups, tests); an annotation must not point the
  // controller at a path of its own pod.
  if (repoURL !== sourceRepo && /^file:/i.test(repoURL)) return refuse('bad-repo', `${WRITE_BACK_REPO_ANNOTATION} may not name a file:// repository`);

  const dir = normalisePath(source.path ?? '');
  if (dir === undefined) return refuse('bad-path', `spec.source path ${JSON.stringify(source.path)} leaves the repository`);

  const revision = stripHeads((source.targetRevision ?? '').trim());
  const annotation = annotations[WRITE_BACK_BRANCH_ANNOTATION];
  let baseBranch: string | undefined = revision === '' || revision === 'HEAD' ? undefined : revision;
  let writeBranch: string | undefined;
  if (annotation !== undefined && annotation.trim() !== '') {
    const text = annotation.trim();
    const colon = text.indexOf(':');
    const base = stripHeads(colon === -1 ? text : text.slice(0, colon));
    const target = colon === -1 ? undefined : stripHeads(text.slice(colon + 1));
    if (target !== undefined && target === '') return refuse('bad-branch', `${WRITE_BACK_BRANCH_ANNOTATION} ${JSON.stringify(text)} has an empty target after the colon`);
    if (base !== '') baseBranch = base === 'HEAD' ? undefined : base;
    writeBranch = target;
  }
  for (const branch of [baseBranch, writeBranch]) {
    if (branch === undefined) continue;
    if (FULL_SHA.test(branch)) {
      return refuse('revision-not-branch', `the revision ${branch} is a commit, not a branch: a commit there would never be rendered (set ${WRITE_BACK_BRANCH_ANNOTATION})`);
    }
    if (!BRANCH.test(branch)) return refuse('bad-branch', `${JSON.stringify(branch)} is not a branch name`);
  }
  if (writeBranch !== undefined && writeBranch === baseBranch) writeBranch = undefined;
  return Object.freeze({
    application: Object.freeze({ namespace: app.metadata.namespace ?? '', name }),
    project: app.spec?.project ?? '',
    repoURL,
    path: dir,
    baseBranch,
    writeBranch,
  });
}

/** Narrows a resolution result. */
export function isRefusal(result: WriteTarget | SourceRefusal): result is SourceRefusal {
  return 'refused' in result;
}

function refuse(refused: SourceRefusalReason, message: string): SourceRefusal {
  return Object.freeze({ refused, message });
}

function isOurs(source: ApplicationSourceLike, options: SourceOptions): boolean {
  const pluginName = source.plugin?.name;
  return pluginName !== undefined && options.pluginNames.includes(pluginName);
}

/** `refs/heads/main` → `main`: Argo CD accepts both forms. */
function stripHeads(revision: string): string {
  return revision.startsWith('refs/heads/') ? revision.slice('refs/heads/'.length) : revision;
}

/** `./a/b/`, `a//b` → `a/b`; `.` → `''`; anything leaving the root or absolute → undefined. */
function normalisePath(raw: string): string | undefined {
  const trimmed = raw.trim();
  if (trimmed.startsWith('/')) return undefined;
  const normal = path.posix.normalize(trimmed === '' ? '.' : trimmed).replace(/\/+$/, '');
  if (normal === '..' || normal.startsWith('../')) return undefined;
  return normal === '.' ? '' : normal;
}

function looksLikeGitUrl(url: string): boolean {
  return /^(https?|ssh|git|file):\/\/[^\s]+$/i.test(url) || /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$/.test(url);
}
