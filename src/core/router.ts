import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from './rpc/versions.js';
import type { NamedCatalog } from './catalog/namedCatalog.js';
import type { ResourceCatalog } from './catalog/resourceCatalog.js';
import { formatMs, HostCancelledError, UnknownToolError, WardenError } from './errors.js';
import type { HostRequester } from './hostRequester.js';
import type { Logger } from './logger.js';
import { Cancellation, type CancelSignal } from './rpc/cancellation.js';
import type { ProgressListener } from './upstreams/upstreamSession.js';
import type { CallRecord, Next, ToolCall } from './pipeline/types.js';
import type { Decision } from './pipeline/decision.js';
import { rawResult } from './rpc/rawResult.js';
import {
  idKey,
  truncateForEcho,
  isNotification,
  isRequest,
  isResponse,
  rawResultHead,
  RpcErrorCode,
  serializeRawResult,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type Params,
  type RequestId,
} from './rpc/jsonRpc.js';
import { LARGE_LINE_BYTES } from './transports/lineDecoder.js';
import type { MessageTransport } from './transports/streamTransport.js';
import type { ListKind, RequestAnswer, Upstream } from './upstreams/upstream.js';
import type { UpstreamPool } from './upstreams/upstreamPool.js';
import { errorToWire, requestErrorToWire, RESOURCE_NOT_FOUND } from './errorsToWire.js';

export interface RouterOptions {
  readonly host: MessageTransport;
  readonly tools: NamedCatalog<Tool>;
  readonly prompts: NamedCatalog<Prompt>;
  readonly resources: ResourceCatalog;
  readonly pool: UpstreamPool;
  readonly hostRequests: HostRequester;
  /** The composed pipeline for `tools/call`. */
  readonly callTool: Next;
  /** Bound on routed requests other than `tools/call` (which the pipeline bounds). */
  readonly requestTimeoutMs: number;
  readonly logger: Logger;
  readonly serverInfo: { readonly name: string; readonly version: string };
}

/** What the gateway serves, whatever its upstreams turn out to offer: it answers empty lists itself. */
const SERVER_CAPABILITIES = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { subscribe: true, listChanged: true },
  logging: {},
  completions: {},
} as const;

/** Client capabilities of the host that upstreams may use through us (issue 3). */
const FORWARDED_CLIENT_CAPABILITIES = ['sampling', 'elicitation', 'roots'] as const;

/** Server→client requests and the host capability each needs. */
const HOST_CAPABILITY_FOR: Readonly<Record<string, (typeof FORWARDED_CLIENT_CAPABILITIES)[number]>> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};

/** MCP's code (as the SDK's HTTP server transport uses it) for a request before initialize. */
const SERVER_NOT_INITIALIZED = -32000;
/** Longest error message sent to the host; longer ones are cut, saying how long they were. */
const MAX_ERROR_MESSAGE = 2000;

const LIST_CHANGED_METHOD: Readonly<Record<'tools' | 'prompts' | 'resources', string>> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
};

/**
 * A host request being served: its cancellation (which the host's `notifications/cancelled`
 * and the call's stages trigger), and its re-tagged progress. One object per request.
 */
class HostRequest extends Cancellation {
  /** The host cancelled: per the spec no response goes back for this request. */
  cancelledByHost = false;
  /** Answered: progress that arrives later is not forwarded. */
  finished = false;
  /** The host's `_meta` without its progress token. */
  meta: Params | undefined;
  onProgress: ProgressListener | undefined;

  constructor(readonly key: string | number) {
    super();
  }
}

/**
 * A host's `tools/call`: its HostRequest and the pipeline's ToolCall in one object, the one a
 * call is made of (issue 7). It is its own signal; `onProgress` starts as the HostRequest's
 * re-tagging listener and stages wrap it.
 */
class ToolCallRequest extends HostRequest implements ToolCall {
  readonly signal: Cancellation = this;
  readonly tool: string;
  readonly arguments: Record<string, unknown> | undefined;
  decision?: Decision;
  refused?: WardenError;
  readonly record: CallRecord = { repairs: [] };

