import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  HASH_ANNOTATION,
  ManifestError,
  canonicalJson,
  configMapEntry,
  decodeBase64,
  hashEntries,
  hashMessage,
  secretEntry,
  sourceEntry,
} from '../../core/index.ts';
import type { HashEntry } from '../../core/index.ts';
import { manifest } from './helpers.ts';

// Golden vectors. Each message below is written by hand from docs/hash-v1.md, and each
// hex value was computed once outside this code base (`node -e` with node:crypto over the
// hand-written message; the empty ones also checked with `sha256sum` and `openssl dgst -hmac`).
// Changing any of them is a breaking change: every stamped workload in a fleet would roll.
// A new algorithm needs a new version prefix, never an edit here.
const KEY = { bytes: new TextEncoder().encode('driftless-test-key\n') };

const CONFIG_MAP = manifest({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'app-config', annotations: { ignored: 'metadata is not hashed' } },
  data: { b: '2', a: 'x=1\n' },
  // A line break and non-zero unused bits: both accepted by the API server, both normalised away.
  binaryData: { bin: 'AAEC\n/x==' },
});
const CONFIG_MAP_MESSAGE = '[{"binaryData":{"bin":"AAEC/w=="},"data":{"a":"x=1\\n","b":"2"},"kind":"ConfigMap","name":"app-config"}]';

const SECRET = manifest({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'db' },
  data: { password: 'b2xk', user: 'YWRtaW4=' },
  stringData: { password: 'new', note: 'é' },
});
const SECRET_MESSAGE = '[{"data":{"note":"w6k=","password":"bmV3","user":"YWRtaW4="},"kind":"Secret","name":"db","type":"Opaque"}]';

const EXTERNAL_SECRET = manifest({
  apiVersion: 'external-secrets.io/v1',
  kind: 'ExternalSecret',
  metadata: { name: 'db' },
  spec: { target: { name: 'db-creds' }, secretStoreRef: { name: 'vault', kind: 'ClusterSecretStore' }, refreshInterval: '1h' },
});
const SOURCE_MESSAGE = '[{"kind":"ExternalSecret","name":"db","spec":{"refreshInterval":"1h","secretStoreRef":{"kind":"ClusterSecretStore","name":"vault"},"target":{"name":"db-creds"}}}]';

const COMBINED_MESSAGE =
  '[{"binaryData":{"bin":"AAEC/w=="},"data":{"a":"x=1\\n","b":"2"},"kind":"ConfigMap","name":"app-config"},' +
  '{"kind":"ExternalSecret","name":"db","spec":{"refreshInterval":"1h","secretStoreRef":{"kind":"ClusterSecretStore","name":"vault"},"target":{"name":"db-creds"}}},' +
  '{"data":{"note":"w6k=","password":"bmV3","user":"YWRtaW4="},"kind":"Secret","name":"db","type":"Opaque"}]';

