import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findReferences } from '../../core/index.ts';

/** A compact view of a reference: `kind/name field path [containers] optional?`. */
function brief(podSpec: unknown): string[] {
  return findReferences(podSpec).map((r) => `${r.kind}/${r.name} ${r.field} ${r.path} [${r.containers.join(',')}]${r.optional ? ' optional' : ''}`);
}

describe('findReferences', () => {
  const cases: { name: string; podSpec: unknown; expected: string[] }[] = [
    { name: 'nothing in an absent pod spec', podSpec: undefined, expected: [] },
    { name: 'nothing in a pod spec that is not a mapping', podSpec: 'spec', expected: [] },
    {
      name: 'env configMapKeyRef and secretKeyRef, with optional',
      podSpec: { containers: [{ name: 'app', env: [
        { name: 'A', value: 'plain' },
        { name: 'B', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'b' } } },
        { name: 'C', valueFrom: { secretKeyRef: { name: 'sec', key: 'c', optional: true } } },
        { name: 'D', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ] }] },
      expected: [
        'ConfigMap/cfg env.configMapKeyRef containers[app].env[B] [app]',
        'Secret/sec env.secretKeyRef containers[app].env[C] [app] optional',
      ],
    },
    {
      name: 'envFrom configMapRef and secretRef',
      podSpec: { containers: [{ name: 'app', envFrom: [
        { configMapRef: { name: 'cfg' } },
        { prefix: 'X_', secretRef: { name: 'sec', optional: false } },
      ] }] },
      expected: [
        'ConfigMap/cfg envFrom.configMapRef containers[app].envFrom[0] [app]',
        'Secret/sec envFrom.secretRef containers[app].envFrom[1] [app]',
      ],
    },
    {
      name: 'containers, then initContainers, then ephemeralContainers; env before envFrom',
      podSpec: {
        ephemeralContainers: [{ name: 'debug', envFrom: [{ configMapRef: { name: 'e' } }] }],
        initContainers: [{ name: 'migrate', envFrom: [{ secretRef: { name: 'i' } }] }],
        containers: [{ name: 'app', envFrom: [{ configMapRef: { name: 'c2' } }], env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'c1', key: 'x' } } }] }],
      },
      expected: [
        'ConfigMap/c1 env.configMapKeyRef containers[app].env[X] [app]',
        'ConfigMap/c2 envFrom.configMapRef containers[app].envFrom[0] [app]',
        'Secret/i envFrom.secretRef initContainers[migrate].envFrom[0] [migrate]',
        'ConfigMap/e envFrom.configMapRef ephemeralContainers[debug].envFrom[0] [debug]',
      ],
    },
    {
      name: 'configMap and secret volumes with every container that mounts them',
      podSpec: {
        containers: [
          { name: 'app', volumeMounts: [{ name: 'cfg', mountPath: '/a' }, { name: 'tls', mountPath: '/b' }] },
          { name: 'sidecar', volumeMounts: [{ name: 'cfg', mountPath: '/a' }] },
        ],
        initContainers: [{ name: 'init', volumeMounts: [{ name: 'tls', mountPath: '/b' }] }],
        volumes: [
          { name: 'cfg', configMap: { name: 'app-config', optional: true } },
          { name: 'tls', secret: { secretName: 'app-tls' } },
          { name: 'scratch', emptyDir: {} },
        ],
      },
      expected: [
        'ConfigMap/app-config volume.configMap volumes[cfg] [app,sidecar] optional',
        'Secret/app-tls volume.secret volumes[tls] [app,init]',
      ],
    },
    {
      name: 'a volume nobody mounts still counts, with no containers',
      podSpec: { containers: [{ name: 'app' }], volumes: [{ name: 'unused', secret: { secretName: 's' } }] },
      expected: ['Secret/s volume.secret volumes[unused] []'],
    },
    {
      name: 'projected sources in order, ignoring downwardAPI and serviceAccountToken',
      podSpec: {
        containers: [{ name: 'app', volumeMounts: [{ name: 'all', mountPath: '/p' }] }],
        volumes: [{ name: 'all', projected: { sources: [
          { serviceAccountToken: { path: 'token' } },
          { secret: { name: 's1', optional: true } },
          { downwardAPI: { items: [] } },
          { configMap: { name: 'c1' } },
        ] } }],
      },
      expected: [
        'Secret/s1 volume.projected.secret volumes[all].projected.sources[1] [app] optional',
        'ConfigMap/c1 volume.projected.configMap volumes[all].projected.sources[3] [app]',
      ],
    },
    {
      name: "a CSI volume's secretProviderClass",
      podSpec: {
        containers: [{ name: 'app', volumeMounts: [{ name: 'vault', mountPath: '/mnt' }] }],
        volumes: [
          { name: 'vault', csi: { driver: 'secrets-store.csi.k8s.io', readOnly: true, volumeAttributes: { secretProviderClass: 'vault-db' } } },
          { name: 'other', csi: { driver: 'ebs.csi.aws.com', volumeAttributes: { type: 'gp3' } } },
        ],
      },
      expected: ['SecretProviderClass/vault-db volume.csi.secretProviderClass volumes[vault] [app]'],
    },
    {
      name: 'not imagePullSecrets, not serviceAccountName',
      podSpec: { serviceAccountName: 'sa', imagePullSecrets: [{ name: 'regcred' }], containers: [{ name: 'app' }] },
      expected: [],
    },
    {
      name: 'references without a name, and malformed items, are skipped',
      podSpec: {
        containers: [null, 'x', { name: 'app', env: [{ name: 'A', valueFrom: { configMapKeyRef: { key: 'a' } } }, 7], envFrom: [{ secretRef: { name: '' } }, null] }],
        volumes: [{ name: 'v', secret: {} }, null, { name: 'w', configMap: { name: 42 } }],
      },
      expected: [],
    },
    {
      name: 'repeated uses are all reported',
      podSpec: {
        containers: [{ name: 'a', envFrom: [{ configMapRef: { name: 'c' } }] }, { name: 'b', envFrom: [{ configMapRef: { name: 'c' } }] }],
      },
      expected: [
        'ConfigMap/c envFrom.configMapRef containers[a].envFrom[0] [a]',
        'ConfigMap/c envFrom.configMapRef containers[b].envFrom[0] [b]',
      ],
    },
    {
      name: 'an unnamed container is located by its index',
      podSpec: { containers: [{ env: [{ valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }] },
      expected: ['Secret/s env.secretKeyRef containers[0].env[0] [0]'],
    },
  ];
  for (const { name, podSpec, expected } of cases) {
    it(name, () => assert.deepEqual(brief(podSpec), expected));
  }

  it('returns frozen references', () => {
    const [reference] = findReferences({ containers: [{ name: 'a', envFrom: [{ configMapRef: { name: 'c' } }] }] });
    assert.ok(reference !== undefined && Object.isFrozen(reference) && Object.isFrozen(reference.containers));
  });
});