  constructor(
    key: string | number,
    readonly id: RequestId,
    readonly exposedName: string,
    readonly server: string,
    readonly definition: Tool,
    args: Record<string, unknown> | undefined,
  ) {
    super(key);
    this.tool = definition.name;
    this.arguments = args;
  }
}

/**
 * Routes the host's messages: answers initialize, ping and the lists itself, sends tools/call
 * through the pipeline, routes every other request to the upstream that owns it, forwards
 * upstreams' requests and notifications to the host, and keeps the host's in-flight requests so
 * cancellations reach them and shutdown can wait for their answers (ARCHITECTURE "The router").
 */
export class Router {
  private readonly options: RouterOptions;
  private readonly log: Logger;
  private readonly inFlight = new Map<string | number, HostRequest>();
  /** Host requests being handled, and what `drain` waits on until none are. */
  private handling = 0;
  private idle: (() => void) | undefined;
  private readonly handled = (): void => {
    if (--this.handling === 0) this.idle?.();
  };
  private readonly failedCall = (error: unknown): void => {
    this.log.error(`unhandled error answering tools/call: ${String(error)}`);
    this.handled();
  };
  /** Upstream requests forwarded to the host, by upstream and its id, to pass on its cancellations. */
  private readonly forwarded = new Map<string, Cancellation>();
  private readonly listed = new Set<'tools' | 'prompts' | 'resources'>();
  private hostCapabilities: Params = {};
  private _hostInfo: { name: string; version: string } | undefined;
  private logLevel: string | undefined;
  private closing = false;
  private initialized = false;

  constructor(options: RouterOptions) {
    this.options = options;
    this.log = options.logger;
  }

  start(): void {
    this.options.host.onmessage = (message) => {
      if (isRequest(message)) {
        this.handling++;
        // tools/call, the hot path, takes no detour through the general dispatch.
        if (message.method === 'tools/call' && !this.closing && this.initialized) {
          this.callTool(message.id, message.params).then(this.handled, this.failedCall);
          return;
        }
        this.handleRequest(message)
          .catch((error: unknown) => {
            this.log.error(`unhandled error answering ${message.method}: ${String(error)}`);
          })
          .then(this.handled, this.handled);
      } else if (isNotification(message)) {
        this.handleNotification(message);
      } else if (isResponse(message)) {
        if (!this.options.hostRequests.handleResponse(message))
          this.log.debug(`ignored a response from the host to an unknown request ${String(message.id)}`);
      }
    };
    this.options.host.onrefused = (request, error) => this.refused(request, error);
  }

  /**
   * A request the host transport would not deliver (params nested too deep): answered with the
   * transport's error; a `tools/call` of a known tool goes to the pipeline marked as refused, so
   * that it is recorded (no stage walks its arguments, which it does not carry).
   */
  private refused(request: JsonRpcRequest, error: JsonRpcErrorObject): void {
    const name = request.params?.name;
    const entry =
      request.method === 'tools/call' && typeof name === 'string'
        ? this.options.tools.resolve(name)
        : undefined;
    if (entry === undefined) return void this.replyError(request.id, error);
    this.handling++;
    const refusal = new WardenError('INVALID_PARAMS', error.message);
    this.runCall(request.id, undefined, name as string, entry, undefined, refusal).then(
      this.handled,
      this.failedCall,
    );
  }

  /** The host as it introduced itself in `initialize` (for the audit trail's "who"). */
  get hostInfo(): { name: string; version: string } | undefined {
    return this._hostInfo;
  }

  /** The client capabilities to declare to upstreams: what the host declared, of those we forward. */
  clientCapabilitiesForUpstreams(): Params {
    const declared: Params = {};
    for (const name of FORWARDED_CLIENT_CAPABILITIES) {
      if (this.hostCapabilities[name] !== undefined) declared[name] = this.hostCapabilities[name];
    }
    return declared;
  }

  /**
   * Asks the host a question through MCP elicitation (confirmations, issue 5); undefined when
   * the host did not declare the capability. Aborting `signal` withdraws the question.
   */
  askHost(params: Params, signal: CancelSignal): Promise<RequestAnswer> | undefined {
    if (this.hostCapabilities.elicitation === undefined) return undefined;
    return this.options.hostRequests.request('elicitation/create', params, signal).answer;
  }

