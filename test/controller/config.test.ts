import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CONTROLLER_FLAGS } from '../../controller/config/flags.ts';
import { controllerUsageText } from '../../controller/config/help.ts';
import type { ControllerConfig } from '../../controller/config/model.ts';
import { parseControllerConfig } from '../../controller/config/parse.ts';
import { DEFAULT_MESSAGE_TEMPLATE } from '../../controller/writeback/message.ts';
import { UsageError } from '../../cli/errors.ts';
import { exitCodeFor } from '../../plugin/errors.ts';

type Env = Record<string, string | undefined>;

function parse(argv: readonly string[], env: Env = {}): ControllerConfig {
  const result = parseControllerConfig(argv, env);
  assert.equal(result.command, 'run');
  return result;
}

/** Asserts a UsageError whose message contains every fragment. */
function rejects(argv: readonly string[], env: Env, ...fragments: string[]): void {
  assert.throws(
    () => parseControllerConfig(argv, env),
    (error: unknown) => {
      assert.ok(error instanceof UsageError, `expected UsageError, got ${String(error)}`);
      for (const fragment of fragments) assert.ok(error.message.includes(fragment), `${JSON.stringify(error.message)} lacks ${JSON.stringify(fragment)}`);
      return true;
    },
  );
}

/** The camelCase config field of a flag, the documented naming rule. */
function fieldOf(name: string): keyof ControllerConfig {
  return name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase()) as keyof ControllerConfig;
}

