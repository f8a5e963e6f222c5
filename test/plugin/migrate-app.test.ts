import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { migrateApplications } from '../../plugin/commands/migrate-app.ts';
import { parseConfig } from '../../plugin/config.ts';
import { InvalidInputError, UsageError, exitCodeFor } from '../../plugin/errors.ts';
import { assertGolden, runCli } from './cli.ts';

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'migrate');
const fixture = (name: string): Promise<string> => readFile(path.join(FIXTURES, name), 'utf8');

type Json = Record<string, any>;

/** The config the plugin builds from a migrated source's parameters, as Argo CD hands them over. */
function configFromParameters(parameters: unknown): ReturnType<typeof parseConfig> {
  return parseConfig(['generate'], { ARGOCD_APP_PARAMETERS: JSON.stringify(parameters), ARGOCD_APP_NAME: 'argocd_shop' }, '/repo/app');
}

describe('migrate-app', () => {
  it('replaces only the helm block: everything before and after it stays byte for byte', async () => {
    const before = await fixture('helm.yaml');
    const { text } = migrateApplications(before);
    const start = before.indexOf('    helm:\n');
    const end = before.indexOf('  destination:\n');
    assert.equal(text.slice(0, start), before.slice(0, start));
    assert.ok(text.endsWith(before.slice(end)), 'the rest of the document is unchanged');
    assert.match(text.slice(start), /^ {4}plugin:\n {6}name: driftless-v1\n/);
  });

  it('carries every helm field over to parameters the plugin reads with the same meaning', async () => {
    const migrated = parse(migrateApplications(await fixture('helm.yaml')).text) as Json;
    const source = migrated['spec'].source;
    assert.equal(source.helm, undefined);
    const config = configFromParameters(source.plugin.parameters);
    assert.equal(config.sourceType, 'helm');
    assert.equal(config.helm.releaseName, 'web');
    assert.deepEqual(config.helm.valuesFiles, ['values-prod.yaml']);
    assert.equal(config.helm.ignoreMissingValueFiles, true);
    // The map form escapes the comma, as Argo CD's cleanSetParameters does.
    assert.deepEqual(config.helm.set, ['image.tag=1.2\\,3']);
    assert.deepEqual(config.helm.setString, ['port=8080']);
    assert.deepEqual(config.helm.fileParameters, [{ key: 'certificate', path: 'files/cert.pem' }]);
    assert.deepEqual(parse(config.helm.valuesObject), { greeting: 'hello', replicas: 2 });
    assert.equal(config.helm.skipCrds, true);
    assert.equal(config.helm.skipTests, false);
  });

  it('reads the Application as Argo CD (Go, YAML 1.1) does: yes/on are booleans, e5 a string; a non-string where Argo CD wants one is refused', () => {
    const application = (helm: string[]): string => [
      'apiVersion: argoproj.io/v1alpha1',
      'kind: Application',
      'metadata: {name: shop}',
      'spec:',
      '  source:',
      '    repoURL: https://git.example.com/shop.git',
      '    path: chart',
      '    helm:',
      ...helm.map((line) => `      ${line}`),
      '',
    ].join('\n');
    const migrated = parse(migrateApplications(application(['skipCrds: yes', 'skipTests: off', 'ignoreMissingValueFiles: on', 'parameters:', '  - {name: a, value: e5}'])).text) as Json;
    const config = configFromParameters(migrated['spec'].source.plugin.parameters);
    assert.equal(config.helm.skipCrds, true);
    assert.equal(config.helm.skipTests, false);
    assert.equal(config.helm.ignoreMissingValueFiles, true);
    // go-yaml v2: `e5` is a string (YAML 1.2 would read it so too; 1.2's core schema differs on 0o17, yes, on…).
    assert.deepEqual(config.helm.set, ['a=e5']);
    // `0o17` is the int 15 and `on` true to Go: the API server would refuse them in string fields, so does migrate-app.
    assert.throws(
      () => migrateApplications(application(['releaseName: on', 'parameters:', '  - {name: b, value: 0o17}'])),
      (error: unknown) =>
        error instanceof UsageError &&
        /spec\.source\.helm\.releaseName: must be a string, and Argo CD reads this value as a boolean/.test(error.message) &&
        /spec\.source\.helm\.parameters\[0\]\.value: must be a string, and Argo CD reads this value as a number/.test(error.message),
    );
  });

  it('carries every kustomize field of each of spec.sources over, and leaves a ref source alone', async () => {
    const migrated = parse(migrateApplications(await fixture('multi.yaml')).text) as Json;
    const [values, app] = migrated['spec'].sources as Json[];
    assert.deepEqual(values, { repoURL: 'https://git.example.com/values.git', ref: 'values' });
    const config = configFromParameters(app?.['plugin'].parameters);
    assert.equal(config.sourceType, 'kustomize');
    assert.deepEqual(
      { ...config.kustomize, patches: parse(config.kustomize.patches) },
      {
        enableHelm: false,
        buildOptions: [],
        namePrefix: 'pre-',
        nameSuffix: '',
        images: ['nginx:1.27'],
        replicas: [{ name: 'web', count: 3 }],
        commonLabels: { env: 'prod' },
        forceCommonLabels: false,
        labelWithoutSelector: false,
        labelIncludeTemplates: false,
        commonAnnotations: { revision: '${ARGOCD_APP_REVISION}' },
        commonAnnotationsEnvsubst: true,
        forceCommonAnnotations: false,
        namespace: 'platform',
        patches: [{ target: { kind: 'Deployment', name: 'web' }, patch: '- op: replace\n  path: /spec/replicas\n  value: 4' }],
        components: ['../components/debug'],
        ignoreMissingComponents: false,
      },
    );
  });

  it('refuses what it cannot carry over, naming the field and why (exit 2)', () => {
    const app = (source: string): string =>
      `apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  source:\n    repoURL: r\n    path: p\n${source}`;
    const cases: [string, RegExp][] = [
      ['    helm: {passCredentials: true}\n', /spec\.source\.helm\.passCredentials: the plugin never fetches/],
      ['    helm: {version: v2}\n', /spec\.source\.helm\.version: Helm v2 is not available/],
      ['    helm: {valueFiles: [$values/prod.yaml]}\n', /spec\.source\.helm\.valueFiles\[0\]: refers to another source \(\$values\)/],
      ['    helm: {fileParameters: [{name: c, path: $values/c.pem}]}\n', /fileParameters\[0\]\.path: refers to another source/],
      ['    chart: redis\n    helm: {releaseName: r}\n', /spec\.source\.chart: a chart from a Helm repository/],
      ['    kustomize: {version: v4.5.7}\n', /spec\.source\.kustomize\.version: the plugin renders with its own pinned kustomize/],
      ['    kustomize: {replicas: [{name: web, count: many}]}\n', /spec\.source\.kustomize\.replicas\[0\]\.count: must be an integer/],
      ['    kustomize: {newField: x}\n', /spec\.source\.kustomize\.newField: is not a field/],
      ['    directory: {recurse: true}\n', /no source with a helm or kustomize block.*directory source/],
    ];
    for (const [source, message] of cases) {
      assert.throws(() => migrateApplications(app(source)), (error: unknown) => error instanceof UsageError && exitCodeFor(error) === 2 && message.test(error.message), source);
    }
  });

  it('changes only the helm/kustomize entries: flow-map spacing, aligned comments and other documents stay byte for byte (golden)', async () => {
    const before = await fixture('layout.yaml');
    const { text } = migrateApplications(before, 'layout.yaml');
    assertGolden('migrate/layout.yaml', text);
    // Everything outside the two replaced entries is the input's own text.
    const helmStart = before.indexOf('helm:\n');
    const helmEnd = before.indexOf('    # a comment after the block');
    const kustomizeStart = before.indexOf('kustomize: {');
    const kustomizeEnd = before.indexOf(',  targetRevision: HEAD');
    assert.equal(text.slice(0, helmStart), before.slice(0, helmStart));
    const afterHelm = text.indexOf('    # a comment after the block');
    const migratedKustomizeStart = text.indexOf('plugin: {', afterHelm);
    assert.equal(text.slice(afterHelm, migratedKustomizeStart), before.slice(helmEnd, kustomizeStart));
    assert.ok(text.endsWith(before.slice(kustomizeEnd)), 'the rest after the inline source is unchanged');
    const documents = parseAllDocuments(text).map((document) => document.toJS() as Json);
    assert.deepEqual(documents[0], parse(before.split('---')[0] as string));
    assert.equal(documents[2]?.['spec'].source.plugin.parameters[1].string, 'pre-');
  });

  it('keeps CRLF line breaks, also in the lines it writes', async () => {
    const lf = await fixture('helm.yaml');
    const crlf = lf.replaceAll('\n', '\r\n');
    const { text } = migrateApplications(crlf);
    assert.doesNotMatch(text, /[^\r]\n/);
    assert.equal(text, migrateApplications(lf).text.replaceAll('\n', '\r\n'));
  });

  it('writes JSON for a JSON Application, in its indentation (golden)', async () => {
    const before = await fixture('app.json');
    const { text } = migrateApplications(before, 'app.json');
    assertGolden('migrate/app.json', text);
    const migrated = JSON.parse(text) as Json;
    assert.equal(migrated['spec'].source.helm, undefined);
    assert.equal(migrated['spec'].source.targetRevision, 'main');
    const config = configFromParameters(migrated['spec'].source.plugin.parameters);
    assert.equal(config.helm.releaseName, 'web');
    assert.equal(config.helm.skipCrds, true);
    assert.deepEqual(parse(config.helm.valuesObject), { greeting: 'hello' });
    // A source written on one line stays on one line; the lines around it are untouched.
    const oneLine = before.replace(/"source": \{[\s\S]*?\n {8}\},/, '"source": {"path": "p", "kustomize": {"namePrefix": "a-"}},');
    assert.ok(oneLine.includes('"source": {"path": "p", "kustomize"'), 'the fixture\'s source was rewritten to one line');
    const migratedOneLine = migrateApplications(oneLine, 'one-line.json').text;
    assert.equal(migratedOneLine, oneLine.replace('"kustomize": {"namePrefix": "a-"}', '"plugin": {"name":"driftless-v1","parameters":[{"name":"source-type","string":"kustomize"},{"name":"name-prefix","string":"a-"}]}'));
  });

  it('reports every refusal of a file at once, each with its document (from #0) and field', async () => {
    const error = (() => {
      try {
        migrateApplications(readFileSync(path.join(FIXTURES, 'refused-many.yaml'), 'utf8'), 'refused-many.yaml');
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    assert.ok(error instanceof UsageError, String(error));
    const expected = [
      /#0 spec\.source\.helm\.newField: is not a field/,
      /#0 spec\.source\.helm\.version: Helm v2 is not available/,
      /#0 spec\.source\.helm\.passCredentials: the plugin never fetches/,
      /#0 spec\.source\.helm\.valueFiles\[0\]: refers to another source/,
      /#0 spec\.source\.helm\.valueFiles\[1\]: is a URL/,
      /#1 spec\.sources\[0\]\.kustomize\.version: the plugin renders with its own pinned kustomize/,
      /#1 spec\.sources\[0\]\.kustomize\.replicas\[0\]\.count: must be an integer/,
    ];
    for (const line of expected) assert.match(error.message, line);
    assert.equal(error.message.split('\n').length, expected.length + 1, error.message);
  });

  it('numbers documents from #0, as generate does', () => {
    assert.throws(
      () => migrateApplications('a: [\n', 'bad.yaml'),
      (error: unknown) => error instanceof InvalidInputError && error.message.startsWith('bad.yaml#0: '),
    );
  });

  it('says on stderr that helm.version v3 is dropped and the plugin renders with Helm 4', async () => {
    const run = await runCli(['migrate-app', 'layout.yaml'], { cwd: FIXTURES });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /layout\.yaml#1 spec\.source\.helm\.version: v3 dropped: the plugin renders with its pinned Helm 4/);
  });

  it('carries globs and ${ARGOCD_APP_*} over as written: the plugin expands them as Argo CD does', () => {
    const { text } = migrateApplications(
      'apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  source:\n    repoURL: r\n    path: p\n' +
        '    helm:\n      valueFiles: [envs/*.yaml, "values-${ARGOCD_APP_NAMESPACE}.yaml"]\n      parameters: [{name: tag, value: $ARGOCD_APP_REVISION}]\n',
    );
    assert.match(text, /array:\n\s+- envs\/\*\.yaml\n\s+- values-\$\{ARGOCD_APP_NAMESPACE\}\.yaml/);
    assert.match(text, /tag: \$ARGOCD_APP_REVISION/);
  });

  it('runs as a command: a file or stdin in, the migrated Application out; not an Application is exit 4', async () => {
    const text = await fixture('helm.yaml');
    const fromFile = await runCli(['migrate-app', path.join(FIXTURES, 'helm.yaml')], { cwd: FIXTURES });
    const fromStdin = await runCli(['migrate-app', '-'], { cwd: FIXTURES, stdin: text });
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.equal(fromStdin.stdout, fromFile.stdout);
    assert.equal(fromFile.stdout, migrateApplications(text).text);
    const refused = await runCli(['migrate-app', 'refused.yaml'], { cwd: FIXTURES });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /passCredentials/);
    assert.equal(refused.stdout, '');
    const notAnApp = await runCli(['migrate-app', '-'], { cwd: FIXTURES, stdin: 'apiVersion: v1\nkind: ConfigMap\n' });
    assert.equal(notAnApp.code, 4);
    const withFlag = await runCli(['migrate-app', '--mode', 'all', 'helm.yaml'], { cwd: FIXTURES });
    assert.equal(withFlag.code, 2);
  });
});