  /** An upstream (re)connected: give it the host's log level. */
  upstreamReady(upstream: Upstream): void {
    if (this.logLevel !== undefined && upstream.capabilities.logging !== undefined)
      void upstream.request('logging/setLevel', { level: this.logLevel }).catch(() => {});
  }

  /** Tells the host a list changed, once it has seen that list (before that it has nothing to refresh). */
  listsChanged(kinds: readonly ListKind[]): void {
    if (this.closing) return;
    const hostKinds = new Set(kinds.map((k) => (k === 'resourceTemplates' ? 'resources' : k)));
    for (const kind of hostKinds) {
      if (this.listed.has(kind))
        void this.options.host.send({ jsonrpc: '2.0', method: LIST_CHANGED_METHOD[kind] });
    }
  }

  /** A notification from an upstream that the host should see. */
  upstreamNotification(upstream: Upstream, notification: JsonRpcNotification): void {
    const { method, params } = notification;
    switch (method) {
      case 'notifications/message': {
        // The host sees which server is talking: its name, then the server's own logger.
        const logger =
          typeof params?.logger === 'string' ? `${upstream.name}/${params.logger}` : upstream.name;
        void this.options.host.send({ jsonrpc: '2.0', method, params: { ...params, logger } });
        return;
      }
      case 'notifications/resources/updated':
        void this.options.host.send({ jsonrpc: '2.0', method, ...(params && { params }) });
        return;
      case 'notifications/cancelled': {
        const requestId = params?.requestId;
        if (typeof requestId === 'string' || typeof requestId === 'number')
          this.forwarded
            .get(`${upstream.name}\u0000${String(idKey(requestId))}`)
            ?.cancel(new Error('cancelled by the server'));
        return;
      }
      default:
        this.log.debug(`did not forward ${method} from ${upstream.name}`);
    }
  }

  /** A request an upstream made of the client: forwarded to the host if it can answer. */
  async upstreamRequest(upstream: Upstream, request: JsonRpcRequest): Promise<RequestAnswer> {
    // Own members only: a method named "constructor" or "__proto__" must not find Object's.
    const capability = Object.hasOwn(HOST_CAPABILITY_FOR, request.method)
      ? HOST_CAPABILITY_FOR[request.method]
      : undefined;
    if (capability === undefined)
      return { error: { code: RpcErrorCode.MethodNotFound, message: `Method not found: ${request.method}` } };
    if (this.hostCapabilities[capability] === undefined)
      return {
        error: {
          code: RpcErrorCode.MethodNotFound,
          message: `the host connected to mcp-warden did not declare the ${capability} capability`,
        },
      };
    const key = `${upstream.name}\u0000${String(idKey(request.id))}`;
    const cancellation = new Cancellation();
    this.forwarded.set(key, cancellation);
    try {
      return await this.options.hostRequests.request(request.method, request.params, cancellation).answer;
    } finally {
      this.forwarded.delete(key);
    }
  }

  /** Stops taking new requests and waits until every request in flight has been answered. */
  async drain(): Promise<void> {
    this.closing = true;
    this.options.hostRequests.failAll('mcp-warden is shutting down');
    if (this.handling > 0) await new Promise<void>((resolve) => (this.idle = resolve));
  }

