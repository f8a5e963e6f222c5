/**
 * A Driftless sidecar container (the cmp-server's or the render server's) as the
 * shipped `manifests/plugin/argocd-repo-server.patch.yaml` defines it, translated
 * from container paths to local directories: its command, args and env are read
 * from the patch (never restated here), and every container path they mention is
 * mapped through the volume it lives on. A bare command (`driftless`) is looked
 * up on PATH, as in the image.
 * A mount the harness does not know, or a path on no mount, is an error, so a
 * change to the patch cannot silently diverge from what the tests run.
 */
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** The patch's sidecar could not be turned into a local process. */
export class SidecarPatchError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SidecarPatchError';
  }
}

/** How to start the sidecar locally. */
export interface SidecarProcess {
  /** A local path, or a bare name to look up on PATH (as the image's PATH would). */
  readonly command: string;
  readonly args: readonly string[];
  /** The patch's env with paths mapped, plus TMPDIR for the container's /tmp. */
  readonly env: Readonly<Record<string, string>>;
  /** Maps a container path to its local path (for the CMP server's defaults). */
  localPath(containerPath: string): string;
  /** The container as the patch declares it, paths unmapped: for running it from the image's root filesystem. */
  readonly container: SidecarContainer;
}

/** A sidecar container of the patch, unmapped: its own command, env, user and volumes. */
export interface SidecarContainer {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** `runAsUser:runAsGroup` of its securityContext. */
  readonly user: string;
  readonly readOnlyRootFilesystem: boolean;
  /**
   * Each volume mount as a local directory at a container directory (a `subPath`
   * mount of one file as its volume's directory at the file's directory, as above).
   */
  readonly mounts: readonly { readonly source: string; readonly target: string; readonly readOnly: boolean }[];
}

interface Mount {
  readonly name: string;
  readonly mountPath: string;
  readonly subPath?: string;
  readonly readOnly?: boolean;
}

interface PatchContainer {
  readonly name: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly env?: readonly { readonly name: string; readonly value?: string }[];
  readonly volumeMounts?: readonly Mount[];
  readonly securityContext?: { readonly runAsUser?: number; readonly runAsGroup?: number; readonly readOnlyRootFilesystem?: boolean };
}

interface Patch {
  readonly spec?: { readonly template?: { readonly spec?: { readonly containers?: readonly PatchContainer[] } } };
}

/**
 * Reads the sidecar container `containerName` from the patch file and maps it
 * onto `volumes` (volume name → local directory). A `subPath` mount of one
 * file maps the file's container directory to the volume's local directory,
 * which must hold a file of that name (`plugin.yaml` in `manifests/plugin/`).
 * `imageDirs` (container directory → local directory) stands in for what the
 * image itself provides, such as the primed compile cache under /opt/driftless.
 * @throws {SidecarPatchError} for an unknown volume, a path on no mount, or a value from a ref.
 */
export async function sidecarFromPatch(
  patchFile: string,
  containerName: string,
  volumes: Readonly<Record<string, string>>,
  imageDirs: Readonly<Record<string, string>> = {},
): Promise<SidecarProcess> {
  const patch = parseYaml(await readFile(patchFile, 'utf8')) as Patch;
  const container = patch.spec?.template?.spec?.containers?.find((candidate) => candidate.name === containerName);
  if (!container?.command?.[0]) throw new SidecarPatchError(`${patchFile} has no container ${containerName} with a command`);

  const mounts = (container.volumeMounts ?? []).map((mount) => {
    const local = volumes[mount.name];
    if (local === undefined) throw new SidecarPatchError(`${patchFile}: the harness has no local directory for volume ${mount.name}`);
    const readOnly = mount.readOnly === true;
    if (mount.subPath === undefined) return { containerPath: mount.mountPath, local, readOnly };
    if (mount.subPath !== basename(mount.mountPath)) {
      throw new SidecarPatchError(`${patchFile}: subPath ${mount.subPath} mounted under another name at ${mount.mountPath}`);
    }
    return { containerPath: dirname(mount.mountPath), local, readOnly };
  });
  const volumeMounts = mounts.map(({ containerPath, local, readOnly }) => ({ source: local, target: containerPath, readOnly }));
  mounts.push(...Object.entries(imageDirs).map(([containerPath, local]) => ({ containerPath, local, readOnly: false })));
  // Longest first, so /home/argocd/cmp-server/plugins wins over a mount of /home.
  mounts.sort((a, b) => b.containerPath.length - a.containerPath.length);
  const localPath = (containerPath: string): string => {
    const mount = mounts.find(
      (candidate) => containerPath === candidate.containerPath || containerPath.startsWith(`${candidate.containerPath}/`),
    );
    if (!mount) throw new SidecarPatchError(`${patchFile}: ${containerPath} is on no volume the sidecar mounts`);
    return join(mount.local, containerPath.slice(mount.containerPath.length));
  };
  const mapValue = (value: string): string => (value.startsWith('/') ? localPath(value) : value);

  const env: Record<string, string> = { TMPDIR: localPath('/tmp') };
  const containerEnv: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    if (variable.value === undefined) throw new SidecarPatchError(`${patchFile}: env ${variable.name} has no literal value`);
    env[variable.name] = mapValue(variable.value);
    containerEnv[variable.name] = variable.value;
  }
  const security = container.securityContext ?? {};
  return {
    command: mapValue(container.command[0]),
    args: [...container.command.slice(1), ...(container.args ?? [])].map(mapValue),
    env,
    localPath,
    container: {
      command: container.command[0],
      args: [...container.command.slice(1), ...(container.args ?? [])],
      env: containerEnv,
      user: `${security.runAsUser ?? ''}:${security.runAsGroup ?? ''}`,
      readOnlyRootFilesystem: security.readOnlyRootFilesystem === true,
      mounts: volumeMounts,
    },
  };
}
