import type { ClientRequestsConfig } from '../../config/types.js';
import { describeError } from '../../lib/describeError.js';
import type { ClientInfo } from '../events.js';
import {
  InvalidParamsError,
  MethodNotFoundError,
  MissingCapabilityError,
  NotServingError,
  ProtocolError,
} from '../errors.js';
import { RpcErrorCode, truncateForEcho, type Params } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest, OutgoingOptions, RpcPeer } from '../rpc/peer.js';
import {
  CAPABILITY_FOR,
  FORWARDED_CLIENT_CAPABILITIES,
  type ForwardedCapability,
  type HostList,
  type AskOrigin,
  type HostSession,
  type InputBridge,
  type TaskQuestions,
} from './hostSession.js';
import { gatewayCapabilities, mergedInstructions, type UpstreamFacts } from './initializeAnswer.js';
import { envelopeOf, ModernAnswer, resultTypeAndServer, type ModernAnswerOptions } from './answerShape.js';
import {
  ALL_VERSIONS,
  hasEnvelope,
  LOG_LEVELS,
  META,
  MODERN_VERSION,
  MODERN_VERSIONS,
  readEnvelope,
  unsupportedVersion,
  type CacheHint,
  type Envelope,
} from '../protocol/envelope.js';
import { declaresTasks, TASKS_EXTENSION } from '../protocol/taskMessages.js';

/**
 * The host's era, and the stateless (2026-07-28) host: the gateway serves one host per process,
 * and that host's first request decides how it is served. An `initialize` makes it a legacy
 * connection, served as the handshake revisions say; a request carrying the per-request
 * envelope makes it modern, and every later request must carry one too. Mixing is refused with
 * the revision's errors.
 */
export type HostEra = 'undecided' | 'legacy' | 'modern';

/** What the modern host's answers need to know of one upstream. */
export interface ModernUpstreamFacts extends UpstreamFacts {
  /** This upstream's caching hints for a list (or a read); undefined when it gave none (legacy). */
  cacheHint(method: string): CacheHint | undefined;
}

export interface ModernHostOptions {
  readonly peer: RpcPeer;
  readonly upstreams: () => readonly ModernUpstreamFacts[];
  /** Resolves when the upstreams' startup window has passed. */
  readonly started: () => Promise<void>;
  /**
   * Resolves when the `server/discover` answer may be given: once the upstreams have connected,
   * or after a short bound (as for `initialize`), so that a slow server does not hold it.
   */
  readonly introduced: () => Promise<void>;
  readonly serverInfo: { readonly name: string; readonly version: string };
  /** Lines for the instructions after the upstreams' own, as things stand when asked. */
  readonly notes: () => readonly string[];
  readonly warn: (message: string) => void;
  /** Server-to-client requests carried across the eras (a modern host is asked within its call). */
  readonly bridge?: InputBridge;
  /**
   * Questions of 2025-11-25 servers' tasks: a request tagged with a task held there is kept for
   * the host's `tasks/get` (see tasks/taskInput.ts); undefined for any other request.
   */
  readonly taskInput?: TaskQuestions;
}

/**
 * What a modern host's `subscriptions/listen` streams need from the rest of the gateway. The
 * host edge announces what its streams want through this port; whoever serves them (the router's
 * subscriptions and task status feed) registers it once, so calls flow from the edge inward and
 * the edge never reaches back into the router.
 */
export interface StreamPort {
  /**
   * Subscribes (or unsubscribes) the owner of `uri` to its updates for a listening stream
   * (`signal`: the stream's request); resolves false when no server can be subscribed to it.
   */
  subscribeResource(uri: string, subscribe: boolean, signal: IncomingRequest): Promise<boolean>;
  /**
   * Of the task handles a stream asks about (`taskIds`), those whose status changes the gateway
   * can tell: tasks of this host on servers that push them (or agree to).
   */
  watchTasks(handles: readonly string[]): Promise<string[]>;
  /** A stream now listens for these task handles (it has been acknowledged). */
  listening(handles: readonly string[]): void;
  /** A stream that listened for these handles ended (the ones no other stream names are let go). */
  unwatchTasks(handles: readonly string[]): void;
}

