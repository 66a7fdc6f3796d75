/**
 * Anchored shell-style globs, used for tool include/exclude filters and per-tool timeouts.
 *
 * Syntax: `*` any run of characters (including none), `?` exactly one character, `[abc]`, `[a-z]`,
 * `[!abc]` character classes (a `]` right after `[` or `[!` is literal), `\` escapes the next
 * character. Everything else is literal. The whole string must match.
 *
 * "Character" means Unicode code point, so `?` matches one emoji rather than half of one.
 *
 * Why not picomatch: it matches file paths, where `*` stops at `/` and dot files need an option.
 * The names matched here are flat (tool, server and prompt names) or URIs where a rule means `*`
 * to cross `/` (a resource rule on every user's .ssh folder). picomatch would need options to
 * undo its path rules, and would still read some names (with `/` or a leading `.`) otherwise
 * than users read the glob. This is about a hundred lines with the semantics written above.
 */

// Globs come from config, so the set is small in practice; the bound only protects against a
// caller that builds globs from untrusted input.
const CACHE_LIMIT = 1000;
/**
 * Each compiled glob with when it was last used. A hit only bumps the count: moving the entry to
 * the end of the map on every hit, as an LRU map usually does, made garbage per match, and
 * listing 10,000 tools through a policy matches globs tens of thousands of times (measured).
 * The least recently used entry is looked for only when one must go.
 */
const cache = new Map<string, { readonly regex: RegExp; used: number }>();
let uses = 0;

export function compileGlob(glob: string): RegExp {
  const hit = cache.get(glob);
  if (hit !== undefined) {
    hit.used = ++uses;
    return hit.regex;
  }
  // No `g`/`y` flag: the RegExp keeps no state between `test` calls, so sharing it is safe.
  const compiled = new RegExp(`^${translate(glob)}$`, 'u');
  if (cache.size >= CACHE_LIMIT) cache.delete(leastRecentlyUsed());
  cache.set(glob, { regex: compiled, used: ++uses });
  return compiled;
}

function leastRecentlyUsed(): string {
  let oldest = '';
  let when = Infinity;
  for (const [glob, entry] of cache)
    if (entry.used < when) {
      when = entry.used;
      oldest = glob;
    }
  return oldest;
}

export function matchesGlob(glob: string, text: string): boolean {
  return compileGlob(glob).test(text);
}

function invalid(glob: string, why: string): Error {
  return new Error(`invalid glob ${JSON.stringify(glob)}: ${why}`);
}

// With the `u` flag only syntax characters and `/` may be escaped outside a class;
// escaping anything else (e.g. `-`) is itself a SyntaxError.
function escapeOutsideClass(ch: string): string {
  return /^[\\^$.*+?()[\]{}|/]$/.test(ch) ? `\\${ch}` : ch;
}

function escapeInsideClass(ch: string): string {
  return /^[\\\]^[-]$/.test(ch) ? `\\${ch}` : ch;
}

function translate(glob: string): string {
  const chars = Array.from(glob);
  let out = '';
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] as string;
    if (ch === '*') {
      // Runs of `*` mean the same as one; collapsing them avoids needless backtracking.
      while (chars[i + 1] === '*') i++;
      out += '[^]*';
    } else if (ch === '?') {
      out += '[^]';
    } else if (ch === '\\') {
      const next = chars[i + 1];
      // A trailing `\` is almost certainly a mistake; matching a literal backslash would hide it.
      if (next === undefined) throw invalid(glob, 'trailing "\\" escapes nothing');
      out += escapeOutsideClass(next);
      i++;
    } else if (ch === '[') {
      const parsed = translateClass(glob, chars, i);
      out += parsed.source;
      i = parsed.end;
    } else {
      out += escapeOutsideClass(ch);
    }
  }
  return out;
}

/** `start` indexes the `[`; returns the regex class and the index of the closing `]`. */
function translateClass(
  glob: string,
  chars: readonly string[],
  start: number,
): { source: string; end: number } {
  const unterminated = (): Error =>
    invalid(glob, `unterminated "[" at character ${start + 1} (write "\\[" for a literal bracket)`);
  let i = start + 1;
  let negate = false;
  if (chars[i] === '!') {
    negate = true;
    i++;
  }
  const first = i;
  let body = '';

  // Reads one possibly escaped member at `i`, advancing past it; undefined at the end of input.
  const readMember = (): string | undefined => {
    const ch = chars[i];
    if (ch === '\\') {
      const next = chars[i + 1];
      if (next === undefined) return undefined;
      i += 2;
      return next;
    }
    if (ch !== undefined) i++;
    return ch;
  };

  for (;;) {
    const ch = chars[i];
    if (ch === undefined) throw unterminated();
    if (ch === ']' && i !== first) break;
    const lo = readMember();
    if (lo === undefined) throw unterminated();
    // `-` is a range only between two members; leading or trailing it is literal.
    if (chars[i] === '-' && chars[i + 1] !== undefined && chars[i + 1] !== ']') {
      i++;
      const hi = readMember();
      if (hi === undefined) throw unterminated();
      if ((lo.codePointAt(0) as number) > (hi.codePointAt(0) as number)) {
        throw invalid(glob, `range "${lo}-${hi}" is out of order`);
      }
      body += `${escapeInsideClass(lo)}-${escapeInsideClass(hi)}`;
    } else {
      body += escapeInsideClass(lo);
    }
  }
  return { source: `[${negate ? '^' : ''}${body}]`, end: i };
}
