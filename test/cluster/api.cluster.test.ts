/**
 * The API server is real: CRDs from the pinned modules are served and enforce
 * their schemas, and RBAC denies a ServiceAccount what it was not granted.
 */
import assert from 'node:assert/strict';
import { ApiError } from './api.ts';
import { crdSources, kubernetesVersion } from './versions.ts';
import { create, podTemplate, useCluster } from './testing.ts';
import { waitFor } from '../support/wait.ts';

const fixture = useCluster();

fixture.test('the API server reports the pinned Kubernetes version', async ({ cluster }) => {
  const version = await cluster.admin.request<{ gitVersion: string }>('GET', '/version');
  assert.equal(version.gitVersion, kubernetesVersion);
});

fixture.test('every pinned CRD is installed and established', async ({ cluster }) => {
  for (const { crds } of crdSources) {
    for (const { name, onlyForRolloutsController } of crds) {
      if (onlyForRolloutsController) continue; // rollouts-controller.test.ts needs them, and starts that controller
      const crd = await cluster.admin.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
      const conditions = (crd.status?.['conditions'] ?? []) as { type: string; status: string }[];
      assert.ok(conditions.some((c) => c.type === 'Established' && c.status === 'True'), `${name} is Established`);
    }
  }
});

fixture.test('a Rollout is accepted, and one that breaks its schema is rejected', async ({ cluster, namespace }) => {
  const path = `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/rollouts`;
  const rollout = (name: string, replicas: unknown) => ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: podTemplate({ app: name }),
      strategy: { canary: { steps: [{ setWeight: 50 }, { pause: {} }] } },
    },
  });
  const created = await create(cluster.admin, path, rollout('good', 2));
  assert.equal(created.spec?.['replicas'], 2);

  const rejected = await cluster.admin.send('POST', path, rollout('bad', 'two'));
  assert.equal(rejected.status, 422, JSON.stringify(rejected.body));
  assert.match(JSON.stringify(rejected.body), /spec\.replicas/);
});

fixture.test('a ServiceAccount without rights is denied by RBAC until a Role grants them', async ({ cluster, namespace }) => {
  const { admin } = cluster;
  await create(admin, `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'reader' },
  });
  const reader = await cluster.clientFor(namespace, 'reader');
  try {
    const configMaps = `/api/v1/namespaces/${namespace}/configmaps`;
    const denied = await reader.send('GET', configMaps);
    assert.equal(denied.status, 403, JSON.stringify(denied.body));
    assert.match(JSON.stringify(denied.body), new RegExp(`system:serviceaccount:${namespace}:reader`));

    await create(admin, `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'read-configmaps' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
    });
    await create(admin, `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace }],
    });
    // The authorizer's informer sees the binding within moments.
    await waitFor('the RoleBinding to take effect', async () => (await reader.send('GET', configMaps)).status === 200);
    const secrets = await reader.send('GET', `/api/v1/namespaces/${namespace}/secrets`);
    assert.equal(secrets.status, 403, 'still no access to what the Role does not name');
    await assert.rejects(
      reader.request('DELETE', `${configMaps}/kube-root-ca.crt`),
      (error: unknown) => error instanceof ApiError && error.status === 403,
    );
  } finally {
    reader.close();
  }
});