describe('hash v1 golden vectors', () => {
  const vectors: { name: string; entries: () => HashEntry[]; message: string; plain: string; keyed: string }[] = [
    {
      name: 'ConfigMap with data and binaryData',
      entries: () => [configMapEntry(CONFIG_MAP)],
      message: CONFIG_MAP_MESSAGE,
      plain: 'v1:c7e0f02234a136f7d6899d1ed46f2af2aa0b2a0eca0b3aaedfed22a1006160bb',
      keyed: 'v1:2457bbebb19851bc9e30d50bb9f857e9acea0ca47352bc95b341f353aaf4b2df',
    },
    {
      name: 'Secret with stringData overriding data',
      entries: () => [secretEntry(SECRET)],
      message: SECRET_MESSAGE,
      plain: 'v1:32cc07e7cd05adeaf7bb1f0cb519372f4f9d5a620a20a9b7d529c05e96062aba',
      keyed: 'v1:2962443d47ecc4f721fa0ea8d0c1fb23681a27a56b67851e57388af24cba619d',
    },
    {
      name: 'a source entry (ExternalSecret)',
      entries: () => [sourceEntry(EXTERNAL_SECRET)],
      message: SOURCE_MESSAGE,
      plain: 'v1:8fda127e16a62329bafc57c04f562251edd7ecdf1fb409b58e6eb913ce35e1cc',
      keyed: 'v1:e91ed5dad4bdb5f8c70629a50938de1af890a68562e767dac9fb8689fea94147',
    },
    {
      name: 'several entries given out of order',
      entries: () => [secretEntry(SECRET), sourceEntry(EXTERNAL_SECRET), configMapEntry(CONFIG_MAP)],
      message: COMBINED_MESSAGE,
      plain: 'v1:c9cdbc6ef0d0d65fefb36254708219e20929e6fcb1814316e87c3de146baef62',
      keyed: 'v1:85a5ab105d4546dc0d8f2c5b4b2e064c0b83105db080cec9fdc9aa5fb853e744',
    },
    {
      name: 'an empty entry list',
      entries: () => [],
      message: '[]',
      plain: 'v1:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945',
      keyed: 'v1:a4d40a0ff4bd1cc8f307a80900c026a38d0d8cc8761dc32f1f39f4375913646e',
    },
  ];
  for (const vector of vectors) {
    it(`${vector.name}: message`, () => {
      assert.equal(hashMessage(vector.entries()), vector.message);
    });
    it(`${vector.name}: unkeyed SHA-256`, () => {
      assert.equal(hashEntries(vector.entries()), vector.plain);
    });
    it(`${vector.name}: keyed HMAC-SHA256`, () => {
      assert.equal(hashEntries(vector.entries(), KEY), vector.keyed);
    });
  }

  it('the key changes the value, and a different key gives a different value', () => {
    const entries = [configMapEntry(CONFIG_MAP)];
    const other = hashEntries(entries, { bytes: new TextEncoder().encode('driftless-test-key') });
    assert.notEqual(other, hashEntries(entries, KEY));
    assert.notEqual(other, hashEntries(entries));
    assert.match(other, /^v1:[0-9a-f]{64}$/);
  });

  it('names the annotation driftless.dev/config-hash', () => {
    assert.equal(HASH_ANNOTATION, 'driftless.dev/config-hash');
  });
});

describe('canonicalJson', () => {
  const cases: [string, unknown, string][] = [
    ['sorts keys at every level', { b: 1, a: { d: [{ z: 1, y: 2 }], c: null } }, '{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}'],
    ['sorts by UTF-16 code units, not locale', { b: 1, B: 2, 'é': 3, _: 4, '10': 5, '9': 6 }, '{"10":5,"9":6,"B":2,"_":4,"b":1,"é":3}'],
    ['keeps array order', [3, 1, 2], '[3,1,2]'],
    ['escapes like JSON.stringify', { s: 'a"b\\c\n\u0001\u2028' }, '{"s":"a\\"b\\\\c\\n\\u0001\u2028"}'],
    ['writes numbers like JSON.stringify', [1, -0, 1.5, 1e21, 1e-7], '[1,0,1.5,1e+21,1e-7]'],
    ['writes booleans and null', [true, false, null], '[true,false,null]'],
    ['treats __proto__ as an ordinary key', JSON.parse('{"__proto__":{"x":1},"a":2}'), '{"__proto__":{"x":1},"a":2}'],
    ['writes empty containers', { a: {}, b: [] }, '{"a":{},"b":[]}'],
  ];
  for (const [name, value, expected] of cases) {
    it(name, () => assert.equal(canonicalJson(value), expected));
  }
  const rejected: [string, unknown][] = [
    ['undefined', undefined],
    ['undefined inside an object', { a: undefined }],
    ['a non-finite number', Number.NaN],
    ['Infinity', [Infinity]],
    ['a bigint', 1n],
    ['a function', () => 1],
    ['a Date', new Date(0)],
    ['a Map', new Map()],
  ];
  for (const [name, value] of rejected) {
    it(`rejects ${name}`, () => assert.throws(() => canonicalJson(value), TypeError));
  }
});

