import type { Prompt } from '@modelcontextprotocol/sdk/types.js';
import { ByteParts } from '../../lib/byteParts.js';
import type { NamedCatalog } from '../catalog/namedCatalog.js';
import type { ResourceCatalog } from '../catalog/resourceCatalog.js';
import { InvalidParamsError, ResourceNotFoundError, UnknownPromptError } from '../errors.js';
import { gatewayCapabilities, mergedInstructions } from '../host/initializeAnswer.js';
import type { HostList, InitializedHostSession } from '../host/hostSession.js';
import type { Logger } from '../logger.js';
import { derive, routedMessage } from '../pipeline/routedMessage.js';
import type { MessageKind, Next, RoutedMessage } from '../pipeline/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '../protocol/versions.js';
import { Cancellation } from '../rpc/cancellation.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest } from '../rpc/peer.js';
import type { TaskRouting } from '../tasks/taskRouting.js';
import { LARGE_LINE_BYTES } from '../transports/lineDecoder.js';
import type { PoolView } from '../upstreams/upstreamPool.js';
import type { AnsweredHere } from './answeredHere.js';
import type { RouteBoundary } from './boundary.js';
import type { ScopedLists } from './listScope.js';
import type { MessageStamps } from './stamps.js';
import type { UntilListed } from './untilListed.js';

export interface HostMethodsOptions {
  readonly prompts: NamedCatalog<Prompt>;
  readonly resources: ResourceCatalog;
  readonly pool: PoolView;
  readonly pipeline: Next;
  /** The legacy session `initialize` and `logging/setLevel` set up. */
  readonly session: InitializedHostSession;
  readonly tasks: TaskRouting;
  readonly boundary: RouteBoundary;
  readonly stamps: MessageStamps;
  readonly listed: UntilListed;
  readonly answeredHere: AnsweredHere;
  /** What of the prompts and resources this connection may see and use. */
  readonly lists: ScopedLists;
  readonly logger: Logger;
  readonly serverInfo: { readonly name: string; readonly version: string };
  /** Lines for the initialize answer's instructions after the upstreams' own. */
  readonly notes?: () => readonly string[];
  /** The host's protocol revision became known (its initialize). */
  readonly revisionKnown?: () => void;
  /** The host initialized with the one revision that allows JSON-RPC batches: its transport takes them. */
  readonly acceptBatches?: () => void;
}

/**
 * How long the initialize answer (and a modern host's `server/discover`) waits, at most, for the
 * upstreams' first handshakes. Hosts give up on a slow initialize, and the answer is promised
 * within a second: a server slower than this joins later through list_changed. A lazy server
 * listed from its last listing has settled at once, its capabilities and instructions taken
 * from that listing.
 */
export const INITIALIZE_WAIT_MS = 800;

/** The one protocol revision in which a host may send JSON-RPC batches. */
const BATCHING_VERSION = '2025-03-26';

/**
 * Settles when the pool's start-up does (every upstream connected or failed, or the start-up
 * window passed), or INITIALIZE_WAIT_MS from now, whichever is first.
 */
export function answerWindow(pool: PoolView): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, INITIALIZE_WAIT_MS)));
  return Promise.race([pool.start(), waited]).finally(() => clearTimeout(timer));
}

/**
 * The host's methods the gateway answers itself (initialize, the merged lists, the log level),
 * and those it routes by name or URI (prompts, resources, completions).
 */
export class HostMethods {
  /** Until the host's initialize, only ping is served (see Router.dispatch). */
  private _initialized = false;
  /** The encoded text of each large list last served, by method. */
  private readonly listBytes = new Map<string, { text: string; bytes: ByteParts }>();

  constructor(private readonly options: HostMethodsOptions) {}

  get initialized(): boolean {
    return this._initialized;
  }

