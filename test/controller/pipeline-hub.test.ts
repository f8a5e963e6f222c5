/**
 * Which of a pipeline's reflectors read Argo CD's cluster and which count for /healthz
 * (controller/wiring/pipeline.ts): with the spoke option (`--argocd-kubeconfig`, ADR 0025) the hub's
 * Applications and AppProjects are left out of liveness — a restart of the controller mends no hub — while in
 * hub mode (ADR 0019) the hub is the controller's own cluster and every reflector counts, as without a hub.
 * Nothing is started: the pipeline is only built (its clients never connect).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import type { ControllerConfig } from '../../controller/config/model.ts';
import { parseControllerConfig } from '../../controller/config/parse.ts';
import { createKubeClient, type KubeClient } from '../../controller/kube/client.ts';
import { GaugeSources, clusterMetrics, createProcessMetrics } from '../../controller/wiring/metrics.ts';
import { createClusterPipeline, type PipelineDeps } from '../../controller/wiring/pipeline.ts';
import type { HubScope } from '../../controller/hub/destinations.ts';
import { FakeClock } from '../support/fake-clock.ts';

function configOf(argv: readonly string[]): ControllerConfig {
  const config = parseControllerConfig(argv, {});
  assert.ok(config.command !== 'help');
  return config;
}

/** A client of a server nobody listens on: the pipeline is built, never started. */
function client(server: string): KubeClient {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
  return createKubeClient(config, { take: () => Promise.resolve() });
}

function livenessOf(hub: HubScope | undefined): { all: string[]; live: string[] } {
  const clock = new FakeClock(1_000_000);
  const deps: PipelineDeps = {
    client: client('http://127.0.0.1:9'),
    fence: { signal: new AbortController().signal, check: () => undefined },
    writeTimeoutMs: 1000,
    events: { record: () => Promise.resolve() },
    writeBack: undefined,
    metrics: clusterMetrics(createProcessMetrics(new GaugeSources(clock)), undefined),
    clock,
    log: pino({ level: 'silent' }),
    hashKey: undefined,
    recordNamespace: 'driftless',
    ...(hub === undefined ? {} : { hub: { client: client('http://127.0.0.1:10'), scope: hub } }),
    writes: undefined,
  };
  const pipeline = createClusterPipeline(configOf(['--namespaces=apps', '--argocd-sync-windows']), deps);
  return { all: pipeline.reflectors.map((r) => r.spec.name), live: pipeline.liveness.map((r) => r.spec.name) };
}

test('the spoke option: the hub\'s Applications and AppProjects are watched but left out of liveness; the records are not the hub\'s', () => {
  const { all, live } = livenessOf({ id: undefined, server: 'https://spoke.example', name: '' });
  assert.ok(all.includes('applications in argocd') && all.includes('appprojects in argocd'));
  assert.deepEqual(all.filter((name) => !live.includes(name)), ['applications in argocd', 'appprojects in argocd']);
  assert.ok(live.includes('configmaps in driftless'), 'the records\' watch is this cluster\'s and counts');
});

test('hub mode and no hub: every reflector counts for liveness', () => {
  for (const hub of [{ id: 'c0ffee', server: 'https://spoke.example', name: 'spoke' }, undefined]) {
    const { all, live } = livenessOf(hub);
    assert.deepEqual(live, all, hub === undefined ? 'no hub' : 'hub mode');
    assert.ok(all.includes('applications in argocd'));
  }
});
