import { randomUUID } from 'node:crypto';
import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { NamedCatalog } from '../catalog/namedCatalog.js';
import type { ResourceCatalog } from '../catalog/resourceCatalog.js';
import { HostCancelledError, MalformedAnswerError, PeerRpcError, WardenError } from '../errors.js';
import { HostDialects } from '../host/hostDialect.js';
import { InitializedHostSession } from '../host/hostSession.js';
import { ModernHost } from '../host/modernHost.js';
import type { Logger } from '../logger.js';
import type { Next, RoutedMessage } from '../pipeline/types.js';
import type { Principal } from '../principal.js';
import type { Outcome } from '../rpc/outcome.js';
import { RpcPeer } from '../rpc/peer.js';
import type { MessageTransport } from '../rpc/transport.js';
import type { TaskHandles } from '../tasks/handles.js';
import { ModernInputBridge, type SharedContinuations } from '../tasks/inputBridge.js';
import { TaskMemory, taskRouting } from '../tasks/taskRouting.js';
import { StreamTransport } from '../transports/streamTransport.js';
import type { PoolView } from '../upstreams/upstreamPool.js';
import { AnsweredHere } from './answeredHere.js';
import type { FirstToolCall } from './firstToolCall.js';
import { RouteBoundary } from './boundary.js';
import { answerWindow, HostMethods } from './hostMethods.js';
import { HostRequests } from './hostRequests.js';
import { Router } from './router.js';
import { MessageStamps } from './stamps.js';
import { TaskStatusFeed } from './taskStatusFeed.js';
import { ToolCalls } from './toolCalls.js';
import { ScopedLists } from './listScope.js';
import type { ToolView } from './toolView.js';
import { UntilListed } from './untilListed.js';
import { UpstreamEvents } from './upstreamEvents.js';

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
  /** What this connection sees of the tool catalogue, when not all of it (see toolView.ts). */
  readonly toolView?: ToolView;
  /** Continuations of stateless hosts' calls shared by replicas (see ModernInputBridge). */
  readonly continuations?: SharedContinuations;
  /** The gateway's "first tool call answered" event, which this connection's calls may fire. */
  readonly firstToolCall?: FirstToolCall;
}

/** How long a modern host's call waits for the retry that answers its questions. */
const MRTR_WAIT_MS = 10 * 60_000;
/** Questions waiting for a modern host's answers at once, over all its calls. */
const MAX_PENDING_QUESTIONS = 64;

/**
 * One host connection, wired: its peer, the edge that classifies its era, the host's dialects,
 * and the router's collaborators, each built once here from those below it and handed on. Calls
 * flow one way: from the host's peer into the router, from the router into its collaborators,
 * and from the modern host's streams into the port the router's parts serve (`serveStreams`).
 */