describe('parseControllerConfig: defaults', () => {
  it('applies every documented default when nothing is given', () => {
    const config = parse([]);
    assert.deepEqual(config, {
      command: 'run',
      kubeconfig: [],
      namespaces: undefined,
      namespaceSelector: undefined,
      ignoreNamespaces: [],
      resourceLabelSelector: undefined,
      mode: 'annotated',
      hashKeyFile: undefined,
      restartStrategy: 'evict',
      debounce: { ms: 2000, text: '2s' },
      workers: 4,
      maxConcurrentRestarts: 10,
      restartRate: 1,
      restartBurst: 10,
      minRestartInterval: { ms: 60_000, text: '1m' },
      pausePeriod: { ms: 0, text: '0' },
      healthGateTimeout: { ms: 300_000, text: '5m' },
      breakerThreshold: 3,
      breakerWindow: { ms: 600_000, text: '10m' },
      kubeQps: 20,
      kubeBurst: 40,
      resyncPeriod: { ms: 600_000, text: '10m' },
      relistPeriod: { ms: 0, text: '0' },
      kubeRequestTimeout: { ms: 30_000, text: '30s' },
      watchSilenceTimeout: { ms: 300_000, text: '5m' },
      evictionBlockedWarning: { ms: 300_000, text: '5m' },
      eventSeriesInterval: { ms: 60_000, text: '1m' },
      restartCheckInterval: { ms: 5000, text: '5s' },
      restartProgressDeadline: { ms: 600_000, text: '10m' },
      maxClockSkew: { ms: 2000, text: '2s' },
      argocdTrackingMethod: 'annotation',
      argocdTrackingLabel: 'app.kubernetes.io/instance',
      argocdNamespace: 'argocd',
      argocdClusters: false,
      clusterDownWarning: { ms: 15_000, text: '15s' },
      argocdKubeconfig: undefined,
      argocdDestinationServer: undefined,
      argocdDestinationName: undefined,
      argocdSyncWait: { ms: 60_000, text: '60s' },
      argocdSyncWindows: true,
      logLevel: 'info',
      listPageSize: 100,
      streamingList: true,
      httpAddr: ':8080',
      leaderElect: false,
      leaderElectionNamespace: undefined,
      leaderElectionId: 'driftless-controller',
      leaseDuration: { ms: 15_000, text: '15s' },
      renewDeadline: { ms: 10_000, text: '10s' },
      retryPeriod: { ms: 2000, text: '2s' },
      dryRun: false,
      notifyWebhookUrl: undefined,
      notifyWebhookUrlFile: undefined,
      notifySink: 'webhook',
      notifyOn: ['started', 'finished', 'blocked', 'skipped'],
      notifyAdditionalInfo: undefined,
      writeBackAuthorName: 'driftless',
      writeBackAuthorEmail: 'driftless@noreply.invalid',
      writeBackMessage: DEFAULT_MESSAGE_TEMPLATE,
      writeBackBatchWindow: { ms: 5000, text: '5s' },
      writeBackWorkDir: undefined,
      writeBackPushAttempts: 5,
      writeBackRetryBackoff: { ms: 500, text: '500ms' },
      writeBackGitTimeout: { ms: 60_000, text: '60s' },
      writeBackCredentialsSecret: undefined,
      writeBackNamespaces: [],
      writeBackApplications: [],
      writeBackPluginNames: ['driftless-v1'],
      writeBackSigningSecret: undefined,
      writeBackFallbackAfter: { ms: 600_000, text: '10m' },
      writeBackFallback: 'restart',
      provenance: Object.fromEntries(CONTROLLER_FLAGS.map((spec) => [spec.name, 'default'])),
    });
  });

  it('reads booleans bare, with =true/=false and from the environment, and never swallows the next argument', () => {
    assert.equal(parse(['--dry-run']).dryRun, true);
    assert.equal(parse(['--dry-run=false']).dryRun, false);
    assert.equal(parse([], { DRIFTLESS_LEADER_ELECT: 'true' }).leaderElect, true);
    const both = parse(['--leader-elect', '--dry-run']);
    assert.equal(both.leaderElect, true);
    assert.equal(both.dryRun, true);
    assert.throws(() => parse(['--dry-run=yes']), /--dry-run.*true or false/);
  });

  it('listens on loopback by default in a local run, on every interface in a cluster', () => {
    assert.equal(parse(['--kubeconfig', '/k']).httpAddr, '127.0.0.1:8080');
    assert.equal(parse([]).httpAddr, ':8080');
    assert.equal(parse(['--http-addr', '127.0.0.1:9090']).httpAddr, '127.0.0.1:9090');
    assert.throws(() => parse(['--http-addr', 'localhost']), /--http-addr/);
  });

  it('refuses a renew deadline that is not shorter than the lease', () => {
    assert.throws(() => parse(['--lease-duration=10s', '--renew-deadline=10s']), /--renew-deadline .* must be less than --lease-duration/);
  });

  it('has one config field per flag, named by the camelCase rule', () => {
    const config = parse([]);
    const fields = Object.keys(config).filter((key) => key !== 'command' && key !== 'provenance').sort();
    assert.deepEqual(fields, CONTROLLER_FLAGS.map((spec) => fieldOf(spec.name)).sort());
  });

  it('is deeply frozen', () => {
    const config = parse(['--namespaces', 'a,b', '--namespace-selector', 'x in (1,2)'], { KUBECONFIG: '/k' });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.namespaces));
    assert.ok(Object.isFrozen(config.kubeconfig));
    assert.ok(Object.isFrozen(config.debounce));
    assert.ok(Object.isFrozen(config.provenance));
    assert.ok(Object.isFrozen(config.namespaceSelector));
    assert.ok(Object.isFrozen(config.namespaceSelector?.requirements[0]?.values));
    assert.throws(() => {
      (config.namespaces as string[]).push('c');
    }, TypeError);
    assert.throws(() => {
      (config as { workers: number }).workers = 1;
    }, TypeError);
  });
});

