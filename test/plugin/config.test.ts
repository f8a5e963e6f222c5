import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PARAMETERS, parseConfig, usageText } from '../../plugin/config.ts';
import type { PluginConfig } from '../../plugin/config.ts';
import { UsageError } from '../../plugin/errors.ts';

type Env = Record<string, string | undefined>;

const CWD = '/repo/apps/web';

function parse(argv: readonly string[], env: Env = {}, cwd = CWD): PluginConfig {
  return parseConfig(argv, env, cwd);
}

function params(list: readonly unknown[]): string {
  return JSON.stringify(list);
}

/** Asserts a UsageError whose message contains every fragment. */
function rejects(argv: readonly string[], env: Env, ...fragments: string[]): void {
  assert.throws(
    () => parse(argv, env),
    (error: unknown) => {
      assert.ok(error instanceof UsageError, `expected UsageError, got ${String(error)}`);
      for (const fragment of fragments) assert.ok(error.message.includes(fragment), `${JSON.stringify(error.message)} lacks ${JSON.stringify(fragment)}`);
      return true;
    },
  );
}

describe('parseConfig: defaults', () => {
  it('applies every documented default when nothing is given', () => {
    const config = parse(['generate']);
    assert.equal(config.command, 'generate');
    assert.equal(config.output, 'table');
    assert.equal(config.appDir, CWD);
    assert.equal(config.repoRoot, CWD);
    assert.equal(config.mode, 'all');
    assert.equal(config.sourceType, 'auto');
    assert.deepEqual(config.directory, { recurse: false, include: '', exclude: '' });
    assert.deepEqual(config.helm, {
      releaseName: 'release-name',
      namespace: '',
      valuesFiles: [],
      values: '',
      set: [],
      setString: [],
      kubeVersion: '',
      apiVersions: [],
      valuesObject: '',
      fileParameters: [],
      ignoreMissingValueFiles: false,
      skipCrds: false,
      skipTests: false,
      skipSchemaValidation: false,
    });
    assert.deepEqual(config.kustomize, {
      enableHelm: false,
      buildOptions: [],
      namePrefix: '',
      nameSuffix: '',
      images: [],
      replicas: [],
      commonLabels: {},
      forceCommonLabels: false,
      labelWithoutSelector: false,
      labelIncludeTemplates: false,
      commonAnnotations: {},
      commonAnnotationsEnvsubst: false,
      forceCommonAnnotations: false,
      namespace: '',
      patches: '',
      components: [],
      ignoreMissingComponents: false,
    });
    assert.equal(config.includeRollouts, true);
    assert.equal(config.allowEmpty, false);
    assert.equal(config.hashKeyFile, undefined);
    assert.equal(config.timeoutMs, 90_000);
    assert.equal(config.timeoutText, '90s');
    assert.deepEqual(config.tools, { kustomize: 'kustomize', helm: 'helm' });
    for (const spec of PARAMETERS) assert.equal(config.provenance[spec.name], 'default', spec.name);
  });

  it('agrees with the defaults in the PARAMETERS table', () => {
    const config = parse(['generate']);
    const table = Object.fromEntries(PARAMETERS.map((spec) => [spec.name, spec.default]));
    assert.equal(table['mode'], config.mode);
    assert.equal(table['source-type'], config.sourceType);
    assert.equal(table['recurse'], String(config.directory.recurse));
    assert.equal(table['include-rollouts'], String(config.includeRollouts));
    assert.equal(table['allow-empty'], String(config.allowEmpty));
    assert.equal(table['kustomize-enable-helm'], String(config.kustomize.enableHelm));
    assert.equal(table['timeout'], config.timeoutText);
  });

  it('is deeply frozen', () => {
    const config = parse(['generate', '--set', 'a=b', '--values-files', 'v.yaml'], { HOME: '/home/x' });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.helm));
    assert.ok(Object.isFrozen(config.helm.set));
    assert.ok(Object.isFrozen(config.helm.valuesFiles));
    assert.ok(Object.isFrozen(config.environment));
    assert.ok(Object.isFrozen(config.provenance));
    assert.throws(() => {
      (config.helm.set as string[]).push('x=y');
    }, TypeError);
  });

  it('takes the app directory from --path, relative to the working directory', () => {
    assert.equal(parse(['generate', '--path', '../api']).appDir, '/repo/apps/api');
    assert.equal(parse(['generate', '--path=/elsewhere']).appDir, '/elsewhere');
  });

  it('passes the environment to renderers without undefined entries, and honours renderer overrides', () => {
    const config = parse(['generate'], { PATH: '/bin', GONE: undefined, DRIFTLESS_HELM: '/opt/helm', DRIFTLESS_KUSTOMIZE: '/opt/kustomize' });
    assert.equal(config.environment['PATH'], '/bin');
    assert.ok(!('GONE' in config.environment));
    assert.deepEqual(config.tools, { kustomize: '/opt/kustomize', helm: '/opt/helm' });
  });
});