  private async handleRequest(request: JsonRpcRequest): Promise<void> {
    const { id, method, params } = request;
    if (this.closing)
      return this.replyError(id, {
        code: RpcErrorCode.InternalError,
        message: 'mcp-warden is shutting down',
      });
    // Only ping may come before initialize: until then we know neither the protocol version nor
    // the host's capabilities, which upstreams must be told when they connect.
    if (!this.initialized && method !== 'initialize' && method !== 'ping')
      return this.replyError(id, {
        code: SERVER_NOT_INITIALIZED,
        message: `Server not initialized: send initialize before ${truncateForEcho(method)}`,
      });
    switch (method) {
      case 'initialize':
        return this.initialize(id, params);
      case 'ping':
        return this.options.host.send({ jsonrpc: '2.0', id, result: {} });
      case 'tools/list':
        return this.list(id, method, 'tools', () => this.options.tools.listResultJson());
      case 'prompts/list':
        return this.list(id, method, 'prompts', () => this.options.prompts.listResultJson());
      case 'resources/list':
        return this.list(id, method, 'resources', () => this.options.resources.listResultJson());
      case 'resources/templates/list':
        return this.list(id, method, 'resources', () => this.options.resources.templatesResultJson());
      case 'tools/call':
        return this.callTool(id, params);
      case 'prompts/get':
        return this.routeByName(id, method, params, this.options.prompts, 'prompt');
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return this.routeByUri(id, method, params, params?.uri);
      case 'completion/complete':
        return this.complete(id, params);
      case 'logging/setLevel':
        return this.setLogLevel(id, params);
      default:
        return this.replyError(id, {
          code: RpcErrorCode.MethodNotFound,
          message: `Method not found: mcp-warden does not serve ${truncateForEcho(method)}`,
        });
    }
  }

  private handleNotification(notification: JsonRpcNotification): void {
    const { method, params } = notification;
    if (method === 'notifications/cancelled') {
      const requestId = params?.requestId;
      if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
      const request = this.inFlight.get(idKey(requestId));
      if (request === undefined) return; // already answered: the spec says to ignore it
      request.cancelledByHost = true;
      const reason = typeof params?.reason === 'string' ? params.reason : 'no reason given';
      request.cancel(new HostCancelledError(reason));
    } else if (method === 'notifications/roots/list_changed') {
      for (const upstream of this.options.pool.upstreams) upstream.notify(method);
    }
  }

  private async initialize(id: RequestId, params: Params | undefined): Promise<void> {
    const requested = params?.protocolVersion;
    if (typeof requested !== 'string')
      return this.replyError(id, {
        code: RpcErrorCode.InvalidParams,
        message: 'initialize needs params.protocolVersion',
      });
    this.initialized = true;
    const capabilities = params?.capabilities;
    this.hostCapabilities =
      typeof capabilities === 'object' && capabilities !== null ? (capabilities as Params) : {};
    const info = params?.clientInfo as Params | undefined;
    if (typeof info?.name === 'string')
      this._hostInfo = { name: info.name, version: typeof info.version === 'string' ? info.version : '' };
    // Answer at once: upstreams connect in the background (declaring what the host can do) and
    // the lists wait for them.
    void this.options.pool.start();
    const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(requested)
      ? requested
      : LATEST_PROTOCOL_VERSION;
    return this.options.host.send({
      jsonrpc: '2.0',
      id,
      result: { protocolVersion, capabilities: SERVER_CAPABILITIES, serverInfo: this.options.serverInfo },
    });
  }

  private async list(
    id: RequestId,
    method: string,
    kind: 'tools' | 'prompts' | 'resources',
    json: () => string,
  ): Promise<void> {
    await this.options.pool.start();
    this.listed.add(kind);
    const host = this.options.host;
    const text = json();
    if (host.sendBytes !== undefined && text.length >= LARGE_LINE_BYTES) {
      // A large list (10,000 tools is megabytes) is encoded once per change, not once per request.
      let cached = this.listBytes.get(method);
      if (cached?.text !== text) {
        cached = { text, bytes: Buffer.from(text, 'utf8') };
        this.listBytes.set(method, cached);
      }
      return host.sendBytes(rawResultHead(id), cached.bytes, '}');
    }
    const line = serializeRawResult(id, text);
    return host.sendRaw ? host.sendRaw(line) : host.send(JSON.parse(line));
  }

  /** The encoded text of each large list last served, by method. */
  private readonly listBytes = new Map<string, { text: string; bytes: Buffer }>();

