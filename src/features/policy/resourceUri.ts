/**
 * Resource URIs as a rule compares them. A server reads `file:///tmp/../etc/passwd`,
 * `FILE:///etc//passwd`, `file:/etc/passwd`, `file://localhost./etc/passwd` and
 * `file://localhost/etc/%70asswd` as the same file, so a rule on `file:///etc/*` must see them as
 * that file too: the scheme and host are lowercased and lose the trailing dots a DNS name may
 * carry, `localhost` is dropped from `file:` URIs, a `file:` URI without an authority (one slash,
 * or none) gets the empty one, percent-escapes are decoded, and the path's repeated slashes, `.`
 * and `..` are collapsed (never above its root). The query and fragment are kept as they are. A
 * string that is not a URI with a scheme is only trimmed.
 */

const URI = /^([A-Za-z][A-Za-z0-9+.-]*):(.*)$/s;

export function normalizeResourceUri(uri: string): string {
  const match = URI.exec(uri.trim());
  if (match === null) return uri.trim();
  const scheme = match[1]!.toLowerCase();
  let rest = match[2]!;
  // The query and fragment are not part of the path.
  const cut = rest.search(/[?#]/);
  const tail = cut === -1 ? '' : rest.slice(cut);
  if (cut !== -1) rest = rest.slice(0, cut);
  let authority: string | undefined;
  let path = rest;
  if (rest.startsWith('//')) {
    const slash = rest.indexOf('/', 2);
    authority = decode(slash === -1 ? rest.slice(2) : rest.slice(2, slash))
      .toLowerCase()
      .replace(/\.+$/, '');
    path = slash === -1 ? '' : rest.slice(slash);
    if (scheme === 'file' && authority === 'localhost') authority = '';
  } else if (scheme === 'file') {
    // `file:/etc/passwd` and `file:etc/passwd` name the same local file as `file:///etc/passwd`
    // (RFC 8089's short forms, which file-URL parsers accept): give them its empty authority.
    authority = '';
    if (!path.startsWith('/')) path = `/${path}`;
  }
  path = collapse(decode(path));
  return `${scheme}:${authority === undefined ? '' : `//${authority}`}${path}${tail}`;
}

/**
 * A rule's resource glob, normalised as a URI is, so `file:///etc/./x*` matches what
 * `file:///etc/x1` normalises to. Glob characters pass through unchanged.
 */
export function normalizeResourceGlob(glob: string): string {
  return normalizeResourceUri(glob);
}

/** Decodes percent-escapes; a malformed one is left as written. */
function decode(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text.replace(/%[0-9A-Fa-f]{2}/g, (escape) => {
      try {
        return decodeURIComponent(escape);
      } catch {
        return escape;
      }
    });
  }
}

/** `/a//b/./c/../d` → `/a/b/d`; `..` never climbs above the start. A relative path stays relative. */
function collapse(path: string): string {
  if (path === '') return path;
  const absolute = path.startsWith('/');
  const out: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      out.pop();
      continue;
    }
    out.push(segment);
  }
  const trailing = path.endsWith('/') && out.length > 0 ? '/' : '';
  return `${absolute ? '/' : ''}${out.join('/')}${trailing}`;
}