describe('parseConfig: commands and arguments', () => {
  it('recognises generate, explain and the forms of help', () => {
    assert.equal(parse(['explain']).command, 'explain');
    assert.equal(parse(['--help']).command, 'help');
    assert.equal(parse(['-h']).command, 'help');
    assert.equal(parse(['help']).command, 'help');
    assert.equal(parse(['generate', '--help']).command, 'help');
    assert.equal(parse(['explain', '--output', 'json', '--help']).command, 'help');
    // Help works whatever else is wrong.
    assert.equal(parse(['generate', '--mode=bogus', '--help'], { ARGOCD_APP_PARAMETERS: '[{', DRIFTLESS_TIMEOUT: 'soon' }).command, 'help');
  });

  it('reads --output for explain only', () => {
    assert.equal(parse(['explain', '--output', 'json']).output, 'json');
    assert.equal(parse(['explain', '--output=table']).output, 'table');
    rejects(['generate', '--output', 'json'], {}, '--output only applies to explain');
    rejects(['explain', '--output', 'yaml'], {}, '"yaml"', '--output', 'table or json');
  });

  it('turns "-" into the stdin source, as does --source-type stdin', () => {
    const dash = parse(['generate', '-']);
    assert.equal(dash.sourceType, 'stdin');
    assert.equal(dash.provenance['source-type'], 'argument -');
    assert.equal(parse(['generate', '--source-type', 'stdin']).sourceType, 'stdin');
    assert.equal(parse(['generate', '-', '--source-type=stdin']).sourceType, 'stdin');
  });

  it('refuses "-" together with another source type', () => {
    rejects(['generate', '-', '--source-type', 'helm'], {}, '"-"', 'helm', 'flag --source-type');
    rejects(['generate', '-'], { ARGOCD_ENV_SOURCE_TYPE: 'kustomize' }, 'kustomize', 'ARGOCD_ENV_SOURCE_TYPE');
  });

  it('rejects malformed command lines with a UsageError', () => {
    rejects([], {}, 'missing command');
    rejects(['render'], {}, 'unknown command "render"');
    rejects(['generate', 'extra'], {}, 'unexpected argument "extra"');
    rejects(['generate', '--colour'], {}, 'unknown flag --colour');
    rejects(['generate', '--mode'], {}, '--mode needs a value');
    rejects(['generate', '--mode', '--recurse'], {}, '--mode needs a value');
    rejects(['generate', '--mode', 'all', '--mode', 'annotated'], {}, '--mode given twice');
    rejects(['generate', '--path', 'a', '--path', 'b'], {}, '--path given twice');
    rejects(['generate', '--path='], {}, '--path needs a value');
    rejects(['generate', '-', '-'], {}, '"-" given twice');
    rejects(['explain', '--output', 'json', '--output', 'json'], {}, '--output given twice');
  });

  it('reads a bare boolean flag as true and --flag=false as false', () => {
    assert.equal(parse(['generate', '--recurse']).directory.recurse, true);
    assert.equal(parse(['generate', '--include-rollouts=false']).includeRollouts, false);
    assert.equal(parse(['generate', '--allow-empty=TRUE']).allowEmpty, true);
    rejects(['generate', '--allow-empty=yes'], {}, 'invalid value "yes"', 'allow-empty', 'flag --allow-empty', 'true or false');
  });

  it('collects repeatable flags in order without splitting on commas', () => {
    const config = parse(['generate', '--values-files', 'a,b.yaml', '--values-files=c.yaml', '--set', 'x=1,y=2', '--set-string', 's=1']);
    assert.deepEqual(config.helm.valuesFiles, ['a,b.yaml', 'c.yaml']);
    assert.deepEqual(config.helm.set, ['x=1,y=2']);
    assert.deepEqual(config.helm.setString, ['s=1']);
  });
});