describe('decodeBase64 (as Go base64.StdEncoding, like the API server)', () => {
  const accepted: [string, string, number[]][] = [
    ['empty', '', []],
    ['no padding needed', 'AAEC', [0, 1, 2]],
    ['one pad', 'AAE=', [0, 1]],
    ['two pads', 'AA==', [0]],
    ['line breaks anywhere', 'A\r\nA\nE\r=', [0, 1]],
    ['non-zero unused bits (Go is not strict)', 'AB==', [0]],
    ['+ and /', '+/+/', [0xfb, 0xff, 0xbf]],
  ];
  for (const [name, text, bytes] of accepted) {
    it(`accepts ${name}`, () => {
      const decoded = decodeBase64(text);
      assert.ok(Buffer.isBuffer(decoded), String(decoded));
      assert.deepEqual([...decoded], bytes);
    });
  }
  const rejected: [string, string, RegExp][] = [
    ['missing padding', 'AAE', /multiple of 4/],
    ['URL-safe alphabet', 'AA-_', /outside the base64 alphabet at offset 2/],
    ['a space', 'AA E', /multiple of 4|outside/],
    ['a space in a full quantum', 'AA E=AAA', /outside the base64 alphabet at offset 2/],
    ['padding in the middle', 'AA==AAAA', /padding "=" before the end at offset 2/],
    ['three pads', 'A===', /padding "=" before the end/],
    ['a tab', 'AAA\t', /outside/],
  ];
  for (const [name, text, problem] of rejected) {
    it(`rejects ${name}`, () => {
      const decoded = decodeBase64(text);
      assert.equal(typeof decoded, 'string');
      assert.match(decoded as string, problem);
    });
  }
});

describe('entries', () => {
  it('a ConfigMap without data or binaryData has empty maps', () => {
    const entry = configMapEntry(manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }));
    assert.equal(canonicalJson(entry), '{"binaryData":{},"data":{},"kind":"ConfigMap","name":"c"}');
  });
  it('a Secret keeps its type and treats null data as absent', () => {
    const entry = secretEntry(manifest({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, type: 'kubernetes.io/tls', data: null }));
    assert.equal(canonicalJson(entry), '{"data":{},"kind":"Secret","name":"s","type":"kubernetes.io/tls"}');
  });
  it('a Secret re-encodes data as standard padded base64', () => {
    const entry = secretEntry(manifest({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { k: 'YW\nJj/x==' } }));
    assert.deepEqual({ ...(entry as { data: object }).data }, { k: 'YWJj/w==' });
  });
  it('a key named __proto__ is an ordinary key, in data and in a source spec', () => {
    const cm = configMapEntry(manifest(JSON.parse('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"__proto__":"x"}}')));
    assert.equal(canonicalJson(cm), '{"binaryData":{},"data":{"__proto__":"x"},"kind":"ConfigMap","name":"c"}');
    const secret = secretEntry(manifest(JSON.parse('{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"__proto__":"x"}}')));
    assert.equal(canonicalJson(secret), '{"data":{"__proto__":"eA=="},"kind":"Secret","name":"s","type":"Opaque"}');
  });
  it('a source without spec has spec null', () => {
    const entry = sourceEntry(manifest({ apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'c' } }));
    assert.equal(canonicalJson(entry), '{"kind":"Certificate","name":"c","spec":null}');
  });
  it('a SecretProviderClass is a source entry', () => {
    const entry = sourceEntry(manifest({ apiVersion: 'secrets-store.csi.x-k8s.io/v1', kind: 'SecretProviderClass', metadata: { name: 'spc' }, spec: { provider: 'vault' } }));
    assert.equal(canonicalJson(entry), '{"kind":"SecretProviderClass","name":"spc","spec":{"provider":"vault"}}');
  });
  it('the namespace and metadata are not part of an entry', () => {
    const a = configMapEntry(manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'a', labels: { x: 'y' } }, data: { k: 'v' } }));
    const b = configMapEntry(manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'b' }, data: { k: 'v' } }));
    assert.equal(canonicalJson(a), canonicalJson(b));
  });

  const invalid: [string, () => unknown, string][] = [
    ['a ConfigMap data value that is a number', () => configMapEntry(manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { port: 8080 } })), 'data.port'],
    ['a ConfigMap data value that is null', () => configMapEntry(manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { k: null } })), 'data.k'],
    ['a ConfigMap data that is a list', () => configMapEntry(manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: ['a'] })), 'data'],
    ['ConfigMap binaryData that is not base64', () => configMapEntry(manifest({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, binaryData: { b: 'not base64!' } })), 'binaryData.b'],
    ['Secret data that is not base64', () => secretEntry(manifest({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { password: 'hunter2' } })), 'data.password'],
    ['Secret data that is a boolean', () => secretEntry(manifest({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { flag: true } })), 'data.flag'],
    ['Secret stringData that is a number', () => secretEntry(manifest({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { pin: 1234 } })), 'stringData.pin'],
    ['a Secret type that is not a string', () => secretEntry(manifest({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, type: 1 })), 'type'],
    ['a source spec with a non-finite number', () => sourceEntry(manifest({ apiVersion: 'bitnami.com/v1alpha1', kind: 'SealedSecret', metadata: { name: 's' }, spec: { n: Infinity } })), 'spec'],
    ['a source entry for a kind that is not a source', () => sourceEntry(manifest({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } })), 'kind'],
  ];
  for (const [name, run, field] of invalid) {
    it(`rejects ${name}, naming ${field}`, () => {
      assert.throws(run, (error: unknown) => {
        assert.ok(error instanceof ManifestError);
        assert.equal(error.field, field);
        assert.match(error.message, new RegExp(`^[A-Za-z]+ prod/[a-z]+: ${field.replace('.', '\\.')}: `));
        return true;
      });
    });
  }
});

