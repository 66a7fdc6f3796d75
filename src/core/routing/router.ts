/*
 * Longer than most modules because it holds the method table with each method's handler, both
 * directions of routing and the one error boundary; the host session, the initialize answer and
 * the client-request rules live beside it.
 */
import { randomUUID } from 'node:crypto';
import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import { ByteParts } from '../../lib/byteParts.js';
import { exposedUiUri, isUiUri, UI_EXTENSION } from '../catalog/appUi.js';
import type { NamedCatalog } from '../catalog/namedCatalog.js';
import type { ResourceCatalog } from '../catalog/resourceCatalog.js';
import {
  HostCancelledError,
  InvalidParamsError,
  MalformedAnswerError,
  MethodNotFoundError,
  NotServingError,
  PeerRpcError,
  ResourceNotFoundError,
  UnknownPromptError,
  UnknownToolError,
  WardenError,
} from '../errors.js';
import { DENIED_CODE, errorToWire, requestErrorToWire } from '../rpc/errorsToWire.js';
import type { Logger } from '../logger.js';
import type { MessageKind, Next, RoutedMessage } from '../pipeline/types.js';
import { answersAs } from '../pipeline/forward.js';
import { derive, routedMessage } from '../pipeline/routedMessage.js';
import { LARGE_LINE_BYTES } from '../transports/lineDecoder.js';
import type { MessageTransport } from '../rpc/transport.js';
import { StreamTransport } from '../transports/streamTransport.js';
import {
  RpcErrorCode,
  truncateForEcho,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type Params,
} from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import { RpcPeer, type IncomingRequest } from '../rpc/peer.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '../protocol/versions.js';
import type { ListKind, Upstream } from '../upstreams/upstream.js';
import type { PoolView } from '../upstreams/upstreamPool.js';
import { TaskMemory, TaskRouting } from '../tasks/taskRouting.js';
import type { TaskHandles } from '../tasks/handles.js';
import type { Principal } from '../principal.js';
import { followsHostRoots } from './clientRequests.js';
import { gatewayCapabilities, mergedInstructions } from '../host/initializeAnswer.js';
import {
  ambiguousName,
  appOrigin,
  appRefusal,
  lookUpTool,
  type AppOrigin,
  type ToolLookup,
} from './toolResolution.js';
import {
  CAPABILITY_FOR,
  InitializedHostSession,
  TASK_FOLLOW_UPS,
  TASKS_LIST,
  type HostList,
  type HostSession,
} from '../host/hostSession.js';
import { ModernHost } from '../host/modernHost.js';
import { ModernInputBridge } from '../tasks/inputBridge.js';
import { envelopeOf } from '../host/answerShape.js';
import { declaresTasks } from '../protocol/taskMessages.js';
import { Cancellation } from '../rpc/cancellation.js';
import { describeError } from '../../lib/describeError.js';

export interface RouterOptions {
  readonly host: MessageTransport;
  readonly tools: NamedCatalog<Tool>;
  readonly prompts: NamedCatalog<Prompt>;
  readonly resources: ResourceCatalog;
  readonly pool: PoolView;
  /** The one pipeline every routed message passes, composed with its terminal. */
  readonly pipeline: Next;
  /**
   * Passes a request the gateway answers without routing it (`answer`) only to the stages that
   * record: a tool call refused before the pipeline (its arguments nest too deep to be judged,
   * an app may not call it), a host's answers to task questions the gateway holds.
   */
  readonly record?: (message: RoutedMessage, answer: () => Promise<Outcome>) => Promise<Outcome>;
  readonly logger: Logger;
  readonly serverInfo: { readonly name: string; readonly version: string };
  /**
   * Lines the host is told in the initialize answer's instructions after the upstreams' own:
   * what a user should know (servers not served, and why), as things stand when it is asked.
   */
  readonly notes?: () => readonly string[];
  /** Whose tasks the host's are (the gateway's session id): task handles are sealed to it. */
  readonly taskOwner?: string;
  /** The process's task handle key (a key of the router's own when absent, as in tests). */
  readonly taskHandles?: TaskHandles;
  /**
   * The task questions held for this host, when they outlive the connection (the stateless
   * requests of one principal share them); the router's own, let go of as it closes, otherwise.
   */
  readonly taskMemory?: TaskMemory;
  /** Who this host connection is; every message it routes carries it (see core/principal.ts). */
  readonly principal?: Principal;
  /**
   * Why a tool name nobody lists may still mean something (its server is blocked, or its config
   * entry is broken), for the error; undefined when nothing is known of it.
   */
  readonly whyUnknown?: (name: string) => string | undefined;
  /** Whether other principals share `server` (see TaskRoutingOptions.sharedServer). */
  readonly sharedServer?: (server: string) => boolean;
  /**
   * The host's protocol revision became known (its initialize, or its first request of the
   * stateless revision): what is served that depends on it may need rebuilding.
   */
  readonly revisionKnown?: () => void;
}

const LIST_CHANGED_METHOD: Readonly<Record<HostList, string>> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
};

/** How long a modern host's call waits for the retry that answers its questions. */
const MRTR_WAIT_MS = 10 * 60_000;
/** Questions waiting for a modern host's answers at once, over all its calls. */
const MAX_PENDING_QUESTIONS = 64;

