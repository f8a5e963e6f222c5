import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManifestError, decide, parseGoBool, readWorkloadPolicy, reloaderPatternToJs } from '../../core/index.ts';
import type { ConfigKind, PolicyMode, PolicyRule } from '../../core/index.ts';
import { deployment, manifest } from './helpers.ts';

const AUTO = 'reloader.stakater.com/auto';
const SEARCH = 'reloader.stakater.com/search';
const MATCH = 'reloader.stakater.com/match';
const IGNORE = 'reloader.stakater.com/ignore';
const SECRET_RELOAD = 'secret.reloader.stakater.com/reload';
const CM_RELOAD = 'configmap.reloader.stakater.com/reload';
const SPC_RELOAD = 'secretproviderclass.reloader.stakater.com/reload';
const SECRET_AUTO = 'secret.reloader.stakater.com/auto';
const CM_AUTO = 'configmap.reloader.stakater.com/auto';
const SPC_AUTO = 'secretproviderclass.reloader.stakater.com/auto';
const SECRETS_EXCLUDE = 'secrets.exclude.reloader.stakater.com/reload';
const CMS_EXCLUDE = 'configmaps.exclude.reloader.stakater.com/reload';
const SPCS_EXCLUDE = 'secretproviderclasses.exclude.reloader.stakater.com/reload';

interface Case {
  name: string;
  metadata?: Record<string, string>;
  template?: Record<string, string>;
  config: { kind: ConfigKind; name: string; annotations?: Record<string, string> };
  referenced?: boolean;
  mode?: PolicyMode;
  selected: boolean;
  rule: PolicyRule;
  reason?: RegExp;
}

const secret = (name: string, annotations: Record<string, string> = {}) => ({ kind: 'Secret' as const, name, annotations });
const configMap = (name: string, annotations: Record<string, string> = {}) => ({ kind: 'ConfigMap' as const, name, annotations });
const spc = (name: string, annotations: Record<string, string> = {}) => ({ kind: 'SecretProviderClass' as const, name, annotations });

