/**
 * The `driftless` process for the plugin's commands: run one command
 * (invoke.ts) on this process's argv, environment and streams — through the
 * render server when the sidecar runs one — or run the render server itself,
 * and exit with the documented code. The only `process.exit` is here.
 *
 * Nothing else is imported up front: the client path (server/client.ts) must
 * not pay for loading the reader and core it hands the work to.
 */
import type { InvocationIo } from './invoke.ts';
// The wire format alone: a module without imports, so the one constant adds next to nothing to start-up.
import { SOCKET_VARIABLE } from './server/protocol.ts';

function writeTo(stream: NodeJS.WriteStream): (text: string) => Promise<void> {
  return (text) => {
    if (text === '') return Promise.resolve();
    return new Promise((resolve, reject) => stream.write(text, (error) => (error ? reject(error) : resolve())));
  };
}

async function serve(argv: readonly string[], stop: AbortSignal): Promise<number> {
  const [server, errors] = await Promise.all([import('./server/server.ts'), import('./errors.ts')]);
  // --help works whatever else is given, as for every other command.
  if (argv.includes('--help') || argv.includes('-h')) {
    await writeTo(process.stdout)(server.serveUsageText());
    return errors.EXIT.ok;
  }
  const log = (line: string): void => {
    process.stderr.write(`driftless serve: ${line}\n`);
  };
  try {
    await server.serve(server.parseServeConfig(argv, process.env), stop, log);
    return errors.EXIT.ok;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    await writeTo(process.stderr)(`driftless: ${message}\n`);
    return errors.exitCodeFor(error);
  }
}

async function main(argv: readonly string[], stop: AbortSignal): Promise<number> {
  if (argv[0] === 'serve') return serve(argv.slice(1), stop);
  let cwd: string;
  try {
    cwd = process.cwd();
  } catch (error) {
    // The working directory was removed under us: say so, as for any other unexpected failure (exit 1).
    await writeTo(process.stderr)(`driftless: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  // The time budget counts from the process's start (performance.now() is 0 there), also after a hand-back.
  const invocation = { argv, env: process.env, cwd, startedAt: 0 };
  const socketPath = process.env[SOCKET_VARIABLE];
  // Only generate: it is what Argo CD runs per render; explain and migrate-app are run by people.
  if (socketPath !== undefined && socketPath !== '' && argv[0] === 'generate') {
    const { renderThroughServer } = await import('./server/client.ts');
    const code = await renderThroughServer(socketPath, invocation, process, stop);
    if (code !== undefined) return code;
  }
  const io: InvocationIo = { stdin: process.stdin, writeStdout: writeTo(process.stdout), writeStderr: writeTo(process.stderr) };
  return (await import('./invoke.ts')).invoke(invocation, io, stop);
}

const stop = new AbortController();
process.once('SIGTERM', () => stop.abort('SIGTERM'));
process.once('SIGINT', () => stop.abort('SIGINT'));
process.exit(await main(process.argv.slice(2), stop.signal));