/** MCP's code (as the SDK's HTTP server transport uses it) for a request before initialize. */
const SERVER_NOT_INITIALIZED = -32000;

/** Upstream notifications passed to the host as they are. */
const FORWARDED_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'notifications/resources/updated',
  // A URL-mode elicitation finished out of band: the host may close what it opened for it.
  'notifications/elicitation/complete',
]);

/** Notifications the gateway keeps from the host on purpose, with the reason it logs. */
const NOT_FORWARDED: ReadonlyMap<string, string> = new Map([
  ['notifications/initialized', 'it concerns the connection between the gateway and that server'],
]);

/** One method's handler: answers `request` (or throws a typed error, which the boundary answers). */
type Handler = (request: IncomingRequest) => Promise<void> | void;

/**
 * Routes between the host and the upstreams. It answers initialize, ping and the merged lists
 * itself; every request it routes, in either direction, becomes a `RoutedMessage` and passes the
 * one pipeline. Each host method has one handler in a table; handlers throw typed errors, and one
 * boundary (`answerError`) turns every error into its wire form.
 */
export class Router {
  private readonly options: RouterOptions;
  private readonly log: Logger;
  readonly peer: RpcPeer;
  private readonly session: InitializedHostSession;
  /** The host's era, and the host of the stateless revision (host/modernHost.ts). */
  readonly modern: ModernHost;
  /** Questions for a modern host, through Multi Round-Trip Requests (tasks/inputBridge.ts). */
  private readonly bridge: ModernInputBridge;
  private readonly methods: ReadonlyMap<string, Handler>;
  private closing = false;
  /** Requests waiting for a name to be listed (see `untilFound`). */
  private readonly waiting = new Set<() => void>();
  /** Until the host's initialize, only ping is served (see `dispatch`). */
  private initialized = false;
  /** The encoded text of each large list last served, by method. */
  private readonly listBytes = new Map<string, { text: string; bytes: ByteParts }>();
  /** Tasks: handles, the tasks/* methods, re-tagging (core/tasks). */
  private readonly tasks: TaskRouting;
  /** The status notification being made for each task a modern host listens for (in order). */
  private readonly taskStates = new Map<string, Promise<void>>();
  /** The questions of the host's tasks the gateway holds (tasks/taskRouting.ts, TaskMemory). */
  private readonly taskMemory: TaskMemory;

  constructor(options: RouterOptions) {
    this.options = options;
    this.log = options.logger;
    this.taskMemory = options.taskMemory ?? new TaskMemory(options.logger);
    this.peer = new RpcPeer({
      transport: options.host,
      errors: {
        remote: (error) => new PeerRpcError(error.code, error.message, error.data),
        failed: (detail, cause) =>
          new WardenError('INTERNAL', `cannot reach the host: ${detail}`, { cause, expose: false }),
        cancelled: (reason) => new HostCancelledError(reason),
        malformed: (method, what) => new MalformedAnswerError(method, what),
      },
      onRequest: (request) => this.dispatch(request),
      onNotification: (notification) => this.hostNotification(notification),
      // A host on a byte stream, in a session that lets the gateway ask it things: the stream is
      // where the last progress and the answer reach the host in one read. Not while shutting
      // down, when nothing the host says is waited for.
      confirmsProgress: () =>
        !this.closing &&
        this.initialized &&
        this.modern.era !== 'modern' &&
        options.host instanceof StreamTransport,
    });
    this.session = new InitializedHostSession(this.peer);
    this.bridge = new ModernInputBridge({
      waitMs: MRTR_WAIT_MS,
      maxPending: MAX_PENDING_QUESTIONS,
      warn: (message) => this.log.warn(message),
      inFlightOn: (server, methods) => options.pool.byName.get(server)?.requestsInFlight(methods) ?? 0,
    });
    this.modern = new ModernHost({
      bridge: this.bridge,
      peer: this.peer,
      upstreams: () => options.pool.upstreams,
      started: () => options.pool.start(),
      introduced: () => answerWindow(options.pool.start()),
      serverInfo: options.serverInfo,
      notes: options.notes ?? (() => []),
      warn: (message) => this.log.warn(message),
      taskInput: this.taskMemory.input,
      subscribeResource: (uri, subscribe, request) => this.streamSubscription(uri, subscribe, request),
      watchTasks: (handles) => this.tasks.watch(handles),
      // A modern server's task may have changed before the stream was there to hear it: the
      // stream starts with where the task stands.
      listening: (handles) => {
        for (const handle of handles) {
          const server = this.tasks.modernServerOf(handle)?.name;
          if (server !== undefined) this.inOrder(handle, server, () => this.tasks.modernServerState(handle));
        }
      },
      unwatchTasks: (handles) => {
        for (const handle of handles) if (!this.modern.listensToTask(handle)) this.tasks.unwatch(handle);
      },
    });
    const { tools, prompts, resources } = options;
    const owner = options.taskOwner ?? randomUUID();
    this.tasks = new TaskRouting({
      owner: () => owner,
      ...(options.taskHandles !== undefined && { handles: options.taskHandles }),
      upstreams: () => options.pool.upstreams,
      route: (request, message, after) => this.route(request, message, after),
      respond: (request, answer, message) =>
        answer.then(
          (outcome) => request.respond(outcome),
          (error: unknown) => this.answerError(request, error, message),
        ),
      ask: (server, method, params, signal, meta) => this.askHostFor(server, method, params, signal, meta),
      ...(options.record !== undefined && { record: options.record }),
      stamp: (server) => ({
        hostEra: this.modern.hostEra,
        upstreamEra: options.pool.byName.get(server)?.era,
        answerAs: answersAs(this.modern.hostEra, options.pool.byName.get(server)?.era),
        host: this.host,
        principal: options.principal,
      }),
      pipeline: options.pipeline,
      logger: options.logger,
      memory: this.taskMemory,
      ...(options.sharedServer !== undefined && { sharedServer: options.sharedServer }),
    });
    this.methods = new Map<string, Handler>([
      ['initialize', (r) => this.initialize(r)],
      ['ping', (r) => r.respond(Outcome.of({}))],
      ['tools/list', (r) => this.list(r, 'tools', () => this.tasks.toolsList(tools.listResultJson()))],
      ['prompts/list', (r) => this.list(r, 'prompts', () => prompts.listResultJson())],
      ['resources/list', (r) => this.list(r, 'resources', () => resources.listResultJson())],
      ['resources/templates/list', (r) => this.list(r, 'resources', () => resources.templatesResultJson())],
      ['tools/call', (r) => this.callTool(r)],
      ['prompts/get', (r) => this.getPrompt(r)],
      ['resources/read', (r) => this.byUri(r, 'resources/read', r.params?.uri)],
      ['resources/subscribe', (r) => this.byUri(r, 'resources/subscribe', r.params?.uri)],
      ['resources/unsubscribe', (r) => this.byUri(r, 'resources/unsubscribe', r.params?.uri)],
      ['completion/complete', (r) => this.complete(r)],
      ['logging/setLevel', (r) => this.setLogLevel(r)],
      ...this.tasks.methods(),
      ...this.modern.methods(),
    ]);
  }