export function connectHost(options: RouterOptions): Router {
  const { pool, pipeline, logger, principal } = options;
  const memory = options.taskMemory ?? new TaskMemory(logger);
  // The peer hands what the host sends to the router, which exists before any message arrives.
  const inbox: { router?: Router } = {};
  // The instructions say how this connection reaches its tools (when not all are listed) before
  // the gateway's notes on the servers.
  const view = options.toolView;
  const notes =
    view === undefined ? options.notes : () => [...view.instructions(), ...(options.notes?.() ?? [])];
  const { peer, session, bridge, modern, dialects } = hostEdge(
    { ...options, ...(notes !== undefined && { notes }) },
    memory,
    inbox,
  );
  const stamps = new MessageStamps({ dialect: () => dialects.current, pool, principal });
  const boundary = new RouteBoundary({ pipeline, bridge, logger });
  const hostRequests = new HostRequests({ pool, pipeline, stamps });
  const owner = options.taskOwner ?? randomUUID();
  const tasks = taskRouting({
    owner: () => owner,
    ...(options.taskHandles !== undefined && { handles: options.taskHandles }),
    upstreams: () => pool.upstreams,
    route: (request, message, after) => boundary.route(request, message, after),
    respond: (request, answer, message) => boundary.respond(request, answer, message),
    ask: (server, method, params, signal, meta) => hostRequests.ask(server, method, params, signal, meta),
    ...(options.record !== undefined && { record: options.record }),
    stamp: (server) => stamps.stamp(server),
    pipeline,
    logger,
    memory,
    dialect: () => dialects.current.tasks,
    ...(options.sharedServer !== undefined && { sharedServer: options.sharedServer }),
  });
  const feed = new TaskStatusFeed({ tasks, modern, peer, logger });
  const listed = new UntilListed(() => pool.start());
  const answeredHere = new AnsweredHere({
    stamps,
    boundary,
    ...(options.record !== undefined && { record: options.record }),
  });
  const parts = { pool, pipeline, session, tasks, boundary, stamps, listed, answeredHere, logger };
  const lists = new ScopedLists(options, () => options.toolView?.scope());
  const hostMethods = new HostMethods({
    ...parts,
    lists,
    prompts: options.prompts,
    resources: options.resources,
    serverInfo: options.serverInfo,
    ...(notes !== undefined && { notes }),
    ...(options.revisionKnown !== undefined && { revisionKnown: options.revisionKnown }),
    acceptBatches: () => (options.host as { acceptBatches?: () => void }).acceptBatches?.(),
  });
  modern.serveStreams({
    subscribeResource: (uri, subscribe, stream) => hostMethods.streamSubscription(uri, subscribe, stream),
    watchTasks: (handles) => tasks.statuses.watch(handles),
    listening: (handles) => feed.listening(handles),
    unwatchTasks: (handles) => feed.unwatch(handles),
  });
  const toolCalls = new ToolCalls({
    ...parts,
    tools: options.tools,
    ...(options.record !== undefined && { record: options.record }),
    ...(options.whyUnknown !== undefined && { whyUnknown: options.whyUnknown }),
    ...(options.toolView !== undefined && { view: options.toolView }),
  });
  const upstreamEvents = new UpstreamEvents({
    ...parts,
    peer,
    dialect: () => dialects.current,
    feed,
    hostRequests,
  });
  return (inbox.router = new Router({
    peer,
    dialects,
    modern,
    bridge,
    tools: options.tools,
    prompts: options.prompts,
    resources: options.resources,
    tasks,
    hostMethods,
    toolCalls,
    upstreamEvents,
    hostRequests,
    boundary,
    listed,
    taskMemory: { memory, ownsIt: options.taskMemory === undefined },
    ...(options.revisionKnown !== undefined && { revisionKnown: options.revisionKnown }),
    ...(options.toolView !== undefined && { toolView: options.toolView }),
    lists,
    ...(options.firstToolCall !== undefined && { firstToolCall: options.firstToolCall }),
  }));
}

/**
 * The edge of one host connection: its peer, the legacy session `initialize` sets up, the modern
 * host that classifies each request's era (and the bridge that asks it within a call), and the
 * dialects that era picks.
 */
function hostEdge(options: RouterOptions, memory: TaskMemory, inbox: { readonly router?: Router }) {
  const { pool, logger } = options;
  const onStream = options.host instanceof StreamTransport;
  const peer: RpcPeer = new RpcPeer({
    transport: options.host,
    errors: {
      remote: (error) => new PeerRpcError(error.code, error.message, error.data),
      failed: (detail, cause) =>
        new WardenError('INTERNAL', `cannot reach the host: ${detail}`, { cause, expose: false }),
      cancelled: (reason) => new HostCancelledError(reason),
      malformed: (method, what) => new MalformedAnswerError(method, what),
    },
    onRequest: (request) => inbox.router!.dispatch(request),
    onNotification: (notification) => inbox.router!.hostNotification(notification),
    confirmsProgress: () => inbox.router!.confirmsProgress(onStream),
  });
  const session = new InitializedHostSession(peer);
  const bridge = new ModernInputBridge({
    waitMs: MRTR_WAIT_MS,
    maxPending: MAX_PENDING_QUESTIONS,
    warn: (message) => logger.warn(message),
    inFlightOn: (server, methods) => pool.byName.get(server)?.requestsInFlight(methods) ?? 0,
    ...(options.continuations !== undefined && { continuations: options.continuations }),
  });
  const modern = new ModernHost({
    bridge,
    peer,
    upstreams: () => pool.upstreams,
    started: () => pool.start(),
    introduced: () => answerWindow(pool),
    serverInfo: options.serverInfo,
    notes: options.notes ?? (() => []),
    warn: (message) => logger.warn(message),
    taskInput: memory.input,
  });
  return { peer, session, bridge, modern, dialects: new HostDialects({ session, modern, peer }) };
}
