/**
 * manifests/plugin: plugin.yaml agrees with the parameter table, the Kustomize
 * component builds with the real kustomize on top of an Argo CD install and adds a
 * sidecar that satisfies Argo CD's CMP contract beside the render server it hands
 * renders to, and the example Application
 * names the plugin and its parameters correctly.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, posix, isAbsolute } from 'node:path';
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { PARAMETERS } from '../plugin/parameters.ts';
import { SOCKET_VARIABLE } from '../plugin/server/protocol.ts';
import { ensureTools } from './tools.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const pluginDir = join(root, 'manifests', 'plugin');

type Json = Record<string, any>;

async function readYaml(path: string): Promise<Json> {
  return parse(await readFile(path, 'utf8')) as Json;
}

describe('manifests/plugin/plugin.yaml', () => {
  let plugin: Json;
  before(async () => {
    plugin = await readYaml(join(pluginDir, 'plugin.yaml'));
  });

  it('is the ConfigManagementPlugin driftless v1 with one exec-form generate', () => {
    assert.equal(plugin['apiVersion'], 'argoproj.io/v1alpha1');
    assert.equal(plugin['kind'], 'ConfigManagementPlugin');
    assert.equal(plugin['metadata']?.name, 'driftless');
    assert.equal(plugin['spec']?.version, 'v1');
    assert.deepEqual(plugin['spec']?.generate, { command: ['driftless', 'generate'] });
    assert.equal(plugin['spec']?.preserveFileMode, false);
  });

  it('has no init, no discover, no dynamic parameters and does not ask for git credentials', () => {
    const spec = plugin['spec'] as Json;
    assert.deepEqual(Object.keys(spec).sort(), ['generate', 'parameters', 'preserveFileMode', 'version']);
    assert.deepEqual(Object.keys(spec['parameters']), ['static']);
  });

  it('announces exactly the parameters of plugin/parameters.ts, in order, with the same defaults and descriptions', () => {
    const announced = plugin['spec'].parameters.static as Json[];
    assert.deepEqual(announced.map((a) => a['name']), PARAMETERS.map((p) => p.name));
    for (const [index, spec] of PARAMETERS.entries()) {
      const a = announced[index] as Json;
      assert.equal(a['collectionType'], spec.collectionType, `${spec.name}: collectionType`);
      assert.equal(a['tooltip'], spec.description, `${spec.name}: tooltip`);
      assert.equal(typeof a['title'], 'string', `${spec.name}: title`);
      assert.equal(a['itemType'], spec.type === 'boolean' ? 'boolean' : undefined, `${spec.name}: itemType`);
      // Argo CD shows these defaults but never sends them; an empty default is simply not announced.
      const shown = spec.collectionType === 'array' ? (a['array'] ?? []) : spec.collectionType === 'map' ? (a['map'] ?? {}) : (a['string'] ?? '');
      assert.deepEqual(shown, spec.default, `${spec.name}: default`);
      for (const key of ['string', 'array', 'map'] as const) {
        if (key !== spec.collectionType) assert.equal(a[key], undefined, `${spec.name}: stray ${key} default`);
      }
    }
  });
});

describe('manifests/plugin component on an Argo CD install', () => {
  let work: string;
  let documents: Json[];
  let fixture: Json;

  before(async () => {
    const { kustomize } = await ensureTools();
    work = await mkdtemp(join(tmpdir(), 'driftless-manifests-'));
    const fixturePath = join(root, 'test', 'fixtures', 'argocd-install', 'argocd-repo-server.yaml');
    await copyFile(fixturePath, join(work, 'argocd-repo-server.yaml'));
    fixture = await readYaml(fixturePath);
    const component = relative(work, pluginDir).split('\\').join(posix.sep);
    await writeFile(
      join(work, 'kustomization.yaml'),
      ['namespace: argocd', 'resources: [argocd-repo-server.yaml]', `components: [${JSON.stringify(component)}]`, ''].join('\n'),
    );
    const { stdout } = await run(kustomize, ['build', work], { maxBuffer: 16 << 20 });
    documents = parseAllDocuments(stdout).map((d) => d.toJS() as Json);
  });

  after(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  const deployment = (): Json => {
    const found = documents.filter((d) => d['kind'] === 'Deployment');
    assert.equal(found.length, 1);
    return found[0] as Json;
  };
  const podSpec = (): Json => deployment()['spec'].template.spec as Json;
  const containerNamed = (name: string): Json => {
    const found = (podSpec()['containers'] as Json[]).filter((c) => c['name'] === name);
    assert.equal(found.length, 1, `exactly one ${name} container`);
    return found[0] as Json;
  };
  const sidecar = (): Json => containerNamed('driftless');
  const renderServer = (): Json => containerNamed('driftless-render-server');
  const volume = (name: string): Json => {
    const found = (podSpec()['volumes'] as Json[]).filter((v) => v['name'] === name);
    assert.equal(found.length, 1, `exactly one volume ${name}`);
    return found[0] as Json;
  };
  const mountAt = (path: string): Json => {
    const found = (sidecar()['volumeMounts'] as Json[]).filter((m) => m['mountPath'] === path);
    assert.equal(found.length, 1, `exactly one mount at ${path}`);
    return found[0] as Json;
  };
  const env = (name: string, container: Json = sidecar()): string => {
    const found = (container['env'] as Json[]).filter((e) => e['name'] === name);
    assert.equal(found.length, 1, `exactly one env ${name}`);
    return (found[0] as Json)['value'] as string;
  };

  it('keeps the repo-server container, init container and volumes of the install untouched', () => {
    const original = fixture['spec'].template.spec as Json;
    const patched = podSpec();
    assert.deepEqual(patched['initContainers'], original['initContainers']);
    assert.deepEqual((patched['containers'] as Json[]).find((c) => c['name'] === 'argocd-repo-server'), original['containers'][0]);
    for (const v of original['volumes'] as Json[]) assert.deepEqual(volume(v['name']), v);
    assert.equal((patched['containers'] as Json[]).length, 3);
  });

  it('runs Argo CD\'s cmp-server as UID 999, non-root, on a read-only root filesystem', () => {
    const c = sidecar();
    assert.deepEqual(c['command'], ['/var/run/argocd/argocd-cmp-server']);
    assert.equal(c['securityContext'].runAsUser, 999);
    assert.equal(c['securityContext'].runAsNonRoot, true);
    assert.equal(c['securityContext'].readOnlyRootFilesystem, true);
    assert.equal(c['securityContext'].allowPrivilegeEscalation, false);
    assert.ok(c['resources']?.requests && c['resources']?.limits, 'resources are set');
  });

  it('shares var-files and plugins with the repo-server, and mounts plugin.yaml from the generated ConfigMap', () => {
    assert.equal(mountAt('/var/run/argocd')['name'], 'var-files');
    assert.equal(mountAt('/home/argocd/cmp-server/plugins')['name'], 'plugins');
    const config = mountAt('/home/argocd/cmp-server/config/plugin.yaml');
    assert.equal(config['subPath'], 'plugin.yaml');
    const configMapName = volume(config['name'])['configMap']?.name as string;
    const configMap = documents.find((d) => d['kind'] === 'ConfigMap' && d['metadata'].name === configMapName);
    assert.ok(configMap, `the mounted ConfigMap ${configMapName} is in the build (name suffix rewritten)`);
    assert.match(configMapName, /^driftless-plugin-[a-z0-9]+$/);
    return readFile(join(pluginDir, 'plugin.yaml'), 'utf8').then((text) => assert.equal(configMap['data']['plugin.yaml'], text));
  });

  it('has its own /tmp emptyDir, and HOME and the Helm directories outside /tmp/_cmp_server', () => {
    const tmp = mountAt('/tmp');
    assert.deepEqual(volume(tmp['name'])['emptyDir'], {});
    const repoServer = (podSpec()['containers'] as Json[]).find((c) => c['name'] === 'argocd-repo-server') as Json;
    assert.ok(!(repoServer['volumeMounts'] as Json[]).some((m) => m['name'] === tmp['name']), 'not the repo-server\'s /tmp');
    for (const name of ['HOME', 'HELM_CACHE_HOME', 'HELM_CONFIG_HOME', 'HELM_DATA_HOME']) {
      const value = env(name);
      assert.ok(isAbsolute(value), `${name} is absolute`);
      assert.ok(value === '/tmp' || value.startsWith('/tmp/'), `${name} is on the writable /tmp`);
      assert.ok(!(value + '/').startsWith('/tmp/_cmp_server/'), `${name} survives the cmp-server wiping /tmp/_cmp_server`);
    }
  });

  it('points NODE_COMPILE_CACHE at the compile cache the image primes as the sidecar\'s UID', async () => {
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    const cacheDir = env('NODE_COMPILE_CACHE');
    assert.ok(isAbsolute(cacheDir) && !cacheDir.startsWith('/tmp/'), 'in the image, not on the emptyDir (which starts empty)');
    // Node keys the cache by UID: it must be built by the user the sidecar runs as.
    const priming = dockerfile.indexOf(`export NODE_COMPILE_CACHE=${cacheDir} `);
    assert.ok(priming > 0, `the Dockerfile primes ${cacheDir}`);
    const user = [...dockerfile.slice(0, priming).matchAll(/^USER (\d+)/gm)].at(-1)?.[1];
    assert.equal(Number(user), sidecar()['securityContext'].runAsUser);
    for (const command of ['generate --path', 'explain --path', 'generate -', 'migrate-app -', '--help']) {
      assert.ok(dockerfile.includes(`driftless ${command}`, priming), `priming runs driftless ${command}`);
    }
  });

  it('mounts the hash key Secret read-only and points DRIFTLESS_HASH_KEY_FILE at it', () => {
    const keyFile = env('DRIFTLESS_HASH_KEY_FILE');
    const mount = (sidecar()['volumeMounts'] as Json[]).find((m) => keyFile.startsWith(`${m['mountPath']}/`)) as Json;
    assert.ok(mount, 'the key file is inside a mount');
    assert.equal(mount['readOnly'], true);
    const secret = volume(mount['name'])['secret'] as Json;
    assert.equal(secret['secretName'], 'driftless-hash-key');
    assert.notEqual(secret['optional'], true, 'the sidecar must not start without a key');
    assert.equal(posix.basename(keyFile), 'key');
  });

  it('gives the plugin a time budget below the repo-server\'s 60 s default deadline', () => {
    const budget = /^(\d+)s$/.exec(env('DRIFTLESS_TIMEOUT'));
    assert.ok(budget, 'a whole number of seconds');
    assert.ok(Number(budget[1]) < 60);
  });

  it('sets only DRIFTLESS_* variables that the plugin reads', () => {
    // The render socket is no parameter: `driftless generate` reads it to pick the server.
    const read = new Set([...PARAMETERS.flatMap((p) => p.env), SOCKET_VARIABLE]);
    const set = (sidecar()['env'] as Json[]).map((e) => e['name'] as string).filter((n) => n.startsWith('DRIFTLESS_'));
    assert.ok(set.length >= 2);
    for (const name of set) assert.ok(read.has(name), `${name} is read by plugin/parameters.ts`);
  });

  it('mounts only volumes that exist in the pod', () => {
    const names = new Set((podSpec()['volumes'] as Json[]).map((v) => v['name']));
    for (const c of [sidecar(), renderServer()]) {
      for (const m of c['volumeMounts'] as Json[]) assert.ok(names.has(m['name']), `${c['name']}: volume ${m['name']} exists`);
    }
  });

  it('runs the render server as `driftless serve` from the same image, as UID 999 on a read-only root filesystem', () => {
    const c = renderServer();
    assert.deepEqual(c['command'], ['driftless', 'serve']);
    assert.equal(c['args'], undefined);
    assert.equal(c['image'], sidecar()['image']);
    assert.equal(c['imagePullPolicy'], sidecar()['imagePullPolicy']);
    // The files it writes (the socket, helm's caches for the requests) must be the cmp-server's user's.
    assert.deepEqual(c['securityContext'], sidecar()['securityContext']);
    assert.equal(c['securityContext'].runAsUser, 999);
    assert.equal(c['securityContext'].readOnlyRootFilesystem, true);
    assert.ok(c['resources']?.requests?.cpu && c['resources']?.requests?.memory, 'requests are set');
    assert.ok(c['resources']?.limits?.memory, 'its memory is limited on its own');
  });

  it('has both containers agree on DRIFTLESS_RENDER_SOCKET, on the /tmp they share', () => {
    assert.equal(SOCKET_VARIABLE, 'DRIFTLESS_RENDER_SOCKET');
    const socket = env(SOCKET_VARIABLE);
    assert.equal(env(SOCKET_VARIABLE, renderServer()), socket);
    assert.ok(socket.startsWith('/tmp/') && !(socket + '/').startsWith('/tmp/_cmp_server/'), 'on /tmp, outside what the cmp-server wipes');
  });

  it('mounts /tmp and the hash key in the render server at the cmp container\'s paths, as it reads them by the request\'s paths', () => {
    const mounts = (c: Json): Json[] => c['volumeMounts'] as Json[];
    const keyFile = env('DRIFTLESS_HASH_KEY_FILE');
    const keyMount = mounts(sidecar()).find((m) => keyFile.startsWith(`${m['mountPath']}/`)) as Json;
    for (const wanted of [mountAt('/tmp'), keyMount]) {
      const found = mounts(renderServer()).filter((m) => m['mountPath'] === wanted['mountPath']);
      assert.deepEqual(found, [wanted], `the render server mounts ${wanted['name']} at ${wanted['mountPath']} as the cmp container does`);
    }
    assert.deepEqual(mounts(renderServer()).map((m) => m['name'] as string).sort((a, b) => a.localeCompare(b)), ['driftless-hash-key', 'driftless-tmp'], 'and nothing else of the pod');
  });

  it('points the render server\'s NODE_COMPILE_CACHE at the cmp container\'s primed cache', () => {
    assert.equal(env('NODE_COMPILE_CACHE', renderServer()), env('NODE_COMPILE_CACHE'));
  });
});

describe('manifests/plugin/application-example.yaml', () => {
  it('selects driftless-v1 by name and passes only announced parameters with the right collection type', async () => {
    const app = await readYaml(join(pluginDir, 'application-example.yaml'));
    const plugin = await readYaml(join(pluginDir, 'plugin.yaml'));
    assert.equal(app['kind'], 'Application');
    const source = app['spec'].source as Json;
    assert.equal(source['plugin'].name, `${plugin['metadata'].name}-${plugin['spec'].version}`);
    const parameters = source['plugin'].parameters as Json[];
    assert.ok(parameters.length > 0);
    for (const p of parameters) {
      const spec = PARAMETERS.find((s) => s.name === p['name']);
      assert.ok(spec, `${p['name']} is a known parameter`);
      const given = Object.keys(p).filter((k) => k !== 'name');
      assert.deepEqual(given, [spec.collectionType], `${p['name']} is given as ${spec.collectionType}`);
      if (spec.values) assert.ok(spec.values.includes(p['string']), `${p['name']}: ${p['string']} is allowed`);
    }
  });
});