  /** Whether `requestState` continues a call of this connection that waits for the host's retry. */
  continuesCall(requestState: unknown): boolean {
    return this.bridge.holds(requestState);
  }

  /** How long this connection still waits for a host's retry (MRTR), or undefined if it does not. */
  retryWindowMs(): number | undefined {
    return this.bridge.retryWindowMs();
  }

  /** Whether this connection started `server`'s task `taskId` (a question may name it). */
  ownsUpstreamTask(server: string, taskId: string): boolean {
    return this.tasks.ownsTask(server, taskId);
  }

  /** The `inputSchema` of the tool the host knows as `exposed`, if one is listed now. */
  toolInputSchema(exposed: string): unknown {
    return this.options.tools.resolve(exposed)?.item.inputSchema;
  }

  /** What the host told us, and how to ask it something. */
  get host(): HostSession {
    return this.modern.era === 'modern' ? this.modern : this.session;
  }

  /** An upstream (re)connected: give it the host's log level. */
  upstreamReady(upstream: Upstream): void {
    const level = this.session.logLevel;
    if (level !== undefined && upstream.capabilities.logging !== undefined)
      void upstream.request('logging/setLevel', { level }).catch(() => {});
  }

  /** Tells the host a list changed, once it has seen that list (before that it has nothing to refresh). */
  listsChanged(kinds: readonly ListKind[]): void {
    // Requests waiting for a name a server has just listed go now.
    for (const check of [...this.waiting]) check();
    if (this.closing) return;
    const lists = new Set(kinds.map((k): HostList => (k === 'resourceTemplates' ? 'resources' : k)));
    if (this.modern.listsChanged(lists)) return;
    for (const list of lists) if (this.session.hasSeen(list)) this.peer.notify(LIST_CHANGED_METHOD[list]);
  }

  /** A notification from an upstream that the host should see. */
  upstreamNotification(upstream: Upstream, notification: JsonRpcNotification): void {
    const { method, params } = notification;
    if (method === 'notifications/message') {
      if (!this.modern.wantsLog(params?.level)) return;
      // The host sees which server is talking: its name, then the server's own logger.
      const logger = typeof params?.logger === 'string' ? `${upstream.name}/${params.logger}` : upstream.name;
      this.peer.notify(method, { ...params, logger });
      return;
    }
    if (method === 'notifications/tasks/status' && this.modern.era === 'modern') {
      this.taskStatusForModernHost(upstream.name, params);
      return;
    }
    if (method === 'notifications/tasks/status') {
      const status = this.tasks.status(upstream.name, params);
      if (status !== undefined) this.peer.notify(method, status);
      return;
    }
    // A modern server's task status, on a stream the gateway opened for a modern host's stream.
    if (method === 'notifications/tasks' && upstream.era === 'modern' && this.modern.era === 'modern') {
      this.modernTaskStatus(upstream, params);
      return;
    }
    // A modern server's task status, on the stream the gateway opened for a legacy host's task.
    if (method === 'notifications/tasks' && upstream.era === 'modern' && this.modern.era !== 'modern') {
      const status = this.tasks.modernStatus(upstream, params);
      if (status !== undefined) this.peer.notify('notifications/tasks/status', status);
      return;
    }
    if (
      method === 'notifications/resources/updated' &&
      this.modern.resourceUpdated(withExposedUri(upstream.name, params))
    )
      return;
    if (FORWARDED_NOTIFICATIONS.has(method) && this.modern.era !== 'modern') {
      this.peer.notify(method, withExposedUri(upstream.name, params));
      return;
    }
    // Said at info, not debug: a notification the host never gets is a behaviour users ask about.
    const why =
      NOT_FORWARDED.get(method) ??
      (FORWARDED_NOTIFICATIONS.has(method)
        ? 'the host speaks 2026-07-28, which has no such notification outside a subscription'
        : 'mcp-warden does not know this notification');
    this.log.info(`did not forward ${truncated(method)} from ${upstream.name}: ${why}`);
  }

