import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCatalog } from './catalog/toolCatalog.js';
import { HostCancelledError, UnknownToolError } from './errors.js';
import type { Logger } from './logging/logger.js';
import type { Next, ToolCall } from './pipeline/types.js';
import {
  idKey,
  isNotification,
  isRequest,
  RpcErrorCode,
  serializeRawResult,
  type JsonRpcErrorObject,
  type JsonRpcRequest,
  type Params,
  type RequestId,
} from './protocol/jsonRpc.js';
import type { MessageTransport } from './transports/streamTransport.js';
import { rawResultText } from './protocol/rawJson.js';
import type { UpstreamPool } from './upstreams/upstreamPool.js';
import { errorToWire } from './wire/errorsToWire.js';

export interface RouterOptions {
  readonly host: MessageTransport;
  readonly catalog: ToolCatalog;
  readonly pool: UpstreamPool;
  /** The composed pipeline for `tools/call`. */
  readonly callTool: Next;
  readonly logger: Logger;
  readonly serverInfo: { readonly name: string; readonly version: string };
}

interface InFlight {
  readonly controller: AbortController;
  /** The host cancelled: per the spec no response goes back for this request. */
  cancelledByHost: boolean;
}

/**
 * Routes the host's messages: answers initialize, ping and tools/list itself, sends tools/call
 * through the pipeline to the owning upstream, and keeps the host's in-flight requests so
 * cancellations reach them and shutdown can wait for their answers.
 */
export class Router {
  private readonly options: RouterOptions;
  private readonly log: Logger;
  private readonly inFlight = new Map<string | number, InFlight>();
  private readonly handlers = new Set<Promise<void>>();
  private hostHasListed = false;
  private closing = false;

  constructor(options: RouterOptions) {
    this.options = options;
    this.log = options.logger;
  }

  start(): void {
    this.options.host.onmessage = (message) => {
      if (isRequest(message)) {
        const handling = this.handleRequest(message).catch((error: unknown) => {
          this.log.error(`unhandled error answering ${message.method}: ${String(error)}`);
        });
        this.handlers.add(handling);
        void handling.finally(() => this.handlers.delete(handling));
      } else if (isNotification(message)) {
        this.handleNotification(message.method, message.params);
      }
      // Responses from the host answer server→client requests, which we do not send yet.
    };
  }

  /** Tells the host the tool list changed, once it has seen a list (before that it has nothing to refresh). */
  toolsChanged(): void {
    if (this.hostHasListed && !this.closing)
      void this.options.host.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  }

  /** Stops taking new requests and waits until every request in flight has been answered. */
  async drain(): Promise<void> {
    this.closing = true;
    while (this.handlers.size > 0) await Promise.allSettled([...this.handlers]);
  }

  private async handleRequest(request: JsonRpcRequest): Promise<void> {
    const { id, method } = request;
    if (this.closing)
      return this.replyError(id, {
        code: RpcErrorCode.InternalError,
        message: 'mcp-warden is shutting down',
      });
    switch (method) {
      case 'initialize':
        return this.initialize(id, request.params);
      case 'ping':
        return this.options.host.send({ jsonrpc: '2.0', id, result: {} });
      case 'tools/list':
        return this.listTools(id);
      case 'tools/call':
        return this.callTool(id, request.params);
      default:
        return this.replyError(id, {
          code: RpcErrorCode.MethodNotFound,
          message: `Method not found: mcp-warden does not serve ${method}`,
        });
    }
  }

  private handleNotification(method: string, params: Params | undefined): void {
    if (method === 'notifications/cancelled') {
      const requestId = params?.requestId;
      if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
      const entry = this.inFlight.get(idKey(requestId));
      if (entry === undefined) return; // already answered: the spec says to ignore it
      entry.cancelledByHost = true;
      const reason = typeof params?.reason === 'string' ? params.reason : 'no reason given';
      entry.controller.abort(new HostCancelledError(reason));
    }
  }

