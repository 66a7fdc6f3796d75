/**
 * Exposed tool names: how an upstream tool's name becomes the name the host sees.
 *
 * Hosts are stricter than the MCP spec (Claude: `^[a-zA-Z0-9_-]{1,64}$`; Cursor drops tools
 * whose combined name is over 60 characters), so every name is fitted to the configured
 * pattern and length. Everything here is a pure function of its input: the same servers and
 * tools in the same order always give the same names, across restarts, and a tool's shortened
 * name depends only on its own server and tool name, never on which other tools exist.
 *
 * Steps, per tool, in input order:
 *  1. base = `namespace + separator + tool` (or just `tool` when namespace is null);
 *     kept as is when it already matches the pattern and fits the length limit.
 *  2. sanitize: each code point that is not an allowed character becomes `_`.
 *  3. shorten: over the limit, keep the start (namespace first, then the start of the tool
 *     name) and end with `_` + 8 hex of sha256(server NUL tool), exactly the limit long.
 *  4. collision: a name already given to an earlier tool gets `_` + that hash appended
 *     (truncating to fit); earlier tools always keep their names. Nothing is dropped.
 *
 * Allowed characters. The pattern is an arbitrary regex, and a per-character test cannot be
 * derived from an arbitrary regex reliably, so only the shape everyone actually writes is
 * understood: one character class with an optional quantifier, optionally anchored, e.g.
 * `^[A-Za-z0-9_.-]{1,128}$`. For that shape the class is the allowed-character test and the
 * quantifier's upper bound also caps the length (so `{1,60}` with maxLength 64 still yields
 * names of at most 60). For any other pattern the allowed characters are `[A-Za-z0-9_-]`,
 * which every known host accepts. Either way the final name is checked against the whole
 * pattern and a warning says so when it does not match; the name is exposed anyway.
 *
 * Lengths are UTF-16 code units, the same unit a non-`u` regex quantifier such as `{1,64}`
 * counts. The pattern is compiled without flags and anchored as a whole (`^(?:pattern)$`),
 * so an unanchored pattern in the config cannot accept a name by matching part of it.
 */
import { createHash } from 'node:crypto';
import type { NamingConfig } from '../../config/types.js';

export type NamingRules = NamingConfig;

export interface ToolOrigin {
  server: string;
  namespace: string | null;
  tool: string;
}

export interface ExposedName {
  exposed: string;
  origin: ToolOrigin;
  adjusted: 'none' | 'sanitized' | 'shortened' | 'collision';
}

export interface NamingResult {
  names: ExposedName[];
  warnings: string[];
}

const HASH_HEX_CHARS = 8;
const SUFFIX_LENGTH = 1 + HASH_HEX_CHARS;
const SAFE_CHAR = /^[A-Za-z0-9_-]$/;
// After this many hash attempts the suffix is allowed to grow past the limit. Only reachable
// when the limit leaves no room for a hash (maxLength < 10) and many names collide; it keeps
// the loop finite without ever dropping a tool.
const BOUNDED_ATTEMPTS = 1000;

interface CompiledRules {
  readonly separator: string;
  readonly pattern: string;
  readonly accepts: RegExp;
  readonly allowedChar: RegExp;
  readonly limit: number;
}

export function assignExposedNames(origins: readonly ToolOrigin[], rules: NamingRules): NamingResult {
  const compiled = compileRules(rules);
  const taken = new Map<string, ToolOrigin>();
  const names: ExposedName[] = [];
  const warnings: string[] = [];

  for (const origin of origins) {
    const base =
      origin.namespace === null ? origin.tool : origin.namespace + compiled.separator + origin.tool;
    let wanted = base;
    let sanitized = false;
    let shortened = false;
    let longLength = 0;
    if (!fits(base, compiled)) {
      wanted = sanitize(base, compiled.allowedChar);
      sanitized = wanted !== base;
      if (wanted.length > compiled.limit) {
        longLength = wanted.length;
        wanted = withSuffix(wanted, toolHash(origin, 0), compiled.limit);
        shortened = true;
      }
    }

    const holder = taken.get(wanted);
    const exposed = holder === undefined ? wanted : resolveCollision(wanted, origin, compiled.limit, taken);
    taken.set(exposed, origin);
    names.push({
      exposed,
      origin,
      adjusted:
        holder !== undefined ? 'collision' : shortened ? 'shortened' : sanitized ? 'sanitized' : 'none',
    });

    const from = `from ${describe(origin)}`;
    if (sanitized || shortened) {
      const reasons: string[] = [];
      if (sanitized)
        reasons.push('contains characters not allowed by the naming pattern (replaced with "_")');
      if (shortened) {
        reasons.push(
          `is ${longLength} characters, over the limit of ${compiled.limit} (shortened with a stable hash)`,
        );
      }
      warnings.push(`tool name ${q(base)} ${from} ${reasons.join(' and ')}; exposing it as ${q(exposed)}`);
    }
    if (holder !== undefined) {
      warnings.push(
        `tool name collision: ${q(wanted)} ${from} collides with ${describe(holder)}; exposing it as ${q(exposed)}`,
      );
    }
    if (!fits(exposed, compiled)) {
      warnings.push(
        `tool name ${q(exposed)} ${from} does not match the naming pattern ${compiled.pattern}` +
          ` (at most ${compiled.limit} characters); exposing it anyway, but hosts may reject or drop it`,
      );
    }
  }
  return { names, warnings };
}