describe('parseControllerConfig: sources and precedence', () => {
  it('reads every flag from DRIFTLESS_<UPPER_SNAKE>, and the flag wins over it', () => {
    const config = parse(['--workers', '7'], { DRIFTLESS_WORKERS: '3', DRIFTLESS_LOG_LEVEL: 'debug' });
    assert.equal(config.workers, 7);
    assert.equal(config.provenance['workers'], 'flag --workers');
    assert.equal(config.logLevel, 'debug');
    assert.equal(config.provenance['log-level'], 'DRIFTLESS_LOG_LEVEL');
    for (const spec of CONTROLLER_FLAGS) {
      assert.equal(spec.env[0], `DRIFTLESS_${spec.name.toUpperCase().replaceAll('-', '_')}`, spec.name);
    }
  });

  it('accepts --flag=value and --flag value alike', () => {
    assert.deepEqual(parse(['--debounce=0']).debounce, { ms: 0, text: '0' });
    assert.deepEqual(parse(['--debounce', '1m30s']).debounce, { ms: 90_000, text: '1m30s' });
    assert.equal(parse(['--namespace-selector=a=b']).namespaceSelector?.text, 'a=b');
  });

  it('treats an empty environment value as unset', () => {
    const config = parse([], { DRIFTLESS_MODE: '', DRIFTLESS_NAMESPACES: '', KUBECONFIG: '' });
    assert.equal(config.mode, 'annotated');
    assert.equal(config.namespaces, undefined);
    assert.deepEqual(config.kubeconfig, []);
    assert.equal(config.provenance['mode'], 'default');
  });

  it('takes the kubeconfig from the flag, then DRIFTLESS_KUBECONFIG, then the KUBECONFIG list', () => {
    const list = ['/a/config', '', '/b/config'].join(path.delimiter);
    assert.deepEqual(parse([], { KUBECONFIG: list }).kubeconfig, ['/a/config', '/b/config']);
    assert.equal(parse([], { KUBECONFIG: list }).provenance['kubeconfig'], 'KUBECONFIG');
    assert.deepEqual(parse([], { KUBECONFIG: list, DRIFTLESS_KUBECONFIG: 'mine' }).kubeconfig, ['mine']);
    assert.deepEqual(parse(['--kubeconfig', 'flag.yaml'], { KUBECONFIG: list, DRIFTLESS_KUBECONFIG: 'mine' }).kubeconfig, ['flag.yaml']);
  });

  it('keeps the hash key file as a path and never reads it', () => {
    const config = parse(['--hash-key-file', '/does/not/exist']);
    assert.equal(config.hashKeyFile, '/does/not/exist');
  });

  it('parses every value type', () => {
    const config = parse([
      '--namespaces', 'web, api,web',
      '--ignore-namespaces=kube-system',
      '--mode', 'all',
      '--restart-strategy', 'rollout',
      '--kube-qps', '7.5',
      '--kube-burst', '15',
      '--max-concurrent-restarts', '1',
      '--list-page-size', '5000',
      '--argocd-tracking-method', 'annotation+label',
      '--argocd-tracking-label', 'argocd.argoproj.io/instance',
      '--watch-silence-timeout', '90s',
      '--eviction-blocked-warning', '1h',
      '--event-series-interval', '10s',
      '--restart-check-interval', '500ms',
      '--resync-period', '24h',
    ]);
    assert.deepEqual(config.namespaces, ['api', 'web']);
    assert.deepEqual(config.ignoreNamespaces, ['kube-system']);
    assert.equal(config.mode, 'all');
    assert.equal(config.restartStrategy, 'rollout');
    assert.equal(config.kubeQps, 7.5);
    assert.equal(config.kubeBurst, 15);
    assert.equal(config.maxConcurrentRestarts, 1);
    assert.equal(config.listPageSize, 5000);
    assert.equal(config.argocdTrackingMethod, 'annotation+label');
    assert.equal(config.argocdTrackingLabel, 'argocd.argoproj.io/instance');
    assert.equal(config.watchSilenceTimeout.ms, 90_000);
    assert.equal(config.evictionBlockedWarning.ms, 3_600_000);
    assert.equal(config.eventSeriesInterval.ms, 10_000);
    assert.equal(config.restartCheckInterval.ms, 500);
    assert.equal(config.resyncPeriod.ms, 86_400_000);
  });
});