  private async initialize(id: RequestId, params: Params | undefined): Promise<void> {
    const requested = params?.protocolVersion;
    if (typeof requested !== 'string')
      return this.replyError(id, {
        code: RpcErrorCode.InvalidParams,
        message: 'initialize needs params.protocolVersion',
      });
    // Answer at once: upstreams connect in the background and tools/list waits for them.
    void this.options.pool.start();
    const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(requested)
      ? requested
      : LATEST_PROTOCOL_VERSION;
    return this.options.host.send({
      jsonrpc: '2.0',
      id,
      result: {
        protocolVersion,
        capabilities: { tools: { listChanged: true } },
        serverInfo: this.options.serverInfo,
      },
    });
  }

  private async listTools(id: RequestId): Promise<void> {
    await this.options.pool.start();
    this.hostHasListed = true;
    const host = this.options.host;
    const line = serializeRawResult(id, this.options.catalog.listResultJson());
    return host.sendRaw ? host.sendRaw(line) : host.send(JSON.parse(line));
  }

  private async callTool(id: RequestId, params: Params | undefined): Promise<void> {
    const name = params?.name;
    const args = params?.arguments;
    if (typeof name !== 'string')
      return this.replyError(id, {
        code: RpcErrorCode.InvalidParams,
        message: 'tools/call needs params.name (a string)',
      });
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args)))
      return this.replyError(id, {
        code: RpcErrorCode.InvalidParams,
        message: `tools/call ${name}: params.arguments must be an object`,
      });

    let entry = this.options.catalog.resolve(name);
    if (entry === undefined) {
      // A host that calls before listing may be early: give the upstreams their startup window.
      await this.options.pool.start();
      entry = this.options.catalog.resolve(name);
    }
    if (entry === undefined)
      return this.replyError(id, {
        code: RpcErrorCode.InvalidParams,
        message: new UnknownToolError(name).message,
      });

    const key = idKey(id);
    const inFlight: InFlight = { controller: new AbortController(), cancelledByHost: false };
    this.inFlight.set(key, inFlight);
    const hostMeta = params?._meta as Params | undefined;
    const progressToken = hostMeta?.progressToken;
    let finished = false;
    let meta = hostMeta;
    if (progressToken !== undefined) {
      // The upstream gets our own token (the session's request id); this one stays with us.
      const { progressToken: _t, ...rest } = hostMeta!;
      meta = Object.keys(rest).length > 0 ? rest : undefined;
    }
    const call: ToolCall = {
      exposedName: name,
      server: entry.server,
      tool: entry.tool.name,
      definition: entry.tool,
      arguments: args as Record<string, unknown> | undefined,
      meta,
      signal: inFlight.controller.signal,
      onProgress:
        progressToken === undefined
          ? undefined
          : (p) => {
              // Progress after the result would confuse hosts; the spec ties it to the request's life.
              if (finished) return;
              const { progressToken: _upstreamToken, ...rest } = p;
              void this.options.host.send({
                jsonrpc: '2.0',
                method: 'notifications/progress',
                params: { ...rest, progressToken },
              });
            },
      record: { repairs: [] },
    };
    try {
      const result = await this.options.callTool(call);
      finished = true;
      if (inFlight.cancelledByHost) return;
      // Untouched by the pipeline: forward the upstream's own text (byte for byte, no re-serialising).
      const raw = rawResultText(result);
      const host = this.options.host;
      if (raw !== undefined && host.sendRaw) await host.sendRaw(serializeRawResult(id, raw));
      else await host.send({ jsonrpc: '2.0', id, result: result as Record<string, unknown> });
    } catch (error) {
      finished = true;
      if (inFlight.cancelledByHost) return;
      const outcome = errorToWire(error, this.log);
      if (outcome.kind === 'result') {
        const first = outcome.result.content[0];
        this.log.warn(`tools/call ${name}: ${first?.type === 'text' ? first.text : 'failed'}`);
        await this.options.host.send({
          jsonrpc: '2.0',
          id,
          result: outcome.result as Record<string, unknown>,
        });
      } else {
        await this.replyError(id, outcome.error);
      }
    } finally {
      this.inFlight.delete(key);
    }
  }

  private replyError(id: RequestId, error: JsonRpcErrorObject): Promise<void> {
    return this.options.host.send({ jsonrpc: '2.0', id, error });
  }
}
