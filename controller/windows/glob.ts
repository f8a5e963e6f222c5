/**
 * Glob matching as Argo CD matches a sync window's applications, namespaces
 * and clusters: util/glob.Match over github.com/gobwas/glob compiled without
 * separators, after `*` alone short-cuts to "matches". `*` any run of
 * characters (`/` included), `?` one character, `[abc]`, `[a-z]`, `[!abc]`,
 * `{one,two}` alternatives (nestable), `\` escapes. A pattern that does not
 * compile matches nothing, as Argo CD logs and returns false.
 */

/** A compiled pattern, or `undefined` when gobwas would refuse it. */
export function compileGlob(pattern: string): RegExp | undefined {
  let i = 0;
  const source = (inAlternative: boolean): string | undefined => {
    let out = '';
    while (i < pattern.length) {
      const c = pattern[i] as string;
      if (inAlternative && (c === ',' || c === '}')) return out;
      i++;
      if (c === '\\') {
        if (i >= pattern.length) return undefined;
        out += escape(pattern[i] as string);
        i++;
      } else if (c === '*') {
        out += '.*';
      } else if (c === '?') {
        out += '.';
      } else if (c === '[') {
        const close = pattern.indexOf(']', i);
        if (close < 0) return undefined;
        let body = pattern.slice(i, close);
        i = close + 1;
        const negate = body.startsWith('!');
        if (negate) body = body.slice(1);
        if (body === '') return undefined;
        // Inside the class only a range `a-z` is special; everything else is literal.
        const cls = body.replace(/[\\\]^[]/g, '\\$&');
        out += `[${negate ? '^' : ''}${cls}]`;
      } else if (c === '{') {
        const options: string[] = [];
        for (;;) {
          const option = source(true);
          if (option === undefined || i >= pattern.length) return undefined;
          options.push(option);
          const separator = pattern[i];
          i++;
          if (separator === '}') break;
        }
        out += `(?:${options.join('|')})`;
      } else {
        out += escape(c);
      }
    }
    return inAlternative ? undefined : out;
  };
  const body = source(false);
  if (body === undefined) return undefined;
  try {
    return new RegExp(`^${body}$`, 'su');
  } catch {
    return undefined;
  }
}

/** Argo CD's globMatch(pattern, value, allowNegation=false): `*` matches everything, else the glob. */
export function globMatch(pattern: string, value: string): boolean {
  if (pattern === '*') return true;
  return compileGlob(pattern)?.test(value) ?? false;
}

function escape(ch: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(ch) ? `\\${ch}` : ch;
}
