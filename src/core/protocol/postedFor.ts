import type { JsonRpcRequest, Params } from './jsonRpc.js';

/**
 * The `_meta` key an HTTP upstream's transport writes into a server's own request (an
 * elicitation, a sampling request, roots/list) that arrived on the SSE stream answering one of
 * our POSTs: the id of the request that POST carried. It ties the question to the call it is
 * part of, which nothing else on the wire does. It is ours alone: the peer reads and removes it
 * before anyone else sees the request, and the transport removes any a server wrote itself.
 */
export const POSTED_FOR = 'io.mcp-warden/postedFor';

/** `request` with `_meta[POSTED_FOR]` set to `id`, or removed when `id` is undefined. */
export function markedPostedFor(request: JsonRpcRequest, id: number | undefined): JsonRpcRequest {
  const { [POSTED_FOR]: _dropped, ...meta } = (request.params?._meta ?? {}) as Params;
  const kept = id === undefined ? meta : { ...meta, [POSTED_FOR]: id };
  const { _meta: _old, ...params } = request.params ?? {};
  const withMeta = Object.keys(kept).length === 0 ? params : { ...params, _meta: kept };
  return { ...request, params: withMeta };
}

/**
 * The id a request's `_meta` says it was posted for, and the request without the key; undefined
 * when it has none (the common case, which costs one property test).
 */
export function takePostedFor(request: JsonRpcRequest): { id: unknown; request: JsonRpcRequest } | undefined {
  const meta = request.params?._meta;
  if (typeof meta !== 'object' || meta === null || !(POSTED_FOR in meta)) return undefined;
  const id = (meta as Params)[POSTED_FOR];
  return { id, request: markedPostedFor(request, undefined) };
}
