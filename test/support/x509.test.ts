import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { test } from 'node:test';
import { makeCertificateAuthority, makeClientCertificate, serialNumber } from './x509.ts';

test('a serial number is a minimal positive DER integer, even when the random bytes start with zero', () => {
  for (const first of [0x00, 0x01, 0x7f, 0x80, 0xff]) {
    const serial = serialNumber(Buffer.from([first, 0x00, 0x10, ...Buffer.alloc(13, 0xab)]));
    assert.equal(serial.length, 16);
    assert.ok((serial[0] as number) > 0 && (serial[0] as number) < 0x80, `first byte ${serial[0]} from ${first}`);
  }
});

test('a client certificate is one OpenSSL loads into a TLS context, names its user and groups, and is signed by the CA', () => {
  const ca = makeCertificateAuthority('test-ca');
  for (let round = 0; round < 20; round += 1) {
    const client = makeClientCertificate(ca, 'test-ca', `user-${round}`, ['system:masters']);
    assert.doesNotThrow(() => createSecureContext({ cert: client.certPem, key: client.keyPem, ca: ca.certPem }));
    const parsed = new X509Certificate(client.certPem);
    assert.match(parsed.subject, new RegExp(`O=system:masters\\nCN=user-${round}`));
    assert.equal(parsed.verify(new X509Certificate(ca.certPem).publicKey), true);
  }
});
