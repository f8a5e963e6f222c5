/**
 * Which namespaces the controller acts in: `--namespaces` (enforced by
 * watching only those), `--ignore-namespaces`, and `--namespace-selector`
 * (matched against the labels of the cached Namespace objects).
 */
import type { LabelSelector } from './config/label-selector.ts';

/** True when every requirement of the selector holds for the labels (Kubernetes' semantics). */
export function matchesSelector(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  return selector.requirements.every((requirement) => {
    const has = Object.hasOwn(labels, requirement.key);
    const value = labels[requirement.key];
    switch (requirement.operator) {
      case 'Exists': return has;
      case 'DoesNotExist': return !has;
      case 'Equals': return has && value === requirement.values[0];
      case 'NotEquals': return !has || value !== requirement.values[0];
      case 'In': return has && requirement.values.includes(value as string);
      case 'NotIn': return !has || !requirement.values.includes(value as string);
    }
  });
}

/** The namespace filter, given the cached namespace labels (`undefined` when no selector is configured). */
export function createScope(options: { ignore: readonly string[]; selector: LabelSelector | undefined }, labelsOf: (namespace: string) => Readonly<Record<string, string>> | undefined): (namespace: string) => boolean {
  const ignored = new Set(options.ignore);
  return (namespace) => {
    if (ignored.has(namespace)) return false;
    if (options.selector === undefined) return true;
    const labels = labelsOf(namespace);
    return labels !== undefined && matchesSelector(options.selector, labels);
  };
}