  /**
   * A 2025-11-25 server's task changed: a modern host's streams that listen for it get the task
   * as its `tasks/get` would show it (result, error or questions inlined), one state at a time
   * per task, so they arrive in order.
   */
  private taskStatusForModernHost(server: string, params: Params | undefined): void {
    const taskId = params?.taskId;
    if (typeof taskId !== 'string') return;
    const handle = this.tasks.handleOf(server, taskId);
    if (!this.modern.listensToTask(handle)) return;
    this.inOrder(handle, server, () => this.tasks.modernState(handle, new Cancellation()));
  }

  /** Tells the streams listening for `handle` the state `state` makes, after the ones before it. */
  private inOrder(handle: string, server: string, state: () => Promise<Params | undefined>): void {
    const previous = this.taskStates.get(handle) ?? Promise.resolve();
    const next = previous
      .then(state)
      .then(
        (task) => {
          if (task !== undefined) this.modern.taskStatus(handle, task);
        },
        (error: unknown) =>
          this.log.warn(`could not tell the host the status of a task of ${server}: ${describeError(error)}`),
      )
      .finally(() => {
        if (this.taskStates.get(handle) === next) this.taskStates.delete(handle);
      });
    this.taskStates.set(handle, next);
  }

  /**
   * A 2026-07-28 server's task changed: a modern host's streams that listen for it get the task
   * as its `tasks/get` would show it (its questions the gateway's own), one state at a time per
   * task, so they arrive in order.
   */
  private modernTaskStatus(upstream: Upstream, params: Params | undefined): void {
    const taskId = params?.taskId;
    if (typeof taskId !== 'string') return;
    const handle = this.tasks.handleOf(upstream.name, taskId);
    if (!this.modern.listensToTask(handle)) return;
    this.inOrder(handle, upstream.name, () => this.tasks.modernServerState(handle, params));
  }

  /** A request an upstream made of the client: routed through the pipeline to the host. */
  upstreamRequest(upstream: Upstream, request: IncomingRequest): void {
    if (TASK_FOLLOW_UPS.has(request.method)) {
      try {
        this.tasks.fromUpstream(upstream.name, request);
      } catch (error) {
        this.answerError(request, error);
      }
      return;
    }
    if (request.method === TASKS_LIST) {
      this.tasks
        .listForUpstream(upstream.name, request)
        .catch((error: unknown) => this.answerError(request, error));
      return;
    }
    if (!CAPABILITY_FOR.has(request.method)) {
      this.answerError(request, new MethodNotFoundError(`Method not found: ${request.method}`));
      return;
    }
    const message = this.hostMessage(
      upstream,
      request.method,
      withoutMeta(request.params),
      this.tasks.metaForHost(upstream.name, request.meta),
      request,
      request.id,
    );
    this.route(request, message, (outcome) => this.tasks.answerForUpstream(upstream.name, outcome));
  }

  /**
   * A question a modern upstream put in an InputRequiredResult, for a host that takes requests:
   * routed through the pipeline to the host like the request a legacy server would have sent.
   */
  askHostFor(
    server: string,
    method: string,
    params: Params | undefined,
    signal: Cancellation,
    meta?: Params,
  ): Promise<Outcome> {
    const upstream = this.options.pool.byName.get(server);
    if (upstream === undefined || !CAPABILITY_FOR.has(method))
      return Promise.reject(new MethodNotFoundError(`Method not found: ${method}`));
    return this.options.pipeline(this.hostMessage(upstream, method, params, meta, signal));
  }

  private hostMessage(
    upstream: Upstream,
    method: string,
    params: Params | undefined,
    meta: Params | undefined,
    signal: Cancellation,
    requestId?: RoutedMessage['requestId'],
  ): RoutedMessage {
    return routedMessage({
      kind: method as MessageKind,
      direction: 'host',
      server: upstream.name,
      target: '',
      exposedName: '',
      arguments: params,
      params: method === 'elicitation/create' ? namedQuestion(upstream.name, params) : params,
      meta,
      requestId,
      signal,
      hostEra: this.modern.hostEra,
      upstreamEra: upstream.era,
      host: this.host,
      principal: this.options.principal,
    });
  }

  /**
   * A modern host's `subscriptions/listen` stream wants a resource's updates: its server (one
   * that offers subscriptions, of either era) is subscribed, through the pipeline like a legacy
   * host's resources/subscribe; false when no server can be.
   */
  private async streamSubscription(
    uri: string,
    subscribe: boolean,
    stream: IncomingRequest,
  ): Promise<boolean> {
    const server = this.options.resources.ownerOf(uri);
    const upstream = server === undefined ? undefined : this.options.pool.byName.get(server);
    const offers = (upstream?.capabilities.resources as Params | undefined)?.subscribe === true;
    if (upstream === undefined || !offers) return false;
    const kind = subscribe ? 'resources/subscribe' : 'resources/unsubscribe';
    const message = this.upstreamMessage(stream, kind, upstream.name, uri, uri, {
      params: { uri },
      arguments: { uri },
    });
    // Unsubscribing follows the stream's cancellation, so it gets a signal of its own.
    await this.options.pipeline(subscribe ? message : derive(message, { signal: new Cancellation() }));
    return true;
  }