  /** Registers a host request for cancellation and re-tags its progress token (FIELD_NOTES "Timeouts"). */
  private begin<R extends HostRequest>(request: R, params: Params | undefined): R {
    this.inFlight.set(request.key, request);
    const hostMeta = params?._meta as Params | undefined;
    const progressToken = hostMeta?.progressToken;
    request.meta = hostMeta;
    if (progressToken !== undefined) {
      // The upstream gets our own token (its session's request id); the host's stays with us.
      const { progressToken: _t, ...rest } = hostMeta!;
      request.meta = Object.keys(rest).length > 0 ? rest : undefined;
      request.onProgress = (p) => {
        // Progress after the answer would confuse hosts; the spec ties it to the request's life.
        if (request.finished) return;
        const { progressToken: _upstreamToken, ...fields } = p;
        void this.options.host.send({
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: { ...fields, progressToken },
        });
      };
    }
    return request;
  }

  /** The request was answered (or failed): no more progress, and cancellations are ignored. */
  private finish(request: HostRequest): void {
    request.finished = true;
    this.inFlight.delete(request.key);
  }

  private callTool(id: RequestId, params: Params | undefined): Promise<void> {
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
    const entry = this.options.tools.resolve(name);
    if (entry !== undefined) return this.runCall(id, params, name, entry, args);
    // Not listed (yet): give the upstreams their startup window, then look again.
    return this.options.pool.start().then(() => {
      const later = this.options.tools.resolve(name);
      if (later !== undefined) return this.runCall(id, params, name, later, args);
      return this.replyError(id, {
        code: RpcErrorCode.InvalidParams,
        message: new UnknownToolError(name).message,
      });
    });
  }

  private runCall(
    id: RequestId,
    params: Params | undefined,
    name: string,
    entry: { readonly server: string; readonly item: Tool },
    args: unknown,
    refused?: WardenError,
  ): Promise<void> {
    const request = this.begin(
      new ToolCallRequest(
        idKey(id),
        id,
        name,
        entry.server,
        entry.item,
        args as Record<string, unknown> | undefined,
      ),
      params,
    );
    if (refused !== undefined) request.refused = refused;
    return this.options.callTool(request).then(
      (result) => {
        this.finish(request);
        if (!request.cancelledByHost) return this.sent(this.replyResult(request.id, result));
      },
      (error: unknown) => this.callFailed(request, error),
    );
  }

  private callFailed(request: ToolCallRequest, error: unknown): Promise<void> | undefined {
    this.finish(request);
    if (request.cancelledByHost) return;
    const { id } = request;
    const outcome = errorToWire(error, this.log);
    if (outcome.kind === 'error') return this.sent(this.replyError(id, outcome.error));
    const first = outcome.result.content[0];
    this.log.warn(`tools/call ${request.exposedName}: ${first?.type === 'text' ? first.text : 'failed'}`);
    return this.sent(
      this.options.host.send({ jsonrpc: '2.0', id, result: outcome.result as Record<string, unknown> }),
    );
  }

  /**
   * What a `then` handler that replied returns: nothing when the host's sends cannot fail. A
   * promise returned from a handler is adopted, two more microtask turns per call (issue 7).
   */
  private sent(sending: Promise<void>): Promise<void> | undefined {
    return this.options.host.sendNeverRejects === true ? undefined : sending;
  }

  /** Looks a name up, giving upstreams their startup window first if it is not there yet. */
  private async resolveNamed<T extends { name: string }>(catalog: NamedCatalog<T>, name: string) {
    const entry = catalog.resolve(name);
    if (entry !== undefined) return entry;
    await this.options.pool.start();
    return catalog.resolve(name);
  }

  private async routeByName<T extends { name: string }>(
    id: RequestId,
    method: string,
    params: Params | undefined,
    catalog: NamedCatalog<T>,
    what: string,
  ): Promise<void> {
    const name = params?.name;
    if (typeof name !== 'string')
      return this.replyError(id, {
        code: RpcErrorCode.InvalidParams,
        message: `${method} needs params.name (a string)`,
      });
    const entry = await this.resolveNamed(catalog, name);
    if (entry === undefined)
      return this.replyError(id, { code: RpcErrorCode.InvalidParams, message: `Unknown ${what}: ${name}` });
    return this.route(id, entry.server, method, { ...params, name: entry.item.name });
  }