/** Methods only the stateless revision has: a request for one without an envelope is malformed. */
const MODERN_ONLY: ReadonlySet<string> = new Set(['server/discover', 'subscriptions/listen', 'tasks/update']);
/** Methods the stateless revision removed: a modern host asking for one gets -32601. */
const LEGACY_ONLY: ReadonlySet<string> = new Set([
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
  // The tasks extension polls tasks/get, which carries the result, and has no list.
  'tasks/result',
  'tasks/list',
]);
/** Methods whose complete results are cacheable, and so carry caching hints. */
const CACHEABLE: ReadonlySet<string> = new Set([
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

/** Filter fields of `subscriptions/listen` the gateway honours, with the list each concerns. */
const LIST_FILTERS: readonly (readonly [string, HostList])[] = [
  ['toolsListChanged', 'tools'],
  ['promptsListChanged', 'prompts'],
  ['resourcesListChanged', 'resources'],
];
const LIST_CHANGED_METHOD: Readonly<Record<HostList, string>> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
};

/** Whether `params._meta` carries a field only the per-request envelope has (its version aside). */
function partOfEnvelope(params: Params | undefined): boolean {
  const meta = params?._meta;
  if (typeof meta !== 'object' || meta === null) return false;
  return Object.hasOwn(meta, META.clientCapabilities) || Object.hasOwn(meta, META.clientInfo);
}

/** At most this many `subscriptions/listen` streams open at once; one more is refused, saying so. */
export const MAX_SUBSCRIPTIONS = 32;

interface Subscription {
  readonly request: IncomingRequest;
  readonly lists: ReadonlySet<HostList>;
  /** The resource URIs whose updates this stream gets. */
  readonly uris: ReadonlySet<string>;
  /** The task handles whose `notifications/tasks` this stream gets. */
  readonly taskIds: ReadonlySet<string>;
  /** Lets go of what the stream holds upstream; safe to call twice. */
  readonly release: () => void;
}

/** At most this many resource URIs on one stream. */
export const MAX_STREAM_RESOURCES = 100;
/** At most this many task handles on one stream. */
export const MAX_STREAM_TASKS = 100;

/**
 * The stateless host: the era gate, the methods only it has (`server/discover`,
 * `subscriptions/listen`), how its answers are shaped, its per-request log levels, and the
 * `HostSession` the features reach it through.
 */
export class ModernHost implements HostSession {
  private _era: HostEra = 'undecided';
  private readonly subscriptions = new Set<Subscription>();
  /** How many requests in flight asked for each log level (LOG_LEVELS order). */
  private readonly levelCounts = LOG_LEVELS.map(() => 0);
  private lastClientInfo: ClientInfo | undefined;
  /** The extensions the latest request declared: a modern host declares them per request. */
  private lastExtensions: Params | undefined;
  /** Some request declared URL-mode elicitation, so upstreams are told the client has it. */
  private urlElicitation = false;
  /** What every complete result starts with, as text: the same for every request. */
  private readonly fieldsText: string;
  /** The answer options last made by `plainOptions`. */
  private plain: ModernAnswerOptions | undefined;
  /** Who serves the streams' subscriptions and task statuses (see `serveStreams`). */
  private streams: StreamPort | undefined;

  constructor(private readonly options: ModernHostOptions) {
    this.fieldsText = resultTypeAndServer(options.serverInfo);
  }

  /** Registers who serves the listening streams' resource subscriptions and task statuses. */
  serveStreams(port: StreamPort): void {
    this.streams = port;
  }

  get era(): HostEra {
    return this._era;
  }

  /** The era routed messages record: 'modern', or undefined for the handshake revisions. */
  get hostEra(): 'modern' | undefined {
    return this._era === 'modern' ? 'modern' : undefined;
  }

  /**
   * Decides the era of one host request, before the method table sees it. Returns true for a
   * modern request (its envelope checked, its answers shaped); false for one served the legacy
   * way. Throws a typed error for a request that breaks the era rules.
   */
  admit(request: IncomingRequest): boolean {
    const { method, params } = request;
    // Every revision's `_meta` is an object; anything else is the sender's error, in either era.
    const meta = params?._meta;
    if (meta !== undefined && (typeof meta !== 'object' || meta === null || Array.isArray(meta)))
      throw new InvalidParamsError(
        `Invalid params: ${truncateForEcho(method)}'s params._meta must be an object`,
      );
    const enveloped = hasEnvelope(params);
    if (this._era === 'legacy') {
      if (enveloped)
        throw new ProtocolError(
          RpcErrorCode.InvalidRequest,
          `Invalid request: this connection was initialized (protocol revision up to 2025-11-25); ${truncateForEcho(method)} carries the per-request envelope of 2026-07-28, which it cannot mix with`,
        );
      if (MODERN_ONLY.has(method))
        throw new MethodNotFoundError(
          `Method not found: mcp-warden does not serve ${truncateForEcho(method)}`,
        );
      return false;
    }
    if (method === 'initialize') {
      if (this._era === 'modern') {
        const requested = params?.protocolVersion;
        throw unsupportedVersion(typeof requested === 'string' ? requested : '(none)', MODERN_VERSIONS);
      }
      if (enveloped) {
        // An enveloped initialize names a version that has no initialize: say which ones do,
        // and what a client of the version it names sends instead.
        const version = (params?._meta as Params)[META.protocolVersion];
        throw unsupportedVersion(
          String(version),
          ALL_VERSIONS.filter((v) => !MODERN_VERSIONS.includes(v)),
          ` with initialize (without the per-request envelope: the session it opens serves them); a client of ${MODERN_VERSIONS.join(', ')} has no initialize and sends server/discover instead`,
        );
      }
      this._era = 'legacy';
      return false;
    }
    if (!enveloped) {
      // Part of an envelope without its version is a malformed modern request, not a legacy one.
      if (this._era === 'modern' || MODERN_ONLY.has(method) || partOfEnvelope(params))
        readEnvelope(method, params); // throws
      return false;
    }
    const envelope = readEnvelope(method, params);
    this._era = 'modern';
    if (LEGACY_ONLY.has(method))
      throw new MethodNotFoundError(
        `Method not found: ${truncateForEcho(method)} does not exist in protocol revision ${MODERN_VERSION}`,
      );
    if (envelope.clientInfo !== undefined) this.lastClientInfo = envelope.clientInfo;
    const extensions = (envelope.capabilities as Params).extensions;
    this.lastExtensions =
      typeof extensions === 'object' && extensions !== null ? (extensions as Params) : undefined;
    if (!this.urlElicitation) this.urlElicitation = declaresUrlElicitation(envelope.capabilities as Params);
    const level = envelope.logLevel === undefined ? -1 : LOG_LEVELS.indexOf(envelope.logLevel);
    if (level >= 0) this.levelCounts[level]!++;
    const cacheable = CACHEABLE.has(method);
    request.shape = new ModernAnswer(
      !cacheable && level < 0
        ? this.plainOptions(envelope)
        : {
            envelope,
            serverInfo: this.options.serverInfo,
            fieldsText: this.fieldsText,
            cache: cacheable ? () => this.cacheHint(method) : undefined,
            onSettled: level >= 0 ? () => this.levelCounts[level]!-- : undefined,
          },
    );
    return true;
  }

  /**
   * The options of an answer that needs no caching hints and counts no log level (a tool call):
   * the same for every request with the same envelope, which a host sends every time, so they
   * are made once per envelope rather than per request.
   */
  private plainOptions(envelope: Envelope): ModernAnswerOptions {
    const last = this.plain;
    if (last?.envelope === envelope) return last;
    return (this.plain = {
      envelope,
      serverInfo: this.options.serverInfo,
      fieldsText: this.fieldsText,
      cache: undefined,
    });
  }

  /** The methods only a modern host has, for the router's one method table. */
  methods(): readonly (readonly [string, (request: IncomingRequest) => Promise<void> | void])[] {
    return [
      ['server/discover', (r) => this.discover(r)],
      ['subscriptions/listen', (r) => this.listen(r)],
    ];
  }

  /** Whether a log message at `level` from an upstream goes to the host. */
  wantsLog(level: unknown): boolean {
    if (this._era !== 'modern') return true;
    // Only requests that asked for a level get log messages; the most verbose of them decides.
    const index = typeof level === 'string' ? LOG_LEVELS.indexOf(level) : -1;
    for (let i = 0; i < this.levelCounts.length; i++) if (this.levelCounts[i]! > 0) return index >= i;
    return false;
  }

  /** Tells the modern host's listeners that lists changed; false for a legacy host (not ours to tell). */
  listsChanged(lists: ReadonlySet<HostList>): boolean {
    if (this._era !== 'modern') return false;
    for (const subscription of this.subscriptions)
      for (const list of lists)
        if (subscription.lists.has(list))
          this.options.peer.notify(LIST_CHANGED_METHOD[list], {
            _meta: { [META.subscriptionId]: subscription.request.id },
          });
    return true;
  }

  /** A resource changed: the streams that asked for it are told; false for a legacy host. */
  resourceUpdated(params: Params | undefined): boolean {
    if (this._era !== 'modern') return false;
    const uri = params?.uri;
    for (const subscription of this.subscriptions)
      if (typeof uri === 'string' && subscription.uris.has(uri))
        this.options.peer.notify('notifications/resources/updated', {
          ...params,
          _meta: { [META.subscriptionId]: subscription.request.id },
        });
    return true;
  }

  /** Whether some open stream listens for the status of the task `handle`. */
  listensToTask(handle: string): boolean {
    for (const subscription of this.subscriptions) if (subscription.taskIds.has(handle)) return true;
    return false;
  }

  /** A task's state changed: the streams that asked for it get it whole (`notifications/tasks`). */
  taskStatus(handle: string, task: Params): void {
    for (const subscription of this.subscriptions)
      if (subscription.taskIds.has(handle))
        this.options.peer.notify('notifications/tasks', {
          ...task,
          _meta: { [META.subscriptionId]: subscription.request.id },
        });
  }

  /** Ends every open subscription gracefully (shutdown): each gets its completion result. */
  closeSubscriptions(): void {
    for (const subscription of [...this.subscriptions]) {
      subscription.release();
      const { request } = subscription;
      request.respond(Outcome.of({ _meta: { [META.subscriptionId]: request.id } }));
    }
  }

  private async discover(request: IncomingRequest): Promise<void> {
    await this.options.introduced();
    const upstreams = this.options.upstreams();
    const instructions = mergedInstructions(upstreams, this.options.notes(), this.options.warn);
    // `resources.subscribe` keeps its meaning in this revision: the server honours
    // `resourceSubscriptions` on subscriptions/listen, which the gateway does for every server
    // that can be subscribed to, so it is declared exactly as for a legacy host.
    const capabilities = gatewayCapabilities(upstreams);
    // Tasks are an extension in this revision, declared without the older per-method details.
    if (capabilities.tasks !== undefined) {
      delete capabilities.tasks;
      capabilities.extensions = { [TASKS_EXTENSION]: {} };
    }
    request.respond(
      Outcome.of({
        supportedVersions: [...MODERN_VERSIONS],
        capabilities,
        ...(instructions !== undefined && { instructions }),
      }),
    );
  }

  private async listen(request: IncomingRequest): Promise<void> {
    const filter = request.params?.notifications;
    if (typeof filter !== 'object' || filter === null || Array.isArray(filter))
      throw new InvalidParamsError('subscriptions/listen needs params.notifications (an object)');
    if (this.subscriptions.size >= MAX_SUBSCRIPTIONS)
      throw new NotServingError(
        `mcp-warden keeps at most ${MAX_SUBSCRIPTIONS} subscriptions/listen streams open at once; cancel one first`,
      );
    const wanted = filter as Params;
    // Checked before any server is subscribed to anything, so a refusal leaves nothing behind.
    const wantedTasks = this.wantedTasks(request, wanted.taskIds);
    const honoured: Params = {};
    const lists = new Set<HostList>();
    for (const [field, list] of LIST_FILTERS) {
      if (wanted[field] !== true) continue;
      honoured[field] = true;
      lists.add(list);
    }
    // Resource updates: each URI's server is subscribed for the stream. URIs no server can be
    // subscribed to are left out of the acknowledgment, which is how a server declines them.
    const uris = new Set<string>();
    const wantedUris = wanted.resourceSubscriptions;
    const streams = this.streams;
    const subscribe = streams?.subscribeResource.bind(streams);
    if (Array.isArray(wantedUris) && subscribe !== undefined) {
      if (wantedUris.length > MAX_STREAM_RESOURCES)
        throw new InvalidParamsError(
          `subscriptions/listen: at most ${MAX_STREAM_RESOURCES} resourceSubscriptions per stream (got ${wantedUris.length})`,
        );
      await this.options.started();
      for (const uri of new Set(wantedUris.filter((u): u is string => typeof u === 'string')))
        if (
          await subscribe(uri, true, request).catch((error: unknown) => {
            this.options.warn(`subscriptions/listen: could not subscribe to ${uri}: ${describeError(error)}`);
            return false;
          })
        )
          uris.add(uri);
      if (uris.size > 0) honoured.resourceSubscriptions = [...uris];
    }
    const taskIds = new Set(wantedTasks.length === 0 ? [] : ((await streams?.watchTasks(wantedTasks)) ?? []));
    if (taskIds.size > 0) honoured.taskIds = [...taskIds];
    const subscription: Subscription = {
      request,
      lists,
      uris,
      taskIds,
      release: () => {
        // A stream that ends any way (cancelled, closed at shutdown, its HTTP response gone)
        // gives back its upstream subscriptions, or they would outlive every listener.
        if (!this.subscriptions.delete(subscription)) return;
        for (const uri of uris) void subscribe?.(uri, false, request).catch(() => false);
        if (taskIds.size > 0) streams?.unwatchTasks([...taskIds]);
      },
    };
    this.subscriptions.add(subscription);
    request.onCancel(subscription.release);
    this.options.peer.notify('notifications/subscriptions/acknowledged', {
      _meta: { [META.subscriptionId]: request.id },
      notifications: honoured,
    });
    if (taskIds.size > 0) streams?.listening([...taskIds]);
  }

  /**
   * The task handles of `wanted`, checked: asking for any needs the tasks extension declared on
   * the request (-32021 otherwise, as the extension says). Those the gateway cannot tell about
   * are left out of the acknowledgment later.
   */
  private wantedTasks(request: IncomingRequest, wanted: unknown): string[] {
    if (!Array.isArray(wanted) || wanted.length === 0) return [];
    if (!declaresTasks(envelopeOf(request)?.capabilities))
      throw new MissingCapabilityError(
        `subscriptions/listen for taskIds needs the ${TASKS_EXTENSION} extension`,
        {
          extensions: { [TASKS_EXTENSION]: {} },
        },
      );
    if (wanted.length > MAX_STREAM_TASKS)
      throw new InvalidParamsError(
        `subscriptions/listen: at most ${MAX_STREAM_TASKS} taskIds per stream (got ${wanted.length})`,
      );
    return [...new Set(wanted.filter((h): h is string => typeof h === 'string'))];
  }

  /** The caching hints of the merged answer to `method`: the shortest life, private if any is. */
  private cacheHint(method: string): CacheHint {
    let ttlMs = Number.POSITIVE_INFINITY;
    let cacheScope: CacheHint['cacheScope'] = 'public';
    for (const upstream of this.options.upstreams()) {
      if (upstream.state !== 'ready') continue;
      // A server that gives no hint (every legacy one) counts as "stale at once".
      const hint = upstream.cacheHint(method);
      ttlMs = Math.min(ttlMs, hint?.ttlMs ?? 0);
      if (hint?.cacheScope === 'private') cacheScope = 'private';
    }
    // A read whose server gave no scope may be about one user: do not let it be shared.
    if (method === 'resources/read' && ttlMs === 0) cacheScope = 'private';
    return { ttlMs: Number.isFinite(ttlMs) ? ttlMs : 0, cacheScope };
  }

  // -------------------------------------------------------------------------------------------
  // HostSession: the modern host as the features see it

  get info(): ClientInfo | undefined {
    return this.lastClientInfo;
  }
  get protocolVersion(): string | undefined {
    return MODERN_VERSION;
  }
  /** No connection-wide level: each request says its own. */
  get logLevel(): string | undefined {
    return undefined;
  }

  /** Whether the host request `origin` (the call being served) declared `capability`. */
  /**
   * Whether the request being served (the latest one: requests are served as they arrive) declared
   * this extension.
   */
  declaresExtension(id: string): boolean {
    return this.lastExtensions?.[id] !== undefined;
  }

  can(capability: ForwardedCapability, origin?: AskOrigin): boolean {
    const envelope = envelopeOf(origin?.hostRequest);
    return envelope !== undefined && envelope.capabilities[capability] !== undefined;
  }

  /**
   * Upstreams are told the client can do what the config lets them ask: a modern host declares
   * its capabilities per request, and a request that lacks one is refused when it is asked.
   * URL-mode elicitation is declared once a request of this host has declared it (upstreams
   * connect when the first request arrives, so it is that request's word that counts), since a
   * server hides what needs it from a client without it; a plain `elicitation: {}` means form
   * mode only.
   */
  capabilitiesFor(requests: ClientRequestsConfig): Params {
    const declared: Params = {};
    for (const name of FORWARDED_CLIENT_CAPABILITIES) {
      if (requests[name] === false) continue;
      declared[name] = name === 'roots' ? { listChanged: false } : {};
    }
    if (declared.elicitation !== undefined && this.urlElicitation)
      declared.elicitation = { form: {}, url: {} };
    return declared;
  }

  ask(
    method: string,
    params: Params | undefined,
    options: OutgoingOptions,
    origin?: AskOrigin,
  ): Promise<Outcome> {
    if (!CAPABILITY_FOR.has(method))
      return Promise.reject(new MethodNotFoundError(`Method not found: ${method}`));
    const forTask = this.options.taskInput?.ask(method, params, options);
    if (forTask !== undefined) return forTask;
    const bridge = this.options.bridge;
    if (bridge === undefined)
      return Promise.reject(
        new MethodNotFoundError(`a host on protocol revision ${MODERN_VERSION} cannot be sent ${method}`),
      );
    return bridge.ask(method, params, options, origin);
  }

  sawList(): void {}
  hasSeen(): boolean {
    return false;
  }
  /** Connection-wide notifications do not exist for a modern host; list changes go to listeners. */
  notify(): void {}
}

/** Whether these client capabilities include URL-mode elicitation. */
function declaresUrlElicitation(capabilities: Params): boolean {
  const elicitation = capabilities.elicitation;
  return typeof elicitation === 'object' && elicitation !== null && (elicitation as Params).url !== undefined;
}