  /** Stops taking new requests and waits until every request in flight has been answered. */
  async drain(): Promise<void> {
    this.closing = true;
    // Questions to the host will not be answered now: fail them, so what waits on them ends.
    const shuttingDown = () => new NotServingError('mcp-warden is shutting down');
    this.peer.failOutgoing(shuttingDown);
    // What the host's tasks wait on goes with the connection, unless it outlives it.
    if (this.options.taskMemory === undefined) this.taskMemory.close(shuttingDown());
    this.modern.closeSubscriptions();
    await this.peer.idle();
  }

  // -------------------------------------------------------------------------------------------
  // The host's requests

  private dispatch(request: IncomingRequest): void {
    const { method } = request;
    if (request.refused !== undefined) return this.refused(request, request.refused);
    let modern: boolean;
    const wasModern = this.modern.era === 'modern';
    try {
      modern = this.modern.admit(request);
    } catch (error) {
      return this.answerError(request, error);
    }
    if (modern && !wasModern) this.options.revisionKnown?.();
    // Only ping may come before initialize: until then neither the protocol version nor the
    // host's capabilities are known, and upstreams must be told those when they connect.
    if (!modern && !this.initialized && method !== 'initialize' && method !== 'ping') {
      request.fail({
        code: SERVER_NOT_INITIALIZED,
        message: `Server not initialized: send initialize before ${truncateForEcho(method)}`,
      });
      return;
    }
    const handler = this.closing ? undefined : this.methods.get(method);
    if (handler === undefined) {
      this.answerError(
        request,
        this.closing
          ? new NotServingError('mcp-warden is shutting down')
          : new MethodNotFoundError(`Method not found: mcp-warden does not serve ${truncateForEcho(method)}`),
      );
      return;
    }
    try {
      const handling = handler(request);
      if (handling !== undefined) handling.catch((error: unknown) => this.answerError(request, error));
    } catch (error) {
      this.answerError(request, error);
    }
  }

  /**
   * A request the host transport would not deliver whole (params nested too deep): answered
   * with the transport's error. A call of a known tool is recorded first, passing only the stages
   * that record; none of them sees its arguments, which it does not carry.
   */
  private refused(request: IncomingRequest, error: JsonRpcErrorObject): void {
    const name = request.params?.name;
    const entry =
      request.method === 'tools/call' && typeof name === 'string'
        ? this.options.tools.resolve(name)
        : undefined;
    const { record } = this.options;
    if (entry === undefined || record === undefined || !this.initialized) return request.fail(error);
    const message = this.answeredHere(request, {
      kind: 'tools/call',
      server: entry.server,
      target: entry.item.name,
      exposedName: name as string,
      definition: entry.item,
      arguments: undefined,
    });
    record(message, () => Promise.reject(new InvalidParamsError(error.message))).then(
      (outcome) => request.respond(outcome),
      () => request.fail(error),
    );
  }

  private hostNotification(notification: JsonRpcNotification): void {
    if (notification.method === 'notifications/tasks/status') {
      // Only the server that had the host create the task hears of it, under its own handle.
      const routed = this.tasks.hostStatus(notification.params);
      if (routed !== undefined)
        this.options.pool.byName.get(routed.server)?.notify(notification.method, routed.params);
      return;
    }
    if (notification.method === 'notifications/roots/list_changed') {
      // A server whose roots the config fixes (or refuses) is never told about the host's.
      for (const upstream of this.options.pool.upstreams)
        if (followsHostRoots(upstream.config)) upstream.notify(notification.method);
    }
  }

  private async initialize(request: IncomingRequest): Promise<void> {
    const params = request.params;
    const requested = params?.protocolVersion;
    if (typeof requested !== 'string')
      throw new InvalidParamsError('initialize needs params.protocolVersion');
    const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(requested)
      ? requested
      : LATEST_PROTOCOL_VERSION;
    this.session.initialized(params!, protocolVersion);
    if (protocolVersion === BATCHING_VERSION)
      (this.options.host as { acceptBatches?: () => void }).acceptBatches?.();
    this.tasks.hostInitialized(params!.capabilities as Params | undefined);
    this.initialized = true;
    this.options.revisionKnown?.();
    // The upstreams connect declaring what the host can do, so their handshakes start only now.
    // The answer waits for them a short while (fast servers answer within milliseconds), so it
    // can say what they offer and pass on their instructions; never longer, as hosts give up on
    // a slow initialize. A server slower than that joins later, through list_changed, without
    // its instructions or the capabilities only it would have added.
    await answerWindow(this.options.pool.start());
    const { upstreams } = this.options.pool;
    const instructions = mergedInstructions(upstreams, this.options.notes?.() ?? [], (cut) =>
      this.log.warn(cut),
    );
    request.respond(
      Outcome.of({
        protocolVersion,
        capabilities: gatewayCapabilities(upstreams),
        serverInfo: this.options.serverInfo,
        ...(instructions !== undefined && { instructions }),
      }),
    );
  }

