import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { UI_EXTENSION } from '../catalog/appUi.js';
import type { NamedCatalog } from '../catalog/namedCatalog.js';
import { InvalidParamsError, UnknownToolError } from '../errors.js';
import { envelopeOf } from '../host/answerShape.js';
import type { InitializedHostSession } from '../host/hostSession.js';
import { routedMessage } from '../pipeline/routedMessage.js';
import type { RoutedMessage } from '../pipeline/types.js';
import type { JsonRpcErrorObject, Params } from '../protocol/jsonRpc.js';
import { declaresTasks } from '../protocol/taskMessages.js';
import type { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import type { TaskRouting } from '../tasks/taskRouting.js';
import type { Upstream, UpstreamState } from '../upstreams/upstream.js';
import type { PoolView } from '../upstreams/upstreamPool.js';
import type { AnsweredHere } from './answeredHere.js';
import type { RouteBoundary } from './boundary.js';
import type { MessageStamps } from './stamps.js';
import {
  ambiguousName,
  appOrigin,
  appRefusal,
  lookUpTool,
  type AppOrigin,
  type ToolLookup,
} from './toolResolution.js';
import type { ToolView, ViewedCall } from './toolView.js';
import type { UntilListed } from './untilListed.js';
import { AUTHORIZE_TOOL } from '../upstreams/signIn.js';

export interface ToolCallsOptions {
  readonly tools: NamedCatalog<Tool>;
  readonly pool: PoolView;
  /** The legacy session: whether the host declared MCP Apps (see toolResolution.ts). */
  readonly session: InitializedHostSession;
  readonly tasks: TaskRouting;
  readonly boundary: RouteBoundary;
  readonly stamps: MessageStamps;
  readonly listed: UntilListed;
  readonly answeredHere: AnsweredHere;
  /** Records a call the gateway answers itself, passing only the stages that record. */
  readonly record?: (message: RoutedMessage, answer: () => Promise<Outcome>) => Promise<Outcome>;
  /** Why a tool name nobody lists may still mean something, for the error. */
  readonly whyUnknown?: (name: string) => string | undefined;
  /** What this connection sees of the catalogue, when not all of it (see toolView.ts). */
  readonly view?: ToolView;
}

/** States in which a server will list nothing until something outside the call changes. */
const SETTLED_DOWN: ReadonlySet<UpstreamState> = new Set(['failed', 'disabled', 'stopped']);

/** The host's `tools/call`: the tool looked up (or waited for), refused at the edge, or routed. */
export class ToolCalls {
  constructor(private readonly options: ToolCallsOptions) {}

  /** The hot path: no `async`, one promise continuation per call beyond the pipeline's own. */
  call(request: IncomingRequest): Promise<void> | void {
    const params = request.params;
    const name = params?.name;
    const args = params?.arguments;
    if (typeof name !== 'string') throw new InvalidParamsError('tools/call needs params.name (a string)');
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args)))
      throw new InvalidParamsError(`tools/call ${name}: params.arguments must be an object`);
    const viewed = this.options.view?.call(name, args as Params | undefined);
    if (viewed !== undefined) {
      if (!('route' in viewed)) return this.viewedWhenStarted(request, name, args as Params | undefined);
      // The tool the call tool names is called as if the host had called it by that name.
      return this.callNamed(request, viewed.route, viewed.arguments);
    }
    return this.callNamed(request, name, args as Params | undefined);
  }

  /**
   * A call the view answers itself (the search tool, or the call tool naming a tool not listed)
   * is asked again once the servers' start-up has settled, as a `tools/list` waits for it: a
   * search made while servers are still listing would find nothing of theirs, and the call tool
   * would refuse a tool about to be listed.
   */
  private viewedWhenStarted(request: IncomingRequest, name: string, args: Params | undefined): Promise<void> {
    return this.options.pool.start().then(() => {
      const viewed = this.options.view?.call(name, args);
      if (viewed === undefined) return this.callNamed(request, name, args);
      if ('route' in viewed) return this.callNamed(request, viewed.route, viewed.arguments);
      return this.answerViewed(request, name, args, viewed);
    });
  }

  /** A call of the tool the host knows as `name`, once the view has had its say. */
  private callNamed(request: IncomingRequest, name: string, args: Params | undefined): Promise<void> | void {
    // An exposed name, or a server's own name as an MCP App calls it (see toolResolution.ts).
    const meta = request.meta;
    const app = meta === undefined ? undefined : this.appOrigin(meta);
    const found = lookUpTool(this.options.tools, name, app);
    if (found !== undefined) return this.callFound(request, name, found, args, app);
    const signingIn = this.waitingForSignIn(name);
    if (signingIn !== undefined) return this.authorize(request, name, signingIn, args);
    // A server that will not list anything soon (failed, disabled, blocked): no use waiting.
    const down = this.serverDown(name);
    if (down !== undefined && SETTLED_DOWN.has(down.state))
      return this.options.answeredHere.unserved(
        request,
        'tools/call',
        name,
        args as Params,
        down.unavailable(),
      );
    return this.callWhenListed(request, name, args as Params | undefined, app);
  }

  /**
   * A call this connection's view answers itself (the search tool, a name it cannot call), or
   * refuses as unknown: recorded by the stages that record, like any call answered here.
   */
  private answerViewed(
    request: IncomingRequest,
    name: string,
    args: Params | undefined,
    viewed: Exclude<ViewedCall, undefined | { readonly route: string }>,
  ): void {
    const { answeredHere } = this.options;
    if ('unknown' in viewed) return answeredHere.unserved(request, 'tools/call', name, args, viewed.unknown);
    const result =
      'answer' in viewed
        ? viewed.answer
        : { content: [{ type: 'text', text: `[mcp-warden] ${viewed.refuse}` }], isError: true };
    answeredHere.answered(request, 'tools/call', name, args, result);
    if ('after' in viewed) viewed.after?.();
  }

  /**
   * A request the host transport would not deliver whole (params nested too deep): answered
   * with the transport's error. A call of a known tool is recorded first, passing only the stages
   * that record; none of them sees its arguments, which it does not carry.
   */
  refused(request: IncomingRequest, error: JsonRpcErrorObject): void {
    const name = request.params?.name;
    const entry =
      request.method === 'tools/call' && typeof name === 'string'
        ? this.options.tools.resolve(name)
        : undefined;
    const { record } = this.options;
    if (entry === undefined || record === undefined) return request.fail(error);
    const message = this.options.answeredHere.message(request, {
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

  /**
   * The configured server in whose namespace `name` is, when it is not serving (failed,
   * restarting, starting, disabled, blocked): a call of one of its tools is told that, with what
   * to do, rather than that the tool is unknown, since the model may have it from an earlier list.
   */
  private serverDown(name: string): Upstream | undefined {
    const { separator } = this.options.tools;
    return this.options.pool.upstreams.find(
      (u) =>
        u.state !== 'ready' &&
        u.state !== 'asleep' &&
        u.config.namespace !== null &&
        name.startsWith(u.config.namespace + separator),
    );
  }

  /** Which server's MCP App makes a call, as its `_meta` says (see toolResolution.ts). */
  private appOrigin(meta: Params): AppOrigin | undefined {
    return appOrigin(meta, (server) => this.options.pool.byName.has(server));
  }

  /**
   * A call of a tool not listed (yet): waits until it is, or the upstreams' startup window has
   * passed. Apart from `call`, so that its closures (and the variables they hold) are made
   * only for such a call, not for every call.
   */
  private callWhenListed(
    request: IncomingRequest,
    name: string,
    args: Params | undefined,
    app: AppOrigin | undefined,
  ): Promise<void> {
    return this.options.listed
      .find(() => lookUpTool(this.options.tools, name, app))
      .then((later) => {
        if (later === undefined)
          return this.options.answeredHere.unserved(
            request,
            'tools/call',
            name,
            args,
            this.serverDown(name)?.unavailable() ??
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
    if (this.options.pool.byName.get(entry.server)?.state === 'needs-sign-in')
      return this.authorize(request, name, entry.server, args);
    const refusal = appRefusal(entry, app, this.options.session.declaresExtension(UI_EXTENSION));
    if (refusal === undefined) return this.runCall(request, entry.exposed, entry, args);
    const { record } = this.options;
    if (record === undefined) throw refusal;
    const message = this.toolMessage(request, entry.exposed, entry, args);
    this.options.boundary.respond(
      request,
      record(message, () => Promise.reject(refusal)),
      message,
    );
  }

  /**
   * The server a tool name not listed belongs to, when that server waits for its user to sign
   * in (a name from a list made before it did), or is one the user signs in to and the name is
   * its authorize tool (called again once signed in): the call is then a sign-in.
   */
  private waitingForSignIn(name: string): string | undefined {
    const { tools, pool } = this.options;
    for (const upstream of pool.upstreams) {
      if (upstream.signIn === undefined || !tools.inNamespace(name, upstream.config.namespace)) continue;
      if (
        upstream.state === 'needs-sign-in' ||
        name === tools.exposedIn(upstream.config.namespace, AUTHORIZE_TOOL)
      )
        return upstream.name;
    }
    return undefined;
  }

  /** A sign-in to `server`, in place of the call: mediated (policy, audit) like any request. */
  private authorize(request: IncomingRequest, name: string, server: string, args: Params | undefined): void {
    const stamp = this.options.stamps.stamp(server);
    const message = routedMessage({
      kind: 'authorize',
      direction: 'upstream',
      server,
      target: AUTHORIZE_TOOL,
      exposedName: name,
      definition: undefined,
      arguments: args,
      meta: undefined,
      requestId: request.id,
      signal: request,
      onProgress: request.onProgress,
      hostEra: stamp.hostEra,
      upstreamEra: stamp.upstreamEra,
      host: stamp.host,
      principal: stamp.principal,
    });
    this.options.boundary.route(request, message);
  }

  private runCall(
    request: IncomingRequest,
    name: string,
    entry: { readonly server: string; readonly item: Tool },
    args: Params | undefined,
  ): void {
    const message = this.toolMessage(request, name, entry, args);
    const { boundary, tasks } = this.options;
    // A server may answer a host that declared the tasks extension with a task of its own (a
    // handshake-era server never does unasked: its answer is then passed as it is).
    const mayBeTask = declaresTasks(envelopeOf(request)?.capabilities);
    if (message.task?.drivenBy !== 'host' && !mayBeTask) return boundary.route(request, message);
    // The call's answer is the task, under a handle; the timeout stopped when it came back.
    boundary.route(request, message, (outcome) => tasks.creation.created(message, outcome));
  }

  private toolMessage(
    request: IncomingRequest,
    name: string,
    entry: { readonly server: string; readonly item: Tool },
    args: Params | undefined,
  ): RoutedMessage {
    const { tasks } = this.options;
    const task = tasks.creation.augmentation(request.params, entry.item, request);
    const stamp = this.options.stamps.stamp(entry.server);
    return routedMessage({
      kind: 'tools/call',
      direction: 'upstream',
      server: entry.server,
      target: entry.item.name,
      exposedName: name,
      definition: entry.item,
      arguments: args,
      meta: tasks.metaForUpstream(entry.server, request.meta),
      requestId: request.id,
      signal: request,
      onProgress: request.onProgress,
      task,
      hostEra: stamp.hostEra,
      upstreamEra: stamp.upstreamEra,
      answerAs: stamp.answerAs,
      host: stamp.host,
      principal: stamp.principal,
      // A call another replica asked about and died with, run again here: its record says so.
      takenOverBy: request.takenOverBy,
    });
  }
}
