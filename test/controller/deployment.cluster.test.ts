/**
 * The controller against the real test cluster: an out-of-band Secret change
 * restarts a Deployment by paced evictions, without a new ReplicaSet, a
 * template change or a generation bump; in-band and metadata-only changes do
 * nothing; a ConfigMap and a Secret changed together give one restart.
 */
import assert from 'node:assert/strict';
import { create, useCluster, waitForDeploymentRollout } from '../cluster/testing.ts';
import { waitFor } from '../support/wait.ts';
import { startControllerProcess } from './support/process.ts';
import { COLLECTIONS, SECRET_VALUE, configMap, createExternalSecret, eventsFor, read, replicaSetNames, rotateSecret, secret, uids, waitForEvent, waitForReadyPods, workload } from './support/fixtures.ts';

const fixture = useCluster();

fixture.test('an out-of-band Secret change replaces a Deployment\'s pods by eviction, and nothing Git renders changes', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  await createExternalSecret(api, namespace, 'db', 'v1');
  await create(api, COLLECTIONS.Deployment(namespace), workload('Deployment', 'app', { replicas: 3, uses: { secret: 'db' } }));
  await waitForDeploymentRollout(api, namespace, 'app');
  const before = await read(api, `${COLLECTIONS.Deployment(namespace)}/app`);
  const podsBefore = await waitForReadyPods(api, namespace, 'app', 3);
  const replicaSets = await replicaSetNames(api, namespace);
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`] });
  try {
    await controller.ready();
    // First sight records the digest and restarts nothing.
    const recorded = await waitFor('the first-sight record', async () => {
      const d = await read(api, `${COLLECTIONS.Deployment(namespace)}/app`);
      return d.metadata?.annotations?.['driftless.dev/restarted-for'];
    });
    assert.match(recorded, /^\{"Secret\/db":"v1:[0-9a-f]{64}"\}$/);
    assert.deepEqual(uids(await waitForReadyPods(api, namespace, 'app', 3)), uids(podsBefore));

    await rotateSecret(api, namespace, 'db', SECRET_VALUE);
    const after = await waitFor('every pod replaced', async () => {
      const pods = await waitForReadyPods(api, namespace, 'app', 3);
      return uids(pods).every((uid) => !uids(podsBefore).includes(uid)) ? pods : undefined;
    }, { timeoutMs: 90_000 });
    assert.equal(after.length, 3);
    await waitForEvent(api, namespace, 'app', 'RestartFinished');

    const live = await read(api, `${COLLECTIONS.Deployment(namespace)}/app`);
    assert.deepEqual(live.spec?.['template'], before.spec?.['template'], 'the pod template is untouched');
    // The Deployment registry bumps generation on any annotation change (a leftover of the removed
    // rollback annotation), so each of the controller's two metadata writes (first sight, restart) adds one;
    // nothing else may: no spec change.
    assert.equal(live.metadata?.['generation'], (before.metadata?.['generation'] as number) + 2, 'only the two bookkeeping writes');
    assert.deepEqual(await replicaSetNames(api, namespace), replicaSets, 'no new ReplicaSet');
    const started = (await eventsFor(api, namespace, 'app')).find((event) => event['reason'] === 'RestartStarted');
    assert.ok(started, 'a RestartStarted Event');
    assert.equal(started['type'], 'Normal');
    assert.match(String(started['message']), /Secret db changed/);
    const annotations = live.metadata?.['annotations'] as Record<string, string>;
    assert.notEqual(annotations['driftless.dev/restarted-for'], recorded, 'the new digest is recorded');
    assert.match(annotations['driftless.dev/restart-at'] ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const evictions = controller.lines.filter((line) => line.msg === 'evicted').length;
    assert.equal(evictions, 3, 'each old pod evicted exactly once');
  } finally {
    await controller.stop();
  }
  const all = JSON.stringify(controller.lines) + controller.stderr() + JSON.stringify(await eventsFor(api, namespace, 'app'));
  assert.ok(!all.includes(SECRET_VALUE) && !all.includes(Buffer.from(SECRET_VALUE).toString('base64')), 'no Secret value in logs or Events');
}, { timeout: 180_000 });

fixture.test('an in-band config change and a metadata-only change make no write; a ConfigMap and a Secret changed together give one restart', async ({ cluster, namespace }) => {
  const api = cluster.admin;
  const app = 'guestbook';
  const tracked = (kind: string, name: string, group = '') => ({ 'argocd.argoproj.io/tracking-id': `${app}:${group}/${kind}:${namespace}/${name}` });
  // In-band: the plugin stamped the template, and the ConfigMap is tracked by the same Application.
  await create(api, COLLECTIONS.ConfigMap(namespace), configMap('rendered', { a: '1' }, tracked('ConfigMap', 'rendered')));
  await create(api, COLLECTIONS.Deployment(namespace), workload('Deployment', 'inband', {
    uses: { configMap: 'rendered' },
    annotations: { 'reloader.stakater.com/auto': 'true', ...tracked('Deployment', 'inband', 'apps') },
    templateAnnotations: { 'driftless.dev/config-hash': 'v1:0000000000000000000000000000000000000000000000000000000000000000' },
  }));
  // Out-of-band: both configs of this one are untracked.
  await create(api, COLLECTIONS.ConfigMap(namespace), configMap('settings', { a: '1' }));
  await create(api, COLLECTIONS.Secret(namespace), secret('token', 'one'));
  const both = workload('Deployment', 'both', { uses: { configMap: 'settings', secret: 'token' } });
  await create(api, COLLECTIONS.Deployment(namespace), both);
  await waitForDeploymentRollout(api, namespace, 'inband');
  await waitForDeploymentRollout(api, namespace, 'both');
  const controller = await startControllerProcess(cluster, { args: [`--namespaces=${namespace}`, '--debounce=2s'] });
  try {
    await controller.ready();
    // Every selected config is in-band: nothing to keep track of, so nothing is written at all.
    const inband = await read(api, `${COLLECTIONS.Deployment(namespace)}/inband`);
    assert.equal(inband.metadata?.annotations?.['driftless.dev/restarted-for'], undefined, 'no bookkeeping on a workload with only in-band configs');
    const inbandPods = await waitForReadyPods(api, namespace, 'inband', 2);
    const bothPods = await waitForReadyPods(api, namespace, 'both', 2);
    const bothRecorded = await waitFor('both recorded', async () => {
      const d = await read(api, `${COLLECTIONS.Deployment(namespace)}/both`);
      return d.metadata?.annotations?.['driftless.dev/restarted-for'];
    });

    // Metadata-only (cert-manager and ESO touch annotations often): no restart.
    await api.request('PATCH', `${COLLECTIONS.Secret(namespace)}/token`, { metadata: { annotations: { touched: 'yes' } } }, { contentType: 'application/merge-patch+json' });
    await api.request('PATCH', `${COLLECTIONS.ConfigMap(namespace)}/rendered`, { data: { a: '2' } }, { contentType: 'application/merge-patch+json' });
    // Changed together, within the debounce: one restart.
    const mark = controller.lines.length;
    await api.request('PATCH', `${COLLECTIONS.ConfigMap(namespace)}/settings`, { data: { a: '2' } }, { contentType: 'application/merge-patch+json' });
    await rotateSecret(api, namespace, 'token', 'two');
    await waitForEvent(api, namespace, 'both', 'RestartFinished', 90_000);
    const started = (await eventsFor(api, namespace, 'both')).filter((event) => event['reason'] === 'RestartStarted');
    assert.equal(started.length, 1, 'one restart for both changes');
    assert.match(String(started[0]?.['message']), /ConfigMap settings, Secret token changed/);
    assert.equal(controller.lines.slice(mark).filter((line) => line.msg === 'evicted' && line['workload'] === `Deployment/${namespace}/both`).length, 2);
    const bothAfter = await read(api, `${COLLECTIONS.Deployment(namespace)}/both`);
    assert.notEqual(bothAfter.metadata?.annotations?.['driftless.dev/restarted-for'], bothRecorded);
    assert.ok(uids(await waitForReadyPods(api, namespace, 'both', 2)).every((uid) => !uids(bothPods).includes(uid)));

    // The in-band workload: the controller never wrote to it again and evicted nothing.
    const inbandAfter = await read(api, `${COLLECTIONS.Deployment(namespace)}/inband`);
    assert.deepEqual(inbandAfter.metadata?.['annotations'], inband.metadata?.['annotations'], 'no write to the in-band workload');
    const inbandWrites = controller.lines.filter((line) => line.msg === 'applied own fields' && line['workload'] === `Deployment/${namespace}/inband`);
    assert.equal(inbandWrites.length, 0, 'never a write');
    assert.deepEqual(uids(await waitForReadyPods(api, namespace, 'inband', 2)), uids(inbandPods));
    assert.equal(controller.lines.filter((line) => line['workload'] === `Deployment/${namespace}/inband` && line.msg === 'evicted').length, 0);
  } finally {
    await controller.stop();
  }
}, { timeout: 180_000 });