  private async list(request: IncomingRequest, list: HostList, json: () => string): Promise<void> {
    await this.options.pool.start();
    this.session.sawList(list);
    const text = json();
    if (text.length < LARGE_LINE_BYTES) return request.respondEncoded(text, undefined);
    // A large list (10,000 tools is megabytes) is encoded once per change, not once per request.
    let cached = this.listBytes.get(request.method);
    if (cached?.text !== text) {
      cached = { text, bytes: ByteParts.of(Buffer.from(text, 'utf8')) };
      this.listBytes.set(request.method, cached);
    }
    request.respondEncoded(text, cached.bytes);
  }

  private async setLogLevel(request: IncomingRequest): Promise<void> {
    const level = request.params?.level;
    if (typeof level !== 'string') throw new InvalidParamsError('logging/setLevel needs params.level');
    this.session.setLogLevel(level);
    await Promise.allSettled(
      this.options.pool.upstreams
        .filter((u) => u.state === 'ready' && u.capabilities.logging !== undefined)
        .map((u) => u.request('logging/setLevel', { level })),
    );
    request.respond(Outcome.of({}));
  }

  /** The hot path: no `async`, one promise continuation per call beyond the pipeline's own. */
  private callTool(request: IncomingRequest): Promise<void> | void {
    const params = request.params;
    const name = params?.name;
    const args = params?.arguments;
    if (typeof name !== 'string') throw new InvalidParamsError('tools/call needs params.name (a string)');
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args)))
      throw new InvalidParamsError(`tools/call ${name}: params.arguments must be an object`);
    // An exposed name, or a server's own name as an MCP App calls it (see toolResolution.ts).
    const meta = request.meta;
    const app = meta === undefined ? undefined : this.appOrigin(meta);
    const found = lookUpTool(this.options.tools, name, app);
    if (found !== undefined) return this.callFound(request, name, found, args as Params | undefined, app);
    return this.callWhenListed(request, name, args as Params | undefined, app);
  }

  /** Which server's MCP App makes a call, as its `_meta` says (see toolResolution.ts). */
  private appOrigin(meta: Params): AppOrigin | undefined {
    return appOrigin(meta, (server) => this.options.pool.byName.has(server));
  }

  /**
   * A call of a tool not listed (yet): waits until it is, or the upstreams' startup window has
   * passed. Apart from `callTool`, so that its closures (and the variables they hold) are made
   * only for such a call, not for every call.
   */
  private callWhenListed(
    request: IncomingRequest,
    name: string,
    args: Params | undefined,
    app: AppOrigin | undefined,
  ): Promise<void> {
    return this.untilFound(() => lookUpTool(this.options.tools, name, app)).then((later) => {
      if (later === undefined)
        return this.unserved(
          request,
          'tools/call',
          name,
          args,
          new UnknownToolError(name, this.options.whyUnknown?.(name)),
        );
      return this.callFound(request, name, later, args, app);
    });
  }

  /** A call whose tool was looked up: resolved before the pipeline, so every stage sees that tool. */
  private callFound(
    request: IncomingRequest,
    name: string,
    found: ToolLookup,
    args: Params | undefined,
    app: AppOrigin | undefined,
  ): void {
    if ('ambiguous' in found) throw ambiguousName(name, found.ambiguous);
    const { entry } = found;
    const refusal = appRefusal(entry, app, this.session.declaresExtension(UI_EXTENSION));
    if (refusal === undefined) return this.runCall(request, entry.exposed, entry, args);
    const { record } = this.options;
    if (record === undefined) throw refusal;
    const message = this.toolMessage(request, entry.exposed, entry, args);
    record(message, () => Promise.reject(refusal)).then(
      (outcome) => request.respond(outcome),
      (error: unknown) => this.answerError(request, error, message),
    );
  }

  /**
   * What `find` finds, as soon as it finds it: at once, or when a list change brings it (a server
   * that became ready), or undefined once the startup window has passed without it. So a request
   * for a server that is ready goes at once, whatever slower servers are doing. Each waiter lives
   * at most until the startup window closes.
   */
  private untilFound<T>(find: () => T | undefined): Promise<T | undefined> {
    const found = find();
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve) => {
      const check = (): void => {
        const now = find();
        if (now === undefined) return;
        this.waiting.delete(check);
        resolve(now);
      };
      this.waiting.add(check);
      void this.options.pool.start().then(() => {
        this.waiting.delete(check);
        resolve(find());
      });
    });
  }

  private runCall(
    request: IncomingRequest,
    name: string,
    entry: { readonly server: string; readonly item: Tool },
    args: Params | undefined,
  ): void {
    const message = this.toolMessage(request, name, entry, args);
    // A modern server may answer a host that declared the tasks extension with a task of its own.
    const modernTask = message.upstreamEra === 'modern' && declaresTasks(envelopeOf(request)?.capabilities);
    if (message.task?.drivenBy !== 'host' && !modernTask) return this.route(request, message);
    // The call's answer is the task, under a handle; the timeout stopped when it came back.
    this.route(request, message, (outcome) => this.tasks.created(message, outcome));
  }

  private toolMessage(
    request: IncomingRequest,
    name: string,
    entry: { readonly server: string; readonly item: Tool },
    args: Params | undefined,
  ): RoutedMessage {
    const task = this.tasks.augmentation(request.params, entry.item, request);
    const upstreamEra = this.options.pool.byName.get(entry.server)?.era;
    return routedMessage({
      kind: 'tools/call',
      direction: 'upstream',
      server: entry.server,
      target: entry.item.name,
      exposedName: name,
      definition: entry.item,
      arguments: args,
      meta: this.tasks.metaForUpstream(entry.server, request.meta),
      requestId: request.id,
      signal: request,
      onProgress: request.onProgress,
      task,
      hostEra: this.modern.hostEra,
      upstreamEra,
      answerAs: answersAs(this.modern.hostEra, upstreamEra),
      host: this.host,
      principal: this.options.principal,
    });
  }

  private async getPrompt(request: IncomingRequest): Promise<void> {
    const params = request.params;
    const name = params?.name;
    if (typeof name !== 'string') throw new InvalidParamsError('prompts/get needs params.name (a string)');
    const entry = await this.resolveNamed(this.options.prompts, name);
    const args =
      typeof params?.arguments === 'object' && params.arguments !== null
        ? (params.arguments as Params)
        : undefined;
    if (entry === undefined)
      return this.unserved(request, 'prompts/get', name, args, new UnknownPromptError(name));
    this.route(
      request,
      this.upstreamMessage(request, 'prompts/get', entry.server, entry.item.name, name, {
        params: { ...forwardedParams(params), name: entry.item.name },
        arguments: args,
      }),
    );
  }

  private async byUri(request: IncomingRequest, kind: MessageKind, uri: unknown, params = request.params) {
    if (typeof uri !== 'string')
      throw new InvalidParamsError(`${request.method} needs params.uri (a string)`);
    await this.options.pool.start();
    const target = this.options.resources.route(uri);
    if (target === undefined)
      return this.unserved(request, kind, uri, forwardedParams(params), new ResourceNotFoundError(uri));
    const { server } = target;
    // An App's namespaced URI goes to its server as the server's own (see appUi.ts).
    const renamed = target.uri !== uri;
    const sent =
      renamed && params?.uri === uri
        ? { ...forwardedParams(params), uri: target.uri }
        : forwardedParams(params);
    this.route(
      request,
      this.upstreamMessage(request, kind, server, target.uri, uri, { params: sent, arguments: sent }),
      renamed ? (outcome) => withContentsUri(outcome, target.uri, uri) : undefined,
    );
  }

  /**
   * A request for a name no server serves, answered with `error`: recorded first (by the stages
   * that record, and no other), so that probing for names shows in the audit trail. Nothing
   * serves it, so the message names no server.
   */
  private unserved(
    request: IncomingRequest,
    kind: MessageKind,
    name: string,
    args: Params | undefined,
    error: Error,
  ): void {
    const { record } = this.options;
    if (record === undefined) return this.answerError(request, error);
    const message = this.answeredHere(request, {
      kind,
      server: '',
      target: name,
      exposedName: name,
      definition: undefined,
      arguments: args,
    });
    record(message, () => Promise.reject(error)).then(
      (outcome) => request.respond(outcome),
      (failure: unknown) => this.answerError(request, failure),
    );
  }

  /** A host's request the gateway answers itself, as the stages that record see it. */
  private answeredHere(
    request: IncomingRequest,
    what: Pick<RoutedMessage, 'kind' | 'server' | 'target' | 'exposedName' | 'definition' | 'arguments'>,
  ): RoutedMessage {
    return routedMessage({
      ...what,
      direction: 'upstream',
      signal: request,
      hostEra: this.modern.hostEra,
      upstreamEra: this.options.pool.byName.get(what.server)?.era,
      host: this.host,
      principal: this.options.principal,
    });
  }

  private async complete(request: IncomingRequest): Promise<void> {
    const params = request.params;
    const ref = params?.ref as Params | undefined;
    const args = params?.argument as Params | undefined;
    if (ref?.type === 'ref/prompt' && typeof ref.name === 'string') {
      const entry = await this.resolveNamed(this.options.prompts, ref.name);
      if (entry === undefined) throw new InvalidParamsError(`Unknown prompt: ${ref.name}`);
      const sent = { ...forwardedParams(params), ref: { ...ref, name: entry.item.name } };
      return this.route(
        request,
        this.upstreamMessage(request, 'completion/complete', entry.server, entry.item.name, ref.name, {
          params: sent,
          arguments: args,
        }),
      );
    }
    if (ref?.type === 'ref/resource') return this.byUri(request, 'completion/complete', ref.uri);
    throw new InvalidParamsError(
      'completion/complete needs params.ref of type ref/prompt (with name) or ref/resource (with uri)',
    );
  }

  /** Looks a name up, waiting (within the startup window) for a server that will list it. */
  private resolveNamed<T extends { name: string }>(catalog: NamedCatalog<T>, name: string) {
    return this.untilFound(() => catalog.resolve(name));
  }

  private upstreamMessage(
    request: IncomingRequest,
    kind: MessageKind,
    server: string,
    target: string,
    exposedName: string,
    what: { readonly params: Params | undefined; readonly arguments: Params | undefined },
  ): RoutedMessage {
    const upstreamEra = this.options.pool.byName.get(server)?.era;
    return routedMessage({
      kind,
      direction: 'upstream',
      server,
      target,
      exposedName,
      arguments: what.arguments,
      params: what.params,
      meta: this.tasks.metaForUpstream(server, request.meta),
      requestId: request.id,
      signal: request,
      onProgress: request.onProgress,
      hostEra: this.modern.hostEra,
      upstreamEra,
      answerAs: answersAs(this.modern.hostEra, upstreamEra),
      host: this.host,
      principal: this.options.principal,
    });
  }

  // -------------------------------------------------------------------------------------------
  // The pipeline and the one error boundary

  /** Sends a routed message through the pipeline and answers its request with what comes back. */
  private route(
    request: IncomingRequest,
    message: RoutedMessage,
    after?: (outcome: Outcome) => Outcome,
  ): void {
    // A modern host's call may be asked questions: the bridge answers it (and its retries).
    if (request.shape !== undefined && this.bridge.applies(request))
      return this.bridge.route(
        request,
        message,
        this.options.pipeline,
        (outcome) => request.respond(after === undefined ? outcome : after(outcome)),
        (error) => this.answerError(request, error, message),
      );
    const answer = this.options.pipeline(message);
    (after === undefined ? answer : answer.then(after)).then(
      (outcome) => request.respond(outcome),
      (error: unknown) => this.answerError(request, error, message),
    );
  }

  /**
   * The one place a failed request is answered. A tool call's failures the model can act on are
   * `isError` results; every other request gets a JSON-RPC error.
   */
  private answerError(request: IncomingRequest, error: unknown, message?: RoutedMessage): void {
    if (request.cancelledByPeer || request.answered) return;
    if (request.method === 'tools/call') {
      const outcome = errorToWire(error, this.log);
      if (outcome.kind === 'error') return request.fail(outcome.error);
      const first = outcome.result.content[0];
      const what = message?.exposedName ?? String(request.params?.name);
      this.log.warn(`tools/call ${what}: ${first?.type === 'text' ? first.text : 'failed'}`);
      return request.respond(Outcome.of(outcome.result));
    }
    const wire = requestErrorToWire(error, this.log);
    if (
      message?.direction === 'host' &&
      (wire.code === RpcErrorCode.InternalError || wire.code === DENIED_CODE)
    )
      this.log.warn(`${request.method} from ${message.server}: ${wire.message}`);
    request.fail(wire);
  }
}

