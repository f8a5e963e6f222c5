/**
 * `driftless controller --help`, generated from the flag table so it cannot
 * drift from the parser.
 */
import { helpRow } from '../../cli/flags.ts';
import type { ControllerFlagType } from './flag-spec.ts';
import { CONTROLLER_FLAGS } from './flags.ts';
import { allowedText } from './validators.ts';

const PLACEHOLDERS: Readonly<Record<ControllerFlagType, string>> = {
  path: 'FILE',
  'namespace-list': 'NS[,NS…]',
  namespace: 'NS',
  'label-selector': 'SELECTOR',
  'label-key': 'KEY',
  enum: '',
  duration: 'DURATION',
  integer: 'N',
  number: 'N',
  boolean: '[=true|false]',
  address: 'HOST:PORT',
  url: 'URL',
  'server-url': 'URL',
  'event-list': 'EVENT[,EVENT…]',
  text: 'TEXT',
  'object-name': 'NAME',
  'name-list': 'NAME[,NAME…]',
};

/** The `driftless controller --help` text, generated from CONTROLLER_FLAGS so it cannot drift from the parser. */
export function controllerUsageText(): string {
  const lines = [
    'Usage:',
    '  driftless controller [flags]   restart the workloads of config changes that never pass through Git,',
    '                                 without writing anything Argo CD renders',
    '  driftless controller --help',
    '',
    'Flags (flag > environment > default; --flag=value and --flag value both work; an empty environment value counts as unset):',
  ];
  for (const spec of CONTROLLER_FLAGS) {
    const placeholder = spec.type === 'enum' ? (spec.values ?? []).join('|') : PLACEHOLDERS[spec.type];
    const shownDefault = spec.default === '' ? spec.defaultText : spec.default;
    const allowed = spec.type === 'enum' || spec.type === 'path' ? '' : `; ${allowedText(spec)}`;
    lines.push(...helpRow({ synopsis: `${spec.flag} ${placeholder}`, shownDefault, description: spec.description, env: `${spec.env.join(', ')}${allowed}` }));
  }
  return `${lines.join('\n')}\n`;
}
