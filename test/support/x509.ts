/**
 * Just enough X.509 to give the test cluster a client certificate authority
 * and sign client certificates (user = CN, groups = O, as Kubernetes reads
 * them): ECDSA P-256 keys from node:crypto, certificates DER-encoded here.
 * Node can parse certificates but not make them, and the tests should not
 * need an `openssl` binary.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

/** A certificate and its private key, both PEM. */
export interface CertificateAndKey {
  readonly certPem: string;
  readonly keyPem: string;
}

function length(size: number): Buffer {
  if (size < 0x80) return Buffer.from([size]);
  const bytes: number[] = [];
  for (let rest = size; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const der = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
};
const sequence = (...items: Buffer[]): Buffer => der(0x30, ...items);

function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const bytes = [first * 40 + second];
  for (const part of rest) {
    const chunk: number[] = [part & 0x7f];
    for (let value = part >> 7; value > 0; value >>= 7) chunk.unshift(0x80 | (value & 0x7f));
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
}

const utf8 = (text: string): Buffer => der(0x0c, Buffer.from(text, 'utf8'));

function utcTime(date: Date): Buffer {
  const text = date.toISOString().replace(/[-:T]/g, '').slice(2, 14);
  return der(0x17, Buffer.from(`${text}Z`, 'ascii'));
}

/** A Name of O= entries then CN= (Kubernetes: groups, then the user). */
function name(commonName: string, organizations: readonly string[]): Buffer {
  const rdn = (type: string, value: string): Buffer => der(0x31, sequence(oid(type), utf8(value)));
  return sequence(...organizations.map((organization) => rdn('2.5.4.10', organization)), rdn('2.5.4.3', commonName));
}

const ECDSA_SHA256 = sequence(oid('1.2.840.10045.4.3.2'));

/**
 * The content of a serial number's DER INTEGER from 16 random bytes. DER wants the shortest form of a positive
 * number: the top bit of the first byte clear (or it reads as negative) and no leading zero byte before a byte
 * whose top bit is clear (OpenSSL refuses that as "illegal padding"). Setting bit 6 of the first byte does both,
 * where clearing only the top bit failed one certificate in 256.
 */
export function serialNumber(random: Buffer): Buffer {
  const serial = Buffer.from(random);
  serial[0] = ((serial[0] as number) & 0x7f) | 0x40;
  return serial;
}

function certificate(subject: Buffer, issuer: Buffer, publicKey: KeyObject, signer: KeyObject, extensions: Buffer[]): string {
  const serial = serialNumber(randomBytes(16));
  const now = Date.now();
  const tbs = sequence(
    der(0xa0, der(0x02, Buffer.from([2]))),
    der(0x02, serial),
    ECDSA_SHA256,
    issuer,
    sequence(utcTime(new Date(now - 3_600_000)), utcTime(new Date(now + 24 * 3_600_000))),
    subject,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, sequence(...extensions)),
  );
  const signature = sign('sha256', tbs, { key: signer, dsaEncoding: 'der' });
  const cert = sequence(tbs, ECDSA_SHA256, der(0x03, Buffer.from([0]), signature));
  const lines = cert.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}

function keyPair(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

const pkcs8 = (key: KeyObject): string => key.export({ type: 'pkcs8', format: 'pem' }) as string;

/** A self-signed certificate authority. */
export function makeCertificateAuthority(commonName: string): CertificateAndKey {
  const { publicKey, privateKey } = keyPair();
  const subject = name(commonName, []);
  const basicConstraints = sequence(oid('2.5.29.19'), der(0x01, Buffer.from([0xff])), der(0x04, sequence(der(0x01, Buffer.from([0xff])))));
  // keyCertSign (bit 5) and cRLSign (bit 6): 0b0000_0110 with one unused bit.
  const keyUsage = sequence(oid('2.5.29.15'), der(0x01, Buffer.from([0xff])), der(0x04, der(0x03, Buffer.from([1, 0x06]))));
  return { certPem: certificate(subject, subject, publicKey, privateKey, [basicConstraints, keyUsage]), keyPem: pkcs8(privateKey) };
}

/** A client certificate for `user` in `groups`, signed by `ca`. */
export function makeClientCertificate(ca: CertificateAndKey, caName: string, user: string, groups: readonly string[]): CertificateAndKey {
  const { publicKey, privateKey } = keyPair();
  // digitalSignature (bit 0): 0b1000_0000 with seven unused bits; extended key usage clientAuth.
  const keyUsage = sequence(oid('2.5.29.15'), der(0x01, Buffer.from([0xff])), der(0x04, der(0x03, Buffer.from([7, 0x80]))));
  const extKeyUsage = sequence(oid('2.5.29.37'), der(0x04, sequence(oid('1.3.6.1.5.5.7.3.2'))));
  const certPem = certificate(name(user, groups), name(caName, []), publicKey, createPrivateKey(ca.keyPem), [keyUsage, extKeyUsage]);
  return { certPem, keyPem: pkcs8(privateKey) };
}
