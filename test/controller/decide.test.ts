import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManifestError, type ConfigKind } from '../../core/index.ts';
import { ABSENT } from '../../controller/bookkeeping.ts';
import { compareDigests, outOfBandDigests, resolveStrategy, selectConfigs, type ConfigLookup } from '../../controller/decide.ts';
import type { ConfigSummary } from '../../controller/model.ts';
import { config, workload } from './support/summaries.ts';

function lookupOf(...configs: ConfigSummary[]): ConfigLookup {
  return {
    get: (kind: ConfigKind, name: string) => configs.find((c) => c.kind === kind && c.name === name),
    names: (kind: ConfigKind) => configs.filter((c) => c.kind === kind).map((c) => c.name),
  };
}

const never = (): number => {
  throw new Error('seenAt must not be read');
};

// ---- compareDigests ---------------------------------------------------------

test('compareDigests: nothing recorded yet is a first sight, recorded without a restart', () => {
  assert.deepEqual(compareDigests(undefined, { 'Secret/db': 'v1:a' }, never, 0, 0), { action: 'write-digests', why: 'first-sight' });
});

test('compareDigests: equal digests call for nothing', () => {
  assert.deepEqual(compareDigests({ 'Secret/db': 'v1:a', 'ConfigMap/app': 'v1:b' }, { 'ConfigMap/app': 'v1:b', 'Secret/db': 'v1:a' }, never, 0, 0), { action: 'none' });
});

test('compareDigests: a content change restarts at the latest first sight, rounded up, with the changed keys sorted', () => {
  const seen: Record<string, number> = { 'Secret/db': 1_000_200, 'ConfigMap/app': 1_000_500 };
  const verdict = compareDigests(
    { 'Secret/db': 'v1:a', 'ConfigMap/app': 'v1:b', 'Secret/same': 'v1:s' },
    { 'Secret/db': 'v1:a2', 'ConfigMap/app': 'v1:b2', 'Secret/same': 'v1:s' },
    (key) => seen[key] as number,
    2_000_000,
    10_000,
  );
  assert.deepEqual(verdict, { action: 'restart', restartAt: 1_001_000, changed: ['ConfigMap/app', 'Secret/db'] });
});

test('compareDigests: within the debounce window it waits for the remaining time', () => {
  const verdict = compareDigests({ 'Secret/db': 'v1:a' }, { 'Secret/db': 'v1:b' }, () => 50_000, 53_000, 10_000);
  assert.deepEqual(verdict, { action: 'debounce', afterMs: 7_000, changed: ['Secret/db'] });
  // Exactly at the end of the window: restart.
  assert.deepEqual(compareDigests({ 'Secret/db': 'v1:a' }, { 'Secret/db': 'v1:b' }, () => 50_000, 60_000, 10_000), { action: 'restart', restartAt: 50_000, changed: ['Secret/db'] });
});

test('compareDigests: a config joining or leaving the set is recorded, not restarted for', () => {
  assert.deepEqual(compareDigests({ 'Secret/db': 'v1:a' }, { 'Secret/db': 'v1:a', 'ConfigMap/new': 'v1:n' }, never, 0, 0), { action: 'write-digests', why: 'set-changed' });
  assert.deepEqual(compareDigests({ 'Secret/db': 'v1:a', 'ConfigMap/old': 'v1:o' }, { 'Secret/db': 'v1:a' }, never, 0, 0), { action: 'write-digests', why: 'set-changed' });
});

test('compareDigests: a config becoming absent restarts nothing; absent to present is a change', () => {
  assert.deepEqual(compareDigests({ 'Secret/db': 'v1:a' }, { 'Secret/db': ABSENT }, never, 0, 0), { action: 'write-digests', why: 'set-changed' });
  assert.deepEqual(compareDigests({ 'Secret/db': ABSENT }, { 'Secret/db': 'v1:a' }, () => 4_000, 10_000, 0), { action: 'restart', restartAt: 4_000, changed: ['Secret/db'] });
});

// ---- selectConfigs and the in-band rule -------------------------------------

const trackedBy = (app: string) => ({ tracking: { app, namesItself: true } });

test('selectConfigs: in-band only when stamped, tracked by the same Application naming itself, and not produced', () => {
  const shop = workload('Deployment', 'web', { secrets: ['db'], stamped: true, app: 'shop' });
  const selection = selectConfigs(shop, shop, lookupOf(config('Secret', 'db', trackedBy('shop'))), 'all');
  assert.equal(selection.configs.length, 1);
  const [db] = selection.configs;
  assert.equal(db?.band, 'in-band');
  assert.match(db?.why ?? '', /Application shop/);
  assert.equal(db?.decision.rule, 'auto-all');
  assert.deepEqual(outOfBandDigests(selection), {});
});