describe('parseConfig: precedence', () => {
  const everyLevel: Env = {
    ARGOCD_APP_PARAMETERS: params([{ name: 'mode', string: 'annotated' }]),
    ARGOCD_ENV_MODE: 'all',
    DRIFTLESS_MODE: 'all',
  };

  it('lets a flag beat everything', () => {
    const config = parse(['generate', '--mode', 'all'], everyLevel);
    assert.equal(config.mode, 'all');
    assert.equal(config.provenance['mode'], 'flag --mode');
  });

  it('lets ARGOCD_APP_PARAMETERS beat ARGOCD_ENV_ and the sidecar environment', () => {
    const config = parse(['generate'], everyLevel);
    assert.equal(config.mode, 'annotated');
    assert.equal(config.provenance['mode'], 'ARGOCD_APP_PARAMETERS (mode)');
  });

  it('lets ARGOCD_ENV_<NAME> (upper-cased, dashes to underscores) beat the sidecar environment', () => {
    const config = parse(['generate'], { ARGOCD_ENV_INCLUDE_ROLLOUTS: 'false', DRIFTLESS_INCLUDE_ROLLOUTS: 'true' });
    assert.equal(config.includeRollouts, false);
    assert.equal(config.provenance['include-rollouts'], 'ARGOCD_ENV_INCLUDE_ROLLOUTS');
  });

  it('uses the sidecar environment as the operator default', () => {
    const config = parse(['generate'], { DRIFTLESS_MODE: 'annotated', DRIFTLESS_HASH_KEY_FILE: '/etc/driftless/key' });
    assert.equal(config.mode, 'annotated');
    assert.equal(config.provenance['mode'], 'DRIFTLESS_MODE');
    assert.equal(config.hashKeyFile, '/etc/driftless/key');
  });

  it('treats an empty value as unset at every level', () => {
    const config = parse(['generate'], {
      ARGOCD_APP_PARAMETERS: params([{ name: 'mode', string: '' }]),
      ARGOCD_ENV_MODE: '',
      DRIFTLESS_MODE: 'annotated',
    });
    assert.equal(config.mode, 'annotated');
    assert.equal(parse(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'values-files', array: [] }]) }).provenance['values-files'], 'default');
  });

  it('accepts ARGOCD_APP_PARAMETERS = null (plugin: {} with no parameters) and absent', () => {
    assert.equal(parse(['generate'], { ARGOCD_APP_PARAMETERS: 'null' }).mode, 'all');
    assert.equal(parse(['generate'], { ARGOCD_APP_PARAMETERS: 'null', DRIFTLESS_MODE: 'annotated' }).mode, 'annotated');
    assert.equal(parse(['generate'], { ARGOCD_APP_PARAMETERS: '' }).mode, 'all');
  });

  it('ignores a parameter entry that carries a name only', () => {
    assert.equal(parse(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'mode' }]), DRIFTLESS_MODE: 'annotated' }).mode, 'annotated');
  });

  it('ignores unrelated ARGOCD_ENV_ and DRIFTLESS_ variables', () => {
    assert.equal(parse(['generate'], { ARGOCD_ENV_AVP_TYPE: 'vault', DRIFTLESS_SOMETHING: 'x' }).mode, 'all');
  });
});

describe('parseConfig: parameter shapes from ARGOCD_APP_PARAMETERS', () => {
  it('reads strings, arrays and maps', () => {
    const config = parse(['generate'], {
      ARGOCD_APP_PARAMETERS: params([
        { name: 'source-type', string: 'helm' },
        { name: 'values-files', array: ['values.yaml', 'values-prod.yaml'] },
        { name: 'set', map: { 'image.tag': 'v1.2.3', 'a.list': '{x,y}', 'b.csv': 'one,two\\,three' } },
        { name: 'set-string', array: ['ports[0]=8080'] },
        { name: 'values', string: 'replicas: 3\n' },
        { name: 'recurse', string: 'true' },
      ]),
    });
    assert.equal(config.sourceType, 'helm');
    assert.deepEqual(config.helm.valuesFiles, ['values.yaml', 'values-prod.yaml']);
    // Map keys sorted; a map value is literal, so its commas are escaped, except in a {list} or when already escaped.
    assert.deepEqual(config.helm.set, ['a.list={x,y}', 'b.csv=one\\,two\\,three', 'image.tag=v1.2.3']);
    assert.deepEqual(config.helm.setString, ['ports[0]=8080']);
    assert.equal(config.helm.values, 'replicas: 3\n');
    assert.equal(config.directory.recurse, true);
  });

  it('reads an array parameter given as a string as a comma list', () => {
    const config = parse(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'api-versions', string: 'v1, apps/v1' }]) });
    assert.deepEqual(config.helm.apiVersions, ['v1', 'apps/v1']);
  });

  it('passes a --set string from the environment through as one Helm expression', () => {
    assert.deepEqual(parse(['generate'], { ARGOCD_ENV_SET: 'a=1,b=2' }).helm.set, ['a=1,b=2']);
  });

  it('rejects malformed parameter JSON, naming ARGOCD_APP_PARAMETERS', () => {
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: '[{' }, 'ARGOCD_APP_PARAMETERS is not valid JSON');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: '{"name":"mode"}' }, 'ARGOCD_APP_PARAMETERS must be a JSON array');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params(['mode']) }, 'ARGOCD_APP_PARAMETERS[0]', 'string "name"');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'colour', string: 'red' }]) }, 'unknown parameter "colour"', 'known parameters: mode');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'mode', string: 'all' }, { name: 'mode', string: 'all' }]) }, 'parameter mode is given twice');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'mode', string: 'all', array: ['all'] }]) }, 'more than one of string, array and map');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'mode', string: 3 }]) }, 'parameter mode', '"string" must be a string');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'values-files', array: ['a', 1] }]) }, 'values-files', 'array of strings');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'set', map: { a: 1 } }]) }, 'parameter set', 'object of strings');
  });

  it('rejects a value of the wrong shape, naming the parameter and its source', () => {
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'mode', array: ['all'] }]) }, 'parameter mode', 'ARGOCD_APP_PARAMETERS (mode)', 'must be a string, got an array');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'values-files', map: { a: 'b' } }]) }, 'parameter values-files', 'got a map');
  });
});

