/**
 * The human format of `explain --live`, in the style of the plugin's explain
 * table: a settings line, then per workload a header line and aligned tables
 * (its configs; the budgets over its pods), then the restart in words.
 */
import { describeObject } from '../../core/index.ts';
import type { LiveConfig, LiveExplainReport, LiveRestart, LiveWorkload } from './report.ts';

const yesNo = (value: boolean): string => (value ? 'yes' : 'no');
const dash = (value: string | null): string => (value === null || value === '' ? '-' : value);

/** Pads every column but the last to its widest cell; trailing spaces trimmed. */
function alignRows(rows: readonly string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ').trimEnd());
}

function reasonText(reason: string, why: string | null): string {
  return why === null ? reason : `${reason}; ${why}`;
}

function restartLines(restart: LiveRestart): string[] {
  const lines: string[] = [];
  const at = restart.restartAt === null ? '' : ` (restart-at ${restart.restartAt})`;
  switch (restart.state) {
    case 'idle':
      lines.push(`  restart: none in progress${at}; strategy ${restart.strategy}`);
      break;
    case 'first-sight':
      lines.push(`  restart: none; the controller has recorded no digests yet (at first sight it records them and restarts nothing); strategy ${restart.strategy}`);
      break;
    case 'pending':
      lines.push(`  restart: pending — ${restart.changed.map((key) => key.replace('/', ' ')).join(', ')} changed since the recorded digests; the controller starts a restart (strategy ${restart.strategy})`);
      break;
    case 'in-progress':
      if (restart.strategy === 'git') lines.push(`  restart: in progress${at}, strategy git: through a commit that Argo CD syncs`);
      else lines.push(`  restart: in progress${at}, strategy ${restart.strategy}: ${restart.stalePods.length} pod${restart.stalePods.length === 1 ? '' : 's'} created before it left (${restart.stalePods.join(', ')})`);
      if (restart.changed.length > 0) lines.push(`  then: ${restart.changed.map((key) => key.replace('/', ' ')).join(', ')} changed again since: another restart follows`);
      break;
  }
  for (const blocker of restart.blockedBy) lines.push(`  blocked: ${blocker.reason}`);
  if (restart.nextEvictions.length > 0) lines.push(`  next: evicts ${restart.nextEvictions.join(', ')}`);
  if (restart.writeBack !== null) lines.push(`  write-back: ${writeBackLine(restart.writeBack)}`);
  return lines;
}

/** `committed 0123456789ab on main (https://…), 42 s ago, for restart-at …: Secret db`. */
function writeBackLine(wb: NonNullable<LiveRestart['writeBack']>): string {
  const where = wb.branch === null ? '' : ` on ${wb.branch}${wb.repo === null ? '' : ` (${wb.repo})`}`;
  const commit = `${wb.sha === null ? '(the digests were already in Git)' : wb.sha.slice(0, 12)}${where}`;
  const what = wb.state === 'committed' ? `committed ${commit}`
    : wb.state === 'synced' ? `synced ${commit} and rolled`
      : wb.state === 'failed' ? `failing (${wb.error ?? 'unknown'}) since ${wb.sinceSeconds} s`
        : wb.state === 'fallback' ? `given up (${wb.error ?? 'unknown'}): the restart went to --write-back-fallback`
          : `pending for ${wb.sinceSeconds} s`;
  return `${what}, ${wb.ageSeconds} s ago, for restart-at ${wb.restartAt}: ${wb.configs.map((key) => key.replace('/', ' ')).join(', ')}`;
}

function workloadLines(w: LiveWorkload): string[] {
  const lines = ['', `${describeObject({ kind: w.kind, name: w.name, namespace: w.namespace })}  (stamped: ${yesNo(w.stamped)}, application: ${dash(w.application)}${w.templateFrom === null ? '' : `, template from ${w.templateFrom}`})`];
  if (w.configs.length === 0) lines.push('  configs: none selected or referenced');
  else {
    const rows: string[][] = [['KIND', 'NAME', 'EXISTS', 'SELECTED', 'RULE', 'BAND', 'RECORDED', 'LIVE', 'DIGESTS', 'REASON']];
    for (const c of w.configs) {
      rows.push([c.kind, c.name, yesNo(c.exists), yesNo(c.selected), c.rule, dash(c.band), dash(c.recorded), dash(c.live), dash(c.digests), reasonText(c.reason, c.why)]);
    }
    lines.push(...alignRows(rows).map((row) => `  ${row}`));
  }
  lines.push(...restartLines(w.restart));
  if (w.budgets.length > 0) {
    const rows: string[][] = [['PODDISRUPTIONBUDGET', 'MIN AVAILABLE', 'MAX UNAVAILABLE', 'ALLOWED DISRUPTIONS', 'HEALTHY', 'DESIRED', 'EXPECTED']];
    for (const b of w.budgets) rows.push([b.name, dash(b.minAvailable), dash(b.maxUnavailable), String(b.disruptionsAllowed), String(b.currentHealthy), String(b.desiredHealthy), String(b.expectedPods)]);
    lines.push(...alignRows(rows).map((row) => `  ${row}`));
  }
  for (const warning of w.warnings) lines.push(`  warning: ${warning}`);
  return lines;
}

function configLines(c: LiveConfig, namespace: string): string[] {
  const facts = [`exists: ${yesNo(c.exists)}`, `digest: ${dash(c.digest)}`, `application: ${dash(c.application)}`, ...(c.producer === null ? [] : [`written by ${c.producer}`])];
  const lines = ['', `${describeObject({ kind: c.kind, name: c.name, namespace })}  (${facts.join(', ')})`];
  if (c.dependants.length === 0) {
    lines.push('  no workload references it or selects it by name');
    return lines;
  }
  const rows: string[][] = [['WORKLOAD', 'NAME', 'SELECTED', 'RULE', 'BAND', 'RECORDED', 'LIVE', 'DIGESTS', 'REASON']];
  for (const d of c.dependants) rows.push([d.kind, d.name, yesNo(d.selected), d.rule, dash(d.band), dash(d.recorded), dash(d.live), dash(d.digests), reasonText(d.reason, d.why)]);
  lines.push(...alignRows(rows).map((row) => `  ${row}`));
  return lines;
}

/** Renders the report as text. */
export function formatLiveTable(report: LiveExplainReport): string {
  const lines = [`live namespace=${report.namespace} mode=${report.mode} restart-strategy=${report.restartStrategy} hash=${report.keyed ? 'HMAC-SHA256 (keyed)' : 'SHA-256 (no key)'}`];
  for (const config of report.configs) lines.push(...configLines(config, report.namespace));
  if (report.target === null && report.workloads.length === 0) lines.push('', 'No workloads in the namespace.');
  for (const workload of report.workloads) lines.push(...workloadLines(workload));
  if (report.warnings.length > 0) lines.push('', ...report.warnings.map((warning) => `warning: ${warning}`));
  return `${lines.join('\n')}\n`;
}
