/**
 * JSON-RPC 2.0 message shapes as the router handles them, and the one place messages are
 * parsed from and serialized to text.
 *
 * These are deliberately looser than the SDK's zod-derived types: the hot path does not
 * schema-parse every message; methods whose
 * payload we must trust are validated where they are handled.
 */
import { topLevelMemberSpan } from '../../lib/json/memberSpan.js';

/**
 * A numeric id whose text `JSON.parse` would change (an integer beyond 2^53). Kept as text so it
 * goes back to the peer exactly as sent.
 */
export class RawId {
  constructor(readonly raw: string) {}
  toString(): string {
    return this.raw;
  }
}

export type RequestId = string | number | RawId;
export type Params = Record<string, unknown>;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: Params;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Params;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: RequestId;
  result: Record<string, unknown>;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface JsonRpcFailure {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** Standard JSON-RPC and MCP error codes we emit. */
export const RpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** The SDK's RequestTimeout; used when a routed non-tool request times out. */
  RequestTimeout: -32001,
} as const;

export function isRequest(m: JsonRpcMessage): m is JsonRpcRequest {
  return 'method' in m && 'id' in m && m.id !== undefined;
}
export function isNotification(m: JsonRpcMessage): m is JsonRpcNotification {
  return 'method' in m && !('id' in m && m.id !== undefined);
}
export function isResponse(m: JsonRpcMessage): m is JsonRpcResponse {
  return !('method' in m) && ('result' in m || 'error' in m);
}

/**
 * Why a line is not a message we serve, and how to answer it: with `code` under `id` (null when
 * the id cannot be read), or, for a batch, one error per element whose id could be read.
 * `answer` is false for what must get no reply (a notification, whose sender waits for nothing).
 */
export interface ParseFailure {
  readonly ok: false;
  readonly reason: string;
  readonly code: number;
  readonly id: RequestId | null;
  readonly answer: boolean;
  /** Set for a batch: the ids of its requests (null where unreadable); empty for an empty batch. */
  readonly batchIds?: readonly (RequestId | null)[];
}

export type ParseOutcome = { ok: true; message: JsonRpcMessage } | ParseFailure;

const BOM = 0xfeff;

/** Why a batch is refused, for a host on any other revision than 2025-03-26 (or before initialize). */
export const BATCHES_REFUSED =
  'JSON-RPC batches are not supported: MCP allows them only in protocol version 2025-03-26, after initialize';

function failure(
  reason: string,
  code: number,
  id: RequestId | null,
  answer = true,
  batchIds?: readonly (RequestId | null)[],
): ParseFailure {
  return batchIds === undefined
    ? { ok: false, reason, code, id, answer }
    : { ok: false, reason, code, id, answer, batchIds };
}

/**
 * The id of a parsed message as it goes back to its sender: a string, or a number exactly as
 * written (a number `JSON.parse` would change, such as 2^53+1 or 1e400, is kept as its text);
 * null when it has none a response could carry (absent, null, a boolean, an object).
 */
function readableId(m: Record<string, unknown>, text: string | undefined): RequestId | null {
  const id = m.id;
  if (typeof id === 'string' || id instanceof RawId) return id;
  if (typeof id !== 'number') return null;
  if (Number.isSafeInteger(id)) return id;
  const span = text === undefined ? null : topLevelMemberSpan(text, 'id');
  return span === null ? (Number.isFinite(id) ? id : null) : new RawId(text!.slice(span[0], span[1]));
}

/** Whether an element of a batch is a request (it expects an answer), and its id. */
function batchElementIds(elements: unknown[]): (RequestId | null)[] {
  const ids: (RequestId | null)[] = [];
  for (const element of elements) {
    if (typeof element !== 'object' || element === null || Array.isArray(element)) {
      ids.push(null);
      continue;
    }
    const m = element as Record<string, unknown>;
    // A notification in a batch gets no answer; anything else (a request, junk) does.
    if (typeof m.method === 'string' && !('id' in m)) continue;
    // Element ids are read from the parsed value: a batch is refused, not served.
    ids.push(readableId(m, undefined));
  }
  return ids;
}

/**
 * Parses one line. Never throws: a line that is not a JSON-RPC 2.0 message is reported with a
 * reason, the error code JSON-RPC gives it (-32700 only when the text is not JSON, -32600 when
 * it is JSON but not a valid request) and the id to answer under, when it can be read. The host
 * gets that answer; a line from an upstream is logged and skipped (servers that print junk must
 * not break anything). A leading byte order mark is ignored.
 */
