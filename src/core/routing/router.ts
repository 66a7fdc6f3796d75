import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { NamedCatalog } from '../catalog/namedCatalog.js';
import type { ResourceCatalog } from '../catalog/resourceCatalog.js';
import { MethodNotFoundError, NotServingError } from '../errors.js';
import type { HostDialect, HostDialects } from '../host/hostDialect.js';
import type { HostList, HostSession } from '../host/hostSession.js';
import type { ModernHost } from '../host/modernHost.js';
import { truncateForEcho, type JsonRpcNotification, type Params } from '../protocol/jsonRpc.js';
import type { Cancellation } from '../rpc/cancellation.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest, RpcPeer } from '../rpc/peer.js';
import type { ModernInputBridge } from '../tasks/inputBridge.js';
import type { TaskMemory, TaskRouting } from '../tasks/taskRouting.js';
import type { ListKind, Upstream } from '../upstreams/upstream.js';
import type { RouteBoundary } from './boundary.js';
import type { FirstToolCall } from './firstToolCall.js';
import type { HostMethods } from './hostMethods.js';
import type { HostRequests } from './hostRequests.js';
import type { ToolCalls } from './toolCalls.js';
import type { ScopedLists } from './listScope.js';
import type { ToolView } from './toolView.js';
import type { UntilListed } from './untilListed.js';
import type { UpstreamEvents } from './upstreamEvents.js';

/** MCP's code (as the SDK's HTTP server transport uses it) for a request before initialize. */
const SERVER_NOT_INITIALIZED = -32000;

/** One method's handler: answers `request` (or throws a typed error, which the boundary answers). */
type Handler = (request: IncomingRequest) => Promise<void> | void;

/** What a router is made of: one host connection's collaborators, built by `connectHost`. */
export interface RouterParts {
  readonly peer: RpcPeer;
  /** The host's dialect, as the connection's edge (`modern.admit`) classifies it. */
  readonly dialects: HostDialects;
  /** The era gate, and the methods only a modern host has. */
  readonly modern: ModernHost;
  readonly bridge: ModernInputBridge;
  readonly tools: NamedCatalog<Tool>;
  readonly prompts: NamedCatalog<Prompt>;
  readonly resources: ResourceCatalog;
  readonly tasks: TaskRouting;
  readonly hostMethods: HostMethods;
  readonly toolCalls: ToolCalls;
  readonly upstreamEvents: UpstreamEvents;
  readonly hostRequests: HostRequests;
  readonly boundary: RouteBoundary;
  readonly listed: UntilListed;
  /** The task questions held for this host, and whether they go with this connection. */
  readonly taskMemory: { readonly memory: TaskMemory; readonly ownsIt: boolean };
  /** The host's protocol revision became known (its first request of the stateless revision). */
  readonly revisionKnown?: () => void;
  /** What this connection sees of the tool catalogue, when not all of it (see toolView.ts). */
  readonly toolView?: ToolView;
  /** The prompts and resources lists this connection gets (see listScope.ts). */
  readonly lists: ScopedLists;
  /** The gateway's "first tool call answered" event, told of this connection's calls. */
  readonly firstToolCall?: FirstToolCall;
}

/**
 * Routes between the host and the upstreams. Each host method has one handler in a table; every
 * request it routes, in either direction, becomes a `RoutedMessage` and passes the one pipeline;
 * handlers throw typed errors, and one boundary (boundary.ts) turns every error into its wire
 * form. The host's own methods, the tool calls, the upstreams' events and the task status feed
 * each live in a collaborator of their own, which the router is handed, never builds.
 */
export class Router {
  readonly peer: RpcPeer;
  private readonly methods: ReadonlyMap<string, Handler>;
  private closing = false;

  constructor(private readonly parts: RouterParts) {
    this.peer = parts.peer;
    const { tools, tasks, hostMethods: host, toolCalls, toolView, lists, firstToolCall: first } = parts;
    const toolsJson = toolView === undefined ? () => tools.listResultJson() : () => toolView.listJson();
    const callTool: Handler =
      first === undefined
        ? (r) => toolCalls.call(r)
        : (r) => {
            first.watch(r);
            return toolCalls.call(r);
          };
    this.methods = new Map<string, Handler>([
      ['initialize', (r) => host.initialize(r)],
      ['ping', (r) => r.respond(Outcome.of({}))],
      ['tools/list', (r) => host.list(r, 'tools', () => tasks.toolsList(toolsJson()))],
      ['prompts/list', (r) => host.list(r, 'prompts', () => lists.promptsJson())],
      ['resources/list', (r) => host.list(r, 'resources', () => lists.resourcesJson())],
      ['resources/templates/list', (r) => host.list(r, 'resources', () => lists.templatesJson())],
      ['tools/call', callTool],
      ['prompts/get', (r) => host.getPrompt(r)],
      ['resources/read', (r) => host.byUri(r, 'resources/read', r.params?.uri)],
      ['resources/subscribe', (r) => host.byUri(r, 'resources/subscribe', r.params?.uri)],
      ['resources/unsubscribe', (r) => host.byUri(r, 'resources/unsubscribe', r.params?.uri)],
      ['completion/complete', (r) => host.complete(r)],
      ['logging/setLevel', (r) => host.setLogLevel(r)],
      ...tasks.methods(),
      ...parts.modern.methods(),
    ]);
  }

  /** How the host is spoken to, for everything that differs between the protocol eras. */
  get dialect(): HostDialect {
    return this.parts.dialects.current;
  }

