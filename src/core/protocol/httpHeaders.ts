/**
 * The headers the 2026-07-28 HTTP binding mirrors from a request's body, shared by the side that
 * writes them (requests to HTTP upstreams) and the side that checks them (the listener).
 */

/** The params key each method's `Mcp-Name` header mirrors; methods not named here send none. */
export const MCP_NAME_PARAM: Readonly<Record<string, 'name' | 'uri'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
};

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';
const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;

/**
 * A value as a header carries it: as it is when it is plain visible ASCII (spaces inside), else
 * Base64 of its UTF-8 between the binding's markers; a plain value that looks like the markers
 * is encoded too, so it cannot be mistaken for an encoded one.
 */
export function encodeHeaderValue(value: string): string {
  const plain =
    /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) &&
    !(value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX));
  return plain
    ? value
    : `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

/** A header value as sent, or decoded from the Base64 form; undefined when that form is broken. */
export function decodeHeaderValue(value: string): string | undefined {
  const encoded = SENTINEL.exec(value);
  if (encoded === null) return value;
  const bytes = Buffer.from(encoded[1]!, 'base64');
  // Node's decoder skips what is not Base64; re-encoding tells a clean value from a mangled one.
  if (bytes.toString('base64').replace(/=+$/, '') !== encoded[1]!.replace(/=+$/, '')) return undefined;
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}
