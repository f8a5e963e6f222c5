/**
 * Runs a command from an image's root filesystem the way a pod runs its
 * container: the image's files as `/`, mounted read-only
 * (`readOnlyRootFilesystem: true`), the pod's volumes bound at their mount
 * paths, a numeric non-root user (`runAsUser`/`runAsGroup`), and only the
 * environment the pod spec and the image config give. The host's network
 * stays (every socket the tests use is a unix socket on a shared volume or
 * loopback), and there is no container runtime: a private mount namespace
 * (`unshare --mount`), bind mounts and `chroot --userspec` do it, as root.
 *
 * Each step `exec`s the next, so the pid a test holds is the command's own:
 * SIGTERM and SIGKILL reach it, and the mount namespace ends with it.
 */

import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** A volume of the pod: a local directory bound at `target` inside the root filesystem. */
export interface RootfsMount {
  readonly source: string;
  readonly target: string;
  readonly readOnly?: boolean;
}

/** What to run from the root filesystem. */
export interface RootfsCommand {
  /** The merged root filesystem of the image (see build.ts). */
  readonly rootfs: string;
  readonly mounts: readonly RootfsMount[];
  /** `uid:gid`, numeric, as the pod's securityContext gives it. */
  readonly user: string;
  /** The whole environment of the command (nothing of the test process's leaks in). */
  readonly env: Readonly<Record<string, string>>;
  /** The working directory inside the root filesystem; default `/`. */
  readonly cwd?: string;
  /** An absolute path inside the root filesystem, or a name looked up on env.PATH there. */
  readonly command: string;
  readonly args: readonly string[];
}

/**
 * The host path of `target` inside `rootfs`, with every symbolic link on the way
 * resolved as the image sees it (Debian's /var/run is a link to /run: followed
 * on the host, it would lead out of the root filesystem). A missing rest of
 * the path is kept as it is, to be made as the mount point.
 */
export function pathInRoot(rootfs: string, target: string): string {
  const parts = target.split('/').filter((part) => part !== '' && part !== '.');
  const resolved: string[] = [];
  for (let hops = 0; parts.length > 0; ) {
    const part = parts.shift() as string;
    if (part === '..') {
      resolved.pop();
      continue;
    }
    const host = join(rootfs, ...resolved, part);
    let link: string | undefined;
    try {
      link = lstatSync(host).isSymbolicLink() ? readlinkSync(host) : undefined;
    } catch {
      link = undefined;
    }
    if (link === undefined) {
      resolved.push(part);
      continue;
    }
    if (++hops > 40) throw new RootfsCommandError(`too many symbolic links in ${target}`);
    if (link.startsWith('/')) resolved.length = 0;
    parts.unshift(...link.split('/').filter((piece) => piece !== '' && piece !== '.'));
  }
  return join(rootfs, ...resolved);
}

/** Single-quoted for a POSIX shell. */
function quote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** Thrown for a spec that could not mean what it says. */
export class RootfsCommandError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RootfsCommandError';
  }
}

/**
 * The command line (file and argv) that runs `spec`: hand it to spawn or to
 * the cluster harness's startComponent. Must be started as root.
 * @throws {RootfsCommandError} for a relative mount target, a mount of `/`, or a user that is not `uid:gid`.
 */
export function rootfsCommandLine(spec: RootfsCommand): [string, string[]] {
  if (!/^\d+:\d+$/.test(spec.user)) throw new RootfsCommandError(`user ${spec.user} is not numeric uid:gid`);
  const [uid, gid] = spec.user.split(':') as [string, string];
  if (uid === '0') throw new RootfsCommandError('the image runs as a non-root user; uid 0 is not what a pod of ours runs');
  const root = quote(spec.rootfs);
  const lines = [
    'set -e',
    // A bind of the root filesystem onto itself, so that it can be remounted read-only in this namespace alone.
    `mount --bind ${root} ${root}`,
    `mount --rbind /dev ${root}/dev`,
    `mount -t proc proc ${root}/proc`,
  ];
  for (const mount of spec.mounts) {
    if (!mount.target.startsWith('/') || mount.target === '/') throw new RootfsCommandError(`mount target ${mount.target} must be an absolute path below /`);
    const target = quote(pathInRoot(spec.rootfs, mount.target));
    // As a container runtime does, the mount point is made when the image lacks it (in the working container's layer, never the image).
    lines.push(`[ -e ${target} ] || mkdir -p ${target}`, `mount --bind ${quote(mount.source)} ${target}`);
    if (mount.readOnly === true) lines.push(`mount -o remount,bind,ro ${target}`);
  }
  lines.push(`mount -o remount,bind,ro ${root}`);
  const env = Object.entries(spec.env).map(([name, value]) => quote(`${name}=${value}`));
  // chroot's own lookup of a bare command uses the PATH it is given, inside the new root.
  const inRoot = spec.cwd === undefined ? [] : ['/usr/bin/env', '-C', quote(spec.cwd)];
  // The change of user clears the parent-death signal that test/cluster/processes.ts sets: set it again
  // after it (with the image's setpriv, util-linux being essential in Debian), so that a test run that
  // dies takes the command with it.
  if (existsSync(pathInRoot(spec.rootfs, '/usr/bin/setpriv'))) inRoot.unshift('/usr/bin/setpriv', '--pdeathsig', 'KILL', '--');
  lines.push(
    `exec /usr/bin/env -i ${env.join(' ')} /usr/sbin/chroot --userspec=${uid}:${gid} --groups=${gid} ${root} ${[...inRoot, quote(spec.command), ...spec.args.map(quote)].join(' ')}`,
  );
  return ['unshare', ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', lines.join('\n')]];
}
