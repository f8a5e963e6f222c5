/**
 * Running a short-lived command (go build, go mod download) and collecting its
 * output. Long-lived cluster components go through `processes.ts` instead.
 */
import { spawn } from 'node:child_process';

/** A command exited non-zero or could not be started. */
export class CommandError extends Error {
  readonly command: string;
  readonly exitCode: number | null;
  readonly stderr: string;

  constructor(command: string, exitCode: number | null, stderr: string, options?: ErrorOptions) {
    // The tail of stderr is where go puts the reason; the head is download noise.
    super(`${command} failed (exit ${exitCode ?? 'signal'}):\n${stderr.slice(-4000)}`, options);
    this.name = 'CommandError';
    this.command = command;
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/** Output of a command that exited with status 0. */
export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `file` with `args` and resolves with its output once it exits 0.
 * @throws {CommandError} when it cannot start or exits non-zero.
 */
export function runCommand(
  file: string,
  args: readonly string[],
  options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv },
): Promise<CommandResult> {
  const commandLine = [file, ...args].join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', (error) => reject(new CommandError(commandLine, null, String(error), { cause: error })));
    child.on('close', (code) => {
      const result = { stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString() };
      if (code === 0) resolve(result);
      else reject(new CommandError(commandLine, code, result.stderr));
    });
  });
}