// Tool names come from upstreams and may hold quotes or control characters; JSON quoting keeps
// each warning one unambiguous line.
function q(text: string): string {
  return JSON.stringify(text);
}

function describe(origin: ToolOrigin): string {
  return `server ${q(origin.server)} (tool ${q(origin.tool)})`;
}

function fits(name: string, rules: CompiledRules): boolean {
  return name.length <= rules.limit && rules.accepts.test(name);
}

function compileRules(rules: NamingRules): CompiledRules {
  let accepts: RegExp;
  try {
    accepts = new RegExp(`^(?:${rules.pattern})$`);
  } catch (cause) {
    throw new Error(`naming pattern ${JSON.stringify(rules.pattern)} is not a valid regular expression`, {
      cause,
    });
  }
  const simple = parseSimplePattern(rules.pattern);
  const maxLength = Math.max(1, Math.floor(rules.maxLength));
  return {
    separator: rules.separator,
    pattern: rules.pattern,
    accepts,
    allowedChar: simple?.allowedChar ?? SAFE_CHAR,
    limit: Math.min(maxLength, simple?.max ?? Infinity),
  };
}

/** Understands `^[class]{m,n}$` and its variants (`+`, `*`, `{n}`, `{m,}`, no quantifier, no anchors). */
function parseSimplePattern(pattern: string): { allowedChar: RegExp; max: number | undefined } | null {
  const shape = /^\^?(\[(?:\\[\s\S]|[^\\\]])+\])(?:\{(\d+)(,(\d*))?\}|([+*]))?\$?$/.exec(pattern);
  if (shape === null) return null;
  const [, cls, first, comma, second, plusOrStar] = shape;
  let allowedChar: RegExp;
  try {
    allowedChar = new RegExp(`^${cls}$`);
  } catch {
    return null;
  }
  let max: number | undefined;
  if (plusOrStar !== undefined) max = undefined;
  else if (first === undefined) max = 1;
  else if (comma === undefined) max = Number(first);
  else max = second === '' || second === undefined ? undefined : Number(second);
  return { allowedChar, max };
}

function sanitize(name: string, allowedChar: RegExp): string {
  // Code points, not code units: one emoji becomes one `_`, not two.
  let out = '';
  for (const ch of name) out += allowedChar.test(ch) ? ch : '_';
  return out;
}

/** 8 hex chars of sha256(server NUL tool); `attempt` > 0 only to step past a (near impossible) hash clash. */
function toolHash(origin: ToolOrigin, attempt: number): string {
  const input =
    attempt === 0 ? `${origin.server}\0${origin.tool}` : `${origin.server}\0${origin.tool}\0${attempt}`;
  return createHash('sha256').update(input, 'utf8').digest('hex').slice(0, HASH_HEX_CHARS);
}

/** `name` truncated so that `name_hash` is at most `limit` long. */
function withSuffix(name: string, hash: string, limit: number): string {
  if (limit <= SUFFIX_LENGTH) return hash.slice(0, limit);
  return `${truncate(name, limit - SUFFIX_LENGTH)}_${hash}`;
}

function truncate(text: string, length: number): string {
  if (text.length <= length) return text;
  let end = length;
  // Never leave half of a surrogate pair; one unit short is better than an ill-formed string.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}

function resolveCollision(
  wanted: string,
  origin: ToolOrigin,
  limit: number,
  taken: ReadonlyMap<string, ToolOrigin>,
): string {
  for (let attempt = 0; ; attempt++) {
    let candidate = withSuffix(wanted, toolHash(origin, attempt), limit);
    if (attempt >= BOUNDED_ATTEMPTS) candidate += `_${attempt}`;
    if (!taken.has(candidate)) return candidate;
  }
}
