/**
 * The sync-window gate of an in-cluster restart, on explicit instants (the
 * fake clock is the argument), from AppProjects as the API server lists them
 * through the reducer: open without windows or without a project, held by an
 * active deny window until it ends, held outside allow windows until one
 * opens, held without an end by an invalid window; and the cache wakes the
 * workloads of a project's Applications only when its windows change.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { reduceApplication, reduceAppProject } from '../../../controller/cache/reduce.ts';
import { ClusterView } from '../../../controller/cache/cluster-view.ts';
import { windowGate, windowHold } from '../../../controller/windows/gate.ts';
import { workload } from '../support/summaries.ts';

const at = (iso: string): number => Date.parse(iso);

function rawProject(name: string, syncWindows: unknown, version = '1'): Record<string, unknown> {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name, namespace: 'argocd', resourceVersion: version },
    spec: { sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }], ...(syncWindows === undefined ? {} : { syncWindows }) },
  };
}

function rawApp(name: string, project: string | undefined, namespace = 'shop'): Record<string, unknown> {
  return {
    metadata: { name, namespace: 'argocd', resourceVersion: '1' },
    spec: { ...(project === undefined ? {} : { project }), destination: { server: 'https://kubernetes.default.svc', namespace } },
  };
}

const NIGHT_DENY = { kind: 'deny', schedule: '0 22 * * *', duration: '8h', namespaces: ['shop'], timeZone: 'Europe/Berlin' };

describe('windowGate', () => {
  const shop = reduceApplication(rawApp('shop-api', 'prod'), 'argocd');

  it('keeps of the sources and annotations only what the write-back reads', () => {
    const app = reduceApplication({
      metadata: { name: 'web', namespace: 'argocd', annotations: { 'driftless.dev/write-back-branch': 'main:driftless', 'kubectl.kubernetes.io/last-applied-configuration': '{}' } },
      spec: { sources: [{ repoURL: 'https://git.example/a.git', path: 'web', targetRevision: 'HEAD', plugin: { name: 'driftless-v1', env: [{ name: 'X', value: 'y' }] }, helm: { values: 'secret: x' } }] },
    }, 'argocd');
    assert.deepEqual(app.writeBackSource, {
      metadata: { name: 'web', namespace: 'argocd', annotations: { 'driftless.dev/write-back-branch': 'main:driftless' } },
      spec: { source: undefined, sources: [{ repoURL: 'https://git.example/a.git', path: 'web', targetRevision: 'HEAD', plugin: { name: 'driftless-v1' } }] },
    });
  });

  it('reads the project and the destination of the Application (an empty project is default)', () => {
    assert.equal(shop.project, 'prod');
    assert.deepEqual(shop.destination, { server: 'https://kubernetes.default.svc', name: '', namespace: 'shop' });
    assert.equal(reduceApplication(rawApp('x', undefined), 'argocd').project, 'default');
  });

  it('keeps only the sync windows of an AppProject', () => {
    const project = reduceAppProject(rawProject('prod', [NIGHT_DENY]));
    assert.deepEqual(Object.keys(project).sort(), ['name', 'namespace', 'problems', 'resourceVersion', 'windows']);
    assert.equal(project.windows.length, 1);
    assert.deepEqual(project.problems, []);
  });

  it('is open without an Application, without a watched project, without windows, or when no window matches', () => {
    const now = at('2026-12-02T23:00:00Z');
    const deny = reduceAppProject(rawProject('prod', [NIGHT_DENY]));
    assert.deepEqual(windowGate(undefined, deny, now), { open: true });
    assert.deepEqual(windowGate(shop, undefined, now), { open: true });
    assert.deepEqual(windowGate(shop, reduceAppProject(rawProject('prod', undefined)), now), { open: true });
    const elsewhere = reduceApplication(rawApp('blog', 'prod', 'blog'), 'argocd');
    assert.deepEqual(windowGate(elsewhere, deny, now), { open: true });
  });

  it('holds while a deny window is active, until it ends (the window’s zone, not UTC), and names it', () => {
    const deny = reduceAppProject(rawProject('prod', [NIGHT_DENY]));
    // 22:00 Berlin (UTC+1 in December) is 21:00 UTC; eight hours later 05:00 UTC. The ends are open.
    assert.deepEqual(windowGate(shop, deny, at('2026-12-02T20:59:00Z')), { open: true });
    assert.deepEqual(windowGate(shop, deny, at('2026-12-02T21:00:00Z')), { open: true }, 'at the firing itself it is not active yet');
    const held = windowGate(shop, deny, at('2026-12-02T23:30:00Z'));
    assert.equal(held.open, false);
    assert.ok(!held.open);
    assert.equal(held.reason, 'deny-window-active');
    assert.equal(held.heldUntil, at('2026-12-03T05:00:00Z'));
    assert.equal(held.window, 'deny window spec.syncWindows[0] (schedule "0 22 * * *", duration 8h, time zone Europe/Berlin) of AppProject prod is active');
    assert.deepEqual(windowGate(shop, deny, at('2026-12-03T05:00:00Z')), { open: true });
  });

  it('holds outside allow windows until the next one opens', () => {
    const allow = reduceAppProject(rawProject('prod', [{ kind: 'allow', schedule: '0 9 * * 1-5', duration: '2h', applications: ['shop-*'] }]));
    // Wednesday 2026-12-02 12:00 UTC: today's window (09:00–11:00 UTC) is over; the next opens Thursday 09:00, open interval.
    const held = windowGate(shop, allow, at('2026-12-02T12:00:00Z'));
    assert.ok(!held.open);
    assert.equal(held.reason, 'outside-allow-windows');
    assert.equal(held.heldUntil, at('2026-12-03T09:00:00Z') + 1);
    assert.match(held.window, /^outside the allow window spec\.syncWindows\[0\] \(schedule "0 9 \* \* 1-5", duration 2h\) of AppProject prod$/);
    assert.deepEqual(windowGate(shop, allow, at('2026-12-03T10:00:00Z')), { open: true });
  });

  it('holds without an end while a matching window is invalid, naming the problem', () => {
    const broken = reduceAppProject(rawProject('prod', [{ ...NIGHT_DENY, schedule: '0 25 * * *' }]));
    const held = windowGate(shop, broken, at('2026-12-02T12:00:00Z'));
    assert.ok(!held.open);
    assert.equal(held.reason, 'invalid-window');
    assert.equal(held.heldUntil, undefined);
    assert.match(held.window, /^AppProject prod has an invalid sync window \(.*spec\.syncWindows\[0\].*\); Argo CD does not sync it either$/);
  });
});

describe('ClusterView: AppProjects', () => {
  it('an AppProject change wakes the workloads of its Applications, only when the windows changed', () => {
    const view = new ClusterView();
    view.workloadChanged(undefined, workload('Deployment', 'web', { app: 'shop-api', secrets: ['db'] }));
    view.workloadChanged(undefined, workload('Deployment', 'other', { app: 'blog', secrets: ['db'] }));
    view.applicationChanged(undefined, reduceApplication(rawApp('shop-api', 'prod'), 'argocd'));
    view.applicationChanged(undefined, reduceApplication(rawApp('blog', 'default'), 'argocd'));
    const first = reduceAppProject(rawProject('prod', [NIGHT_DENY]));
    assert.deepEqual(view.projectChanged(undefined, first), ['Deployment/prod/web']);
    assert.equal(view.projectOf({ project: 'prod' }), first);
    assert.deepEqual(view.projectChanged(first, reduceAppProject(rawProject('prod', [NIGHT_DENY], '2'))), [], 'the same windows wake nothing');
    const second = reduceAppProject(rawProject('prod', [{ ...NIGHT_DENY, duration: '9h' }], '3'));
    assert.deepEqual(view.projectChanged(first, second), ['Deployment/prod/web']);
    assert.deepEqual(view.projectChanged(second, undefined), ['Deployment/prod/web']);
    assert.equal(view.projectOf({ project: 'prod' }), undefined);
  });

  it('moving an Application to another project wakes its workloads', () => {
    const view = new ClusterView();
    view.workloadChanged(undefined, workload('Deployment', 'web', { app: 'shop-api', secrets: ['db'] }));
    const before = reduceApplication(rawApp('shop-api', 'default'), 'argocd');
    view.applicationChanged(undefined, before);
    assert.deepEqual(view.applicationChanged(before, reduceApplication(rawApp('shop-api', 'prod'), 'argocd')), ['Deployment/prod/web']);
  });
});

describe('windowHold', () => {
  const shop = reduceApplication(rawApp('shop-api', 'prod'), 'argocd');
  const deny = reduceAppProject(rawProject('prod', [NIGHT_DENY]));

  it('holds a restart that has not acted yet, saying until when', () => {
    const hold = windowHold({ app: shop, project: deny, now: at('2026-12-02T23:30:00Z'), notActed: true });
    assert.deepEqual(hold, {
      reason: 'deny window spec.syncWindows[0] (schedule "0 22 * * *", duration 8h, time zone Europe/Berlin) of AppProject prod is active: the restart waits until 2026-12-03T05:00:00Z',
      until: at('2026-12-03T05:00:00Z'),
      project: 'prod',
    });
  });

  it('never stops a restart half-way, and lets everything through when the window is open', () => {
    assert.equal(windowHold({ app: shop, project: deny, now: at('2026-12-02T23:30:00Z'), notActed: false }), undefined);
    assert.equal(windowHold({ app: shop, project: deny, now: at('2026-12-02T12:00:00Z'), notActed: true }), undefined);
  });

  it('an invalid window holds with no end known', () => {
    const broken = reduceAppProject(rawProject('prod', [{ ...NIGHT_DENY, duration: 'forever' }]));
    const hold = windowHold({ app: shop, project: broken, now: at('2026-12-02T12:00:00Z'), notActed: true });
    assert.equal(hold?.until, undefined);
    assert.match(hold?.reason ?? '', /: the restart waits with no open window known ahead$/);
  });
});
