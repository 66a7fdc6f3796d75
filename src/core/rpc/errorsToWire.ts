import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  DeniedError,
  PeerRpcError,
  ProtocolError,
  PrincipalLimitError,
  RateLimitedError,
  ResourceNotFoundError,
  WardenError,
  type WardenErrorCode,
} from '../errors.js';
import type { Logger } from '../logger.js';
import { RpcErrorCode, type JsonRpcErrorObject } from '../protocol/jsonRpc.js';

/** `_meta` key on results the gateway made up, so clients can tell them from the upstream's own. */
export const WARDEN_ERROR_META_KEY = 'mcp-warden/error';

export type WireOutcome =
  | { readonly kind: 'result'; readonly result: CallToolResult }
  | { readonly kind: 'error'; readonly error: JsonRpcErrorObject };

/** `_meta` key on a rate-limited tool result: whole seconds until a call may succeed. */
export const RETRY_AFTER_META_KEY = 'mcp-warden/retryAfter';

/** The JSON-RPC error code of a request refused by a per-principal bound or a rate limit. */
export const PRINCIPAL_LIMIT_CODE = -32029;

/**
 * The JSON-RPC error code of a request other than a tool call that was refused on purpose: a
 * policy rule or default denied it, or its confirmation was declined. Distinct from -32603, which
 * says the gateway failed and invites a retry; a denial will be denied again. Its `data` carries
 * `mcp-warden/error: "DENIED"` and, when a rule decided, the rule's id as `rule`.
 */
export const DENIED_CODE = -32030;

/** Errors the model can act on are results with `isError`, per the spec's advice on tool errors. */
const AS_TOOL_RESULT: ReadonlySet<WardenErrorCode> = new Set([
  'UPSTREAM_UNAVAILABLE',
  'UPSTREAM_FAILED',
  'CALL_TIMEOUT',
  'CALL_CANCELLED',
  'QUEUE_FULL',
  'DENIED',
  'TOOL_CHANGED',
  'INVALID_ARGUMENTS',
  // The model can wait and try again; the result says how long.
  'RATE_LIMITED',
]);

/** Our errors that are JSON-RPC errors whatever the method, with their codes. */
const AS_RPC_ERROR: ReadonlyMap<WardenErrorCode, number> = new Map<WardenErrorCode, number>([
  ['UNKNOWN_TOOL', RpcErrorCode.InvalidParams],
  ['UNKNOWN_PROMPT', RpcErrorCode.InvalidParams],
  ['INVALID_PARAMS', RpcErrorCode.InvalidParams],
  ['METHOD_NOT_FOUND', RpcErrorCode.MethodNotFound],
  ['RESOURCE_NOT_FOUND', -32002],
  ['NOT_SERVING', RpcErrorCode.InternalError],
  // Server-defined range: the request was well formed, this principal may not make it now.
  ['PRINCIPAL_LIMIT', PRINCIPAL_LIMIT_CODE],
]);

/**
 * The one place errors become wire messages:
 * - the other side's own JSON-RPC error → passed through unchanged, code and message;
 * - a protocol rule the request broke (eras mixed, a bad envelope) → its revision's code and data;
 * - unknown tool, bad params → JSON-RPC -32602; unknown method → -32601; unknown resource →
 *   -32002 with its URI; shutting down → -32603 saying so;
 * - upstream unavailable or failed, timeout, denial, a tool changed since it was pinned,
 *   arguments that do not match the tool's inputSchema → `isError` result naming the problem;
 * - anything else → -32603 with a generic message; details go to the log only.
 */
export function errorToWire(error: unknown, logger: Logger): WireOutcome {
  if (error instanceof PeerRpcError || error instanceof ProtocolError) {
    const e: JsonRpcErrorObject = { code: error.rpcCode, message: error.message };
    if (error.data !== undefined) e.data = error.data;
    return { kind: 'error', error: e };
  }
  if (error instanceof WardenError && error.expose) {
    const code = AS_RPC_ERROR.get(error.code);
    if (code !== undefined) {
      const e: JsonRpcErrorObject = { code, message: error.message };
      if (error instanceof ResourceNotFoundError) e.data = { uri: error.uri };
      if (error instanceof PrincipalLimitError) e.data = { bound: error.bound, limit: error.limit };
      return { kind: 'error', error: e };
    }
    if (AS_TOOL_RESULT.has(error.code)) {
      return {
        kind: 'result',
        result: {
          content: [{ type: 'text', text: `[mcp-warden] ${error.message}` }],
          isError: true,
          _meta: {
            [WARDEN_ERROR_META_KEY]: error.code,
            ...(error instanceof RateLimitedError && { [RETRY_AFTER_META_KEY]: error.retryAfterSeconds }),
          },
        },
      };
    }
  }
  logger.error(`internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  return {
    kind: 'error',
    error: { code: RpcErrorCode.InternalError, message: 'mcp-warden internal error (see its log)' },
  };
}

/**
 * For requests other than `tools/call`, which have no `isError` result to carry a message: the
 * same mapping, with our own failures as JSON-RPC errors whose message says what happened (they
 * are written for users; unexpected errors still stay in the log). A denial gets `DENIED_CODE`
 * and names its rule in `data`; the other failures -32603.
 */
export function requestErrorToWire(error: unknown, logger: Logger): JsonRpcErrorObject {
  const outcome = errorToWire(error, logger);
  if (outcome.kind === 'error') return outcome.error;
  const first = outcome.result.content[0];
  const message = first?.type === 'text' ? first.text : 'mcp-warden could not complete the request';
  if (error instanceof WardenError && error.code === 'DENIED') {
    const rule = error instanceof DeniedError ? error.ruleId : null;
    return {
      code: DENIED_CODE,
      message,
      data: rule === null ? outcome.result._meta : { ...outcome.result._meta, rule },
    };
  }
  // Well formed, but not now: the same code as a per-principal bound, with when to retry.
  if (error instanceof RateLimitedError)
    return { code: PRINCIPAL_LIMIT_CODE, message, data: outcome.result._meta };
  return { code: RpcErrorCode.InternalError, message, data: outcome.result._meta };
}
