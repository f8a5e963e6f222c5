import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../../cli/errors.ts';
import { parseLiveExplainArgs } from '../../../controller/explain/args.ts';

function parse(argv: readonly string[], env: Record<string, string> = {}) {
  const result = parseLiveExplainArgs(['--live', ...argv], env);
  assert.equal(result.command, 'explain');
  return result;
}

function refuses(argv: readonly string[], fragment: string): void {
  assert.throws(
    () => parseLiveExplainArgs(['--live', ...argv], {}),
    (error: unknown) => error instanceof UsageError && error.message.includes(fragment),
    fragment,
  );
}

describe('parseLiveExplainArgs (through the shared cli reader)', () => {
  it('reads -n/--namespace, -o/--output, a KIND/NAME and the controller flags it uses', () => {
    const options = parse(['-n', 'web', 'deploy/api', '-o=json', '--mode', 'all', '--hash-key-file=/k']);
    assert.equal(options.namespace, 'web');
    assert.deepEqual(options.target, { type: 'workload', kind: 'Deployment', name: 'api' });
    assert.equal(options.output, 'json');
    assert.equal(options.controller.mode, 'all');
    assert.equal(options.controller.hashKeyFile, '/k');
    assert.equal(options.controller.provenance['mode'], 'flag --mode');
    const defaults = parse([]);
    assert.equal(defaults.namespace, undefined);
    assert.equal(defaults.output, 'table');
    assert.deepEqual(defaults.target, { type: 'namespace' });
    assert.equal(parse(['--namespace=prod', '--output', 'table', 'secret/db']).target.type, 'config');
  });

  it('answers --help and -h, and refuses what it cannot use, naming it', () => {
    assert.deepEqual(parseLiveExplainArgs(['--live', '-h'], {}), { command: 'help' });
    assert.deepEqual(parseLiveExplainArgs(['--help', '--live'], {}), { command: 'help' });
    refuses(['--workers=2'], 'unknown flag --workers (see driftless explain --live --help)');
    refuses(['-x'], 'unknown flag -x');
    refuses(['-n', '-o', 'json'], '--namespace needs a value');
    refuses(['-n', 'Bad_NS'], 'is not a namespace name');
    refuses(['-o', 'yaml'], 'table or json');
    refuses(['deploy/a', 'deploy/b'], 'one KIND/NAME at most');
    refuses(['pod/a'], 'is not KIND/NAME');
    refuses(['--mode=all', '--mode=annotated'], '--mode given twice');
    refuses(['--mode=sometimes'], '--mode');
  });

  it('takes the spoke option\'s flags, validated as the controller validates them', () => {
    const options = parse(['--argocd-kubeconfig=/hub.kubeconfig', '--argocd-destination-server=https://10.0.0.1:6443/']);
    assert.equal(options.controller.argocdKubeconfig, '/hub.kubeconfig');
    assert.equal(options.controller.argocdDestinationServer, 'https://10.0.0.1:6443');
    assert.equal(parse(['--argocd-kubeconfig=/hub.kubeconfig', '--argocd-destination-name=prod']).controller.argocdDestinationName, 'prod');
    assert.throws(() => parseLiveExplainArgs(['--live', '--argocd-kubeconfig=/hub.kubeconfig'], {}), /argocd-destination/);
    assert.throws(() => parseLiveExplainArgs(['--live', '--argocd-destination-name=prod'], {}), /--argocd-kubeconfig/);
  });
});