describe('parseConfig: validation', () => {
  it('rejects bad enum, boolean and duration values, naming parameter and source', () => {
    rejects(['generate', '--mode', 'some'], {}, 'invalid value "some" for parameter mode (from flag --mode)', 'all, annotated');
    rejects(['generate'], { ARGOCD_ENV_SOURCE_TYPE: 'jsonnet' }, '"jsonnet"', 'source-type', 'ARGOCD_ENV_SOURCE_TYPE');
    rejects(['generate'], { DRIFTLESS_RECURSE: 'maybe' }, '"maybe"', 'recurse', 'DRIFTLESS_RECURSE');
    rejects(['generate'], { ARGOCD_EXEC_TIMEOUT: '90' }, '"90"', 'timeout', 'ARGOCD_EXEC_TIMEOUT', 'Go duration');
    rejects(['generate', '--timeout', '0s'], {}, '"0s"', 'flag --timeout');
  });

  it('rejects a --set item that is not key=value', () => {
    rejects(['generate', '--set', 'novalue'], {}, 'invalid item in parameter set (from flag --set)', 'key=value');
    rejects(['generate'], { ARGOCD_APP_PARAMETERS: params([{ name: 'set-string', array: ['=x'] }]) }, 'set-string', 'ARGOCD_APP_PARAMETERS');
  });

  it('leaves helm-only options to the helm source, so they cannot break another kind of app', () => {
    const config = parse(['generate'], { ARGOCD_APP_NAME: `argocd_${'long-name-'.repeat(8)}`, KUBE_VERSION: 'v1.31.0+k3s.weird build', ARGOCD_APP_NAMESPACE: 'Odd_NS' });
    assert.equal(config.helm.releaseName, 'long-name-'.repeat(8));
    assert.equal(config.helm.kubeVersion, 'v1.31.0+k3s.weird build');
  });
});

