import type { PluginConfig } from '../config.ts';
import type { DocumentLimits } from '../yaml/documents.ts';
import { joinDocuments } from '../output.ts';
import { analyse } from '../pipeline.ts';
import type { Render } from '../pipeline.ts';
import { stampDocument } from '../stamp.ts';
import type { Stamp } from '../stamp.ts';
import type { ParsedDocument } from '../yaml/documents.ts';

/** What a command produced: the complete stdout, and lines for stderr. Nothing is written until it succeeded. */
export interface CommandResult {
  readonly stdout: string;
  readonly stderr: readonly string[];
}

/**
 * `driftless generate`: the rendered manifests, in input order, with the hash
 * annotation stamped into every workload that uses a selected config in the
 * render. Every other document keeps its original text.
 */
export async function generate(
  config: PluginConfig,
  signal: AbortSignal,
  render: Render,
  limits?: DocumentLimits,
): Promise<CommandResult> {
  const analysis = await analyse(config, signal, render, limits);
  const stamps = new Map<ParsedDocument, Stamp[]>();
  const locate = new Map(analysis.objects.map((o) => [o.manifest, o]));
  for (const plan of analysis.plans) {
    if (plan.hash === undefined || plan.templatePath === undefined) continue;
    const located = locate.get(plan.workload);
    if (located === undefined) throw new Error(`internal: plan for an unknown object ${plan.workload.kind} ${plan.workload.name}`);
    const list = stamps.get(located.document) ?? [];
    list.push({ templatePath: [...located.path, ...plan.templatePath], hash: plan.hash });
    stamps.set(located.document, list);
  }
  const stdout = joinDocuments(
    analysis.documents.map((document) => ({
      text: stampDocument(document, stamps.get(document) ?? []),
      explicitStart: document.explicitStart,
    })),
  );
  signal.throwIfAborted();
  return { stdout, stderr: analysis.warnings };
}