/**
 * An elicitation as the user sees it: its message starts with the name of the server that asks,
 * `[github] …`, since behind one gateway the host can no longer tell its servers apart.
 */
function namedQuestion(server: string, params: Params | undefined): Params | undefined {
  if (params === undefined || typeof params.message !== 'string') return params;
  return { ...params, message: `[${server}] ${params.message}` };
}

/** A request's params without `_meta` (the message carries the sender's meta on its own). */
function withoutMeta(params: Params | undefined): Params | undefined {
  if (params === undefined || !Object.hasOwn(params, '_meta')) return params;
  const { _meta: _ignored, ...rest } = params;
  return rest;
}

/**
 * A host request's params as they go upstream: without `_meta` (sent apart) and without the
 * fields of a multi round-trip retry (`inputResponses`, `requestState`). Those answer questions
 * the gateway asked the host under a state it sealed itself: the upstream never asked them, an
 * upstream's own state never reaches the host, and as that upstream's client the gateway must
 * not send it a state it did not give. Passed on, they would let a host answer a server's
 * question that no policy saw and no audit record holds, and would make a retry differ from the
 * call its state was sealed for.
 */
function forwardedParams(params: Params | undefined): Params | undefined {
  if (
    params === undefined ||
    (!Object.hasOwn(params, '_meta') &&
      !Object.hasOwn(params, 'inputResponses') &&
      !Object.hasOwn(params, 'requestState'))
  )
    return params;
  const { _meta: _m, inputResponses: _i, requestState: _s, ...rest } = params;
  return rest;
}

