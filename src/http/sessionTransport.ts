import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EncodedResult } from '../core/rpc/encoded.js';
import { BATCHES_REFUSED, isRequest, isResponse, type JsonRpcMessage } from '../core/protocol/jsonRpc.js';
import { overOwed, oversizeBatch, refusedBatch } from '../core/transports/batches.js';
import type { MessageTransport, OutgoingMessage } from '../core/rpc/transport.js';

/** Over HTTP the host's ids are parsed JSON: strings or numbers. */
type RequestId = string | number;

export interface SessionTransportOptions {
  /** Mints this session's id (sealed, see sessionIds.ts). */
  readonly sessionId: () => string;
  /** The session was set up by the host's initialize (its id is known from now on). */
  readonly onInitialized: (id: string) => void;
  /** The host ended the session (DELETE). */
  readonly onDeleted: () => void;
  /** Runs before each message is handed to the HTTP response (audit records are flushed first). */
  readonly beforeWrite?: () => void;
}

/**
 * One 2025-11-25 Streamable HTTP session, through the SDK's own server transport (it keeps the
 * session's SSE streams, the GET stream and DELETE), adapted to our MessageTransport.
 *
 * Over HTTP, what the gateway sends on its own (a confirmation question, a server's progress or
 * log line) must go on a stream the host is reading. Progress goes with the request it is about
 * (found by its progress token); other messages go on the stream of the request the host sent
 * last that is still open, which is the request they are part of in practice (a confirmation
 * asked during a tool call), else on the GET stream.
 */
export class SessionTransport implements MessageTransport {
  onmessage?: (message: JsonRpcMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly inner: StreamableHTTPServerTransport;
  /** The host's requests not answered yet, in arrival order, with their progress tokens. */
  private readonly open = new Map<RequestId, unknown>();
  private readonly options: SessionTransportOptions;

  constructor(options: SessionTransportOptions) {
    this.options = options;
    this.inner = new StreamableHTTPServerTransport({
      sessionIdGenerator: options.sessionId,
      onsessioninitialized: options.onInitialized,
      onsessionclosed: () => options.onDeleted(),
    });
    this.inner.onmessage = (message) => {
      const ours = message as unknown as JsonRpcMessage;
      // A cancelled request is answered by no one: it is owed nothing any more.
      if ('method' in ours && ours.method === 'notifications/cancelled')
        this.owed.delete((ours.params as { requestId?: RequestId } | undefined)?.requestId as RequestId);
      if (isRequest(ours)) {
        const meta = (ours.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta;
        this.open.set(ours.id as RequestId, meta?.progressToken);
      }
      this.onmessage?.(ours);
    };
    this.inner.onclose = () => this.onclose?.();
    this.inner.onerror = (error) => this.onerror?.(error);
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  /** Ids of the initialize replayed by `restore`, whose answer is kept from the host. */
  private replayed: { readonly id: string; readonly done: () => void } | undefined;

  /**
   * Makes this transport continue session `id`, set up on another replica: the SDK's transport
   * is marked initialized under that id, and the host's initialize (`params`, as the session
   * record kept it) is replayed to the gateway connection, which answers it to no one. Resolves
   * once the connection has taken it; false when the SDK's transport is not the shape this
   * relies on (the session then cannot be continued here).
   */
  async restore(id: string, params: unknown): Promise<boolean> {
    // The SDK has no public way to resume a session: its transport keeps the id and whether it
    // was initialized in fields of its inner web-standard transport.
    const web = (this.inner as unknown as { _webStandardTransport?: Record<string, unknown> })
      ._webStandardTransport;
    if (web === undefined || typeof web['_initialized'] !== 'boolean') return false;
    web['sessionId'] = id;
    web['_initialized'] = true;
    const replayId = `mcp-warden-restore-${id}`;
    await new Promise<void>((resolve) => {
      this.replayed = { id: replayId, done: resolve };
      this.onmessage?.({ jsonrpc: '2.0', id: replayId, method: 'initialize', params } as JsonRpcMessage);
    });
    this.replayed = undefined;
    this.onmessage?.({ jsonrpc: '2.0', method: 'notifications/initialized' } as JsonRpcMessage);
    return true;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  /**
   * Serves one HTTP request of this session; `body` is the parsed POST body. A JSON-RPC batch
   * (an array) is served by the SDK's transport, which answers on the POST's own stream, only
   * when the host negotiated 2025-03-26 and the batch is within `MAX_BATCH_ANSWERS`, with the
   * answers the session's earlier batches are still owed; otherwise it is refused whole with 400,
   * -32600 under each request's id.
   */
  handle(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> {
    if (Array.isArray(body)) {
      const ids = requestIdsOf(body);
      const refusal = this.batches
        ? (oversizeBatch(body.length) ??
          (ids.length === 0 ? undefined : overOwed(this.owed.size, ids.length)))
        : BATCHES_REFUSED;
      if (refusal !== undefined) {
        const text = refusedBatch(ids, [], refusal);
        res.writeHead(400, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
        res.end(text);
        return Promise.resolve();
      }
      for (const id of ids) this.owed.add(id);
    }
    return this.inner.handleRequest(req, res, body);
  }

  /**
   * The requests of this session's open batches not answered yet, over all its POSTs: the bound
   * of `MAX_BATCH_ANSWERS` is the session's, as on stdio, so a host cannot hold any number of
   * answers open by sending many batches at once.
   */
  private readonly owed = new Set<RequestId>();

  /** The host negotiated 2025-03-26, the one revision with JSON-RPC batches: accept them. */
  acceptBatches(): void {
    this.batches = true;
  }
  private batches = false;

  send(outgoing: OutgoingMessage): Promise<void> {
    const message = outgoing instanceof EncodedResult ? outgoing.toMessage() : outgoing;
    if (this.replayed !== undefined && isResponse(message) && message.id === this.replayed.id) {
      this.replayed.done();
      return Promise.resolve();
    }
    this.options.beforeWrite?.();
    if (isResponse(message)) {
      if (message.id !== null) {
        this.open.delete(message.id as RequestId);
        this.owed.delete(message.id as RequestId);
      }
      return this.inner.send(message as unknown as JSONRPCMessage);
    }
    return this.inner.send(message as unknown as JSONRPCMessage, this.related(message));
  }

  private related(message: JsonRpcMessage): { relatedRequestId: RequestId } | undefined {
    if ('method' in message && message.method === 'notifications/progress') {
      const token = (message.params as { progressToken?: unknown } | undefined)?.progressToken;
      for (const [id, progressToken] of this.open)
        if (progressToken !== undefined && progressToken === token) return { relatedRequestId: id };
    }
    let last: RequestId | undefined;
    for (const id of this.open.keys()) last = id;
    return last === undefined ? undefined : { relatedRequestId: last };
  }

  close(): Promise<void> {
    this.open.clear();
    this.owed.clear();
    return this.inner.close();
  }
}

/** The ids of a batch's elements that are requests, for the errors that answer a refused batch. */
function requestIdsOf(batch: readonly unknown[]): RequestId[] {
  const ids: RequestId[] = [];
  for (const element of batch) {
    if (typeof element !== 'object' || element === null) continue;
    const { id, method } = element as { id?: unknown; method?: unknown };
    if (typeof method === 'string' && (typeof id === 'string' || typeof id === 'number')) ids.push(id);
  }
  return ids;
}