  private async routeByUri(
    id: RequestId,
    method: string,
    params: Params | undefined,
    uri: unknown,
  ): Promise<void> {
    if (typeof uri !== 'string')
      return this.replyError(id, {
        code: RpcErrorCode.InvalidParams,
        message: `${method} needs params.uri (a string)`,
      });
    await this.options.pool.start();
    const server = this.options.resources.ownerOf(uri);
    if (server === undefined)
      return this.replyError(id, {
        code: RESOURCE_NOT_FOUND,
        message: `Resource not found: ${uri}`,
        data: { uri },
      });
    return this.route(id, server, method, params);
  }

  private async complete(id: RequestId, params: Params | undefined): Promise<void> {
    const ref = params?.ref as Params | undefined;
    if (ref?.type === 'ref/prompt' && typeof ref.name === 'string') {
      const entry = await this.resolveNamed(this.options.prompts, ref.name);
      if (entry === undefined)
        return this.replyError(id, {
          code: RpcErrorCode.InvalidParams,
          message: `Unknown prompt: ${ref.name}`,
        });
      return this.route(id, entry.server, 'completion/complete', {
        ...params,
        ref: { ...ref, name: entry.item.name },
      });
    }
    if (ref?.type === 'ref/resource') return this.routeByUri(id, 'completion/complete', params, ref.uri);
    return this.replyError(id, {
      code: RpcErrorCode.InvalidParams,
      message:
        'completion/complete needs params.ref of type ref/prompt (with name) or ref/resource (with uri)',
    });
  }

  private async setLogLevel(id: RequestId, params: Params | undefined): Promise<void> {
    const level = params?.level;
    if (typeof level !== 'string')
      return this.replyError(id, {
        code: RpcErrorCode.InvalidParams,
        message: 'logging/setLevel needs params.level',
      });
    this.logLevel = level;
    await Promise.allSettled(
      this.options.pool.upstreams
        .filter((u) => u.state === 'ready' && u.capabilities.logging !== undefined)
        .map((u) => u.request('logging/setLevel', { level })),
    );
    return this.options.host.send({ jsonrpc: '2.0', id, result: {} });
  }

  /**
   * Sends a request to one upstream under the upstream session's own id, with the host's
   * cancellation, re-tagged progress and a time limit; answers the host with its result.
   */
  private async route(
    id: RequestId,
    server: string,
    method: string,
    params: Params | undefined,
  ): Promise<void> {
    const upstream = this.options.pool.byName.get(server)!;
    const request = this.begin(new HostRequest(idKey(id)), params);
    const limit = this.options.requestTimeoutMs;
    const timer = setTimeout(
      () =>
        request.cancel(
          new WardenError(
            'CALL_TIMEOUT',
            `${method} to server "${server}" got no answer within ${formatMs(limit)}`,
          ),
        ),
      limit,
    );
    const sent: Params | undefined = params === undefined ? undefined : { ...params };
    if (sent !== undefined) {
      if (request.meta === undefined) delete sent._meta;
      else sent._meta = request.meta;
    }
    try {
      const result = await upstream.request(method, sent, {
        signal: request,
        onProgress: request.onProgress,
      });
      if (!request.cancelledByHost) await this.replyResult(id, result);
    } catch (error) {
      if (!request.cancelledByHost) await this.replyError(id, requestErrorToWire(error, this.log));
    } finally {
      clearTimeout(timer);
      this.finish(request);
    }
  }

  private replyResult(id: RequestId, result: object): Promise<void> {
    // Untouched by the gateway: forward the upstream's own text (byte for byte, no re-serialising),
    // and a large one from its own bytes (not encoded again).
    const raw = rawResult(result);
    const host = this.options.host;
    if (raw?.bytes !== undefined && host.sendBytes) return host.sendBytes(rawResultHead(id), raw.bytes, '}');
    if (raw !== undefined && host.sendRaw) return host.sendRaw(serializeRawResult(id, raw.text));
    return host.send({ jsonrpc: '2.0', id, result: result as Record<string, unknown> });
  }

  private replyError(id: RequestId, error: JsonRpcErrorObject): Promise<void> {
    // Messages echo what the host or an upstream sent (a method, a name): never megabytes of it.
    const message = truncateForEcho(error.message, MAX_ERROR_MESSAGE);
    return this.options.host.send({ jsonrpc: '2.0', id, error: { ...error, message } });
  }
}
