import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { META } from '../core/era/envelope.js';
import type { Logger } from '../core/logger.js';
import type { Principal } from '../core/principal.js';
import { EncodedResult } from '../core/rpc/encoded.js';
import {
  isNotification,
  isResponse,
  RpcErrorCode,
  serializeMessage,
  type JsonRpcMessage,
  type JsonRpcResponse,
} from '../core/rpc/jsonRpc.js';
import type { MessageTransport, OutgoingMessage } from '../core/transports/streamTransport.js';
import type { ServedConnection, StatelessRequest } from './listener.js';

/** The params key each method's `Mcp-Name` header mirrors. */
const NAME_KEY: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
};

/** The revision's code for headers that are missing, malformed or disagree with the body. */
export const HEADER_MISMATCH = -32020;

/**
 * HTTP statuses the stateless revision gives some JSON-RPC errors, so a client (or a balancer)
 * can tell a modern server's refusal from a legacy server's 400/404 without reading the body.
 * Every other answer, errors included, is 200.
 */
const STATUS_FOR_CODE: ReadonlyMap<number, number> = new Map([
  [HEADER_MISMATCH, 400],
  [-32021, 400], // a required client capability is missing
  [-32022, 400], // unsupported protocol version
  [RpcErrorCode.MethodNotFound, 404],
  [RpcErrorCode.InvalidRequest, 400],
  [RpcErrorCode.ParseError, 400],
]);

/** How often a quiet response stream gets an SSE comment, so proxies and clients keep it open. */
const KEEP_ALIVE_MS = 15_000;

/** The Base64 sentinel a header value that is not plain ASCII is carried in. */
const BASE64_SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;

export interface StatelessOptions {
  readonly connect: (transport: MessageTransport, principal: Principal) => ServedConnection;
  readonly logger: Logger;
  /** Comment interval on open response streams (default 15 s). */
  readonly keepAliveMs?: number;
}

/**
 * Serves the stateless revision (2026-07-28) on the HTTP listener: each POST without a session
 * is one host connection of the gateway that lives for that request only, so the same code that
 * serves a modern host on stdio (the era decided by the request's envelope) serves it here, and
 * any replica can answer.
 *
 * The answer is one JSON object, or, once the request has something to say before it (progress,
 * log messages, the notifications of a `subscriptions/listen` stream) and the client accepts it,
 * an SSE stream scoped to the request that ends with the answer. Closing that stream cancels the
 * request. `Mcp-Method`, `Mcp-Name` and `MCP-Protocol-Version`, which let a balancer route
 * without reading the body, must be present and agree with the body, or the request is refused
 * with 400 and HeaderMismatch before anything runs.
 */
export function createStatelessDispatch(
  options: StatelessOptions,
): (request: StatelessRequest) => Promise<void> {
  const keepAliveMs = options.keepAliveMs ?? KEEP_ALIVE_MS;
  return async ({ req, res, body, principal }) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body) || !('method' in body))
      return refuse(
        res,
        RpcErrorCode.InvalidRequest,
        'expected one JSON-RPC request or notification as the body',
      );
    const message = body as JsonRpcMessage & { method: string; id?: unknown; params?: unknown };
    const isRequest = message.id !== undefined;
    // The revision defines header rules for requests only; a notification POST is taken as it is.
    const mismatch = isRequest ? headerMismatch(req.headers, message.method, message.params) : undefined;
    if (mismatch !== undefined) {
      options.logger.warn(`refused a stateless HTTP request: ${mismatch}`);
      return refuse(res, HEADER_MISMATCH, `Header mismatch: ${mismatch}`, message.id);
    }
    const transport = new RequestStreamTransport({
      id: isRequest ? message.id : undefined,
      res,
      acceptsStream: acceptsEventStream(req.headers.accept),
      keepAliveMs,
      logger: options.logger,
    });
    const connection = options.connect(transport, principal);
    // The audit trail is written before any answer leaves, as on every other transport.
    transport.beforeWrite = () => connection.beforeWrite();
    // Closing the response before the answer is how this revision cancels a request: it takes
    // the same path as a cancellation on stdio (upstream calls are cancelled, a listen stream
    // gives back its subscriptions), then the connection ends.
    res.once('close', () => {
      if (isRequest && !transport.hasAnswered)
        transport.onmessage?.({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: message.id, reason: 'the client closed the response stream' },
        } as JsonRpcMessage);
      void connection.close();
    });
    await transport.start();
    transport.onmessage?.(message);
    if (!isRequest) {
      res.writeHead(202).end();
      await connection.close();
      return;
    }
    await transport.answered;
    await connection.close();
  };
}

function acceptsEventStream(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*(text\/event-stream|text\/\*|\*\/\*)\s*(;|,|$)/i.test(accept);
}