const cases: Case[] = [
  // 1. ignore comes first.
  { name: 'ignore beats named', metadata: { [SECRET_RELOAD]: 'db' }, config: secret('db', { [IGNORE]: 'true' }), selected: false, rule: 'ignore' },
  { name: 'ignore beats mode all', mode: 'all', referenced: true, config: secret('db', { [IGNORE]: 'true' }), selected: false, rule: 'ignore' },
  { name: 'ignore must be exactly "true"', metadata: { [SECRET_RELOAD]: 'db' }, config: secret('db', { [IGNORE]: 'True' }), selected: true, rule: 'named' },
  // 2. exclude.
  { name: 'exclude beats named', metadata: { [SECRET_RELOAD]: 'db', [SECRETS_EXCLUDE]: 'other, db' }, config: secret('db'), selected: false, rule: 'exclude' },
  { name: 'exclude beats auto', metadata: { [AUTO]: 'true', [SECRETS_EXCLUDE]: 'db' }, referenced: true, config: secret('db'), selected: false, rule: 'exclude' },
  { name: 'exclude is an exact name, not a regex', metadata: { [AUTO]: 'true', [SECRETS_EXCLUDE]: 'd.*' }, referenced: true, config: secret('db'), selected: true, rule: 'auto' },
  { name: 'exclude is per kind', metadata: { [AUTO]: 'true', [CMS_EXCLUDE]: 'db' }, referenced: true, config: secret('db'), selected: true, rule: 'auto' },
  { name: 'exclude applies to SecretProviderClasses', metadata: { [AUTO]: 'true', [SPCS_EXCLUDE]: 'vault' }, referenced: true, config: spc('vault'), selected: false, rule: 'exclude' },
  { name: 'exclude is read from the metadata only, never the template', template: { [AUTO]: 'true', [SECRETS_EXCLUDE]: 'db' }, referenced: true, config: secret('db'), selected: true, rule: 'auto' },
  { name: 'exclude on the metadata applies even when the rest falls back to the template', metadata: { [SECRETS_EXCLUDE]: 'db' }, template: { [AUTO]: 'true' }, referenced: true, config: secret('db'), selected: false, rule: 'exclude' },
  // 3. named.
  { name: 'named needs no reference', metadata: { [SECRET_RELOAD]: 'db' }, referenced: false, config: secret('db'), selected: true, rule: 'named', reason: /matched "db" in secret\.reloader\.stakater\.com\/reload on the workload/ },
  { name: 'named beats search and auto: false', metadata: { [SECRET_RELOAD]: 'db', [SEARCH]: 'true', [AUTO]: 'false' }, config: secret('db', { [MATCH]: 'true' }), selected: true, rule: 'named' },
  { name: 'named is anchored ^item$', metadata: { [SECRET_RELOAD]: 'db' }, config: secret('db-2'), selected: false, rule: 'not-matched' },
  { name: 'named items are regexes', metadata: { [SECRET_RELOAD]: 'db-[0-9]+' }, config: secret('db-2'), selected: true, rule: 'named' },
  { name: 'named items are trimmed', metadata: { [SECRET_RELOAD]: ' a ,  db ' }, config: secret('db'), selected: true, rule: 'named', reason: /matched "db"/ },
  { name: 'named keeps Reloader\'s ungrouped alternation (^a|b$ matches a prefix)', metadata: { [SECRET_RELOAD]: 'db|x' }, config: secret('db-anything'), selected: true, rule: 'named' },
  { name: 'named accepts RE2 escapes of punctuation', metadata: { [SECRET_RELOAD]: 'my\\-db' }, config: secret('my-db'), selected: true, rule: 'named' },
  { name: 'named is per kind (a ConfigMap pattern does not select a Secret)', metadata: { [CM_RELOAD]: 'db' }, config: secret('db'), selected: false, rule: 'not-annotated' },
  { name: 'named for ConfigMaps', metadata: { [CM_RELOAD]: 'app-.*' }, config: configMap('app-config'), selected: true, rule: 'named' },
  { name: 'named for SecretProviderClasses', metadata: { [SPC_RELOAD]: 'vault' }, config: spc('vault'), selected: true, rule: 'named' },
  { name: 'an empty named annotation matches nothing', metadata: { [SECRET_RELOAD]: '' }, referenced: true, config: secret('db'), selected: false, rule: 'not-matched' },
  // 4. search/match.
  { name: 'search with match selects a referenced config', metadata: { [SEARCH]: 'true' }, referenced: true, config: secret('db', { [MATCH]: 'true' }), selected: true, rule: 'search' },
  { name: 'search needs a reference', metadata: { [SEARCH]: 'true' }, referenced: false, config: secret('db', { [MATCH]: 'true' }), selected: false, rule: 'not-referenced' },
  { name: 'search without match on the config does not select', metadata: { [SEARCH]: 'true' }, referenced: true, config: secret('db'), selected: false, rule: 'not-matched' },
  { name: 'match must be exactly "true"', metadata: { [SEARCH]: 'true' }, referenced: true, config: secret('db', { [MATCH]: 'yes' }), selected: false, rule: 'not-matched' },
  { name: 'search must be exactly "true"', metadata: { [SEARCH]: 'True' }, referenced: true, config: secret('db', { [MATCH]: 'true' }), selected: false, rule: 'not-annotated' },
  { name: 'search comes before auto', metadata: { [SEARCH]: 'true', [AUTO]: 'true' }, referenced: true, config: secret('db', { [MATCH]: 'true' }), selected: true, rule: 'search' },
  { name: 'search without match falls through to auto', metadata: { [SEARCH]: 'true', [AUTO]: 'true' }, referenced: true, config: secret('db'), selected: true, rule: 'auto' },
  // 5. auto.
  { name: 'auto selects a referenced config', metadata: { [AUTO]: 'true' }, referenced: true, config: configMap('c'), selected: true, rule: 'auto' },
  { name: 'auto needs a reference', metadata: { [AUTO]: 'true' }, referenced: false, config: configMap('c'), selected: false, rule: 'not-referenced' },
  { name: 'auto parses like Go ParseBool ("T")', metadata: { [AUTO]: 'T' }, referenced: true, config: configMap('c'), selected: true, rule: 'auto' },
  { name: 'auto parses like Go ParseBool ("1")', metadata: { [AUTO]: '1' }, referenced: true, config: configMap('c'), selected: true, rule: 'auto' },
  { name: 'auto "yes" is not true for Go', metadata: { [AUTO]: 'yes' }, referenced: true, config: configMap('c'), selected: false, rule: 'auto-disabled' },
  { name: 'typed auto selects its kind', metadata: { [SECRET_AUTO]: 'true' }, referenced: true, config: secret('db'), selected: true, rule: 'typed-auto' },
  { name: 'typed auto for ConfigMaps', metadata: { [CM_AUTO]: 'true' }, referenced: true, config: configMap('c'), selected: true, rule: 'typed-auto' },
  { name: 'typed auto for SecretProviderClasses', metadata: { [SPC_AUTO]: 'true' }, referenced: true, config: spc('vault'), selected: true, rule: 'typed-auto' },
  { name: 'typed auto does not select another kind', metadata: { [SECRET_AUTO]: 'true' }, referenced: true, config: configMap('c'), selected: false, rule: 'not-annotated' },
  { name: 'typed auto overrides auto: "false"', metadata: { [AUTO]: 'false', [SECRET_AUTO]: 'true' }, referenced: true, config: secret('db'), selected: true, rule: 'typed-auto' },
  { name: 'auto "true" wins over typed auto "false"', metadata: { [AUTO]: 'true', [SECRET_AUTO]: 'false' }, referenced: true, config: secret('db'), selected: true, rule: 'auto' },
  // Modes.
  { name: 'mode annotated: no annotation, no reload', mode: 'annotated', referenced: true, config: configMap('c'), selected: false, rule: 'not-annotated' },
  { name: 'mode all: every referenced config', mode: 'all', referenced: true, config: configMap('c'), selected: true, rule: 'auto-all' },
  { name: 'mode all still needs a reference', mode: 'all', referenced: false, config: configMap('c'), selected: false, rule: 'not-referenced' },
  { name: 'mode all: auto "false" opts out', mode: 'all', metadata: { [AUTO]: 'false' }, referenced: true, config: configMap('c'), selected: false, rule: 'auto-disabled', reason: /reloader\.stakater\.com\/auto: "false" on the workload opts out/ },
  { name: 'mode all: any non-empty non-true auto opts out', mode: 'all', metadata: { [AUTO]: 'no' }, referenced: true, config: configMap('c'), selected: false, rule: 'auto-disabled' },
  { name: 'mode all: an empty auto does not opt out', mode: 'all', metadata: { [AUTO]: '' }, referenced: true, config: configMap('c'), selected: true, rule: 'auto-all' },
  { name: 'mode all: typed auto "false" opts out its kind', mode: 'all', metadata: { [SECRET_AUTO]: 'false' }, referenced: true, config: secret('db'), selected: false, rule: 'auto-disabled' },
  { name: 'mode all: typed auto "false" leaves other kinds', mode: 'all', metadata: { [SECRET_AUTO]: 'false' }, referenced: true, config: configMap('c'), selected: true, rule: 'auto-all' },
  { name: 'mode all: named still needs no reference', mode: 'all', metadata: { [CM_RELOAD]: 'c' }, referenced: false, config: configMap('c'), selected: true, rule: 'named' },
  { name: 'mode all: a named annotation that does not match leaves auto-all', mode: 'all', metadata: { [CM_RELOAD]: 'other' }, referenced: true, config: configMap('c'), selected: true, rule: 'auto-all' },
  // The metadata → pod template fallback.
  { name: 'falls back to the pod template when the metadata has none', template: { [AUTO]: 'true' }, referenced: true, config: configMap('c'), selected: true, rule: 'auto', reason: /on the pod template/ },
  { name: 'named on the pod template', template: { [SECRET_RELOAD]: 'db' }, config: secret('db'), selected: true, rule: 'named', reason: /on the pod template/ },
  { name: 'auto "false" on the pod template opts out in mode all', mode: 'all', template: { [AUTO]: 'false' }, referenced: true, config: configMap('c'), selected: false, rule: 'auto-disabled', reason: /on the pod template/ },
  { name: 'no fallback when the metadata has auto', metadata: { [AUTO]: 'false' }, template: { [AUTO]: 'true' }, referenced: true, config: configMap('c'), selected: false, rule: 'auto-disabled' },
  { name: 'no fallback when the metadata has an empty auto', metadata: { [AUTO]: '' }, template: { [AUTO]: 'true' }, referenced: true, config: configMap('c'), selected: false, rule: 'not-annotated' },
  { name: 'no fallback when the metadata has search', metadata: { [SEARCH]: 'false' }, template: { [AUTO]: 'true' }, referenced: true, config: configMap('c'), selected: false, rule: 'not-annotated' },
  { name: 'no fallback when the metadata has typed auto of this kind', metadata: { [CM_AUTO]: 'false' }, template: { [AUTO]: 'true' }, referenced: true, config: configMap('c'), selected: false, rule: 'auto-disabled' },
  { name: 'no fallback when the metadata has named of this kind', metadata: { [CM_RELOAD]: 'x' }, template: { [AUTO]: 'true' }, referenced: true, config: configMap('c'), selected: false, rule: 'not-matched' },
  { name: 'the fallback is per kind: a ConfigMap annotation on the metadata does not stop it for Secrets', metadata: { [CM_RELOAD]: 'x' }, template: { [AUTO]: 'true' }, referenced: true, config: secret('db'), selected: true, rule: 'auto', reason: /on the pod template/ },
  { name: 'other annotations on the metadata do not stop the fallback', metadata: { 'team': 'a', [SECRETS_EXCLUDE]: 'x' }, template: { [AUTO]: 'true' }, referenced: true, config: secret('db'), selected: true, rule: 'auto' },
];