/** A resources/read result whose contents name `from` (an App's own URI), naming `to` instead. */
function withContentsUri(outcome: Outcome, from: string, to: string): Outcome {
  const contents = outcome.result.contents;
  if (!Array.isArray(contents)) return outcome;
  return outcome.changed({
    ...outcome.result,
    contents: contents.map((c: unknown) =>
      typeof c === 'object' && c !== null && (c as Params).uri === from ? { ...(c as Params), uri: to } : c,
    ),
  });
}

/** A notification about an App's `ui://` resource, naming it as the host knows it. */
function withExposedUri(server: string, params: Params | undefined): Params | undefined {
  const uri = params?.uri;
  return typeof uri === 'string' && isUiUri(uri) ? { ...params, uri: exposedUiUri(server, uri) } : params;
}

/** A name from a peer, cut for a log line (a method name can be megabytes long). */
function truncated(text: string): string {
  return text.length <= 200 ? text : `${text.slice(0, 200)}… (${text.length} characters)`;
}

/**
 * How long the initialize answer (and a modern host's `server/discover`) waits for the upstreams'
 * handshakes, at most (less when the start-up window, `gateway.startupTimeout`, is shorter).
 */
export const INITIALIZE_WAIT_MS = 2000;

/** The one protocol revision in which a host may send JSON-RPC batches. */
const BATCHING_VERSION = '2025-03-26';

/** Settles when `started` does, or after INITIALIZE_WAIT_MS, whichever is first. */
function answerWindow(started: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, INITIALIZE_WAIT_MS)));
  return Promise.race([started, waited]).finally(() => clearTimeout(timer));
}
