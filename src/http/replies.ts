import type { ServerResponse } from 'node:http';
import type { JsonRpcResponse } from '../core/protocol/jsonRpc.js';
import { RETRY_AFTER_META_KEY } from '../core/rpc/errorsToWire.js';

/**
 * How long a connection lives after an answer sent before its request was read whole (a
 * refusal): long enough for the answer to reach the client, too short to be held open.
 */
const CLOSE_GRACE_MS = 1000;

/** Answers with a JSON body; a request not read whole yet gets its connection closed after it. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  const unread = !res.req.complete;
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    // Answered before its request was read whole (a refusal, a body over the bound): what the
    // client still sends is not read, so the connection ends, rather than being held open by a
    // client that sends its body a byte at a time.
    ...(unread && { Connection: 'close' }),
  });
  res.end(text);
  if (unread) {
    const { socket } = res.req;
    setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
  }
}

/** Answers with a JSON-RPC error that has no request id (the request was not read as one). */
export function sendRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: '2.0', id: null, error: { code, message } });
}

/**
 * The seconds a rate-limited request should wait (see RETRY_AFTER_META_KEY): a refused tool
 * call's result carries them in `_meta`, another request's error in `data`. Such an answer is
 * sent with 429 and Retry-After, as HTTP clients and the proxies before them expect, when no
 * part of its response has been sent yet.
 */
export function retryAfterOf(response: JsonRpcResponse): number | undefined {
  const holder = 'error' in response ? response.error.data : (response.result as { _meta?: unknown })._meta;
  const seconds = (holder as Record<string, unknown> | undefined)?.[RETRY_AFTER_META_KEY];
  return typeof seconds === 'number' ? seconds : undefined;
}
