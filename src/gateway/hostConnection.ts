import type { ServerConfig, WardenConfig } from '../config/types.js';
import { ContinuedElsewhereError, MalformedAnswerError, PeerRpcError } from '../core/errors.js';
import type { HostSession } from '../core/host/hostSession.js';
import type { Logger } from '../core/logger.js';
import { compose } from '../core/pipeline/compose.js';
import { createForward } from '../core/pipeline/forward.js';
import type { Next, RoutedMessage } from '../core/pipeline/types.js';
import type { Principal } from '../core/principal.js';
import type { JsonRpcErrorObject, Params } from '../core/protocol/jsonRpc.js';
import { fixedRoots } from '../core/routing/clientRequests.js';
import type { Feature } from '../core/routing/feature.js';
import type { Router } from '../core/routing/router.js';
import type { ToolView, ToolViewContext } from '../core/routing/toolView.js';
import { createAuthorize, type SignInRecord } from '../core/routing/authorize.js';
import { connectHost } from '../core/routing/connectHost.js';
import type { FirstToolCall } from '../core/routing/firstToolCall.js';
import type { CancelSignal } from '../core/rpc/cancellation.js';
import type { MessageTransport } from '../core/rpc/transport.js';
import { fulfilInput } from '../core/tasks/fulfilInput.js';
import type { TaskHandles } from '../core/tasks/handles.js';
import type { SharedContinuations } from '../core/tasks/inputBridge.js';
import { StreamTransport } from '../core/transports/streamTransport.js';
import type { PrincipalView } from '../core/upstreams/principalPools.js';
import type { HostAnswer } from '../features/confirmation/stage.js';
import type { UpstreamConnections } from './connections.js';
import { stageObserver } from './features.js';
import { userKey, type Connection, type ConnectOptions, type HostConnections, type Scope } from './hosts.js';

/** What every host connection shares. */
export interface HostConnectionDeps {
  readonly config: WardenConfig;
  readonly logger: Logger;
  readonly version: string;
  readonly hosts: HostConnections;
  readonly upstreams: UpstreamConnections;
  readonly features: readonly Feature[];
  /** Wraps a connection's terminal in the pipeline's stages in force (see `managedPipeline`). */
  readonly pipeline: (terminal: Next) => Next;
  readonly taskHandles: TaskHandles;
  /** Lines for the initialize answer's instructions (servers left out, and why). */
  readonly notes: () => readonly string[];
  /** Why a tool name is unknown when it is in the namespace of a server not served. */
  readonly whyUnknown: (name: string) => string | undefined;
  /** Told when a host's protocol revision is known (the definitions served may change). */
  readonly revisionKnown: () => void;
  /** Records a sign-in's start and end for the principal who signs in (the audit trail). */
  readonly record?: (event: SignInRecord, principal?: Principal) => void;
  /** The servers in force by name, kept current across edits of the config; absent: the config's. */
  readonly serversByName?: ReadonlyMap<string, ServerConfig>;
  /** Continuations of stateless hosts' calls, when replicas share a store. */
  readonly continuations?: SharedContinuations;
  /** Fires once, as the first answer to a tools/call on any connection leaves. */
  readonly firstToolCall: FirstToolCall;
}

/** How long the host may leave what was written to it unread before the log says so. */
const SLOW_HOST_MS = 1000;

/** Makes the connections of the gateway: each its own peer, host session and router over the shared rest. */
export function hostConnections(deps: HostConnectionDeps) {
  const { features } = deps;
  const observe = stageObserver(features);
  /** The stages that record, for calls refused before the pipeline (see the router). */
  const recording = features.flatMap((f) => (f.stage?.name === 'audit' ? [f.stage.run] : []));
  // A call's record is in the audit file before its answer leaves (the writer batches per turn).
  const writing = features.flatMap((f) => (f.beforeHostWrite ? [f.beforeHostWrite] : []));
  const beforeWrite = () => writing.forEach((f) => f());
  const serversByName =
    deps.serversByName ?? new Map(deps.config.servers.map((s): [string, ServerConfig] => [s.name, s]));

  return function connect(
    transport: MessageTransport,
    principal: Principal,
    options: ConnectOptions = {},
  ): Connection {
    const { scope, view } = deps.upstreams.scopeFor(principal);
    if (transport instanceof StreamTransport) {
      if (writing.length > 0) transport.beforeWrite = writing.length === 1 ? writing[0] : beforeWrite;
      watchBackpressure(transport, scope, deps.logger);
    }
    const authorize = createAuthorize({
      upstream: (server) => scope.view.byName.get(server),
      principal: view?.principal,
      ...(deps.record && { record: deps.record }),
      logger: deps.logger,
    });
    const shared = deps.pipeline(forwardOf(scope, () => router, observe, serversByName, authorize));
    const toolView = viewOf(features, {
      tools: scope.catalogs.tools,
      host: () => router.host,
      principal,
      ...(options.profile !== undefined && { profile: options.profile }),
      stateless: options.stateless ?? false,
      toolsChanged: () => router.listsChanged(['tools']),
    });
    const router: Router = connectHost({
      host: transport,
      ...scope.catalogs,
      pool: scope.view,
      pipeline: (message) => {
        const answer = view === undefined ? shared(message) : view.run(message.server, () => shared(message));
        if (message.direction !== 'upstream') return answer;
        const key = userKey(message.server, view);
        deps.hosts.lastUser.set(key, connection);
        return deps.hosts.callsInFlight.track(key, connection, answer);
      },
      // What the gateway answers itself (a call refused at the edge, a host's answers to a task's
      // questions) is recorded, and nothing else: no other stage may judge it.
      record: (message, answer) => compose(recording, answer)(message),
      logger: deps.logger,
      serverInfo: { name: 'mcp-warden', version: deps.version },
      notes: deps.notes,
      // Task handles are sealed to their owner: another host cannot read or cancel them.
      ...(options.taskOwner !== undefined && { taskOwner: options.taskOwner }),
      ...(options.taskMemory !== undefined && { taskMemory: options.taskMemory }),
      taskHandles: deps.taskHandles,
      principal,
      revisionKnown: deps.revisionKnown,
      whyUnknown: deps.whyUnknown,
      ...(toolView !== undefined && { toolView }),
      ...(deps.continuations !== undefined && { continuations: deps.continuations }),
      firstToolCall: deps.firstToolCall,
      // Behind the listener, a server not run per principal is everyone's: tasks stay apart.
      ...(deps.config.listen !== undefined && {
        sharedServer: (server: string) => view === undefined || !view.ownsServer(server),
      }),
    });
    const connection = served(deps, { router, transport, principal, beforeWrite }, scope, view);
    return connection;
  };
}