  async initialize(request: IncomingRequest): Promise<void> {
    const params = request.params;
    const requested = params?.protocolVersion;
    if (typeof requested !== 'string')
      throw new InvalidParamsError('initialize needs params.protocolVersion');
    const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(requested)
      ? requested
      : LATEST_PROTOCOL_VERSION;
    const { pool } = this.options;
    this.options.session.initialized(params!, protocolVersion);
    if (protocolVersion === BATCHING_VERSION) this.options.acceptBatches?.();
    this.options.tasks.hostInitialized(params!.capabilities as Params | undefined);
    this._initialized = true;
    this.options.revisionKnown?.();
    // The upstreams connect declaring what the host can do, so their handshakes start only now.
    // The answer waits for them a short while (fast servers answer within milliseconds), so it
    // can say what they offer and pass on their instructions; never longer, as hosts give up on
    // a slow initialize. A server slower than that joins later, through list_changed, without
    // its instructions or the capabilities only it would have added; a lazy server's come from
    // its last listing.
    await answerWindow(pool);
    const { upstreams } = pool;
    const instructions = mergedInstructions(upstreams, this.options.notes?.() ?? [], (cut) =>
      this.options.logger.warn(cut),
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

  async list(request: IncomingRequest, list: HostList, json: () => string): Promise<void> {
    await this.options.pool.start();
    this.options.session.sawList(list);
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

  async setLogLevel(request: IncomingRequest): Promise<void> {
    const level = request.params?.level;
    if (typeof level !== 'string') throw new InvalidParamsError('logging/setLevel needs params.level');
    this.options.session.setLogLevel(level);
    await Promise.allSettled(
      this.options.pool.upstreams
        .filter((u) => u.state === 'ready' && u.capabilities.logging !== undefined)
        .map((u) => u.request('logging/setLevel', { level })),
    );
    request.respond(Outcome.of({}));
  }

  async getPrompt(request: IncomingRequest): Promise<void> {
    const params = request.params;
    const name = params?.name;
    if (typeof name !== 'string') throw new InvalidParamsError('prompts/get needs params.name (a string)');
    const entry = await this.resolvePrompt(name);
    const args =
      typeof params?.arguments === 'object' && params.arguments !== null
        ? (params.arguments as Params)
        : undefined;
    if (entry === undefined)
      return this.options.answeredHere.unserved(
        request,
        'prompts/get',
        name,
        args,
        new UnknownPromptError(name),
      );
    this.options.boundary.route(
      request,
      this.upstreamMessage(request, 'prompts/get', entry.server, entry.item.name, name, {
        params: { ...forwardedParams(params), name: entry.item.name },
        arguments: args,
      }),
    );
  }

  async byUri(request: IncomingRequest, kind: MessageKind, uri: unknown, params = request.params) {
    if (typeof uri !== 'string')
      throw new InvalidParamsError(`${request.method} needs params.uri (a string)`);
    await this.options.pool.start();
    const target = this.resourceTarget(uri);
    if (target === undefined)
      return this.options.answeredHere.unserved(
        request,
        kind,
        uri,
        forwardedParams(params),
        new ResourceNotFoundError(uri),
      );
    const { server } = target;
    // An App's namespaced URI goes to its server as the server's own (see appUi.ts).
    const renamed = target.uri !== uri;
    const sent =
      renamed && params?.uri === uri
        ? { ...forwardedParams(params), uri: target.uri }
        : forwardedParams(params);
    this.options.boundary.route(
      request,
      this.upstreamMessage(request, kind, server, target.uri, uri, { params: sent, arguments: sent }),
      renamed ? (outcome) => withContentsUri(outcome, target.uri, uri) : undefined,
    );
  }

  async complete(request: IncomingRequest): Promise<void> {
    const params = request.params;
    const ref = params?.ref as Params | undefined;
    const args = params?.argument as Params | undefined;
    if (ref?.type === 'ref/prompt' && typeof ref.name === 'string') {
      const entry = await this.resolvePrompt(ref.name);
      // Recorded like a prompts/get of a name nobody serves: probing names by completion shows too.
      if (entry === undefined)
        return this.options.answeredHere.unserved(
          request,
          'completion/complete',
          ref.name,
          args,
          new UnknownPromptError(ref.name),
        );
      const sent = { ...forwardedParams(params), ref: { ...ref, name: entry.item.name } };
      return this.options.boundary.route(
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

  /**
   * A modern host's `subscriptions/listen` stream wants a resource's updates: its server (one
   * that offers subscriptions, of either era) is subscribed, through the pipeline like a legacy
   * host's resources/subscribe; false when no server can be.
   */
  async streamSubscription(uri: string, subscribe: boolean, stream: IncomingRequest): Promise<boolean> {
    const owner = this.options.resources.ownerOf(uri);
    const server = owner !== undefined && this.options.lists.showsResource(owner, uri) ? owner : undefined;
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

  /**
   * Looks a prompt up, waiting (within the startup window) for a server that will list it; one
   * this connection may not see is not found, as if nobody served it.
   */
  private async resolvePrompt(name: string) {
    const entry = await this.options.listed.find(() => this.options.prompts.resolve(name));
    const { lists } = this.options;
    return entry !== undefined && lists.showsPrompt(lists.scope(), name, entry.server) ? entry : undefined;
  }

  /** Where a request for `uri` goes; undefined when nobody serves it or this connection may not see it. */
  private resourceTarget(uri: string) {
    const target = this.options.resources.route(uri);
    return target !== undefined && this.options.lists.showsResource(target.server, uri) ? target : undefined;
  }

  private upstreamMessage(
    request: IncomingRequest,
    kind: MessageKind,
    server: string,
    target: string,
    exposedName: string,
    what: { readonly params: Params | undefined; readonly arguments: Params | undefined },
  ): RoutedMessage {
    const stamp = this.options.stamps.stamp(server);
    return routedMessage({
      kind,
      direction: 'upstream',
      server,
      target,
      exposedName,
      arguments: what.arguments,
      params: what.params,
      meta: this.options.tasks.metaForUpstream(server, request.meta),
      requestId: request.id,
      signal: request,
      onProgress: request.onProgress,
      hostEra: stamp.hostEra,
      upstreamEra: stamp.upstreamEra,
      answerAs: stamp.answerAs,
      host: stamp.host,
      principal: stamp.principal,
    });
  }
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