test('selectConfigs: each failing in-band condition makes the config out-of-band, saying why', () => {
  const stamped = workload('Deployment', 'web', { secrets: ['db'], stamped: true, app: 'shop' });
  const cases: { name: string; workload: typeof stamped; config: ConfigSummary | undefined; why: RegExp }[] = [
    { name: 'not stamped', workload: workload('Deployment', 'web', { secrets: ['db'], app: 'shop' }), config: config('Secret', 'db', trackedBy('shop')), why: /no driftless\.dev\/config-hash/ },
    { name: 'untracked', workload: stamped, config: config('Secret', 'db'), why: /not tracked by Argo CD/ },
    { name: 'tracking names another object', workload: stamped, config: config('Secret', 'db', { tracking: { app: 'shop', namesItself: false } }), why: /not tracked by Argo CD/ },
    { name: 'another Application', workload: stamped, config: config('Secret', 'db', trackedBy('billing')), why: /Application billing, not by this workload's/ },
    { name: 'workload untracked', workload: workload('Deployment', 'web', { secrets: ['db'], stamped: true }), config: config('Secret', 'db', trackedBy('shop')), why: /Application shop, not by this workload's/ },
    { name: 'produced', workload: stamped, config: config('Secret', 'db', { ...trackedBy('shop'), producer: { kind: 'ExternalSecret', name: 'db' } }), why: /written by ExternalSecret db/ },
    { name: 'missing', workload: stamped, config: undefined, why: /does not exist/ },
  ];
  for (const c of cases) {
    const selection = selectConfigs(c.workload, c.workload, c.config === undefined ? lookupOf() : lookupOf(c.config), 'all');
    const [db] = selection.configs;
    assert.equal(db?.band, 'out-of-band', c.name);
    assert.match(db?.why ?? '', c.why, c.name);
    assert.deepEqual(outOfBandDigests(selection), { 'Secret/db': c.config?.digest ?? ABSENT }, c.name);
  }
});

test('selectConfigs: a SecretProviderClass is always out-of-band', () => {
  const w = workload('Deployment', 'web', { stamped: true, app: 'shop', annotations: { 'secretproviderclass.reloader.stakater.com/reload': 'vault' } });
  const [vault] = selectConfigs(w, w, lookupOf(config('SecretProviderClass', 'vault', trackedBy('shop'))), 'annotated').configs;
  assert.equal(vault?.band, 'out-of-band');
  assert.match(vault?.why ?? '', /CSI/);
});

test('selectConfigs: named patterns select configs the template does not reference, sorted by kind and name', () => {
  const w = workload('Deployment', 'web', { secrets: ['db'], annotations: { 'secret.reloader.stakater.com/reload': 'tls-.*,db', 'configmap.reloader.stakater.com/reload': 'flags' } });
  const selection = selectConfigs(w, w, lookupOf(config('Secret', 'tls-b'), config('Secret', 'tls-a'), config('Secret', 'other'), config('ConfigMap', 'flags'), config('Secret', 'db')), 'annotated');
  assert.deepEqual(selection.configs.map((c) => `${c.kind}/${c.name}:${c.decision.rule}`), ['ConfigMap/flags:named', 'Secret/db:named', 'Secret/tls-a:named', 'Secret/tls-b:named']);
  assert.deepEqual(selection.skipped, [], 'unmatched, unreferenced configs are not even candidates');
});

test('selectConfigs: ignored and excluded configs are skipped with their rule', () => {
  const w = workload('Deployment', 'web', { secrets: ['db', 'ignored', 'excluded'], annotations: { 'secrets.exclude.reloader.stakater.com/reload': 'excluded' } });
  const selection = selectConfigs(w, w, lookupOf(config('Secret', 'db'), config('Secret', 'ignored', { annotations: { 'reloader.stakater.com/ignore': 'true' } }), config('Secret', 'excluded')), 'all');
  assert.deepEqual(selection.configs.map((c) => c.name), ['db']);
  assert.deepEqual(selection.skipped.map((s) => `${s.name}:${s.decision.rule}`), ['excluded:exclude', 'ignored:ignore']);
});

test('selectConfigs: in mode annotated an unannotated workload selects nothing', () => {
  const w = workload('Deployment', 'web', { secrets: ['db'] });
  const selection = selectConfigs(w, w, lookupOf(config('Secret', 'db')), 'annotated');
  assert.deepEqual(selection.configs, []);
  assert.deepEqual(selection.skipped.map((s) => s.decision.rule), ['not-annotated']);
});

test('selectConfigs: the template source supplies references and policy (a Rollout borrowing a Deployment)', () => {
  const rollout = workload('Rollout', 'web', { spec: { template: undefined, workloadRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-template' } } });
  const source = workload('Deployment', 'web-template', { secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true' } });
  assert.deepEqual(selectConfigs(rollout, source, lookupOf(config('Secret', 'db')), 'annotated').configs.map((c) => c.name), ['db']);
});

test("selectConfigs: a Rollout's own Reloader policy annotations win over the borrowed Deployment's; its rollout-strategy alone does not", () => {
  const source = workload('Deployment', 'web-template', { secrets: ['db'] });
  const ref = { template: undefined, workloadRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web-template' } };
  const annotated = workload('Rollout', 'web', { spec: ref, annotations: { 'reloader.stakater.com/auto': 'true' } });
  assert.deepEqual(selectConfigs(annotated, source, lookupOf(config('Secret', 'db')), 'annotated').configs.map((c) => c.name), ['db']);
  const strategyOnly = workload('Rollout', 'web', { spec: ref, annotations: { 'reloader.stakater.com/rollout-strategy': 'restart' } });
  const sourceAnnotated = workload('Deployment', 'web-template', { secrets: ['db'], annotations: { 'reloader.stakater.com/auto': 'true' } });
  assert.deepEqual(selectConfigs(strategyOnly, sourceAnnotated, lookupOf(config('Secret', 'db')), 'annotated').configs.map((c) => c.name), ['db']);
  assert.deepEqual(selectConfigs(strategyOnly, source, lookupOf(config('Secret', 'db')), 'annotated').configs, []);
});

test('selectConfigs: a bad regex in a named annotation throws ManifestError', () => {
  const w = workload('Deployment', 'web', { annotations: { 'secret.reloader.stakater.com/reload': 'db-(' } });
  assert.throws(() => selectConfigs(w, w, lookupOf(config('Secret', 'db-1')), 'annotated'), ManifestError);
});

// ---- resolveStrategy ----------------------------------------------------------

test('resolveStrategy: the default per kind, and driftless.dev/restart-strategy overrides it', () => {
  assert.deepEqual(resolveStrategy(workload('Deployment', 'web'), 'evict'), { strategy: 'evict' });
  assert.deepEqual(resolveStrategy(workload('Rollout', 'web'), 'evict'), { strategy: 'restart-at' });
  assert.deepEqual(resolveStrategy(workload('StatefulSet', 'db'), 'rollout'), { strategy: 'template' });
  assert.deepEqual(resolveStrategy(workload('Deployment', 'web'), 'none'), { strategy: 'record-only' });
  assert.deepEqual(resolveStrategy(workload('Deployment', 'web', { annotations: { 'driftless.dev/restart-strategy': 'rollout' } }), 'evict'), { strategy: 'template' });
  assert.deepEqual(resolveStrategy(workload('Deployment', 'web', { annotations: { 'driftless.dev/restart-strategy': 'none' } }), 'evict'), { strategy: 'record-only' });
  assert.deepEqual(resolveStrategy(workload('Rollout', 'web', { annotations: { 'driftless.dev/restart-strategy': 'evict' } }), 'rollout'), { strategy: 'restart-at' });
});

test("resolveStrategy: Reloader's rollout-strategy on a Rollout (restart → restart-at, rollout → template), ignored elsewhere", () => {
  const key = 'reloader.stakater.com/rollout-strategy';
  assert.deepEqual(resolveStrategy(workload('Rollout', 'web', { annotations: { [key]: 'restart' } }), 'rollout'), { strategy: 'restart-at' });
  assert.deepEqual(resolveStrategy(workload('Rollout', 'web', { annotations: { [key]: 'rollout' } }), 'evict'), { strategy: 'template' });
  assert.deepEqual(resolveStrategy(workload('Deployment', 'web', { annotations: { [key]: 'rollout' } }), 'evict'), { strategy: 'evict' });
  // The controller's own annotation wins over Reloader's.
  assert.deepEqual(resolveStrategy(workload('Rollout', 'web', { annotations: { [key]: 'rollout', 'driftless.dev/restart-strategy': 'evict' } }), 'evict'), { strategy: 'restart-at' });
});

test('resolveStrategy: a CronJob is only ever recorded', () => {
  assert.deepEqual(resolveStrategy(workload('CronJob', 'nightly', { annotations: { 'driftless.dev/restart-strategy': 'evict' } }), 'evict'), { strategy: 'record-only' });
});

test('resolveStrategy: an invalid value is a problem and the fallback is used', () => {
  const resolved = resolveStrategy(workload('Deployment', 'web', { annotations: { 'driftless.dev/restart-strategy': 'bounce' } }), 'rollout');
  assert.equal(resolved.strategy, 'template');
  assert.match(resolved.problem ?? '', /"bounce" is not evict, rollout, none or git; using rollout/);
});