describe('parseControllerConfig: label selectors', () => {
  it('parses every requirement form into a canonical text', () => {
    const selector = parse(['--resource-label-selector', ' team = web , tier==db, env != dev, !legacy, managed, zone in (b, a,a), x.io/kind notin (),k=']).resourceLabelSelector;
    assert.deepEqual(selector?.requirements, [
      { key: 'team', operator: 'Equals', values: ['web'] },
      { key: 'tier', operator: 'Equals', values: ['db'] },
      { key: 'env', operator: 'NotEquals', values: ['dev'] },
      { key: 'legacy', operator: 'DoesNotExist', values: [] },
      { key: 'managed', operator: 'Exists', values: [] },
      { key: 'zone', operator: 'In', values: ['a', 'b'] },
      { key: 'x.io/kind', operator: 'NotIn', values: [''] },
      { key: 'k', operator: 'Equals', values: [''] },
    ]);
    assert.equal(selector?.text, 'team=web,tier=db,env!=dev,!legacy,managed,zone in (a,b),x.io/kind notin (),k=');
  });

  it('rejects malformed selectors, naming the flag and the requirement', () => {
    const flag = '--namespace-selector';
    rejects([flag, 'a,,b'], {}, flag, 'requirement 2 is empty', 'key in (v1,v2)');
    rejects([flag, 'a,'], {}, 'requirement 2 is empty');
    rejects([flag, 'a in (b'], {}, 'a "(" without ")"');
    rejects([flag, 'a in b)'], {}, 'a ")" without "("');
    rejects([flag, 'a in ((b))'], {}, 'nested parentheses');
    rejects([flag, 'a b'], {}, 'the requirement "a b": not a requirement');
    rejects([flag, 'a=b=c'], {}, 'not a requirement');
    rejects([flag, 'n>3'], {}, '< and > are not supported');
    rejects([flag, 'a=b c'], {}, 'not a requirement');
    rejects([flag, '-a=b'], {}, '"-a" is not a label key');
    rejects([flag, 'Bad_Prefix/a'], {}, 'prefix must be a lower-case DNS subdomain');
    rejects([flag, `${'k'.repeat(64)}`], {}, 'is not a label key');
    rejects([flag, `a=${'v'.repeat(64)}`], {}, 'is not a label value');
    rejects([flag, 'a in (x,-y)'], {}, '"-y" is not a label value');
    rejects([], { DRIFTLESS_RESOURCE_LABEL_SELECTOR: 'team:web' }, '--resource-label-selector (from DRIFTLESS_RESOURCE_LABEL_SELECTOR)', 'legacy "key:value"');
  });
});

