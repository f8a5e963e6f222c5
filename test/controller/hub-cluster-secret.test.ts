/**
 * Argo CD's cluster Secrets read as Argo CD reads them (argo-cd
 * util/db/cluster.go SecretToCluster, Cluster.RawRestConfig): every field,
 * Go's JSON rules (case-insensitive keys, duplicate keys merged, null, type
 * errors), every refusal, and no credential in any refusal's detail.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IN_CLUSTER_SERVER, inClusterDestination, readClusterSecret, sameConnection, type ArgoCluster, type ClusterSecretResult } from '../../controller/hub/cluster-secret.ts';
import { goFoldName, parseGoJson } from '../../controller/hub/go-json.ts';

const CANARY = 'canary-credential-7f3a9e';
const b64 = (text: string): string => Buffer.from(text).toString('base64');
const CA = '-----BEGIN CERTIFICATE-----\nMIIBcanary\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nMIIBclient\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n';

/** A cluster Secret as the API returns it: `data` base64-encoded. */
function secret(data: Record<string, string>, name = 'cluster-prod'): unknown {
  return {
    apiVersion: 'v1', kind: 'Secret',
    metadata: { name, namespace: 'argocd', labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
    data: Object.fromEntries(Object.entries(data).map(([key, value]) => [key, b64(value)])),
  };
}

function cluster(data: Record<string, string>): ArgoCluster {
  const result = readClusterSecret(secret({ server: 'https://prod.example:6443', ...data }));
  assert.equal(result.kind, 'cluster', JSON.stringify(result.kind === 'refused' ? result : ''));
  return result.cluster;
}

function refused(data: Record<string, string>): Extract<ClusterSecretResult, { kind: 'refused' }> {
  const result = readClusterSecret(secret(data));
  assert.equal(result.kind, 'refused');
  return result;
}

describe('the Secret\'s data fields', () => {
  it('reads name, server, namespaces, clusterResources, project and shard', () => {
    const c = cluster({ name: 'prod', namespaces: ' apps, ,web ,', clusterResources: 'true', project: 'team-a', shard: '2' });
    assert.equal(c.secret, 'cluster-prod');
    assert.equal(c.name, 'prod');
    assert.equal(c.server, 'https://prod.example:6443');
    assert.deepEqual(c.namespaces, ['apps', 'web']);
    assert.equal(c.clusterResources, true);
    assert.equal(c.project, 'team-a');
    assert.equal(c.shard, 2);
    assert.deepEqual(c.warnings, []);
    assert.ok(Object.isFrozen(c) && Object.isFrozen(c.namespaces) && Object.isFrozen(c.connection));
  });

  it('cuts every trailing slash of the server, as Argo CD compares servers', () => {
    assert.equal(cluster({ server: 'https://prod.example:6443///' }).server, 'https://prod.example:6443');
    assert.equal(cluster({ server: 'https://rancher.example/k8s/clusters/c-1/' }).server, 'https://rancher.example/k8s/clusters/c-1');
  });

  it('defaults: every namespace, no cluster resources flag, no project, no shard', () => {
    const c = cluster({});
    assert.equal(c.name, '');
    assert.equal(c.namespaces, undefined);
    assert.equal(c.clusterResources, false);
    assert.equal(c.project, undefined);
    assert.equal(c.shard, undefined);
    assert.equal(cluster({ namespaces: ' , ' }).namespaces, undefined);
  });

  it('takes clusterResources only when exactly "true"', () => {
    for (const value of ['True', 'yes', '1', 'true ']) assert.equal(cluster({ clusterResources: value }).clusterResources, false, value);
  });

  it('reads shard as Go\'s strconv.Atoi does, and ignores (with a warning) what Argo CD ignores', () => {
    assert.equal(cluster({ shard: '+3' }).shard, 3);
    assert.equal(cluster({ shard: '-1' }).shard, -1);
    assert.equal(cluster({ shard: '007' }).shard, 7);
    for (const bad of ['', ' 1', '1.0', 'one', '0x1', '9223372036854775808']) {
      const c = cluster({ shard: bad });
      assert.equal(c.shard, undefined, bad);
      assert.match(c.warnings.join(), /data\.shard is not an integer/);
    }
  });

  it('refuses a Secret without a server, with a server that is not an http(s) URL, and a non-Secret', () => {
    assert.equal(refused({}).reason, 'no-server');
    assert.equal(refused({ server: '/' }).reason, 'no-server');
    assert.equal(refused({ server: 'prod.example:6443' }).reason, 'bad-server');
    assert.equal(refused({ server: 'ftp://prod.example' }).reason, 'bad-server');
    const userinfo = refused({ server: `https://admin:${CANARY}@prod.example` });
    assert.equal(userinfo.reason, 'bad-server');
    assert.equal(readClusterSecret({ metadata: {} }).kind, 'refused');
    assert.equal(readClusterSecret(null).kind, 'refused');
  });
});

describe('the config, read with Go\'s encoding/json rules', () => {
  it('reads every connection field', () => {
    const c = cluster({
      config: JSON.stringify({
        bearerToken: 'tok', proxyUrl: 'http://proxy.example:3128', disableCompression: true,
        tlsClientConfig: { caData: b64(CA), certData: b64(CERT), keyData: b64(KEY), serverName: 'api.internal', insecure: false },
      }),
    });
    assert.deepEqual(c.connection, {
      inCluster: false, bearerToken: 'tok', proxyUrl: 'http://proxy.example:3128', disableCompression: true,
      tls: { insecure: false, serverName: 'api.internal', caData: CA, certData: CERT, keyData: KEY },
    });
  });

  it('reads basic auth and insecure', () => {
    const c = cluster({ config: '{"username":"admin","password":"pw","tlsClientConfig":{"insecure":true}}' });
    assert.deepEqual(c.connection, { inCluster: false, username: 'admin', password: 'pw', tls: { insecure: true }, disableCompression: false });
  });

  it('matches keys to fields case-insensitively, with Go\'s folding of K (U+212A) and ſ (U+017F)', () => {
    const c = cluster({ config: '{"BEARERTOKEN":"tok","TLSClientConfig":{"INSECURE":true,"ServerName":"x"},"di\u017fableCompression":true}' });
    assert.equal(c.connection.bearerToken, 'tok');
    assert.equal(c.connection.tls.insecure, true);
    assert.equal(c.connection.tls.serverName, 'x');
    assert.equal(c.connection.disableCompression, true);
    assert.equal(cluster({ config: `{"tlsClientConfig":{"\u212aeyData":"${b64(KEY)}","certData":"${b64(CERT)}"}}` }).connection.tls.keyData, KEY);
    assert.equal(goFoldName('bearerToken'), 'BEARERTOKEN');
  });

  it('prefers the exact key\'s field, and lets the later of two duplicate keys win', () => {
    assert.equal(cluster({ config: '{"bearerToken":"a","BearerToken":"b"}' }).connection.bearerToken, 'b');
    assert.equal(cluster({ config: '{"BearerToken":"b","bearerToken":"a"}' }).connection.bearerToken, 'a');
  });

  it('merges a duplicate struct into the first, as Go decodes into the value already there', () => {
    const c = cluster({ config: `{"tlsClientConfig":{"caData":"${b64(CA)}","serverName":"a"},"tlsClientConfig":{"serverName":"b"}}` });
    assert.deepEqual(c.connection.tls, { insecure: false, serverName: 'b', caData: CA });
    const exec = cluster({
      config: '{"execProviderConfig":{"command":"get-token","env":{"A":"1"},"args":["x","y"]},'
        + '"execProviderConfig":{"apiVersion":"client.authentication.k8s.io/v1","env":{"B":"2"},"args":["z"]}}',
    }).connection.exec;
    assert.deepEqual(exec, { command: 'get-token', args: ['z'], env: { A: '1', B: '2' }, apiVersion: 'client.authentication.k8s.io/v1', provideClusterInfo: false });
  });

  it('treats null as Go does: a pointer or map becomes nil, a string or bool keeps its value', () => {
    assert.equal(cluster({ config: '{"awsAuthConfig":{"clusterName":"c"},"awsAuthConfig":null,"bearerToken":"t"}' }).connection.bearerToken, 't');
    assert.equal(cluster({ config: '{"bearerToken":"t","bearerToken":null}' }).connection.bearerToken, 't');
    assert.equal(cluster({ config: '{"tlsClientConfig":{"insecure":true},"tlsClientConfig":{"insecure":null}}' }).connection.tls.insecure, true);
    assert.equal(cluster({ config: 'null' }).connection.bearerToken, undefined);
    const exec = cluster({ config: '{"execProviderConfig":{"command":"c","apiVersion":"client.authentication.k8s.io/v1beta1","env":{"A":"1","B":null}}}' }).connection.exec;
    assert.deepEqual(exec?.env, { A: '1', B: '' });
  });

  it('ignores unknown fields, of any type', () => {
    const c = cluster({ config: '{"bearerToken":"t","certFile":"/x","extra":{"a":[1,2.5e3,null,true]},"tlsClientConfig":{"caFile":7}}' });
    assert.equal(c.connection.bearerToken, 't');
  });

  it('reads []byte fields as Go does: padded standard base64, line breaks skipped, or an array of bytes', () => {
    const wrapped = b64(CA).replace(/(.{20})/g, '$1\n');
    assert.equal(cluster({ config: `{"tlsClientConfig":{"caData":${JSON.stringify(wrapped)}}}` }).connection.tls.caData, CA);
    const bytes = JSON.stringify([...Buffer.from(CA)]);
    assert.equal(cluster({ config: `{"tlsClientConfig":{"caData":${bytes}}}` }).connection.tls.caData, CA);
    const unpadded = b64('-----BEGIN CERTIFICATE-----\nM\n-----END CERTIFICATE-----').replace(/=+$/, '');
    assert.equal(refused({ server: 'https://x', config: `{"tlsClientConfig":{"caData":"${unpadded}"}}` }).reason, 'bad-config');
    assert.equal(refused({ server: 'https://x', config: '{"tlsClientConfig":{"caData":"not base64!"}}' }).reason, 'bad-config');
  });

  it('refuses a config Argo CD cannot unmarshal: bad JSON, a field of the wrong type, not an object', () => {
    for (const config of ['{', '{"bearerToken":"t",}', '{"bearerToken":1}', '{"tlsClientConfig":{"insecure":"true"}}', '[]', '"x"', '{} {}', '{"disableCompression":"yes"}', '{"execProviderConfig":{"args":"x"}}']) {
      const result = refused({ server: 'https://x', config });
      assert.equal(result.reason, 'bad-config', config);
      assert.match(result.detail, /^data\.config: /);
    }
  });

});

describe('the config\'s JSON text', () => {
  it('refuses JSON nested deeper than 1,000 levels instead of overflowing the stack', () => {
    const deep = (levels: number): string => `{"extra":${'['.repeat(levels)}${']'.repeat(levels)},"bearerToken":"t"}`;
    assert.equal(cluster({ config: deep(999) }).connection.bearerToken, 't');
    for (const levels of [1001, 20_000]) assert.match(refused({ server: 'https://x', config: deep(levels) }).detail, /nested deeper than 1000 levels/);
  });

  it('keeps what it cannot parse out of the detail (no offset\'s text, no value)', () => {
    const result = refused({ server: 'https://x', config: `{"bearerToken":"${CANARY}" "password":"${CANARY}"}` });
    assert.equal(result.reason, 'bad-config');
    assert.doesNotMatch(result.detail, new RegExp(CANARY));
  });

  it('parses JSON strictly, as Go\'s scanner does', () => {
    assert.deepEqual(parseGoJson(' {"a" : [ 1 , -0.5e+3 , "\\u00e9" ] } '), {
      kind: 'object', members: [['a', { kind: 'array', items: [{ kind: 'number', text: '1' }, { kind: 'number', text: '-0.5e+3' }, { kind: 'string', value: 'é' }] }]],
    });
    for (const text of ['01', '1.', '.5', '+1', '"\t"', "'a'", 'tru', '\uFEFF{}', '{"a":1,}', 'NaN', '"\\x"']) assert.throws(() => parseGoJson(text), /not valid JSON/, text);
    assert.deepEqual(parseGoJson('"\\ud800"'), { kind: 'string', value: '\uFFFD' });
  });
});

describe('what Argo CD\'s RawRestConfig does with the config', () => {
  it('uses the exec provider alone: username, password and bearerToken are dropped', () => {
    const c = cluster({ config: '{"bearerToken":"t","execProviderConfig":{"command":"aws","args":["eks","get-token"],"apiVersion":"client.authentication.k8s.io/v1beta1","installHint":"install aws","provideClusterInfo":true,"config":{"x":1}}}' });
    assert.equal(c.connection.bearerToken, undefined);
    assert.deepEqual(c.connection.exec, {
      command: 'aws', args: ['eks', 'get-token'], env: {}, apiVersion: 'client.authentication.k8s.io/v1beta1', installHint: 'install aws', provideClusterInfo: true, config: '{"x":1}',
    });
  });

  it('refuses awsAuthConfig (argocd-k8s-auth aws is not in our image), naming what to use instead', () => {
    const result = refused({ server: 'https://eks.example', config: `{"awsAuthConfig":{"clusterName":"prod","roleARN":"arn:aws:iam::1:role/${CANARY}"}}` });
    assert.equal(result.reason, 'aws-auth');
    assert.equal(result.server, 'https://eks.example');
    assert.match(result.detail, /awsAuthConfig.*execProviderConfig/);
  });

  it('refuses an exec provider without a command or with an apiVersion client-go does not accept', () => {
    assert.equal(refused({ server: 'https://x', config: '{"execProviderConfig":{"apiVersion":"client.authentication.k8s.io/v1"}}' }).reason, 'bad-exec');
    for (const apiVersion of ['', 'client.authentication.k8s.io/v1alpha1', 'v1']) {
      assert.equal(refused({ server: 'https://x', config: JSON.stringify({ execProviderConfig: { command: 'c', apiVersion } }) }).reason, 'bad-exec', apiVersion);
    }
  });

  it('refuses both basic auth and a bearer token, as client-go does', () => {
    assert.equal(refused({ server: 'https://x', config: '{"username":"u","password":"p","bearerToken":"t"}' }).reason, 'bad-auth');
  });

  it('refuses a CA with insecure, and TLS data without a PEM block', () => {
    assert.equal(refused({ server: 'https://x', config: `{"tlsClientConfig":{"insecure":true,"caData":"${b64(CA)}"}}` }).reason, 'bad-tls');
    // Argo CD's []byte is base64 of the PEM text; base64 of base64 is the usual mistake.
    const result = refused({ server: 'https://x', config: `{"tlsClientConfig":{"caData":"${b64(b64(CA))}"}}` });
    assert.equal(result.reason, 'bad-tls');
    assert.match(result.detail, /caData/);
  });

  it('ignores half a client certificate, as client-go does, with a warning', () => {
    const c = cluster({ config: `{"bearerToken":"t","tlsClientConfig":{"certData":"${b64(CERT)}"}}` });
    assert.equal(c.connection.tls.certData, undefined);
    assert.match(c.warnings.join(), /certData is set without its pair/);
  });

  it('refuses a proxy Argo CD would not parse, and a socks5 proxy with credentials', () => {
    for (const proxyUrl of ['ftp://proxy', 'not a url', 'socks4://proxy:1080']) {
      assert.equal(refused({ server: 'https://x', config: JSON.stringify({ proxyUrl }) }).reason, 'bad-proxy', proxyUrl);
    }
    const result = refused({ server: 'https://x', config: JSON.stringify({ proxyUrl: `socks5://u:${CANARY}@proxy:1080` }) });
    assert.equal(result.reason, 'bad-proxy');
    assert.equal(cluster({ config: '{"proxyUrl":"socks5://proxy:1080"}' }).connection.proxyUrl, 'socks5://proxy:1080');
    assert.equal(cluster({ config: '{"proxyUrl":"https://u:p@proxy:3128"}' }).connection.proxyUrl, 'https://u:p@proxy:3128');
  });

  it('connects the in-cluster address with our own service account, ignoring TLS, exec and AWS settings', () => {
    const c = cluster({ server: `${IN_CLUSTER_SERVER}/`, name: 'in-cluster', config: `{"awsAuthConfig":{"clusterName":"x"},"tlsClientConfig":{"insecure":true,"caData":"${b64(CA)}"},"proxyUrl":"http://p:1"}` });
    assert.equal(c.server, IN_CLUSTER_SERVER);
    assert.deepEqual(c.connection, { inCluster: true, tls: { insecure: false }, disableCompression: false, proxyUrl: 'http://p:1' });
    assert.equal(cluster({ server: IN_CLUSTER_SERVER, config: '{"bearerToken":"t"}' }).connection.bearerToken, 't');
    assert.deepEqual(inClusterDestination().connection, { inCluster: true, tls: { insecure: false }, disableCompression: false });
    assert.equal(inClusterDestination().secret, '');
    assert.equal(inClusterDestination().name, 'in-cluster');
  });
});

describe('sameConnection', () => {
  it('is true when only the scope changed, and false when anything of the connection did', () => {
    const base = cluster({ config: `{"bearerToken":"t","tlsClientConfig":{"caData":"${b64(CA)}"}}` });
    assert.equal(sameConnection(base, cluster({ namespaces: 'a', project: 'p', shard: '1', name: 'other', config: `{"tlsClientConfig":{"caData":"${b64(CA)}"},"bearerToken":"t"}` })), true);
    for (const config of ['{"bearerToken":"u"}', `{"bearerToken":"t","tlsClientConfig":{"caData":"${b64(CA)}","serverName":"s"}}`, `{"bearerToken":"t","disableCompression":true,"tlsClientConfig":{"caData":"${b64(CA)}"}}`]) {
      assert.equal(sameConnection(base, cluster({ config })), false, config);
    }
    assert.equal(sameConnection(base, cluster({ server: 'https://other:6443', config: `{"bearerToken":"t","tlsClientConfig":{"caData":"${b64(CA)}"}}` })), false);
  });
});

describe('no credential in a refusal', () => {
  it('never puts a credential in any detail', () => {
    const configs = [
      `{"username":"${CANARY}","password":"${CANARY}","bearerToken":"${CANARY}"}`,
      `{"bearerToken":"${CANARY}","tlsClientConfig":{"insecure":true,"caData":"${b64(CA + CANARY)}"}}`,
      `{"bearerToken":"${CANARY}","tlsClientConfig":{"keyData":"${b64(CANARY)}"}}`,
      `{"bearerToken":"${CANARY}","awsAuthConfig":{"profile":"${CANARY}"}}`,
      `{"execProviderConfig":{"command":"","args":["--token","${CANARY}"],"env":{"T":"${CANARY}"}}}`,
      `{"execProviderConfig":{"command":"c","apiVersion":"x","env":{"T":"${CANARY}"}}}`,
      `{"bearerToken":"${CANARY}","proxyUrl":"gopher://${CANARY}@p"}`,
      `{"bearerToken":"${CANARY}","tlsClientConfig":{"insecure":"${CANARY}"}}`,
      `{"bearerToken":"${CANARY}","execProviderConfig":{"env":{"T":${JSON.stringify(CANARY)},"U":7}}}`,
      `{"bearerToken":"${CANARY}", oops}`,
    ];
    for (const config of configs) {
      const result = refused({ server: 'https://x', config });
      assert.doesNotMatch(JSON.stringify(result), new RegExp(CANARY), config);
    }
  });
});