/** Why the mirrored headers do not vouch for this request, or undefined when they do. */
function headerMismatch(headers: IncomingHttpHeaders, method: string, params: unknown): string | undefined {
  const meta = (params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const bodyVersion = meta?.[META.protocolVersion];
  const headerVersion = headers['mcp-protocol-version'];
  if (typeof bodyVersion === 'string' && headerVersion === undefined)
    return `the MCP-Protocol-Version header is missing (the body's _meta says ${JSON.stringify(bodyVersion)})`;
  if (typeof bodyVersion === 'string' && headerVersion !== bodyVersion)
    return `the MCP-Protocol-Version header says ${JSON.stringify(headerVersion)} but the body's _meta says ${JSON.stringify(bodyVersion)}`;
  const headerMethod = headers['mcp-method'];
  if (headerMethod === undefined)
    return `the Mcp-Method header is missing (the body's method is ${JSON.stringify(method)})`;
  if (headerMethod !== method)
    return `the Mcp-Method header says ${JSON.stringify(headerMethod)} but the body's method is ${JSON.stringify(method)}`;
  const key = NAME_KEY[method];
  if (key === undefined) return undefined;
  const bodyName = (params as Record<string, unknown> | undefined)?.[key];
  const rawName = headers['mcp-name'];
  if (typeof rawName !== 'string')
    return `the Mcp-Name header is missing (the body's params.${key} is ${JSON.stringify(bodyName)})`;
  const headerName = decodeHeaderValue(rawName);
  if (headerName === undefined) return `the Mcp-Name header's Base64 value cannot be decoded`;
  if (headerName !== bodyName)
    return `the Mcp-Name header says ${JSON.stringify(headerName)} but the body's params.${key} is ${JSON.stringify(bodyName)}`;
  return undefined;
}

/** A header value as sent, or decoded from the revision's Base64 sentinel form. */
function decodeHeaderValue(value: string): string | undefined {
  const encoded = BASE64_SENTINEL.exec(value);
  if (encoded === null) return value;
  const bytes = Buffer.from(encoded[1]!, 'base64');
  // Node's decoder skips what is not Base64; re-encoding tells a clean value from a mangled one.
  if (bytes.toString('base64').replace(/=+$/, '') !== encoded[1]!.replace(/=+$/, '')) return undefined;
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}

function refuse(res: ServerResponse, code: number, message: string, id: unknown = null): void {
  const text = JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: { code, message } });
  res.writeHead(400, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * The connection's side of one request. Its answer ends the HTTP response. Notifications the
 * connection sends before it all concern this request (the connection serves nothing else), so
 * they open an SSE stream when the client accepts one, and are dropped, with a note in the log,
 * when it does not. Requests to the host are never sent this way: a host of this revision is
 * asked through Multi Round-Trip Requests.
 */
class RequestStreamTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  beforeWrite?: () => void;
  readonly answered: Promise<void>;
  private settle!: () => void;
  private streaming = false;
  /** Whether the request's answer has been written (or the response is gone). */
  hasAnswered = false;
  private keepAlive: NodeJS.Timeout | undefined;
  private dropped = 0;

  constructor(
    private readonly options: {
      readonly id: unknown;
      readonly res: ServerResponse;
      readonly acceptsStream: boolean;
      readonly keepAliveMs: number;
      readonly logger: Logger;
    },
  ) {
    this.answered = new Promise((resolve) => (this.settle = resolve));
    options.res.once('close', () => this.finish());
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  send(outgoing: OutgoingMessage): Promise<void> {
    const { res } = this.options;
    if (res.writableEnded) return Promise.resolve();
    if (outgoing instanceof EncodedResult) {
      if (outgoing.id === this.options.id)
        this.answer(`{"jsonrpc":"2.0","id":${JSON.stringify(outgoing.id)},"result":${outgoing.text}}`, 200);
      return Promise.resolve();
    }
    if (isResponse(outgoing)) {
      if (outgoing.id === this.options.id) this.answer(serializeMessage(outgoing), statusOf(outgoing));
      return Promise.resolve();
    }
    if (isNotification(outgoing) && this.options.acceptsStream) {
      this.beforeWrite?.();
      this.open();
      res.write(`event: message\ndata: ${serializeMessage(outgoing)}\n\n`);
    } else this.dropped++;
    return Promise.resolve();
  }

  close(): Promise<void> {
    const { res } = this.options;
    if (this.streaming && !res.writableEnded) res.end();
    this.finish();
    this.onclose?.();
    return Promise.resolve();
  }

  private open(): void {
    if (this.streaming) return;
    this.streaming = true;
    this.options.res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      // Proxies such as nginx would otherwise hold the events back until the stream ends.
      'X-Accel-Buffering': 'no',
    });
    this.keepAlive = setInterval(() => this.options.res.write(':\n\n'), this.options.keepAliveMs);
    this.keepAlive.unref();
  }

  private answer(text: string, status: number): void {
    const { res } = this.options;
    this.beforeWrite?.();
    if (this.streaming) res.end(`event: message\ndata: ${text}\n\n`);
    else {
      res.writeHead(status, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(text),
      });
      res.end(text);
    }
    this.hasAnswered = true;
    this.finish();
  }

  private finish(): void {
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    if (this.dropped > 0) {
      this.options.logger.info(
        `a stateless HTTP request's ${this.dropped} notification(s) were dropped: its client does not accept text/event-stream`,
      );
      this.dropped = 0;
    }
    this.settle();
  }
}

function statusOf(response: JsonRpcResponse): number {
  return 'error' in response ? (STATUS_FOR_CODE.get(response.error.code) ?? 200) : 200;
}