  /** What the host told us, and how to ask it something. */
  get host(): HostSession {
    return this.parts.dialects.current.session;
  }

  /**
   * Whether the host's stream is where its last progress and an answer reach it in one read: a
   * host on a byte stream, in a session that lets the gateway ask it things. Not while shutting
   * down, when nothing the host says is waited for.
   */
  confirmsProgress(onStream: boolean): boolean {
    return onStream && !this.closing && this.parts.hostMethods.initialized && this.dialect.asksByRequest;
  }

  /** Whether `requestState` continues a call of this connection that waits for the host's retry. */
  continuesCall(requestState: unknown): boolean {
    return this.parts.bridge.holds(requestState);
  }

  /** Notes that the retry continuing `requestState` reached replica `replica` first (see the bridge). */
  noteContinuedVia(requestState: unknown, replica: string): void {
    this.parts.bridge.noteContinuedVia(requestState, replica);
  }

  /** How long this connection still waits for a host's retry (MRTR), or undefined if it does not. */
  retryWindowMs(): number | undefined {
    return this.parts.bridge.retryWindowMs();
  }

  /** Whether this connection started `server`'s task `taskId` (a question may name it). */
  ownsUpstreamTask(server: string, taskId: string): boolean {
    return this.parts.tasks.ownsTask(server, taskId);
  }

  /** The `inputSchema` of the tool the host knows as `exposed`, if one is listed now. */
  toolInputSchema(exposed: string): unknown {
    return this.parts.tools.resolve(exposed)?.item.inputSchema;
  }

  /** An upstream (re)connected: give it the host's log level. */
  upstreamReady(upstream: Upstream): void {
    this.parts.upstreamEvents.upstreamReady(upstream);
  }

  /** Tells the host a list changed, once it has seen that list (before that it has nothing to refresh). */
  listsChanged(kinds: readonly ListKind[]): void {
    // Requests waiting for a name a server has just listed go now.
    this.parts.listed.listsChanged();
    if (this.closing) return;
    this.dialect.listsChanged(
      new Set(kinds.map((k): HostList => (k === 'resourceTemplates' ? 'resources' : k))),
    );
  }

  /** A notification from an upstream that the host should see. */
  upstreamNotification(upstream: Upstream, notification: JsonRpcNotification): void {
    this.parts.upstreamEvents.upstreamNotification(upstream, notification);
  }

  /** A request an upstream made of the client: routed through the pipeline to the host. */
  upstreamRequest(upstream: Upstream, request: IncomingRequest): void {
    this.parts.upstreamEvents.upstreamRequest(upstream, request);
  }

  /** A question a modern upstream put in an InputRequiredResult, routed to the host. */
  askHostFor(
    server: string,
    method: string,
    params: Params | undefined,
    signal: Cancellation,
    meta?: Params,
  ) {
    return this.parts.hostRequests.ask(server, method, params, signal, meta);
  }

  /** A notification the host sent (its peer hands it here). */
  hostNotification(notification: JsonRpcNotification): void {
    this.parts.upstreamEvents.hostNotification(notification);
  }

  /** Stops taking new requests and waits until every request in flight has been answered. */
  async drain(): Promise<void> {
    this.closing = true;
    // Questions to the host will not be answered now: fail them, so what waits on them ends.
    const shuttingDown = () => new NotServingError('mcp-warden is shutting down');
    this.peer.failOutgoing(shuttingDown);
    // A modern host's are asked in its calls' answers, and wait for a retry that will not come.
    this.parts.bridge.close(shuttingDown());
    // What the host's tasks wait on goes with the connection, unless it outlives it.
    const { memory, ownsIt } = this.parts.taskMemory;
    if (ownsIt) memory.close(shuttingDown());
    this.parts.modern.closeSubscriptions();
    await this.peer.idle();
  }

  /** A request the host sent (its peer hands it here): the edge classifies it, the table answers it. */
  dispatch(request: IncomingRequest): void {
    const { method } = request;
    const { boundary, hostMethods } = this.parts;
    if (request.refused !== undefined)
      return hostMethods.initialized
        ? this.parts.toolCalls.refused(request, request.refused)
        : request.fail(request.refused);
    let modern: boolean;
    const before = this.dialect;
    try {
      modern = this.parts.modern.admit(request);
    } catch (error) {
      return boundary.answerError(request, error);
    }
    if (modern && this.dialect !== before) this.parts.revisionKnown?.();
    // Only ping may come before initialize: until then neither the protocol version nor the
    // host's capabilities are known, and upstreams must be told those when they connect.
    if (!modern && !hostMethods.initialized && method !== 'initialize' && method !== 'ping') {
      request.fail({
        code: SERVER_NOT_INITIALIZED,
        message: `Server not initialized: send initialize before ${truncateForEcho(method)}`,
      });
      return;
    }
    const handler = this.closing ? undefined : this.methods.get(method);
    if (handler === undefined) {
      boundary.answerError(
        request,
        this.closing
          ? new NotServingError('mcp-warden is shutting down')
          : new MethodNotFoundError(`Method not found: mcp-warden does not serve ${truncateForEcho(method)}`),
      );
      return;
    }
    try {
      const handling = handler(request);
      if (handling !== undefined) handling.catch((error: unknown) => boundary.answerError(request, error));
    } catch (error) {
      boundary.answerError(request, error);
    }
  }
}