describe('parseControllerConfig: errors name the flag or variable, the problem and what is allowed', () => {
  it('rejects unknown flags, positional arguments, missing and repeated values', () => {
    rejects(['--worker', '3'], {}, 'unknown flag --worker', 'driftless controller --help');
    rejects(['--workers=3', 'extra'], {}, 'unexpected argument "extra"');
    rejects(['--workers'], {}, '--workers needs a value', 'an integer of at least 1');
    rejects(['--workers', '--debounce', '1s'], {}, '--workers needs a value');
    rejects(['--mode='], {}, '--mode needs a value', 'annotated or all');
    rejects(['--mode', 'all', '--mode=annotated'], {}, '--mode given twice');
  });

  it('names the flag for a bad flag value, and the variable for a bad environment value', () => {
    rejects(['--workers', '0'], {}, 'invalid value "0" for --workers:', 'an integer of at least 1');
    rejects([], { DRIFTLESS_WORKERS: '2.5' }, 'invalid value "2.5" for --workers (from DRIFTLESS_WORKERS)', 'an integer');
    rejects([], { DRIFTLESS_MAX_CONCURRENT_RESTARTS: '1e3' }, 'DRIFTLESS_MAX_CONCURRENT_RESTARTS', 'an integer of at least 1');
    rejects(['--kube-qps', '0'], {}, '--kube-qps', 'a number greater than 0');
    rejects([], { DRIFTLESS_KUBE_QPS: 'fast' }, 'DRIFTLESS_KUBE_QPS', 'a number greater than 0');
    rejects(['--kube-burst', '-1'], {}, '--kube-burst', 'an integer of at least 1');
    rejects(['--list-page-size', '5001'], {}, '--list-page-size', 'an integer from 1 to 5000');
    rejects(['--list-page-size', '0'], {}, 'an integer from 1 to 5000');
    rejects(['--mode', 'everything'], {}, 'invalid value "everything" for --mode', 'annotated or all');
    rejects([], { DRIFTLESS_RESTART_STRATEGY: 'restart' }, 'DRIFTLESS_RESTART_STRATEGY', 'evict, rollout or none');
    rejects(['--argocd-tracking-method', 'labels'], {}, '--argocd-tracking-method', 'annotation, label or annotation+label');
    rejects(['--log-level', 'warning'], {}, '--log-level', 'trace, debug, info, warn or error');
    rejects(['--argocd-tracking-label', 'not a key'], {}, '--argocd-tracking-label', 'is not a label key');
  });

  it('checks durations: Go syntax, positive where zero makes no sense, and below the timer limit', () => {
    rejects(['--debounce', '2'], {}, 'invalid value "2" for --debounce', 'a Go duration such as 5s', 'from 0 to 24h');
    rejects(['--debounce', '-1s'], {}, '--debounce');
    rejects(['--debounce', '25h'], {}, '--debounce', 'from 0 to 24h');
    rejects(['--resync-period', '0'], {}, '--resync-period', 'greater than 0 and at most 24h');
    rejects([], { DRIFTLESS_WATCH_SILENCE_TIMEOUT: '0s' }, 'DRIFTLESS_WATCH_SILENCE_TIMEOUT', 'greater than 0');
    rejects(['--eviction-blocked-warning', '5 m'], {}, '--eviction-blocked-warning');
    rejects(['--restart-check-interval', '1d'], {}, '--restart-check-interval');
    rejects(['--event-series-interval', '500ms'], {}, '--event-series-interval', 'from 1s to 10m');
  });

  it('reads the Argo CD sync wait: a namespace, and a duration where 0 turns the wait (and the Applications watch) off', () => {
    assert.equal(parse(['--argocd-namespace=gitops']).argocdNamespace, 'gitops');
    assert.equal(parse([], { DRIFTLESS_ARGOCD_NAMESPACE: '' }).argocdNamespace, 'argocd', 'an empty variable is unset');
    assert.deepEqual(parse(['--argocd-sync-wait=0']).argocdSyncWait, { ms: 0, text: '0' });
    assert.equal(parse(['--argocd-sync-windows=false']).argocdSyncWindows, false);
    assert.equal(parse(['--argocd-clusters']).argocdClusters, true, 'hub mode is one boolean flag');
    assert.deepEqual(parse([], { DRIFTLESS_ARGOCD_SYNC_WAIT: '2m' }).argocdSyncWait, { ms: 120_000, text: '2m' });
    rejects(['--argocd-namespace', 'a,b'], {}, '--argocd-namespace', 'name exactly one namespace');
    rejects(['--argocd-namespace', 'Argo'], {}, '--argocd-namespace', 'is not a namespace name');
    rejects(['--argocd-sync-wait', '-1s'], {}, '--argocd-sync-wait', 'from 0 to 24h');
    rejects(['--argocd-sync-wait='], {}, '--argocd-sync-wait needs a value');
  });

  it('reads the spoke option: a hub kubeconfig only with this cluster\'s destination, never in hub mode', () => {
    const byServer = parse(['--argocd-kubeconfig=/etc/hub/config', '--argocd-destination-server=https://10.0.0.1:6443//']);
    assert.equal(byServer.argocdKubeconfig, '/etc/hub/config');
    assert.equal(byServer.argocdDestinationServer, 'https://10.0.0.1:6443', 'trailing slashes cut, as Argo CD compares servers');
    assert.equal(byServer.argocdDestinationName, undefined);
    const byName = parse([], { DRIFTLESS_ARGOCD_KUBECONFIG: 'hub.yaml', DRIFTLESS_ARGOCD_DESTINATION_NAME: ' prod-eu ' });
    assert.equal(byName.argocdDestinationName, 'prod-eu');
    assert.equal(byName.provenance['argocd-kubeconfig'], 'DRIFTLESS_ARGOCD_KUBECONFIG');
    const both = parse(['--argocd-kubeconfig=hub', '--argocd-destination-server=http://spoke', '--argocd-destination-name=spoke']);
    assert.deepEqual([both.argocdDestinationServer, both.argocdDestinationName], ['http://spoke', 'spoke']);
    rejects(['--argocd-kubeconfig=hub'], {}, '--argocd-kubeconfig (from flag --argocd-kubeconfig) needs --argocd-destination-server or --argocd-destination-name');
    rejects(['--argocd-destination-server=https://spoke'], {}, '--argocd-destination-server', 'only used with --argocd-kubeconfig');
    rejects([], { DRIFTLESS_ARGOCD_DESTINATION_NAME: 'spoke' }, '--argocd-destination-name (from DRIFTLESS_ARGOCD_DESTINATION_NAME)', 'only used with --argocd-kubeconfig');
    rejects(['--argocd-clusters', '--argocd-kubeconfig=hub', '--argocd-destination-name=x'], {}, '--argocd-kubeconfig', '--argocd-clusters', 'exclude each other');
    rejects(['--argocd-kubeconfig=hub', '--argocd-destination-server=spoke:6443'], {}, '--argocd-destination-server', 'http(s) URL');
    rejects(['--argocd-kubeconfig=hub', '--argocd-destination-server=not a url'], {}, '--argocd-destination-server', 'not a URL');
    rejects(['--argocd-kubeconfig=hub', '--argocd-destination-name=a\nb'], {}, '--argocd-destination-name', 'one non-empty line');
  });

  it('never quotes a destination server URL that holds credentials', () => {
    assert.throws(() => parseControllerConfig(['--argocd-kubeconfig=hub', '--argocd-destination-server=https://admin:s3cret@spoke'], {}), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, /--argocd-destination-server: a URL with credentials/);
      assert.ok(!error.message.includes('s3cret') && !error.message.includes('admin'), error.message);
      return true;
    });
  });

  it('checks namespace lists', () => {
    rejects(['--namespaces', 'Web'], {}, '--namespaces', '"Web" is not a namespace name', 'DNS-1123');
    rejects(['--namespaces', ','], {}, '--namespaces', 'no namespace named');
    rejects([], { DRIFTLESS_IGNORE_NAMESPACES: `ok,${'n'.repeat(64)}` }, 'DRIFTLESS_IGNORE_NAMESPACES', 'is not a namespace name');
  });

  it('refuses a namespace both watched and ignored, naming both sources', () => {
    rejects(['--namespaces', 'a,b,c'], { DRIFTLESS_IGNORE_NAMESPACES: 'c,b' }, '"b", "c" are in both --namespaces (from flag --namespaces) and --ignore-namespaces (from DRIFTLESS_IGNORE_NAMESPACES)');
    // Disjoint lists are fine: an ignore list shared across installs may name namespaces not watched here.
    assert.deepEqual(parse(['--namespaces', 'a', '--ignore-namespaces', 'kube-system']).ignoreNamespaces, ['kube-system']);
  });

  it('maps every usage error to the usage exit code', () => {
    assert.throws(
      () => parseControllerConfig(['--workers', 'x'], {}),
      (error: unknown) => exitCodeFor(error) === 2,
    );
  });

  it('never quotes more than a bounded prefix of a value', () => {
    assert.throws(
      () => parseControllerConfig(['--argocd-tracking-label', `${'x'.repeat(500)}!`], {}),
      (error: unknown) => error instanceof UsageError && !error.message.includes('x'.repeat(121)),
    );
  });
});

