/**
 * Argo CD's `Env.Envsubst`: Go's `os.Expand` over the build environment Argo CD
 * gives a source (reposerver `newEnv`), with `$$` for a literal `$`. Argo CD
 * applies it to kustomize images and commonLabels, to commonAnnotations when
 * commonAnnotationsEnvsubst is on, and to helm file-parameter paths.
 */

/** The variables of Argo CD's build environment; every other name expands to `''`, as in Argo CD. */
export const BUILD_ENV_NAMES: readonly string[] = Object.freeze([
  'ARGOCD_APP_NAME',
  'ARGOCD_APP_NAMESPACE',
  'ARGOCD_APP_PROJECT_NAME',
  'ARGOCD_APP_REVISION',
  'ARGOCD_APP_REVISION_SHORT',
  'ARGOCD_APP_REVISION_SHORT_8',
  'ARGOCD_APP_SOURCE_REPO_URL',
  'ARGOCD_APP_SOURCE_PATH',
  'ARGOCD_APP_SOURCE_TARGET_REVISION',
]);

/**
 * Expands `$NAME` and `${NAME}` in `text` from `environment`, byte for byte as
 * Go's `os.Expand` with Argo CD's mapping. Only the build environment's names
 * are looked up: the sidecar's own variables (credentials, paths) must never
 * reach a rendered manifest through an Application's annotation.
 */
export function envsubst(text: string, environment: Readonly<Record<string, string>>): string {
  const lookup = (name: string): string => {
    if (name === '$') return '$';
    return BUILD_ENV_NAMES.includes(name) ? (environment[name] ?? '') : '';
  };
  let out = '';
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    if (text[index] !== '$' || index + 1 >= text.length) continue;
    out += text.slice(start, index);
    const [name, width] = shellName(text.slice(index + 1));
    if (name === '' && width > 0) {
      // Invalid syntax (`${}`, an unclosed `${`): Go drops it.
    } else if (name === '') {
      out += '$';
    } else {
      out += lookup(name);
    }
    index += width;
    start = index + 1;
  }
  return start === 0 ? text : out + text.slice(start);
}

const SPECIAL = '*#$@!?-0123456789';

/** Go's `getShellName`: the name after a `$` and how many characters it used. */
function shellName(text: string): [string, number] {
  const first = text[0] as string;
  if (first === '{') {
    if (text.length > 2 && SPECIAL.includes(text[1] as string) && text[2] === '}') return [text.slice(1, 2), 3];
    const close = text.indexOf('}', 1);
    if (close === 1) return ['', 2];
    if (close === -1) return ['', 1];
    return [text.slice(1, close), close + 1];
  }
  if (SPECIAL.includes(first)) return [first, 1];
  const match = /^[A-Za-z0-9_]*/.exec(text);
  const name = match?.[0] ?? '';
  return [name, name.length];
}