/** What one connection sees of the tool catalogue: the one feature's view, if one has it. */
function viewOf(features: readonly Feature[], context: ToolViewContext): ToolView | undefined {
  for (const feature of features) {
    const view = feature.toolView?.(context);
    if (view !== undefined) return view;
  }
  return undefined;
}

/** The pipeline's terminal, sending to the upstream (or answering locally what the config fixes). */
function forwardOf(
  scope: Scope,
  router: () => Router,
  observe: Feature['observeStage'],
  serversByName: ReadonlyMap<string, ServerConfig>,
  authorize: Next,
): Next {
  const forward = createForward({
    upstream: (server) => scope.view.byName.get(server),
    host: {
      requestOutcome: (method, params, options, origin) => router().host.ask(method, params, options, origin),
    },
    fulfilInput: (message, outcome, retry) =>
      fulfilInput({
        message,
        outcome,
        retry,
        ask: (method, params) => router().askHostFor(message.server, method, params, message.signal),
      }),
    askHost: (message, method, params) => router().askHostFor(message.server, method, params, message.signal),
    answerLocally: (message) => fixedRoots(message, serversByName),
    authorize,
  });
  if (observe === undefined) return forward;
  return (message) => {
    observe('forward', message);
    return forward(message);
  };
}

/** Registers a connection with the gateway, and the `Connection` that closes it again. */
function served(
  deps: HostConnectionDeps,
  parts: Pick<Connection, 'router' | 'transport' | 'principal' | 'beforeWrite'>,
  scope: Scope,
  view: PrincipalView | undefined,
): Connection {
  const { router, transport } = parts;
  const { hosts } = deps;
  const own = scope !== deps.upstreams.main && view !== undefined;
  const connection: Connection = {
    ...parts,
    continuesCall: (requestState) => router.continuesCall(requestState),
    noteContinuedVia: (requestState, replica) => router.noteContinuedVia(requestState, replica),
    retryWindowMs: () => router.retryWindowMs(),
    toolInputSchema: (name) => router.toolInputSchema(name),
    async close() {
      if (!hosts.all.delete(connection)) return;
      if (own && scope.connections.delete(connection)) view.connections--;
      for (const [key, user] of hosts.lastUser) if (user === connection) hosts.lastUser.delete(key);
      await router.drain();
      await transport.close();
    },
  };
  hosts.all.add(connection);
  if (own) {
    scope.connections.add(connection);
    view.connections++;
  }
  return connection;
}

/**
 * Pauses reading from the upstreams while the host does not read what is written to it. Every
 * answer larger than the pipe fills it for a moment (that is ordinary flow control), so only a
 * host that stays behind for SLOW_HOST_MS is logged, and then its catching up.
 */
function watchBackpressure(transport: StreamTransport, scope: Scope, logger: Logger): void {
  let slow: NodeJS.Timeout | undefined;
  let warned = false;
  transport.onBackpressure = (congested) => {
    for (const upstream of scope.view.upstreams) upstream.setReading(!congested);
    if (congested) {
      slow = setTimeout(() => {
        warned = true;
        logger.warn(
          'the host is not reading what mcp-warden writes; reading from upstreams is paused until it does',
        );
      }, SLOW_HOST_MS).unref();
      return;
    }
    clearTimeout(slow);
    if (!warned) return;
    warned = false;
    logger.warn('the host reads again; reading from upstreams resumes');
  };
}

/**
 * The gateway's own questions to the user (confirmations) go to the host as elicitation: a
 * request of its own to a legacy host, an InputRequiredResult of the call to a modern one.
 */
export function askHost(
  host: HostSession | undefined,
  params: Params,
  signal: CancelSignal,
  call: RoutedMessage,
): Promise<HostAnswer> | undefined {
  const origin = { hostRequest: call.signal };
  if (host === undefined || !host.can('elicitation', origin)) return undefined;
  return host.ask('elicitation/create', params, { signal, ownQuestion: true }, origin).then(
    (outcome): HostAnswer => ({ result: outcome.result }),
    (error: unknown): HostAnswer => {
      if (error instanceof MalformedAnswerError) return { malformed: `${error.what} result` };
      if (error instanceof ContinuedElsewhereError) return { continuedBy: error.by };
      return { error: errorObject(error) };
    },
  );
}

/** The JSON-RPC error object of a failed question to the host. */
function errorObject(error: unknown): JsonRpcErrorObject {
  if (error instanceof PeerRpcError)
    return {
      code: error.rpcCode,
      message: error.message,
      ...(error.data !== undefined && { data: error.data }),
    };
  return { code: -32603, message: error instanceof Error ? error.message : String(error) };
}