describe('parseControllerConfig: help', () => {
  it('returns the help command for --help and -h, ignoring values and the environment', () => {
    assert.deepEqual(parseControllerConfig(['--help'], {}), { command: 'help' });
    assert.deepEqual(parseControllerConfig(['-h'], {}), { command: 'help' });
    assert.deepEqual(parseControllerConfig(['--workers', '0', '--help'], { DRIFTLESS_MODE: 'bogus' }), { command: 'help' });
    assert.ok(Object.isFrozen(parseControllerConfig(['-h'], {})));
  });

  it('still rejects a malformed command line with --help', () => {
    rejects(['--help', '--bogus'], {}, 'unknown flag --bogus');
  });
});

describe('parseControllerConfig: write-back flags', () => {
  it('reads the write-back flags and refuses bad values naming the flag', () => {
    const config = parse([
      '--write-back-message=roll {workloads}\\n\\n{configs}',
      '--write-back-applications=web,argocd/api,web',
      '--write-back-credentials-secret=git-write',
      '--write-back-batch-window=0',
    ]);
    assert.equal(config.writeBackMessage, 'roll {workloads}\n\n{configs}');
    assert.deepEqual(config.writeBackApplications, ['argocd/api', 'web']);
    assert.equal(config.writeBackCredentialsSecret, 'git-write');
    assert.equal(config.writeBackBatchWindow.ms, 0);
    assert.throws(() => parse(['--write-back-credentials-secret=Bad_Name']), /--write-back-credentials-secret/);
    assert.throws(() => parse(['--write-back-applications=a/b/c']), /--write-back-applications/);
    assert.throws(() => parse(['--write-back-push-attempts=0']), /--write-back-push-attempts/);
    assert.throws(() => parse(['--write-back-author-email=a <b>']), /--write-back-author-email/);
    assert.equal(parse(['--write-back-fallback=none']).writeBackFallback, 'none');
    assert.equal(parse(['--write-back-fallback-after=90s']).writeBackFallbackAfter.ms, 90_000);
    assert.throws(() => parse(['--write-back-fallback=evict']), /--write-back-fallback/);
    assert.throws(() => parse(['--write-back-fallback-after=0']), /--write-back-fallback-after/);
  });
});