export function parseMessage(line: string): ParseOutcome {
  const text = line.charCodeAt(0) === BOM ? line.slice(1) : line;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return failure('not JSON', RpcErrorCode.ParseError, null);
  }
  if (typeof value !== 'object' || value === null)
    return failure('not an object', RpcErrorCode.InvalidRequest, null);
  if (Array.isArray(value)) {
    // JSON-RPC batches were allowed in MCP 2025-03-26 only: a host transport that negotiated that
    // revision serves them itself (see transports/batches.ts); everywhere else they are refused.
    const reason = BATCHES_REFUSED;
    return failure(reason, RpcErrorCode.InvalidRequest, null, true, batchElementIds(value));
  }
  const m = value as Record<string, unknown>;
  const hasId = 'id' in m && m.id !== undefined;
  const id = m.id;
  if (typeof id === 'number' && !Number.isSafeInteger(id)) {
    const span = topLevelMemberSpan(text, 'id');
    if (span !== null) m.id = new RawId(text.slice(span[0], span[1]));
  }
  const isNotification = typeof m.method === 'string' && !hasId;
  const invalid = (reason: string, code: number = RpcErrorCode.InvalidRequest) =>
    failure(reason, code, readableId(m, text), !isNotification);
  if (m.jsonrpc !== '2.0') return invalid('missing "jsonrpc": "2.0"');
  if (hasId && typeof m.id !== 'string' && typeof m.id !== 'number' && !(m.id instanceof RawId)) {
    // JSON-RPC allows a null id only in an answer to a request whose id could not be read.
    if (m.id !== null || 'method' in m) return invalid('id must be a string or a number');
  }
  if ('method' in m) {
    if (typeof m.method !== 'string') return invalid('method must be a string');
    if (m.params !== undefined) {
      if (Array.isArray(m.params)) return invalid('params must be an object', RpcErrorCode.InvalidParams);
      if (typeof m.params !== 'object' || m.params === null) return invalid('params must be an object');
    }
  } else if (!('result' in m) && !('error' in m)) {
    return invalid('neither a request, a notification nor a response');
  }
  return { ok: true, message: m as unknown as JsonRpcMessage };
}

/**
 * The error answer(s) to a line that failed to parse, as one line of text; undefined when none
 * is due (a notification, or a batch of notifications only).
 */
export function invalidMessageReply(parsed: ParseFailure): string | undefined {
  if (!parsed.answer) return undefined;
  const error = { code: parsed.code, message: `Invalid message: ${parsed.reason}` };
  if (parsed.code === RpcErrorCode.ParseError) error.message = `Parse error: ${parsed.reason}`;
  const { batchIds } = parsed;
  if (batchIds === undefined) return serializeMessage({ jsonrpc: '2.0', id: parsed.id, error });
  // An empty batch gets one error; otherwise one per element that expects an answer.
  if (batchIds.length === 0) return serializeMessage({ jsonrpc: '2.0', id: null, error });
  return `[${batchIds.map((id) => serializeMessage({ jsonrpc: '2.0', id, error })).join(',')}]`;
}

/**
 * How deeply the host's messages may nest objects and arrays. Far beyond what any tool's
 * arguments need, and far below what would exhaust the stack of the code that walks them
 * (serializing, redacting, validating): `JSON.stringify` alone fails at a few thousand levels.
 */
export const HOST_MAX_DEPTH = 256;

/**
 * Whether the JSON text nests objects and arrays deeper than `limit`; stops at the first level
 * past it. Short strings are stepped through in the loop; a long one is skipped with `indexOf`,
 * so a large string value costs little. Only meant for text `JSON.parse` accepted.
 */
export function nestingExceeds(text: string, limit: number): boolean {
  // Nesting past `limit` takes more than `limit` opening brackets, and as many closing ones (the
  // text parsed). Most messages have a handful, and counting them with `indexOf` is far cheaper
  // than stepping through every character (the scan was the largest part of what a 2026-07-28
  // request's envelope cost, measured).
  if (text.length < 2 * (limit + 1)) return false;
  if (countUpTo(text, '{', limit, countUpTo(text, '[', limit, 0)) <= limit) return false;
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = ++i;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === QUOTE) break;
        if (d === BACKSLASH) i++;
        else if (i - start > SHORT_STRING) {
          i = closingQuote(text, i);
          if (i === -1) return false;
          break;
        }
        i++;
      }
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}

