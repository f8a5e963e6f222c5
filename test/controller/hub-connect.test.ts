/**
 * What `kubeConfigFor` puts in the KubeConfig for each kind of Argo CD
 * cluster (the connections themselves are tested against the real API server
 * in hub-connect.cluster.test.ts): the in-cluster address with our own
 * service account, and the exec provider routed to our runner, not client-node's.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { readClusterSecret, type ArgoCluster } from '../../controller/hub/cluster-secret.ts';
import { clusterLabel, kubeConfigFor } from '../../controller/hub/connect.ts';
import { KubeConfigError } from '../../controller/kube/errors.ts';

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

function cluster(data: Record<string, string>): ArgoCluster {
  const result = readClusterSecret({ metadata: { name: 'cluster-a' }, data: Object.fromEntries(Object.entries(data).map(([key, value]) => [key, b64(value)])) });
  assert.equal(result.kind, 'cluster');
  return result.cluster;
}

describe('kubeConfigFor', () => {
  it('maps the CA, serverName, insecure, proxy and token onto one cluster, user and context', () => {
    const argo = cluster({ name: 'a', server: 'https://a.example:6443', config: JSON.stringify({ bearerToken: 't', proxyUrl: 'http://p:3128', tlsClientConfig: { caData: b64(CA), serverName: 'api.a' } }) });
    const config = kubeConfigFor(argo);
    assert.equal(config.getCurrentContext(), clusterLabel(argo));
    assert.deepEqual(config.getCurrentCluster(), { name: clusterLabel(argo), server: 'https://a.example:6443', skipTLSVerify: false, caData: b64(CA), tlsServerName: 'api.a', proxyUrl: 'http://p:3128' });
    assert.deepEqual(config.getCurrentUser(), { name: clusterLabel(argo), token: 't' });
    assert.equal(clusterLabel(argo), 'cluster a (Secret cluster-a, https://a.example:6443)');
  });

  it('sets skip-verify for insecure and for a plain-http server (client-node refuses http otherwise)', () => {
    assert.equal(kubeConfigFor(cluster({ server: 'https://a', config: '{"tlsClientConfig":{"insecure":true}}' })).getCurrentCluster()?.skipTLSVerify, true);
    assert.equal(kubeConfigFor(cluster({ server: 'http://a:8080' })).getCurrentCluster()?.skipTLSVerify, true);
  });

  it('routes an exec provider to our runner: no `exec` entry client-node\'s ExecAuth would run', () => {
    const argo = cluster({ server: 'https://a', config: '{"execProviderConfig":{"command":"get-token","apiVersion":"client.authentication.k8s.io/v1"}}' });
    const user = kubeConfigFor(argo).getCurrentUser();
    assert.equal(user?.exec, undefined);
    assert.deepEqual(user?.authProvider, { name: 'driftless-argocd-exec', config: {} });
  });

  describe('the in-cluster address', () => {
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    beforeEach(() => {
      process.env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
      process.env.KUBERNETES_SERVICE_PORT = '443';
    });
    afterEach(() => {
      for (const [key, value] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    });

    it('uses our own service account, ignoring the Secret\'s TLS settings', () => {
      const config = kubeConfigFor(cluster({ server: 'https://kubernetes.default.svc', config: '{"tlsClientConfig":{"insecure":true}}' }));
      assert.equal(config.getCurrentCluster()?.server, 'https://10.96.0.1:443');
      assert.equal(config.getCurrentCluster()?.skipTLSVerify, false);
      assert.match(String(config.getCurrentCluster()?.caFile), /serviceaccount\/ca\.crt$/);
      const provider = config.getCurrentUser()?.authProvider as { config?: { tokenFile?: string } } | undefined;
      assert.match(String(provider?.config?.tokenFile), /serviceaccount\/token$/);
    });

    it('replaces the service account\'s token with the Secret\'s bearerToken', () => {
      const user = kubeConfigFor(cluster({ server: 'https://kubernetes.default.svc', config: '{"bearerToken":"t"}' })).getCurrentUser();
      assert.equal(user?.token, 't');
      assert.equal(user?.authProvider, undefined);
    });

    it('fails clearly outside a pod', () => {
      delete process.env.KUBERNETES_SERVICE_HOST;
      assert.throws(() => kubeConfigFor(cluster({ server: 'https://kubernetes.default.svc' })), KubeConfigError);
    });
  });
});
