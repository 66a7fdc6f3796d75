import { DATA_KEYWORDS, NAME_MAP_KEYWORDS } from '../../lib/schema/keywords.js';
import { decodeHeaderValue, encodeHeaderValue } from './httpHeaders.js';

/**
 * Tool arguments mirrored into HTTP headers, as the 2026-07-28 HTTP binding defines them. A
 * server marks a property of a tool's `inputSchema` with `x-mcp-header: "Region"`; a client then
 * sends that argument's value as `Mcp-Param-Region` beside the body, so a balancer or a firewall
 * can act on it without reading JSON, and a server that reads the body must refuse the request
 * (400, HeaderMismatch) when the two disagree. The gateway is both: a client that must mirror
 * towards HTTP upstreams, and a server that must check what HTTP hosts mirror.
 */

/** One mirrored argument: the header's name part and where the value sits in the arguments. */
export interface ParamHeader {
  /** As the schema spells it; the header is `Mcp-Param-${name}`. */
  readonly name: string;
  /** The chain of `properties` keys from the schema root to the property. */
  readonly path: readonly string[];
  /** Whether the property is an integer, whose header compares as a number. */
  readonly integer: boolean;
}

/** A tool's mirrored arguments, or why its annotations break the binding's rules. */
export type ParamHeaders = { readonly headers: readonly ParamHeader[] } | { readonly invalid: string };

const NONE: ParamHeaders = { headers: [] };
/** RFC 9110's field-name token characters (`tchar`). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PRIMITIVE = new Set(['string', 'integer', 'boolean']);
const KEYWORD = 'x-mcp-header';

/** Parsed once per schema object: definitions are kept as they were listed. */
const parsed = new WeakMap<object, ParamHeaders>();

/**
 * The `x-mcp-header` annotations of an `inputSchema`, checked against the binding's rules: a
 * non-empty token, unique regardless of case, on a string, integer or boolean property reached
 * from the root through `properties` keys alone (not through items, composition, conditions or
 * `$ref`). One broken annotation makes the whole tool invalid, as the binding says.
 */
export function paramHeadersOf(inputSchema: unknown): ParamHeaders {
  if (typeof inputSchema !== 'object' || inputSchema === null) return NONE;
  const known = parsed.get(inputSchema);
  if (known !== undefined) return known;
  const found: ParamHeader[] = [];
  let invalid: string | undefined;
  const visit = (node: unknown, path: readonly string[] | undefined): void => {
    if (invalid !== undefined || typeof node !== 'object' || node === null) return;
    if (Array.isArray(node)) {
      for (const item of node) visit(item, undefined);
      return;
    }
    const schema = node as Record<string, unknown>;
    if (KEYWORD in schema) invalid = annotation(schema, path, found);
    for (const [key, value] of Object.entries(schema)) {
      // An `x-mcp-header` key inside data means nothing; inside a name map it names a property.
      if (key === KEYWORD || DATA_KEYWORDS.has(key)) continue;
      const names = NAME_MAP_KEYWORDS.has(key) && typeof value === 'object' && value !== null;
      if (names && !Array.isArray(value)) {
        const through = key === 'properties' && path !== undefined;
        for (const [name, child] of Object.entries(value))
          visit(child, through ? [...path, name] : undefined);
      } else visit(value, undefined);
    }
  };
  visit(inputSchema, []);
  const result: ParamHeaders =
    invalid !== undefined ? { invalid } : found.length === 0 ? NONE : { headers: found };
  parsed.set(inputSchema, result);
  return result;
}

/** Checks one annotated property and records it; the reason it is broken, if it is. */
function annotation(
  schema: Record<string, unknown>,
  path: readonly string[] | undefined,
  found: ParamHeader[],
): string | undefined {
  const name = schema[KEYWORD];
  const where = path === undefined || path.length === 0 ? 'the schema' : `property ${path.join('.')}`;
  if (typeof name !== 'string' || !TOKEN.test(name))
    return `x-mcp-header of ${where} must be a non-empty HTTP token, not ${JSON.stringify(name)}`;
  if (path === undefined || path.length === 0)
    return `x-mcp-header ${JSON.stringify(name)} is on ${path === undefined ? 'a subschema not reached through properties alone' : 'the schema root'}`;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const real = types.filter((t) => t !== 'null');
  if (real.length === 0 || !real.every((t) => typeof t === 'string' && PRIMITIVE.has(t)))
    return `x-mcp-header ${JSON.stringify(name)} is on ${where}, whose type is ${JSON.stringify(schema.type ?? null)}; only string, integer and boolean properties may be mirrored`;
  const lower = name.toLowerCase();
  if (found.some((h) => h.name.toLowerCase() === lower))
    return `x-mcp-header ${JSON.stringify(name)} is used twice (header names ignore case)`;
  found.push({ name, path, integer: real.includes('integer') });
  return undefined;
}

/** The argument at `path`, or undefined when the arguments have nothing there. */
function valueAt(args: unknown, path: readonly string[]): unknown {
  let value = args;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    value = Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
  }
  return value;
}

/** A value as its header states it (before encoding); undefined when it sends no header. */
function headerText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  // Null, absent, or not a value this property may hold (input validation answers for that).
  return undefined;
}

/** The `Mcp-Param-*` headers a call with `args` carries, encoded, as [name, value] pairs. */
export function mirroredHeaders(headers: readonly ParamHeader[], args: unknown): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const header of headers) {
    const text = headerText(valueAt(args, header.path));
    if (text !== undefined) out.push([`Mcp-Param-${header.name}`, encodeHeaderValue(text)]);
  }
  return out;
}

/** Header values the binding allows: visible ASCII, spaces and tabs. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/**
 * Why the `Mcp-Param-*` headers of a call do not vouch for its arguments, or undefined when
 * they do: each mirrored argument present must have its header with the same value (integers
 * compared as numbers), and no header may stand for an argument the body does not have.
 * `header` reads one request header by its lower-case name.
 */
export function paramHeaderMismatch(
  headers: readonly ParamHeader[],
  args: unknown,
  header: (lowerName: string) => string | undefined,
): string | undefined {
  for (const { name, path, integer } of headers) {
    const label = `Mcp-Param-${name}`;
    const expected = headerText(valueAt(args, path));
    const raw = header(`mcp-param-${name.toLowerCase()}`);
    const field = `arguments.${path.join('.')}`;
    if (raw === undefined) {
      if (expected === undefined) continue;
      return `the ${label} header is missing (the body's ${field} is ${JSON.stringify(valueAt(args, path))})`;
    }
    if (!HEADER_VALUE.test(raw)) return `the ${label} header contains characters a header value may not`;
    const sent = decodeHeaderValue(raw);
    if (sent === undefined) return `the ${label} header's Base64 value cannot be decoded`;
    if (expected === undefined)
      return `the ${label} header says ${JSON.stringify(sent)} but the body has no ${field}`;
    // Integers compare as numbers ("42.0" is 42), the binding suggests; a blank is no number.
    const same =
      integer && typeof valueAt(args, path) === 'number'
        ? sent.trim() !== '' && Number(sent) === Number(expected)
        : sent === expected;
    if (!same)
      return `the ${label} header says ${JSON.stringify(sent)} but the body's ${field} is ${JSON.stringify(valueAt(args, path))}`;
  }
  return undefined;
}
