/**
 * A seeded generator of YAML documents full of YAML 1.1 traps, shared by the
 * property tests (hand-rolled: no dependency).
 */
import { HASH_ANNOTATION } from '../../core/index.ts';
import { prng } from '../support/prng.ts';

export { prng };


export class Gen {
  readonly random: () => number;
  #anchors: string[] = [];
  #keys = 0;

  constructor(seed: number) {
    this.random = prng(seed);
  }

  int(n: number): number {
    return Math.floor(this.random() * n);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  chance(p: number): boolean {
    return this.random() < p;
  }

  key(): string {
    this.#keys++;
    const word = `${this.pick(['a', 'key', 'on', 'yes', 'n', 'x-y', 'k_z', 'port', '0o7'])}${this.#keys}`;
    return this.pick([word, word, `"${word}"`, `'${word}'`]);
  }

  /** A scalar as written in YAML, full of 1.1 traps. */
  scalar(anchors = true): string {
    const plain = this.pick([
      'yes', 'no', 'on', 'off', 'y', 'n', 'Y', 'ON', 'True', 'FALSE', '~', 'null', 'NULL',
      '0777', '0o17', '0x1F', '0b101', '1_000', '1e3', '6.02e+23', '9007199254740991', 'e5', 'E10', '.', '._1', '1.50', '-0',
      '2024-01-01', '2024-01-01T10:00:00Z', '22:22', '190:20:30', 'a:b', 'a#b', 'plain words here', 'http://x.example/a=b', '=', '<<x',
    ]);
    const quoted = this.pick([
      `'${plain}'`, `"${plain}"`, `'it''s'`, `"tab\\tand \\"quote\\" \\u00e9"`, `""`, `''`, `"# not a comment"`, `"multi\\nline"`,
    ]);
    // Plain, these would be rejected (JSON cannot carry them as Go reads them): only quoted here.
    const unrepresentable = this.pick(['12345678901234567890', '-.inf', '.NaN', '1e400']);
    let value = this.chance(0.55) ? plain : this.chance(0.9) ? quoted : `"${unrepresentable}"`;
    if (!anchors) return value;
    if (this.chance(0.1)) {
      const anchor = `anc${this.#anchors.length}`;
      this.#anchors.push(anchor);
      value = `&${anchor} ${value}`;
    } else if (this.#anchors.length > 0 && this.chance(0.08)) {
      value = `*${this.pick(this.#anchors)}`;
    }
    return value;
  }

  comment(): string {
    return this.chance(0.2) ? `  # ${this.pick(['note', 'yes: no', 'key: "v"', '---', '{a: b}'])}` : '';
  }

  flow(depth: number): string {
    if (this.chance(0.5) || depth > 1) {
      const items = Array.from({ length: this.int(4) }, () => (this.chance(0.2) ? this.flow(depth + 1) : this.scalar(false)));
      return `[${items.join(', ')}]`;
    }
    const items = Array.from({ length: this.int(4) }, () => `${this.key()}: ${this.scalar(false)}`);
    return `{${items.join(', ')}}`;
  }

  /** Lines of a block mapping at `indent`. */
  mapping(indent: number, depth: number): string[] {
    const pad = ' '.repeat(indent);
    const lines: string[] = [];
    const count = 1 + this.int(depth === 0 ? 6 : 4);
    for (let i = 0; i < count; i++) {
      if (this.chance(0.1)) lines.push(`${pad}# a comment line`);
      if (this.chance(0.05)) lines.push('');
      const key = this.key();
      const roll = this.random();
      if (depth < 3 && roll < 0.2) {
        lines.push(`${pad}${key}:${this.comment()}`, ...this.mapping(indent + this.pick([2, 4]), depth + 1));
      } else if (depth < 3 && roll < 0.3) {
        lines.push(`${pad}${key}:`, ...this.sequence(indent + this.pick([0, 2]), depth + 1));
      } else if (roll < 0.38) {
        const header = this.pick(['|', '|-', '>', '>-', '|+']);
        lines.push(`${pad}${key}: ${header}`, `${pad}  first line: yes`, `${pad}    indented # not a comment`, `${pad}  last`);
      } else if (roll < 0.48) {
        lines.push(`${pad}${key}: ${this.flow(0)}${this.comment()}`);
      } else {
        lines.push(`${pad}${key}: ${this.scalar()}${this.comment()}`);
      }
    }
    return lines;
  }

  sequence(indent: number, depth: number): string[] {
    const pad = ' '.repeat(indent);
    const lines: string[] = [];
    for (let i = 0, n = 1 + this.int(3); i < n; i++) {
      if (depth < 3 && this.chance(0.3)) {
        const [first, ...rest] = this.mapping(indent + 2, depth + 1);
        lines.push(`${pad}- ${(first ?? '').trimStart()}`, ...rest);
      } else {
        lines.push(`${pad}- ${this.scalar()}${this.comment()}`);
      }
    }
    return lines;
  }

  /** A Kubernetes object that is not a workload. */
  nonWorkload(i: number): string {
    this.#anchors = [];
    const kind = this.pick(['Widget', 'Service', 'ConfigMap', 'Secret']);
    const head = [
      ...(this.chance(0.2) ? ['# leading comment'] : []),
      `apiVersion: ${kind === 'Widget' ? 'example.com/v1' : 'v1'}`,
      `kind: ${kind}`,
      'metadata:',
      `  name: obj-${i}${this.comment()}`,
    ];
    if (kind === 'ConfigMap') {
      return [...head, 'data:', ...Array.from({ length: 1 + this.int(3) }, () => `  ${this.key()}: ${this.pick(['"yes"', "'0777'", '"12345678901234567890"', '"a: b"', 'text'])}`)].join('\n');
    }
    if (kind === 'Secret') return [...head, 'data:', `  ${this.key()}: aHVudGVyMg==${this.comment()}`].join('\n');
    return [...head, 'spec:', ...this.mapping(2, 1)].join('\n');
  }

  /** A Deployment using ConfigMap `cfg`, with a random template metadata layout. */
  workload(i: number): string {
    this.#anchors = [];
    const template = this.pick([
      [],
      ['    metadata:', '      labels: {app: x}'],
      ['    metadata:', '      annotations: null'],
      ['    metadata:', '      annotations: ~'],
      ['    metadata:', '      annotations:'],
      ['    metadata:', '      annotations: {}'],
      ['    metadata:', `      annotations: {a: "1", ${HASH_ANNOTATION}: "v1:old"}`],
      ['    metadata:', '      annotations:', '        a: "yes"  # keep', `        ${HASH_ANNOTATION}: v1:stale`],
      ['    metadata: {labels: {app: x}}'],
      ['    metadata: {annotations: null}'],
      ['    metadata:', '      labels:', '        on: "y"', '      annotations:', '        # just a comment', '        b: c'],
    ]);
    return [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata:',
      `  name: app-${i}`,
      'spec:',
      `  replicas: ${this.pick(['1', '0x2', '03'])}`,
      '  template:',
      ...template,
      '    spec:',
      '      containers:',
      '        - name: app',
      '          envFrom:',
      '            - configMapRef: {name: cfg}',
      '      extra:',
      ...this.mapping(8, 2),
    ].join('\n');
  }
}