/** `count` plus how many times `char` occurs in `text`, counting no further than `limit + 1`. */
function countUpTo(text: string, char: string, limit: number, count: number): number {
  for (let i = text.indexOf(char); i !== -1 && count <= limit; i = text.indexOf(char, i + 1)) count++;
  return count;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Past this many characters into a string, the scan jumps to its end with `indexOf`. */
const SHORT_STRING = 32;

/** The index of the quote that closes the string `from` is inside: one not escaped by a backslash. */
function closingQuote(text: string, from: number): number {
  let end = text.indexOf('"', from);
  while (end !== -1) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return -1;
}

/** A string from a peer, shortened for echoing back in an error or a log line. */
export function truncateForEcho(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`;
}

const RAW_ID_PLACEHOLDER = '\u0000warden:raw-id\u0000';
const RAW_ID_TOKEN = JSON.stringify(RAW_ID_PLACEHOLDER);

/**
 * A request of ours, as the rpc peer sends it: its members are always these, in this order, with
 * an integer id, so its line is written from its parts (only the params go through
 * `JSON.stringify`), the same text `JSON.stringify` gives for the whole message, as a transport
 * that sends values writes it (the HTTP upstream's size bound reads the id from that text).
 * Fields declared one by one, not as constructor parameters: those would be defined first, and
 * `jsonrpc` would then come last in the value's JSON.
 */
export class OwnRequest implements JsonRpcRequest {
  readonly jsonrpc = '2.0';
  readonly id: number;
  readonly method: string;
  readonly params: Params | undefined;

  constructor(id: number, method: string, params: Params | undefined) {
    this.id = id;
    this.method = method;
    this.params = params;
  }
}

/**
 * A request the gateway asks on its own behalf (a confirmation), not one it passes on from a
 * server. Its class is the mark: a transport that treats the two differently (one whose calls
 * another replica can take over records only these) needs nothing added to the wire, and the
 * mark cannot be lost by a stage copying the params.
 */
export class OwnQuestion extends OwnRequest {}

/** The last method written and its JSON text: a connection sends the same method again and again. */
let lastMethod = '';
let lastMethodText = '""';

function ownRequestText(request: OwnRequest): string {
  const { method, params } = request;
  if (method !== lastMethod) {
    lastMethodText = JSON.stringify(method);
    lastMethod = method;
  }
  const head = `{"jsonrpc":"2.0","id":${request.id},"method":${lastMethodText}`;
  return params === undefined ? `${head}}` : `${head},"params":${JSON.stringify(params)}}`;
}

/** Serializes one message to a line (without the newline). */
export function serializeMessage(message: JsonRpcMessage): string {
  if (message instanceof OwnRequest) return ownRequestText(message);
  const id = 'id' in message ? message.id : undefined;
  if (!(id instanceof RawId)) return JSON.stringify(message);
  // The id goes first so the placeholder we replace is the one we put there, whatever the payload holds.
  const { id: _id, ...rest } = message as unknown as { id: RawId } & Record<string, unknown>;
  const text = JSON.stringify({ id: RAW_ID_PLACEHOLDER, ...rest });
  return `{"id":${id.raw}${text.slice(1 + '"id":'.length + RAW_ID_TOKEN.length)}`;
}

/** Turns a RawId back into a plain id for places that need a Map key. */
export function idKey(id: RequestId): string | number {
  // The NUL keeps it apart from any string id a peer could send.
  return id instanceof RawId ? `\u0000raw:${id.raw}` : id;
}

/** The text of an id as it goes on the wire. */
export function idText(id: RequestId): string {
  // An integer reads the same in JSON as in JavaScript; only a string needs quoting (and escaping).
  if (typeof id === 'number' && Number.isSafeInteger(id)) return String(id);
  return id instanceof RawId ? id.raw : JSON.stringify(id);
}

/** A success response around a result that is already JSON text (cached lists, unchanged results). */
export function serializeRawResult(id: RequestId, resultJson: string): string {
  return `${rawResultHead(id)}${resultJson}}`;
}

/** What goes before a result's own JSON in a response (after it: `}`). */
export function rawResultHead(id: RequestId): string {
  return `{"jsonrpc":"2.0","id":${idText(id)},"result":`;
}