describe('controllerUsageText', () => {
  const text = controllerUsageText();

  it('lists every flag with its environment variables, its default and its values', () => {
    for (const spec of CONTROLLER_FLAGS) {
      const at = text.indexOf(`  ${spec.flag} `);
      assert.ok(at !== -1, `${spec.flag} missing from help`);
      const block = text.slice(at, text.indexOf('\n  --', at + 1) === -1 ? undefined : text.indexOf('\n  --', at + 1));
      assert.ok(block.includes(`env: ${spec.env.join(', ')}`), `${spec.flag}: env ${spec.env.join(', ')} missing`);
      const shownDefault = spec.default === '' ? spec.defaultText : spec.default;
      assert.ok(shownDefault !== undefined && shownDefault !== '', `${spec.flag}: the table gives no default to show`);
      assert.ok(block.includes(`(default: ${shownDefault})`), `${spec.flag}: default ${shownDefault} missing`);
      assert.ok(block.includes(spec.description), `${spec.flag}: description missing`);
      for (const value of spec.values ?? []) assert.ok(block.includes(value), `${spec.flag}: value ${value} missing`);
    }
  });

  it('shows for each default exactly what the parser uses', () => {
    const config = parse([]);
    for (const spec of CONTROLLER_FLAGS) {
      if (spec.default === '') continue;
      const value = config[fieldOf(spec.name)];
      const shown = typeof value === 'object' && value !== null && 'text' in value ? value.text : typeof value === 'string' ? value : Array.isArray(value) ? value.join(',') : JSON.stringify(value);
      assert.equal(shown, spec.default, spec.name);
    }
  });

  it('is deterministic and ends with a newline', () => {
    assert.equal(controllerUsageText(), text);
    assert.ok(text.endsWith('\n'));
  });
});
