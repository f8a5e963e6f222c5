import type { Document } from 'yaml';
import { loadYaml } from './lazy-yaml.ts';

/**
 * How far a document's YAML aliases may expand, as Argo CD's YAML parser
 * (go-yaml v2, decode.go) bounds it: not the number of aliases, but the share
 * of decoded values that come from expanding them. Go counts every node it
 * decodes (an alias expanded again each time it is used), and those decoded
 * inside an alias; once more than 100 come from aliases and more than 1,000
 * were decoded in all, the alias share may be at most 99%, falling to 10% for
 * documents of 4,000,000 decoded values. A "billion laughs" is all aliases,
 * so it is refused after a few thousand steps; 150 aliases of one scalar in
 * an ordinary document are not.
 *
 * The walk follows Go's order (depth first, key before value, merged
 * sequences from the last entry), because the check runs at every step.
 */

/** Go's `alias_ratio_range_low` and `_high`. */
const RATIO_RANGE_LOW = 400_000;
const RATIO_RANGE_HIGH = 4_000_000;

/** Go's `allowedAliasRatio`. */
function allowedAliasRatio(decodes: number): number {
  if (decodes <= RATIO_RANGE_LOW) return 0.99;
  if (decodes >= RATIO_RANGE_HIGH) return 0.1;
  return 0.99 - 0.89 * ((decodes - RATIO_RANGE_LOW) / (RATIO_RANGE_HIGH - RATIO_RANGE_LOW));
}

/** What the walk found: the alias nodes of the document, and whether Go would refuse their expansion. */
export interface AliasUse {
  /** Alias nodes (`*name`) written in the document. */
  readonly aliases: number;
  /** Go refuses the document: "document contains excessive aliasing". */
  readonly excessive: boolean;
}

/**
 * Counts the document's aliases and replays Go's expansion count. Once the
 * aliases exceed `maxAliases` (which the caller refuses on its own grounds)
 * it stops counting, and does not replay the expansion.
 */
export function goAliasUse(ast: Document.Parsed, maxAliases: number): AliasUse {
  const targets = resolveAliases(ast, maxAliases);
  if (targets.size > maxAliases) return { aliases: targets.size, excessive: false };
  return { aliases: targets.size, excessive: targets.size > 0 && excessiveAliasing(ast.contents, targets) };
}

/**
 * Each alias node's anchored node: the last one with its name before it in
 * document order (a node's anchor counts from the node's start), as yaml and Go resolve them.
 */
function resolveAliases(ast: Document.Parsed, maxAliases: number): Map<object, unknown> {
  const { isAlias, isMap, isSeq } = loadYaml();
  const anchors = new Map<string, unknown>();
  const targets = new Map<object, unknown>();
  const stack: unknown[] = [ast.contents];
  while (stack.length > 0 && targets.size <= maxAliases) {
    const node = stack.pop();
    if (isAlias(node)) {
      targets.set(node, anchors.get(node.source));
      continue;
    }
    const anchor = (node as { anchor?: unknown } | null)?.anchor;
    if (typeof anchor === 'string') anchors.set(anchor, node);
    if (isSeq(node)) {
      for (let i = node.items.length - 1; i >= 0; i--) stack.push(node.items[i]);
    } else if (isMap(node)) {
      for (let i = node.items.length - 1; i >= 0; i--) {
        const pair = node.items[i];
        stack.push(pair?.value, pair?.key);
      }
    }
  }
  return targets;
}

/** Go's decoder count (decode.go `unmarshal`), from the document node on. */
function excessiveAliasing(contents: unknown, targets: ReadonlyMap<object, unknown>): boolean {
  const { isAlias, isMap, isScalar, isSeq } = loadYaml();
  // The document node itself is Go's first decode.
  let decodes = 1;
  let aliased = 0;
  const stack: [node: unknown, aliasDepth: number][] = [[contents, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    decodes++;
    if (depth > 0) aliased++;
    if (aliased > 100 && decodes > 1000 && aliased / decodes > allowedAliasRatio(decodes)) return true;
    if (isAlias(node)) {
      const target = targets.get(node);
      // An alias without an anchor is an error yaml reports anyway.
      if (target !== undefined) stack.push([target, depth + 1]);
    } else if (isSeq(node)) {
      for (let i = node.items.length - 1; i >= 0; i--) stack.push([node.items[i], depth]);
    } else if (isMap(node)) {
      for (let i = node.items.length - 1; i >= 0; i--) {
        const pair = node.items[i];
        if (pair === undefined) continue;
        const merge = isScalar(pair.key) && typeof pair.key.value === 'symbol';
        if (!merge) {
          stack.push([pair.value, depth], [pair.key, depth]);
        } else if (isSeq(pair.value)) {
          // Go decodes a merged sequence's entries from the last, and not the sequence node itself.
          for (const item of pair.value.items) stack.push([item, depth]);
        } else {
          stack.push([pair.value, depth]);
        }
      }
    }
  }
  return false;
}
