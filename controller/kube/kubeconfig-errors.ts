/**
 * What went wrong reading a kubeconfig, said without its content. client-node
 * parses kubeconfigs with js-yaml, whose error message quotes the lines around
 * the error — in a kubeconfig those hold tokens, passwords and private keys.
 * The message here keeps the line, the column and the parser's reason, with
 * every name the reason took from the file (tags, tag handles, aliases) cut out.
 */

/** The shape of js-yaml's `YAMLException` that is used here (client-node does not export the class). */
interface YamlException {
  readonly name: 'YAMLException';
  readonly reason: string;
  readonly mark?: { readonly line: number; readonly column: number };
}

function isYamlException(error: unknown): error is YamlException {
  return error instanceof Error && error.name === 'YAMLException' && typeof (error as { reason?: unknown }).reason === 'string';
}

/**
 * The parser's reason without any text of the file: js-yaml's reasons are fixed
 * phrases except where they quote a name (`"…"`, `!<…>`, or after `: `).
 */
function reasonWithoutContent(reason: string): string {
  return reason
    .replace(/"[^"]*"/g, '"…"')
    .replace(/!<[^>]*>/g, '!<…>')
    .replace(/: .*$/, '');
}

/**
 * Describes why loading a kubeconfig failed, for a message that names the file
 * before it. Returns the message and the cause to keep: the original error
 * when its message is safe, none for a YAML error (its message and stack carry
 * the quoted lines, and a cause gets printed by whoever inspects the error).
 */
export function describeKubeConfigLoadError(error: unknown): { readonly message: string; readonly cause: unknown } {
  if (isYamlException(error)) {
    const at = error.mark === undefined ? '' : ` at line ${error.mark.line + 1}, column ${error.mark.column + 1}`;
    return { message: `not valid YAML${at}: ${reasonWithoutContent(error.reason)} (content not shown)`, cause: undefined };
  }
  // Everything else client-node throws at load time names a path or an entry (`users[0].name is missing`), never a value.
  return { message: error instanceof Error ? error.message : String(error), cause: error };
}

/** A credential failure whose message was written to hold no credential and no plugin output (hub/exec-credential.ts), so it is shown as it is. */
export class SafeCredentialError extends Error {
  override readonly name: string = 'SafeCredentialError';
}

/**
 * Describes why the kubeconfig's user credentials could not be obtained (an
 * exec credential plugin, a token file, an auth provider), without what they
 * said: a JSON error quotes the plugin's output — the token — and the plugin's
 * stderr may hold anything. Only the kind of failure is kept.
 */
export function describeCredentialError(user: string | undefined, error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const why = error instanceof SafeCredentialError
    ? error.message
    : error instanceof SyntaxError
    ? 'the credential plugin\'s output is not valid JSON'
    : typeof code === 'string'
      ? code
      : 'the credential plugin or token source failed';
  return `cannot get the credentials of kubeconfig user ${JSON.stringify(user ?? '')}: ${why} (its output is not shown)`;
}