describe('decide: every rule, in Reloader\'s order', () => {
  for (const c of cases) {
    it(c.name, () => {
      const policy = readWorkloadPolicy(deployment('web', {}, {
        ...(c.metadata === undefined ? {} : { annotations: c.metadata }),
        ...(c.template === undefined ? {} : { templateAnnotations: c.template }),
      }));
      const result = decide(policy, { ...c.config, annotations: c.config.annotations ?? {} }, c.referenced ?? false, c.mode ?? 'annotated');
      assert.deepEqual({ selected: result.selected, rule: result.rule }, { selected: c.selected, rule: c.rule }, result.reason);
      if (c.reason !== undefined) assert.match(result.reason, c.reason);
    });
  }
});

describe('readWorkloadPolicy', () => {
  it('reads a CronJob pod template at spec.jobTemplate.spec.template', () => {
    const cronJob = manifest({
      apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'nightly' },
      spec: { jobTemplate: { spec: { template: { metadata: { annotations: { [AUTO]: 'true' } }, spec: {} } } } },
    });
    const policy = readWorkloadPolicy(cronJob);
    assert.equal(policy.kinds.ConfigMap.source, 'template');
    assert.equal(decide(policy, configMap('c'), true, 'annotated').rule, 'auto');
  });

  const errors: { name: string; metadata?: Record<string, unknown>; template?: Record<string, unknown>; field: string; problem: RegExp }[] = [
    { name: 'an invalid regex on the metadata', metadata: { [SECRET_RELOAD]: 'ok, db-(' }, field: `metadata.annotations[${SECRET_RELOAD}]`, problem: /invalid regular expression "db-\("/ },
    { name: 'an invalid regex on the pod template in effect', template: { [CM_RELOAD]: '[a-' }, field: `spec.template.metadata.annotations[${CM_RELOAD}]`, problem: /invalid regular expression "\[a-"/ },
    { name: 'RE2-only syntax', metadata: { [SPC_RELOAD]: 'vault\\z' }, field: `metadata.annotations[${SPC_RELOAD}]`, problem: /invalid regular expression/ },
    { name: 'lookahead (JavaScript only)', metadata: { [SECRET_RELOAD]: '(?!x)db' }, field: `metadata.annotations[${SECRET_RELOAD}]`, problem: /lookaround is not supported/ },
    { name: 'a backreference (JavaScript only)', metadata: { [SECRET_RELOAD]: '(a)\\1' }, field: `metadata.annotations[${SECRET_RELOAD}]`, problem: /backreferences are not supported/ },
    { name: 'an unquoted boolean annotation', metadata: { [AUTO]: true }, field: `metadata.annotations[${AUTO}]`, problem: /must be strings \(quote the value\), got a boolean/ },
    { name: 'annotations that are not a mapping', metadata: undefined, template: undefined, field: 'metadata.annotations', problem: /mapping/ },
  ];
  for (const e of errors) {
    it(`throws ManifestError for ${e.name}, naming the workload and the annotation`, () => {
      const workload = e.name.startsWith('annotations that')
        ? manifest({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', annotations: ['x'] }, spec: {} })
        : deployment('web', {}, {
          ...(e.metadata === undefined ? {} : { annotations: e.metadata }),
          ...(e.template === undefined ? {} : { templateAnnotations: e.template }),
        });
      assert.throws(() => readWorkloadPolicy(workload), (error: unknown) => {
        assert.ok(error instanceof ManifestError);
        assert.equal(error.field, e.field);
        assert.match(error.problem, e.problem);
        assert.ok(error.message.startsWith(`Deployment prod/web: ${e.field}: `), error.message);
        return true;
      });
    });
  }

  it('ignores an invalid regex on the pod template when the metadata is in effect (Reloader never reads it)', () => {
    const workload = deployment('web', {}, { annotations: { [SECRET_RELOAD]: 'db' }, templateAnnotations: { [SECRET_RELOAD]: '(' } });
    assert.equal(readWorkloadPolicy(workload).kinds.Secret.source, 'metadata');
  });
});

describe('parseGoBool', () => {
  const table: [string | undefined, boolean | undefined][] = [
    ['1', true], ['t', true], ['T', true], ['TRUE', true], ['true', true], ['True', true],
    ['0', false], ['f', false], ['F', false], ['FALSE', false], ['false', false], ['False', false],
    ['tRUE', undefined], ['yes', undefined], ['on', undefined], ['', undefined], [' true', undefined], [undefined, undefined],
  ];
  for (const [input, expected] of table) {
    it(`${JSON.stringify(input)} → ${String(expected)}`, () => assert.equal(parseGoBool(input), expected));
  }
});

describe('reloaderPatternToJs (Reloader compiles ^item$ in Go RE2; every row checked against Go regexp)', () => {
  const table: [string, string | RegExp, string?][] = [
    ['app-.*', '^app-.*$'],
    ['my\\-app', '^my-app$'],
    ['a\\_b\\@c', '^a_b@c$'],
    ['x\\.y', '^x\\.y$'],
    ['[\\-a]', '^[\\-a]$'],
    ['[\\_a]', '^[_a]$'],
    ['[]a]', '^[\\]a]$'],
    ['[^]a]', '^[^\\]a]$'],
    ['\\(?=', '^\\(?=$'],
    ['[(?=]', '^[(?=]$'],
    ['\\d+', '^\\d+$'],
    // A repetition right after Reloader's `^` repeats the anchor: optional anchors unanchor the start.
    ['*', '$'],
    ['*-db', '-db$'],
    ['?x', 'x$'],
    ['{0,2}x', 'x$'],
    ['+b', '^b$'],
    ['{2}b', '^b$'],
    ['a]', '^a\\]$'],
    ['a{', '^a\\{$'],
    ['a{,3}', '^a\\{,3\\}$'],
    ['a{1,3}', '^a{1,3}$'],
    ['(?P<n>a)', '^(?<n>a)$'],
    ['(?i)App', '^App$', 'iu'],
    ['[[:alnum:]-]+', '^[0-9A-Za-z-]+$'],
    ['[[:digit:]]', '^[0-9]$'],
    ['[:alpha:]', '^[:alpha:]$'],
    ['[[:^alpha:]]', /the character class \[:\^alpha:\] is not supported/],
    ['[[:nope:]]', /the character class \[:nope:\] is not supported/],
    ['(?=x)', /lookaround/],
    ['(?<!x)y', /lookaround/],
    ['(a)\\1', /backreferences/],
    ['(?<n>a)\\k<n>', /backreferences/],
    ['a\\', /trailing backslash/],
    ['[a', /missing closing \]/],
    ['a{1001}', /invalid repeat count/],
    ['a{3,2}', /invalid repeat count/],
  ];
  for (const [input, expected, flags] of table) {
    it(`${input} → ${String(expected)}`, () => {
      const result = reloaderPatternToJs(input);
      if (typeof expected === 'string') assert.deepEqual(result, { source: expected, flags: flags ?? 'u' });
      else assert.match('problem' in result ? result.problem : '', expected);
    });
  }
  it('a named "*" selects every name, as it does in Reloader', () => {
    const policy = readWorkloadPolicy(deployment('web', {}, { annotations: { [SECRET_RELOAD]: '*' } }));
    for (const name of ['db', 'anything-at-all', 'x']) assert.equal(decide(policy, secret(name), false, 'annotated').rule, 'named');
  });
});