describe('canonicalJson on generated values (seeded, deterministic)', () => {
  /** mulberry32: a tiny seeded PRNG, so a failure reproduces. */
  function prng(seed: number): () => number {
    let a = seed;
    return () => {
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  // No all-digit pieces: JavaScript lists integer-like keys first whatever their insertion, which would
  // make the parsed object's key order (not the canonical text) look unsorted. The table above covers them.
  const ALPHABET = ['a', 'B', '_', 'x9', 'Z10', 'é', '\u0000', '"', '\\', '\n', '😀', '\u2028', ' ', '__proto__', 'constructor'];
  function generate(random: () => number, depth: number): unknown {
    const pick = Math.floor(random() * (depth > 3 ? 4 : 6));
    const text = () => Array.from({ length: Math.floor(random() * 4) }, () => ALPHABET[Math.floor(random() * ALPHABET.length)]).join('');
    switch (pick) {
      case 0: return text();
      case 1: return Math.round((random() - 0.5) * 1e6) / 100;
      case 2: return random() < 0.5 ? null : random() < 0.5;
      case 3: return text();
      case 4: return Array.from({ length: Math.floor(random() * 4) }, () => generate(random, depth + 1));
      default: {
        const entries = Array.from({ length: Math.floor(random() * 5) }, () => [text(), generate(random, depth + 1)] as const);
        return Object.fromEntries(entries);
      }
    }
  }
  /** The same value with every object's keys inserted in reverse order. */
  function reversed(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(reversed);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reversed(v)]));
    }
    return value;
  }
  function keysSorted(value: unknown): boolean {
    if (Array.isArray(value)) return value.every(keysSorted);
    if (value !== null && typeof value === 'object') {
      const keys = Object.keys(value);
      return keys.every((k, i) => i === 0 || (keys[i - 1] as string) < k) && Object.values(value).every(keysSorted);
    }
    return true;
  }

  it('round-trips through JSON.parse, sorts keys, and ignores insertion order (500 values)', () => {
    const random = prng(20261130);
    for (let i = 0; i < 500; i++) {
      const value = generate(random, 0);
      const text = canonicalJson(value);
      const parsed: unknown = JSON.parse(text);
      assert.deepEqual(parsed, value, text);
      assert.ok(keysSorted(parsed), text);
      assert.equal(canonicalJson(reversed(value)), text);
      assert.equal(canonicalJson(parsed), text);
      assert.ok(!/\s/.test(text.replace(/"(?:[^"\\]|\\.)*"/g, '""')), `whitespace outside strings: ${text}`);
    }
  });
});