describe('parseConfig: Argo CD build environment', () => {
  it('drops the <namespace>_ prefix of ARGOCD_APP_NAME for the release name', () => {
    assert.equal(parse(['generate'], { ARGOCD_APP_NAME: 'team-a_web' }).helm.releaseName, 'web');
    const plain = parse(['generate'], { ARGOCD_APP_NAME: 'web' });
    assert.equal(plain.helm.releaseName, 'web');
    assert.equal(plain.appName, 'web');
    assert.equal(plain.provenance['release-name'], 'ARGOCD_APP_NAME');
    assert.equal(parse(['generate', '--release-name', 'other'], { ARGOCD_APP_NAME: 'web' }).helm.releaseName, 'other');
  });

  it('uses ARGOCD_APP_NAMESPACE as destination namespace and default helm namespace', () => {
    const config = parse(['generate'], { ARGOCD_APP_NAMESPACE: 'prod' });
    assert.equal(config.destinationNamespace, 'prod');
    assert.equal(config.helm.namespace, 'prod');
    const overridden = parse(['generate'], { ARGOCD_APP_NAMESPACE: 'prod', ARGOCD_APP_PARAMETERS: params([{ name: 'namespace', string: 'other' }]) });
    assert.equal(overridden.helm.namespace, 'other');
    assert.equal(overridden.destinationNamespace, 'prod');
  });

  it('takes the destination namespace from the namespace parameter in a local run (no ARGOCD_APP_NAMESPACE)', () => {
    for (const config of [
      parse(['generate', '--namespace', 'prod'], {}),
      parse(['generate'], { DRIFTLESS_NAMESPACE: 'prod' }),
      parse(['generate'], { ARGOCD_APP_NAMESPACE: '', ARGOCD_APP_PARAMETERS: params([{ name: 'namespace', string: 'prod' }]) }),
    ]) {
      assert.equal(config.destinationNamespace, 'prod');
      assert.equal(config.helm.namespace, 'prod');
    }
    assert.equal(parse(['generate'], {}).destinationNamespace, '');
  });

  it('reads KUBE_VERSION and KUBE_API_VERSIONS, below the operator default and the parameter', () => {
    const argo = { KUBE_VERSION: '1.31.2', KUBE_API_VERSIONS: 'apps/v1,apps/v1/Deployment,v1' };
    const config = parse(['generate'], argo);
    assert.equal(config.helm.kubeVersion, '1.31.2');
    assert.deepEqual(config.helm.apiVersions, ['apps/v1', 'apps/v1/Deployment', 'v1']);
    assert.equal(parse(['generate'], { ...argo, DRIFTLESS_KUBE_VERSION: 'v1.30.0' }).helm.kubeVersion, 'v1.30.0');
    assert.equal(parse(['generate'], { ...argo, ARGOCD_APP_PARAMETERS: params([{ name: 'kube-version', string: '1.29.0' }]) }).helm.kubeVersion, '1.29.0');
  });

  it('reads the time budget from ARGOCD_EXEC_TIMEOUT, below DRIFTLESS_TIMEOUT and the parameter', () => {
    assert.equal(parse(['generate'], { ARGOCD_EXEC_TIMEOUT: '2m' }).timeoutMs, 120_000);
    const both = parse(['generate'], { ARGOCD_EXEC_TIMEOUT: '2m', DRIFTLESS_TIMEOUT: '45s' });
    assert.equal(both.timeoutMs, 45_000);
    assert.equal(both.timeoutText, '45s');
    assert.equal(both.provenance['timeout'], 'DRIFTLESS_TIMEOUT');
    assert.equal(parse(['generate', '--timeout', '1m30s'], { ARGOCD_EXEC_TIMEOUT: '2m' }).timeoutMs, 90_000);
  });

  it('finds the repository root from ARGOCD_APP_SOURCE_PATH (Argo CD unpacks the whole repository above the app)', () => {
    assert.equal(parse(['generate'], { ARGOCD_APP_SOURCE_PATH: 'apps/web' }).repoRoot, '/repo');
    assert.equal(parse(['generate'], { ARGOCD_APP_SOURCE_PATH: './apps/web/' }).repoRoot, '/repo');
    assert.equal(parse(['generate'], { ARGOCD_APP_SOURCE_PATH: 'web' }).repoRoot, '/repo/apps');
    // Without it, or when it does not match the app dir's tail, the app dir is the boundary.
    assert.equal(parse(['generate']).repoRoot, CWD);
    assert.equal(parse(['generate'], { ARGOCD_APP_SOURCE_PATH: 'apps/api' }).repoRoot, CWD);
    assert.equal(parse(['generate'], { ARGOCD_APP_SOURCE_PATH: 'eb' }).repoRoot, CWD);
    assert.equal(parse(['generate'], { ARGOCD_APP_SOURCE_PATH: '.' }).repoRoot, CWD);
    assert.equal(parse(['generate'], { ARGOCD_APP_SOURCE_PATH: '../x' }).repoRoot, CWD);
  });

  it('resolves hash-key-file against the working directory', () => {
    assert.equal(parse(['generate', '--hash-key-file', 'key']).hashKeyFile, '/repo/apps/web/key');
  });
});

describe('usageText', () => {
  it('lists every parameter flag and its environment variables', () => {
    const text = usageText();
    for (const spec of PARAMETERS) {
      assert.ok(text.includes(spec.flag), spec.flag);
      for (const name of spec.env) assert.ok(text.includes(name), name);
      assert.ok(text.includes(`ARGOCD_ENV_${spec.name.toUpperCase().replaceAll('-', '_')}`), spec.name);
    }
    assert.ok(text.includes('--path') && text.includes('--output'));
  });
});
