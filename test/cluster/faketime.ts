/**
 * Running a process under a shifted wall clock, with Debian's libfaketime
 * (package `faketime`): the library is preloaded into the process, which then
 * sees the API server's time plus or minus an offset, while its monotonic
 * clock is left alone (timers and deadlines run at their true pace).
 *
 * The library is preloaded directly rather than through the `faketime`
 * command: that command forks and waits for its child, so the pid a test
 * holds would be the wrapper's, and SIGSTOP or SIGKILL would miss the process
 * under test.
 */
import { access } from 'node:fs/promises';
import { runCommand } from './exec.ts';

/** libfaketime is not installed and cannot be installed here. */
export class FaketimeMissingError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'FaketimeMissingError';
  }
}

/**
 * Where distributions put the multi-threaded variant (Node runs threads, and
 * the single-threaded library may deadlock them).
 */
const LIBRARY_CANDIDATES = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/faketime/libfaketimeMT.so.1',
  '/usr/local/lib/faketime/libfaketimeMT.so.1',
];

const INSTALL_HINT = 'install Debian\'s faketime package (as root: apt-get update && apt-get install -y faketime)';

async function findLibrary(): Promise<string | undefined> {
  for (const candidate of LIBRARY_CANDIDATES) {
    try {
      await access(candidate);
      return candidate;
    } catch {
      // Not here; try the next place.
    }
  }
  return undefined;
}

/**
 * The path of libfaketimeMT. When it is missing and we run as root (CI
 * machines do) or `CI=true`, installs the `faketime` package with apt-get;
 * elsewhere says what to install.
 * @throws {FaketimeMissingError} when it is missing and cannot be installed.
 */
export async function ensureFaketime(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const found = await findLibrary();
  if (found !== undefined) return found;
  if (env['CI'] !== 'true' && process.getuid?.() !== 0) {
    throw new FaketimeMissingError(`the fault tests run the controller under a shifted clock with libfaketime, which is missing: ${INSTALL_HINT}`);
  }
  process.stderr.write('setup: installing faketime with apt-get\n');
  const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    await runCommand('apt-get', ['update'], { cwd: '/', env: aptEnv });
    await runCommand('apt-get', ['install', '-y', '--no-install-recommends', 'faketime'], { cwd: '/', env: aptEnv });
  } catch (error) {
    throw new FaketimeMissingError(`installing faketime with apt-get failed; ${INSTALL_HINT}`, { cause: error });
  }
  const installed = await findLibrary();
  if (installed === undefined) throw new FaketimeMissingError(`apt-get installed faketime but libfaketimeMT.so.1 is in none of ${LIBRARY_CANDIDATES.join(', ')}`);
  return installed;
}

/**
 * The environment that shifts a process's wall clock by `offsetSeconds`
 * (positive: ahead of the API server; negative: behind). Merge it into the
 * environment of the process to run.
 */
export async function shiftedClockEnv(offsetSeconds: number): Promise<Record<string, string>> {
  if (!Number.isInteger(offsetSeconds)) throw new RangeError(`clock offset ${offsetSeconds} is not a whole number of seconds`);
  return {
    LD_PRELOAD: await ensureFaketime(),
    // libfaketime's relative form: "+5" or "-5" seconds from the real time, advancing with it.
    FAKETIME: `${offsetSeconds >= 0 ? '+' : ''}${offsetSeconds}`,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}
