import { HASH_ANNOTATION, describeObject } from '../../core/index.ts';
import type { WorkloadPlan } from '../../core/index.ts';
import type { PluginConfig } from '../config.ts';
import type { DocumentLimits } from '../yaml/documents.ts';
import { analyse } from '../pipeline.ts';
import type { Render } from '../pipeline.ts';
import type { CommandResult } from './generate.ts';

/**
 * `driftless explain`: for every workload, what it references, whether each
 * object is in the render, which policy rule selected or skipped it, and the
 * resulting hash (or why there is none). Built only from names, paths and
 * decisions: no config value, so never a Secret value, can reach the output.
 */

/** The stable JSON shape of `explain --output json` (version 1). */
export interface ExplainReport {
  readonly version: 1;
  readonly mode: string;
  readonly includeRollouts: boolean;
  /** Whether hashes are HMAC-SHA256 with a key (else plain SHA-256). */
  readonly keyed: boolean;
  readonly annotation: string;
  readonly workloads: readonly ExplainedWorkload[];
  readonly warnings: readonly string[];
}

export interface ExplainedWorkload {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** `file#document`. */
  readonly source: string;
  /** Dotted path of the pod template, `null` when the workload has none (Rollout with workloadRef). */
  readonly template: string | null;
  readonly hash: string | null;
  /** Why there is no hash; `null` when there is one. */
  readonly noHashReason: string | null;
  readonly configs: readonly ExplainedConfig[];
}

export interface ExplainedConfig {
  readonly kind: string;
  readonly name: string;
  readonly inRender: boolean;
  readonly selected: boolean;
  readonly rule: string;
  readonly reason: string;
  readonly providers: readonly { readonly kind: string; readonly name: string }[];
  readonly references: readonly {
    readonly path: string;
    readonly field: string;
    readonly containers: readonly string[];
    readonly optional: boolean;
  }[];
  /**
   * Present only when the app's out-of-band file (ADR 0013) lists this config and its digest is
   * folded into the hash: the digest and where it was read. Absent otherwise, so reports of apps
   * without the file keep their exact bytes.
   */
  readonly outOfBand?: { readonly digest: string; readonly file: string; readonly line: number };
}

/** Runs the shared stages and renders the report as a table or JSON. */
export async function explain(
  config: PluginConfig,
  signal: AbortSignal,
  render: Render,
  limits?: DocumentLimits,
): Promise<CommandResult> {
  const analysis = await analyse(config, signal, render, limits);
  const report: ExplainReport = {
    version: 1,
    mode: config.mode,
    includeRollouts: config.includeRollouts,
    keyed: analysis.keyed,
    annotation: HASH_ANNOTATION,
    workloads: analysis.plans.map(explainWorkload),
    warnings: analysis.warnings,
  };
  const stdout = config.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatTable(report);
  // Warnings go to stderr (once, not repeated in the table); the JSON report carries them as data too.
  return { stdout, stderr: analysis.warnings };
}

/** One workload's explanation, from its plan. */
export function explainWorkload(plan: WorkloadPlan): ExplainedWorkload {
  const w = plan.workload;
  return {
    kind: w.kind,
    namespace: w.namespace,
    name: w.name,
    source: w.origin === undefined ? '' : `${w.origin.file}#${w.origin.document}`,
    template: plan.templatePath === undefined ? null : plan.templatePath.join('.'),
    hash: plan.hash ?? null,
    noHashReason: plan.hash === undefined ? noHashReason(plan) : null,
    configs: plan.configs.map((c) => ({
      kind: c.kind,
      name: c.name,
      inRender: c.inRender,
      selected: c.decision.selected,
      rule: c.decision.rule,
      reason: c.decision.reason,
      providers: c.providers.map((p) => ({ kind: p.kind, name: p.name })),
      references: c.references.map((r) => ({
        path: r.path,
        field: r.field,
        containers: [...r.containers],
        optional: r.optional,
      })),
      ...(c.outOfBand === undefined
        ? {}
        : { outOfBand: { digest: c.outOfBand.digest, file: c.outOfBand.origin.file, line: c.outOfBand.origin.line } }),
    })),
  };
}

function noHashReason(plan: WorkloadPlan): string {
  if (plan.skipped !== undefined) return plan.skipped;
  if (plan.templatePath === undefined) return 'no pod template of its own';
  if (plan.configs.length === 0) return 'references no ConfigMap, Secret or SecretProviderClass';
  const selected = plan.configs.filter((c) => c.decision.selected);
  if (selected.length === 0) return 'the policy selects none of its configs';
  return 'its selected configs are not in the render (changes to them are left to the controller)';
}

const yesNo = (value: boolean): string => (value ? 'yes' : 'no');

/** The human format: a header line per workload, then an aligned table of its configs and references. */
export function formatTable(report: ExplainReport): string {
  const lines: string[] = [
    `mode=${report.mode} include-rollouts=${report.includeRollouts} hash=${report.keyed ? 'HMAC-SHA256 (keyed)' : 'SHA-256 (no key)'}`,
  ];
  if (report.workloads.length === 0) lines.push('', 'No workloads in the render.');
  for (const w of report.workloads) {
    lines.push('');
    lines.push(`${describeObject({ kind: w.kind, name: w.name, namespace: w.namespace })}  (${w.source})`);
    lines.push(w.hash === null ? `  hash: none (${w.noHashReason ?? ''})` : `  hash: ${w.hash}`);
    if (w.configs.length === 0) continue;
    const rows: string[][] = [['KIND', 'NAME', 'IN RENDER', 'SELECTED', 'RULE', 'REFERENCE', 'FIELD', 'CONTAINERS', 'OPTIONAL', 'PROVIDERS', 'REASON']];
    for (const c of w.configs) {
      const providers = c.providers.length === 0 ? '-' : c.providers.map((p) => `${p.kind}/${p.name}`).join(',');
      const head = [c.kind, c.name, yesNo(c.inRender), yesNo(c.selected), c.rule];
      const references = c.references.length === 0 ? [undefined] : c.references;
      references.forEach((r, i) => {
        const config = i === 0 ? head : ['', '', '', '', ''];
        const ref = r === undefined
          ? ['(by name)', '-', '-', '-']
          : [r.path, r.field, r.containers.length === 0 ? '-' : r.containers.join(','), yesNo(r.optional)];
        rows.push([...config, ...ref, i === 0 ? providers : '', i === 0 ? c.reason : '']);
      });
    }
    lines.push(...alignRows(rows).map((row) => `  ${row}`));
    for (const c of w.configs) {
      if (c.outOfBand === undefined) continue;
      lines.push(`  out-of-band: ${c.kind} ${c.name} ${c.outOfBand.digest} (${c.outOfBand.file}:${c.outOfBand.line}), folded into the hash`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Pads every column but the last to its widest cell; trailing spaces trimmed. */
function alignRows(rows: readonly string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ').trimEnd());
}
