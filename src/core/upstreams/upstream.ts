/*
 * Longer than most modules: it supervises one upstream (connect, handshake, listing, restart with
 * backoff, oversize recovery). Its request plumbing is the peer's (rpc/peer.ts); splitting
 * supervision from connecting is the next step.
 */
import { createInterface } from 'node:readline';
import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '../protocol/versions.js';
import type {
  UpstreamExitEvent,
  UpstreamFailedEvent,
  UpstreamRestartEvent,
  UpstreamStartEvent,
} from '../events.js';
import type { GatewayConfig, ServerConfig } from '../../config/types.js';
import { UpstreamFailedError, UpstreamRpcError, UpstreamUnavailableError } from '../errors.js';
import { describeError } from '../../lib/describeError.js';
import type { Logger } from '../logger.js';
import { RpcErrorCode, type JsonRpcNotification, type Params } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import { RpcPeer, type IncomingRequest, type OutgoingOptions } from '../rpc/peer.js';
import { spawnChild, type ChildHandle } from '../transports/childProcess.js';
import type { OversizeLine } from '../transports/lineDecoder.js';
import { oversizeMessage, type HttpOversize } from '../transports/httpLimits.js';
import type { MessageTransport } from '../rpc/transport.js';
import { StreamTransport } from '../transports/streamTransport.js';
import { CrashLoopDetector, restartDelay } from './backoff.js';
import { stdioSpawnOptions } from './childEnvironment.js';
import { ResourceStreams } from './resourceStreams.js';
import { ResourceSubscriptions, restoreSubscriptions } from './subscriptions.js';
import { envelopeMeta, META, withEnvelope, withoutEnvelope, type CacheHint } from '../protocol/envelope.js';
import { PROBE_MS, probeModern, type UpstreamEra } from './upstreamEra.js';
import { declaresTasks, TASKS_EXTENSION } from '../protocol/taskMessages.js';
import { paramHeadersOf, type ParamHeader } from '../protocol/paramHeaders.js';

export type UpstreamState =
  'idle' | 'connecting' | 'ready' | 'restarting' | 'failed' | 'stopped' | 'disabled';

export interface UpstreamOptions {
  readonly config: ServerConfig;
  readonly gateway: GatewayConfig;
  readonly logger: Logger;
  readonly clientInfo: { readonly name: string; readonly version: string };
  /** Called each time a connection is ready, before its lists are announced. */
  readonly onReady?: (upstream: Upstream) => void;
  /** Called whenever this upstream's lists may have changed (connected, refreshed). */
  readonly onListsChanged: (upstream: Upstream, kinds: readonly ListKind[]) => void;
  /**
   * The client capabilities to declare to this upstream: the host's sampling, elicitation and
   * roots, so servers that offer tools only to capable clients do so. Read at connect.
   */
  readonly clientCapabilities?: (config: ServerConfig) => Params;
  /** Notifications the router may forward to the host (logging, resource updates, cancellations). */
  readonly onNotification?: (upstream: Upstream, notification: JsonRpcNotification) => void;
  /**
   * Requests the upstream makes of the client (sampling, elicitation, roots): the router routes
   * them and answers each through `request`. Without it, they get "method not found".
   */
  readonly onRequest?: (upstream: Upstream, request: IncomingRequest) => void;
  /** Lifecycle events (started, exited, restarting, failed), for the audit trail. */
  readonly onLifecycle?: (event: UpstreamLifecycleEvent) => void;
  /**
   * A connection to use instead of starting the server as configured; undefined: start it. For
   * embedding the gateway in-process (tests connect upstreams through memory this way).
   */
  readonly connect?: (config: ServerConfig) => MessageTransport | undefined;
  /** Live children, so a last-resort exit handler can kill their groups synchronously. */
  readonly children: Set<ChildHandle>;
  /**
   * This stdio server's process, spawned ahead of `start` (earlySpawn.ts) and already in
   * `children`: the first connection attempt speaks to it instead of spawning one. A spawn that
   * failed is reported by that attempt, as if it had failed then.
   */
  readonly spawned?: Promise<ChildHandle>;
  /**
   * Whether to probe a server of unknown era with `server/discover` before `initialize` (true
   * while the host itself speaks the stateless revision). Otherwise `initialize` goes first, as
   * it always has, and a server that refuses it is probed then.
   */
  readonly prefersModern?: () => boolean;
}

/** An upstream lifecycle record without the gateway's session id (the gateway adds it). */
export type UpstreamLifecycleEvent =
  | Omit<UpstreamStartEvent, 'session'>
  | Omit<UpstreamExitEvent, 'session'>
  | Omit<UpstreamRestartEvent, 'session'>
  | Omit<UpstreamFailedEvent, 'session'>;

/** The lists an upstream may offer, each behind the capability the server declared. */
export type ListKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

interface ListSpec {
  readonly method: string;
  /** The key of the array in the answer. */
  readonly key: string;
  readonly capability: 'tools' | 'prompts' | 'resources';
  /** Whether an item is usable; malformed ones are skipped with a warning, not fatal. */
  readonly valid: (item: Record<string, unknown>) => boolean;
  /** Servers that declare resources may still not implement templates: tolerate -32601. */
  readonly optional?: boolean;
}

const isNonEmptyString = (v: unknown): v is string => typeof v === 'string' && v !== '';
const LISTS: Record<ListKind, ListSpec> = {
  tools: {
    method: 'tools/list',
    key: 'tools',
    capability: 'tools',
    valid: (t) => isNonEmptyString(t.name) && typeof t.inputSchema === 'object' && t.inputSchema !== null,
  },
  prompts: {
    method: 'prompts/list',
    key: 'prompts',
    capability: 'prompts',
    valid: (p) => isNonEmptyString(p.name),
  },
  resources: {
    method: 'resources/list',
    key: 'resources',
    capability: 'resources',
    valid: (r) => isNonEmptyString(r.uri) && typeof r.name === 'string',
  },
  resourceTemplates: {
    method: 'resources/templates/list',
    key: 'resourceTemplates',
    capability: 'resources',
    valid: (r) => isNonEmptyString(r.uriTemplate) && typeof r.name === 'string',
    optional: true,
  },
};
const LIST_KINDS = Object.keys(LISTS) as ListKind[];
const LIST_CHANGED: Readonly<Record<string, readonly ListKind[]>> = {
  'notifications/tools/list_changed': ['tools'],
  'notifications/prompts/list_changed': ['prompts'],
  'notifications/resources/list_changed': ['resources', 'resourceTemplates'],
};

/** How long a stopping child gets between SIGTERM and SIGKILL; shutdown must finish within 2 s. */
const STOP_GRACE_MS = 800;
/** How long a closed stdout waits for the process's own exit to explain it. */
const STDOUT_CLOSE_GRACE_MS = 250;
/** Lines of a child's stderr kept to explain a failed start. */
const STDERR_TAIL_LINES = 5;

interface Live {
  readonly session: RpcPeer;
  readonly transport: MessageTransport;
  readonly child: ChildHandle | undefined;
  /** A modern server's resource update streams on this connection (unused for a legacy one). */
  readonly streams: ResourceStreams;
  /** Settles when the connection ends, with what ended it. */
  readonly ended: Promise<Error>;
}

/**
 * One upstream server, supervised: connects (spawn + initialize + tools/list), restarts with
 * backoff when it dies, and marks itself failed when it keeps dying. A failure here never
 * reaches another upstream: every error is caught at this boundary and logged with the name.
 */
export class Upstream {
  readonly name: string;
  readonly config: ServerConfig;
  private readonly options: UpstreamOptions;
  private readonly log: Logger;
  private _state: UpstreamState = 'idle';
  /** The listed tools by name, rebuilt when the list is replaced (for mirrored arguments). */
  private toolIndex: { list: readonly unknown[]; byName: Map<string, Record<string, unknown>> } | undefined;
  private lists: Record<ListKind, readonly Record<string, unknown>[]> = {
    tools: [],
    prompts: [],
    resources: [],
    resourceTemplates: [],
  };
  private _capabilities: Params = {};
  private _instructions: string | undefined;
  /**
   * The era this server spoke on its last connection; kept for the process's life, so a
   * restart skips the probe (and re-probes when the assumption fails).
   */
  private _era: UpstreamEra | undefined;
  private _protocolVersion: string | undefined;
  private _serverInfo: { readonly name: string; readonly version: string } | undefined;
  /** The envelope sent with every request to a modern server (this connection's capabilities). */
  private modernMeta: Params | undefined;
  /** The log level asked for on a modern server, sent with each request (it has no setLevel). */
  private modernLogLevel: string | undefined;
  /** A modern server's caching hints, by list method (first page of its last listing). */
  private readonly cacheHints = new Map<string, CacheHint>();
  /** Lists a list_changed marked stale and no refresh has fetched since (see refreshSoon). */
  private readonly staleLists = new Set<ListKind>();
  private refreshing = false;
  private _lastError: string | undefined;
  /**
   * The last failure logged in full and how many times in a row it has happened: a server that
   * fails the same way on every restart (a command not on PATH, whose message lists the whole
   * PATH) is logged once in full, then counted.
   */
  private sameFailure: { readonly message: string; times: number } | undefined;
  private live: Live | undefined;
  /** The connection being set up, so a stop during a slow start can still kill it. */
  private connecting: Live | undefined;
  private readonly stopController = new AbortController();
  private readonly crashes: CrashLoopDetector;
  /** What the host subscribed to here; outlives each process so a restart can restore it. */
  private readonly subscriptions = new ResourceSubscriptions();
  private firstAttemptDone!: () => void;
  /** Settles once the first connection attempt has succeeded or failed. */
  readonly firstAttempt: Promise<void>;
  private running: Promise<void> | undefined;
  /** `options.spawned` until the first connection attempt takes it (or `stop` stops it). */
  private spawned: Promise<ChildHandle> | undefined;

  constructor(options: UpstreamOptions) {
    this.options = options;
    this.spawned = options.spawned;
    this.config = options.config;
    this.name = options.config.name;
    this.log = options.logger.child(this.name);
    this.crashes = new CrashLoopDetector(options.gateway.restart);
    this.firstAttempt = new Promise((resolve) => (this.firstAttemptDone = resolve));
    if (this.config.disabled) {
      this._state = 'disabled';
      this.firstAttemptDone();
    } else if (this.config.blockedByManaged !== undefined) {
      // The organisation's managed settings do not let it run: never started, reported as such.
      this._state = 'failed';
      this._lastError = `blocked by managed settings: ${this.config.blockedByManaged}`;
      this.firstAttemptDone();
    } else if (this.config.failedAtLoad !== undefined) {
      // Its config entry cannot be used: never started, reported failed with the reason.
      this._state = 'failed';
      this._lastError = `its config entry has problems: ${this.config.failedAtLoad}`;
      this.firstAttemptDone();
    }
  }

  get state(): UpstreamState {
    return this._state;
  }
  /** The upstream's own tool definitions, as last listed. Kept while it restarts so the surface stays stable. */
  get tools(): readonly Tool[] {
    return this.lists.tools as unknown as readonly Tool[];
  }
  get prompts(): readonly Prompt[] {
    return this.lists.prompts as unknown as readonly Prompt[];
  }
  get resources(): readonly Resource[] {
    return this.lists.resources as unknown as readonly Resource[];
  }
  get resourceTemplates(): readonly ResourceTemplate[] {
    return this.lists.resourceTemplates as unknown as readonly ResourceTemplate[];
  }
  /** What the server declared in its initialize answer (last connection). */
  get capabilities(): Params {
    return this._capabilities;
  }
  /** The `instructions` of the server's initialize answer (last connection), if it gave any. */
  get instructions(): string | undefined {
    return this._instructions;
  }
  get lastError(): string | undefined {
    return this._lastError;
  }
  /** The protocol era of the last connection; undefined before one. */
  get era(): UpstreamEra | undefined {
    return this._era;
  }
  /** The protocol version spoken on the last connection. */
  get protocolVersion(): string | undefined {
    return this._protocolVersion;
  }
  /** The server's name and version as it reported them (initialize or server/discover). */
  get serverInfo(): { readonly name: string; readonly version: string } | undefined {
    return this._serverInfo;
  }
  /** The caching hints this server gave for `method`'s results; undefined for a legacy server. */
  cacheHint(method: string): CacheHint | undefined {
    return this.cacheHints.get(method);
  }

  /**
   * Params as this server's era wants them: a modern server gets the envelope with every
   * request; a legacy one never sees a modern host's envelope keys.
   */
  private outgoingParams(method: string, params: Params | undefined): Params | undefined {
    const meta = this.modernMeta;
    if (this._era === 'modern' && meta !== undefined) {
      const level = this.modernLogLevel;
      let sent = level === undefined ? meta : { ...meta, [META.logLevel]: level };
      // A modern host's own request declares what it can be asked; the server is told that
      // (less what the config refuses it), not what the connection could do.
      const declared = (params?._meta as Params | undefined)?.[META.clientCapabilities];
      if (typeof declared === 'object' && declared !== null)
        sent = { ...sent, [META.clientCapabilities]: allowedCapabilities(declared as Params, this.config) };
      // A 2025-11-25 host's call run as a task: this revision has no `task` param; declaring the
      // tasks extension on the call is how a client lets the server answer with a task.
      if (method === 'tools/call' && params?.task !== undefined) {
        const { task: _task, ...rest } = params;
        params = rest;
        sent = withTasksExtension(sent);
      }
      return withEnvelope(params, sent);
    }
    const own = params?._meta as Params | undefined;
    if (own === undefined || method === 'initialize') return params;
    const rest = withoutEnvelope(own);
    if (rest === own) return params;
    if (rest === undefined) {
      // Only the envelope: a copy with `_meta` undefined, which serialising leaves out as if it
      // were absent. Cloning an object whole is far cheaper than copying it less one member.
      const sent = { ...params };
      sent._meta = undefined;
      return sent;
    }
    // Left out rather than deleted: an object with a deleted member is slow to copy and serialise.
    const { _meta: _envelope, ...sent } = params!;
    if (rest !== undefined) sent._meta = rest;
    return sent;
  }

  start(): void {
    if (this._state !== 'idle') return;
    this.running = this.supervise().catch((error: unknown) => {
      // Supervision itself must never throw out of here; this is a bug if it happens.
      this.log.error(`supervisor stopped unexpectedly: ${describeError(error)}`);
      this._state = 'failed';
      this.firstAttemptDone();
    });
  }

  /** Sends a request of the gateway's own to the upstream; fails at once when it is not connected. */
  request(
    method: string,
    params: Params | undefined,
    options?: OutgoingOptions,
  ): Promise<Record<string, unknown>> {
    const live = this.live;
    if (this._state !== 'ready' || live === undefined)
      return Promise.reject(new UpstreamUnavailableError(this.name, this.unavailableReason()));
    if (this._era === 'modern' && method === 'logging/setLevel') {
      // The stateless revision sets the level per request: it rides on every request from now on.
      this.modernLogLevel = typeof params?.level === 'string' ? params.level : undefined;
      return Promise.resolve({});
    }
    return live.session.request(method, this.outgoingParams(method, params), options);
  }

  /**
   * Sends a routed request (the pipeline's terminal calls this): its answer comes back as an
   * outcome that still holds the upstream's bytes. Fails at once when it is not connected.
   */
  requestOutcome(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome> {
    const live = this.live;
    const answer =
      this._state !== 'ready' || live === undefined
        ? Promise.reject(new UpstreamUnavailableError(this.name, this.unavailableReason()))
        : this._era === 'modern' && (method === SUBSCRIBE || method === UNSUBSCRIBE)
          ? subscribeByStream(live.streams, method, params, this.name)
          : live.session.requestOutcome(method, this.outgoingParams(method, params), options);
    // Every subscribe and unsubscribe for this server passes here, refused ones too (an
    // unsubscribe while it restarts still ends the subscription).
    return this.subscriptions.observe(method, params, answer);
  }

  /**
   * Has a 2026-07-28 server with the tasks extension push the status of its task `taskId`
   * (`notifications/tasks`, on a stream of its own) until `unwatchTask`; resolves whether it
   * agreed (false at once for any other server). A server that declines is logged, and the host
   * polls as before.
   */
  watchTask(taskId: string): Promise<boolean> {
    const live = this.live;
    if (this._era !== 'modern' || live === undefined || !declaresTasks(this._capabilities))
      return Promise.resolve(false);
    return live.streams.watchTask(taskId).then(
      () => true,
      (error: unknown) => {
        this.log.info(`no status notifications for task ${taskId}: ${describeError(error)}`);
        return false;
      },
    );
  }

  unwatchTask(taskId: string): void {
    this.live?.streams.unwatchTask(taskId);
  }

  /**
   * Stops (or starts again) reading what this server writes, while the host cannot take more:
   * its answers then wait in the pipe, and the server itself blocks writing, instead of piling up
   * in the gateway's memory. Only a server the gateway started has a pipe to leave them in.
   */
  setReading(reading: boolean): void {
    const stdout = this.live?.child?.process.stdout;
    if (stdout === undefined) return;
    if (reading) stdout.resume();
    else stdout.pause();
  }

  /** This server's requests in flight with one of these methods, whichever host sent them. */
  requestsInFlight(methods: ReadonlySet<string>): number {
    return this.live?.session.requestsInFlight(methods) ?? 0;
  }

  notify(method: string, params?: Params): void {
    if (this._state === 'ready') this.live?.session.notify(method, params);
  }

  /** Stops it for good; calls in flight fail with `why` (default: the gateway is shutting down). */
  async stop(why = 'the gateway is shutting down'): Promise<void> {
    if (this._state === 'stopped') return;
    const wasDisabled = this._state === 'disabled';
    this._state = 'stopped';
    this.stopController.abort();
    if (wasDisabled) return;
    const wasLive = this.live !== undefined;
    const reason = new UpstreamFailedError(this.name, why);
    await Promise.all([
      this.teardown(reason),
      this.teardown(reason, this.connecting),
      this.stopUnusedChild(),
    ]);
    await this.running;
    if (wasLive) this.options.onLifecycle?.({ type: 'upstream_exit', server: this.name, expected: true });
  }

  /** A process spawned ahead that no connection attempt took (stopped before the host came). */
  private async stopUnusedChild(): Promise<void> {
    const spawned = this.spawned;
    this.spawned = undefined;
    const child = await spawned?.catch(() => undefined);
    if (child === undefined) return;
    await child.stop({ graceMs: STOP_GRACE_MS });
    this.options.children.delete(child);
  }

  private unavailableReason(): string {
    switch (this._state) {
      case 'disabled':
        return 'it is disabled in the config';
      case 'failed':
        return `it failed and will not be restarted until the gateway restarts (last error: ${this._lastError ?? 'unknown'})`;
      case 'restarting':
        return `it is restarting after: ${this._lastError ?? 'a failure'}; try again shortly`;
      case 'stopped':
        return 'the gateway is shutting down';
      default:
        return 'it is still starting; try again shortly';
    }
  }

  private async supervise(): Promise<void> {
    const stopSignal = this.stopController.signal;
    while (!stopSignal.aborted) {
      this._state = this.crashes.recent === 0 && this.tools.length === 0 ? 'connecting' : 'restarting';
      let endedWith: Error;
      let connectedAt: number | undefined;
      const attemptStarted = Date.now();
      try {
        const live = await this.connect();
        if (stopSignal.aborted) {
          await this.teardown(new UpstreamFailedError(this.name, 'the gateway is shutting down'), live);
          return;
        }
        this.live = live;
        this._state = 'ready';
        // In the same turn as becoming ready: the host's own messages for this server can only
        // follow these subscribes, so the server sees them in the host's order.
        void this.restoreSubscriptions(live);
        this._lastError = undefined;
        connectedAt = Date.now();
        this.log.info(`connected (${this.describeLists()})`);
        this.options.onLifecycle?.({
          type: 'upstream_start',
          server: this.name,
          transport: this.config.transport,
          ...(live.child && { pid: live.child.pid }),
          ms: connectedAt - attemptStarted,
          tools: this.tools.length,
        });
        this.firstAttemptDone();
        this.options.onReady?.(this);
        this.options.onListsChanged(this, LIST_KINDS);
        endedWith = await live.ended;
      } catch (error) {
        endedWith = error instanceof Error ? error : new Error(String(error));
      }
      if (stopSignal.aborted) return;
      await this.teardown(endedWith);
      this._lastError = endedWith.message;
      this.logFailure(endedWith.message, { connected: connectedAt !== undefined });
      this.options.onLifecycle?.(
        connectedAt === undefined
          ? { type: 'upstream_failed', server: this.name, error: endedWith.message }
          : { type: 'upstream_exit', server: this.name, expected: false, error: endedWith.message },
      );
      this.firstAttemptDone();
      // A connection that stayed up for a whole window was healthy: start counting afresh.
      const now = Date.now();
      if (connectedAt !== undefined && now - connectedAt >= this.options.gateway.restart.windowMs)
        this.crashes.reset();
      if (this.crashes.record(now)) {
        this._state = 'failed';
        const message =
          `marked failed: more than ${this.options.gateway.restart.maxRestarts} failures within ` +
          `${this.options.gateway.restart.windowMs} ms; it will not be restarted until the gateway restarts`;
        this.log.error(message);
        this.options.onLifecycle?.({ type: 'upstream_failed', server: this.name, error: message });
        return;
      }
      this._state = 'restarting';
      const delay = restartDelay(this.crashes.recent - 1, this.options.gateway.restart);
      this.log.info(`restarting in ${delay} ms`);
      this.options.onLifecycle?.({
        type: 'upstream_restart',
        server: this.name,
        attempt: this.crashes.recent,
        delayMs: delay,
      });
      await sleep(delay, stopSignal);
    }
  }

  /**
   * Logs why the server ended: in full the first time, and when it failed the same way on the
   * attempt before (without connecting in between) as a count, so the log does not repeat a long
   * message (a whole PATH) on every restart.
   */
  private logFailure(message: string, options: { readonly connected: boolean }): void {
    const previous = this.sameFailure;
    if (!options.connected && previous !== undefined && previous.message === message) {
      previous.times += 1;
      this.log.error(`failed again, the same way as logged above (${previous.times} times in a row)`);
      return;
    }
    this.sameFailure = options.connected ? undefined : { message, times: 1 };
    this.log.error(message);
  }

  /** Subscribes a new process to what the host subscribed to on the ones before it. */
  private restoreSubscriptions(live: Live): Promise<void> {
    const resources = this._capabilities.resources as Params | undefined;
    // A modern server has no resources/subscribe: each URI gets its subscriptions/listen stream.
    const modern = this._era === 'modern';
    return restoreSubscriptions({
      subscriptions: this.subscriptions,
      supported: typeof resources === 'object' && resources !== null && resources.subscribe === true,
      subscribe: (uri, signal) =>
        modern ? live.streams.subscribe(uri) : live.session.request(SUBSCRIBE, { uri }, { signal }),
      timeoutMs: this.options.gateway.connectTimeoutMs,
      server: this.name,
      log: this.log,
      ended: () => this.stopController.signal.aborted || this.live !== live,
    });
  }

  private async teardown(reason: Error, live: Live | undefined = this.live): Promise<void> {
    if (live === undefined) return;
    if (this.live === live) this.live = undefined;
    live.session.close(reason);
    if (live.child !== undefined) {
      await live.child.stop({ graceMs: STOP_GRACE_MS });
      this.options.children.delete(live.child);
    } else {
      await live.transport.close().catch(() => {});
    }
  }

  /** One connection attempt. Rejects with a message that names the server and what went wrong. */
  private async connect(): Promise<Live> {
    const { config, gateway } = this.options;
    const what =
      config.transport === 'stdio'
        ? `command: ${[config.command, ...config.args].join(' ')}`
        : `url: ${config.url}`;
    const stderrTail: string[] = [];
    let child: ChildHandle | undefined;
    let transport: MessageTransport;
    let endedResolve!: (error: Error) => void;
    const ended = new Promise<Error>((resolve) => (endedResolve = resolve));
    // Assigned once the transport exists; the exit and oversize handlers created before then read it.
    // eslint-disable-next-line prefer-const
    let session: RpcPeer | undefined;
    let phase = 'during startup';
    const end = (error: Error) => {
      session?.close(error);
      endedResolve(error);
    };

    const given = this.options.connect?.(config);
    if (given !== undefined) {
      // A connection made by the embedder (in-process tests): closing it is the server going away.
      transport = given;
      transport.onclose = () =>
        end(new UpstreamFailedError(this.name, `connection closed ${phase} (${what})`));
    } else if (config.transport === 'stdio') {
      const spawned = this.spawned;
      this.spawned = undefined;
      try {
        child = await (spawned ?? spawnChild(stdioSpawnOptions(config)));
      } catch (error) {
        throw new UpstreamFailedError(this.name, `failed to start (${what}): ${describeError(error)}`);
      }
      this.options.children.add(child);
      createInterface({ input: child.process.stderr }).on('line', (line) => {
        this.log.info(`stderr: ${line}`);
        stderrTail.push(line);
        if (stderrTail.length > STDERR_TAIL_LINES) stderrTail.shift();
      });
      const running = child;
      transport = new StreamTransport({
        input: child.process.stdout,
        output: child.process.stdin,
        maxLineBytes: gateway.maxMessageBytes,
        maxUnreadBytes: gateway.maxMessageBytes,
        onJunk: (line, reason) =>
          this.log.warn(`ignored a line on stdout (${reason}): ${truncate(line, 200)}`),
        onOversize: (info) => this.oversize(info, session, end),
      });
      // A server that closes its stdout but keeps running can answer nothing more: that is a
      // disconnect, so calls in flight fail now and it is restarted, instead of every call waiting
      // out its timeout. A moment's grace first: when the process is exiting, its exit (with its
      // code and stderr) is the better explanation.
      transport.onclose = () =>
        setTimeout(
          () => end(new UpstreamFailedError(this.name, `closed its stdout ${phase} (${what})`)),
          STDOUT_CLOSE_GRACE_MS,
        ).unref();
      void running.exited.then(({ code, signal }) => {
        const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
        const tail = stderrTail.length > 0 ? `; last stderr: ${stderrTail.join(' | ')}` : '';
        end(new UpstreamFailedError(this.name, `process ${how} ${phase} (${what})${tail}`));
      });
    } else {
      // Loaded only when an HTTP upstream exists: the SDK's HTTP client is a start-up cost stdio users need not pay.
      const { HttpTransport } = await import('../transports/httpTransport.js');
      transport = new HttpTransport({
        url: config.url,
        headers: config.headers,
        maxMessageBytes: gateway.maxMessageBytes,
        onOversize: (info) => this.httpOversize(info, session),
        paramHeaders: (name) => this.paramHeaders(name),
      });
      transport.onclose = () =>
        end(new UpstreamFailedError(this.name, `connection closed ${phase} (${what})`));
    }
    transport.onerror = (error) => this.log.debug(`transport error: ${error.message}`);

    session = new RpcPeer({
      transport,
      errors: {
        remote: (e) => new UpstreamRpcError(this.name, e.code, e.message, e.data),
        failed: (detail, cause) => new UpstreamFailedError(this.name, detail, { cause }),
        cancelled: (reason) => new Error(`cancelled by the server: ${reason}`),
      },
      onNotification: (n) => this.handleNotification(n, streams),
      onRequest: (request) => this.handleRequest(request),
    });
    const opened = session;
    const streams = new ResourceStreams({
      open: (notifications, options) => {
        const params = this.outgoingParams('subscriptions/listen', { notifications })!;
        // Task statuses are the tasks extension's: the stream's request must declare it.
        if (notifications.taskIds !== undefined) params._meta = withTasksExtension(params._meta as Params);
        return opened.request('subscriptions/listen', params, options);
      },
      timeoutMs: gateway.connectTimeoutMs,
      server: this.name,
      log: this.log,
    });
    const live: Live = { session, transport, child, streams, ended };
    this.connecting = live;
    try {
      if (this.stopController.signal.aborted)
        throw new UpstreamFailedError(this.name, 'the gateway is shutting down');
      await transport.start();
      await this.handshake(session, transport, what);
      for (const kind of LIST_KINDS)
        this.lists[kind] = await this.listAll(session, kind, this.startupDeadline(LISTS[kind].method, what));
      if (this._era === 'modern') this.listenForChanges(session);
      phase = 'while running';
      this.connecting = undefined;
      return live;
    } catch (error) {
      // Every startup failure names what was started, whichever layer noticed it.
      const detail = error instanceof UpstreamFailedError ? error.detail : describeError(error);
      const wrapped = detail.includes(what)
        ? (error as Error)
        : new UpstreamFailedError(this.name, `${detail} (${what})`, { cause: error });
      // The child may have died: prefer the exit message, which carries its stderr.
      const exit = await Promise.race([ended, delayValue(50, undefined)]);
      this.connecting = undefined;
      await this.teardown(exit ?? wrapped, live);
      throw exit ?? wrapped;
    }
  }

  /**
   * Learns the server's era and what it offers: `server/discover` first (modern), `initialize`
   * on a legacy answer or silence. The era is remembered for later connections: a server known
   * legacy is initialized at once, and probed again only if that fails.
   */
  private async handshake(session: RpcPeer, transport: MessageTransport, what: string): Promise<void> {
    const capabilities = this.options.clientCapabilities?.(this.config) ?? {};
    this.cacheHints.clear();
    // Over Streamable HTTP a server of unknown era is asked the modern way first, as that
    // binding's compatibility rules suggest (a refusal there is an HTTP 400 whose body tells a
    // modern server from a legacy one). Over stdio the probe goes first while the host is modern.
    const http = this.config.transport === 'http';
    const first = this._era ?? (http || this.options.prefersModern?.() === true ? 'modern' : 'legacy');
    if (first === 'modern') {
      if (await this.discover(session, capabilities, transport)) return;
      if (this._era === 'modern')
        this.log.warn('no longer answers server/discover as a modern server; initializing it');
      try {
        return await this.initialize(session, transport, capabilities, what);
      } catch (error) {
        // A server slow to start (an interpreter, a package being fetched) can answer the probe
        // after its bound: a dual-era one has then chosen the modern era and refuses initialize.
        // Asked again it answers at once, being up by now.
        if (!(error instanceof UpstreamRpcError)) throw error;
        this.log.info(`refused initialize after the probe (${error.message}); probing it again`);
        if (await this.discover(session, capabilities, transport)) return;
        throw error;
      }
    }
    try {
      await this.initialize(session, transport, capabilities, what);
    } catch (error) {
      // A server that refuses initialize may be modern-only (or have become so): probe it.
      if (!(error instanceof UpstreamRpcError)) throw error;
      this.log.info(`refused initialize (${error.message}); probing it with server/discover`);
      if (await this.discover(session, capabilities, transport)) return;
      throw error;
    }
  }

  /** The probe: true when the server answered as a modern one (and is now spoken to so). */
  private async discover(
    session: RpcPeer,
    capabilities: Params,
    transport: MessageTransport,
  ): Promise<boolean> {
    const meta = envelopeMeta({ clientInfo: this.options.clientInfo, capabilities });
    // An HTTP connection speaks the modern binding for the probe, and after it if it answers.
    const binding = transport as { setModern?: (modern: boolean) => void };
    binding.setModern?.(true);
    const discovered = await probeModern({
      session,
      server: this.name,
      meta,
      timeoutMs: Math.min(PROBE_MS, this.options.gateway.connectTimeoutMs),
    });
    if (discovered === undefined) {
      binding.setModern?.(false);
      return false;
    }
    this._era = 'modern';
    this.modernMeta = meta;
    this._protocolVersion = discovered.protocolVersion;
    this._capabilities = discovered.capabilities;
    this._instructions = discovered.instructions;
    this._serverInfo = discovered.serverInfo;
    return true;
  }

  private async initialize(
    session: RpcPeer,
    transport: MessageTransport,
    capabilities: Params,
    what: string,
  ): Promise<void> {
    const init = await session.request(
      'initialize',
      { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities, clientInfo: this.options.clientInfo },
      this.startupDeadline('initialize', what),
    );
    const version = init.protocolVersion;
    if (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      throw new UpstreamFailedError(
        this.name,
        `answered initialize with unsupported protocol version ${JSON.stringify(version)} (${what})`,
      );
    }
    (transport as { setProtocolVersion?: (v: string) => void }).setProtocolVersion?.(version);
    const declared = init.capabilities;
    this._era = 'legacy';
    this.modernMeta = undefined;
    this._protocolVersion = version;
    this._capabilities = typeof declared === 'object' && declared !== null ? (declared as Params) : {};
    this._instructions = typeof init.instructions === 'string' ? init.instructions : undefined;
    const info = init.serverInfo as Params | undefined;
    this._serverInfo =
      typeof info?.name === 'string'
        ? { name: info.name, version: typeof info.version === 'string' ? info.version : '' }
        : undefined;
    session.notify('notifications/initialized');
  }

  /**
   * A modern server tells of list changes only on a `subscriptions/listen` stream: one is
   * opened for the lists it says change. It lives as long as the connection.
   */
  private listenForChanges(session: RpcPeer): void {
    const notifications: Params = {};
    for (const [capability, field] of [
      ['tools', 'toolsListChanged'],
      ['prompts', 'promptsListChanged'],
      ['resources', 'resourcesListChanged'],
    ] as const) {
      const declared = this._capabilities[capability] as Params | undefined;
      if (declared?.listChanged === true) notifications[field] = true;
    }
    if (Object.keys(notifications).length === 0) return;
    session
      .request('subscriptions/listen', this.outgoingParams('subscriptions/listen', { notifications }))
      .catch((error: unknown) => {
        if (this.live?.session === session)
          this.log.warn(`its subscriptions/listen stream ended: ${describeError(error)}`);
      });
  }

  /** While connecting, each request gets `connectTimeout` to be answered. */
  private startupDeadline(method: string, what: string): OutgoingOptions {
    const ms = this.options.gateway.connectTimeoutMs;
    return {
      deadlineMs: ms,
      deadlineError: () =>
        new UpstreamFailedError(this.name, `did not answer ${method} within ${ms} ms (${what})`),
    };
  }

  /** Every page of one list, or nothing when the server did not declare the capability. */
  private async listAll(
    session: RpcPeer,
    kind: ListKind,
    options?: OutgoingOptions,
  ): Promise<Record<string, unknown>[]> {
    const spec = LISTS[kind];
    if (this._capabilities[spec.capability] === undefined) return [];
    const items: Record<string, unknown>[] = [];
    let cursor: string | undefined;
    // A server that keeps handing out cursors must not loop us forever.
    for (let page = 0; page < 1000; page++) {
      let result: Record<string, unknown>;
      try {
        result = await session.request(
          spec.method,
          this.outgoingParams(spec.method, cursor === undefined ? undefined : { cursor }),
          options,
        );
      } catch (error) {
        if (
          spec.optional &&
          error instanceof UpstreamRpcError &&
          error.rpcCode === RpcErrorCode.MethodNotFound
        )
          return [];
        throw error;
      }
      if (page === 0) this.noteCacheHint(spec.method, result);
      const list = result[spec.key];
      if (!Array.isArray(list))
        throw new UpstreamFailedError(this.name, `${spec.method} answer has no "${spec.key}" array`);
      for (const item of list as unknown[]) {
        if (typeof item === 'object' && item !== null && spec.valid(item as Record<string, unknown>)) {
          if (kind === 'tools' && this.mirrorsParams() && !this.mirrorable(item as Record<string, unknown>))
            continue;
          items.push(item as Record<string, unknown>);
        } else
          this.log.warn(
            `skipped a malformed entry of ${spec.method}: ${truncate(JSON.stringify(item), 200)}`,
          );
      }
      const next = result.nextCursor;
      if (typeof next !== 'string' || next === '') return items;
      cursor = next;
    }
    throw new UpstreamFailedError(this.name, `${spec.method} returned more than 1000 pages`);
  }

  /** Whether calls to this server mirror arguments into headers: the 2026-07-28 HTTP binding. */
  private mirrorsParams(): boolean {
    return this.config.transport === 'http' && this._era === 'modern';
  }

  /**
   * Whether a tool's `x-mcp-header` annotations follow the binding's rules. Over HTTP a client
   * must leave out a tool whose annotations do not (its calls could not be mirrored
   * faithfully), and say why; the rest of the server's tools stay.
   */
  private mirrorable(tool: Record<string, unknown>): boolean {
    const mirrored = paramHeadersOf(tool.inputSchema);
    if (!('invalid' in mirrored)) return true;
    this.log.warn(`left out tool ${JSON.stringify(tool.name)}: ${mirrored.invalid}`);
    return false;
  }

  /** The mirrored arguments of this server's tool `name`, as last listed. */
  private paramHeaders(name: string): readonly ParamHeader[] {
    const tools = this.lists.tools;
    if (this.toolIndex?.list !== tools)
      this.toolIndex = { list: tools, byName: new Map(tools.map((t) => [t.name as string, t])) };
    const mirrored = paramHeadersOf(this.toolIndex.byName.get(name)?.inputSchema);
    return 'headers' in mirrored ? mirrored.headers : [];
  }

  /** Keeps a modern server's caching hints for a list (a legacy server gives none). */
  private noteCacheHint(method: string, result: Record<string, unknown>): void {
    const { ttlMs, cacheScope } = result;
    if (typeof ttlMs !== 'number' || ttlMs < 0) return;
    this.cacheHints.set(method, { ttlMs, cacheScope: cacheScope === 'private' ? 'private' : 'public' });
  }

  private describeLists(): string {
    const parts = [`${this.lists.tools.length} tools`];
    if (this.lists.prompts.length > 0) parts.push(`${this.lists.prompts.length} prompts`);
    if (this.lists.resources.length > 0) parts.push(`${this.lists.resources.length} resources`);
    if (this.lists.resourceTemplates.length > 0)
      parts.push(`${this.lists.resourceTemplates.length} resource templates`);
    return parts.join(', ');
  }

  private handleNotification(notification: JsonRpcNotification, streams: ResourceStreams): void {
    // The acknowledgment of our own subscriptions/listen streams concerns no one else.
    if (notification.method === 'notifications/subscriptions/acknowledged') {
      streams.acknowledged(notification.params);
      return;
    }
    // A modern server tags what it sends on a stream with the stream's id, ours and no one else's.
    if (this._era === 'modern') notification = withoutSubscriptionId(notification);
    // Own members only: a notification named "constructor" or "__proto__" must not find Object's.
    const kinds = Object.hasOwn(LIST_CHANGED, notification.method)
      ? LIST_CHANGED[notification.method]
      : undefined;
    if (kinds !== undefined) {
      this.refreshSoon(kinds);
      return;
    }
    this.options.onNotification?.(this, notification);
  }

  /**
   * A list changed. A storm of list_changed notifications must not become a storm of full
   * re-lists (each thousands of tools) and of notifications to the host: while one refresh runs,
   * later notifications only mark their lists stale, and one more refresh runs after it for all
   * of them. So at most one refresh runs and one waits, however many notifications arrive.
   */
  private refreshSoon(kinds: readonly ListKind[]): void {
    for (const kind of kinds) this.staleLists.add(kind);
    if (this.refreshing) return;
    this.refreshing = true;
    void (async () => {
      try {
        while (this.staleLists.size > 0) {
          const stale = LIST_KINDS.filter((kind) => this.staleLists.has(kind));
          this.staleLists.clear();
          await this.refresh(stale);
        }
      } finally {
        this.refreshing = false;
      }
    })();
  }

  private async refresh(kinds: readonly ListKind[]): Promise<void> {
    const live = this.live;
    if (live === undefined) return;
    try {
      for (const kind of kinds) this.lists[kind] = await this.listAll(live.session, kind);
      this.log.info(`list changed (${this.describeLists()})`);
      this.options.onListsChanged(this, kinds);
    } catch (error) {
      this.log.warn(`could not refresh ${kinds.join(' and ')} after list_changed: ${describeError(error)}`);
    }
  }

  /** A request the upstream made of the client: ping is answered here, the rest by the router. */
  private handleRequest(request: IncomingRequest): void {
    if (request.method === 'ping') return request.respond(Outcome.of({}));
    if (this.options.onRequest !== undefined) return this.options.onRequest(this, request);
    request.fail({
      code: RpcErrorCode.MethodNotFound,
      message: `mcp-warden does not forward ${request.method}`,
    });
  }

  /**
   * An HTTP response body or SSE event over the size bound, cut off where it passed it. The
   * request it answered fails; a cut-off event on the standalone stream (no request) is logged,
   * and the SDK reconnects that stream.
   */
  private httpOversize(info: HttpOversize, session: RpcPeer | undefined): void {
    const message = oversizeMessage(info, this.options.gateway.maxMessageBytes);
    this.log.warn(message);
    if (info.id !== undefined) session?.failById(info.id, new UpstreamFailedError(this.name, message));
  }

  /**
   * A line over the size bound. Our request ids are plain integers and JSON-RPC responses put
   * `id` first or last, so the edges of the line usually tell which call it answered; that call
   * fails and the connection lives on. Otherwise the stream's state is unknown: restart.
   */
  private oversize(info: OversizeLine, session: RpcPeer | undefined, end: (e: Error) => void): void {
    const limit = this.options.gateway.maxMessageBytes;
    const message = `sent a message of ${info.bytes} bytes, over the limit of ${limit} bytes (gateway.maxMessageSize)`;
    const id =
      /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(\d+)/.exec(info.head)?.[1] ??
      /"id"\s*:\s*(\d+)\s*\}\s*$/.exec(info.tail)?.[1];
    this.log.warn(message);
    if (id !== undefined && session?.failById(Number(id), new UpstreamFailedError(this.name, message)))
      return;
    end(new UpstreamFailedError(this.name, `${message}; restarting it`));
  }
}

const SUBSCRIBE = 'resources/subscribe';
const UNSUBSCRIBE = 'resources/unsubscribe';

/**
 * A host's resources/subscribe (or unsubscribe) for a modern server, which has neither: answered
 * as a legacy server would, once the URI's update stream is acknowledged (or cancelled).
 */
async function subscribeByStream(
  streams: ResourceStreams,
  method: string,
  params: Params | undefined,
  server: string,
): Promise<Outcome> {
  const uri = params?.uri;
  if (typeof uri !== 'string')
    throw new UpstreamRpcError(server, RpcErrorCode.InvalidParams, `${method} needs params.uri (a string)`);
  if (method === SUBSCRIBE) await streams.subscribe(uri);
  else streams.unsubscribe(uri);
  return Outcome.of({});
}

/** An envelope whose client capabilities add the tasks extension. */
function withTasksExtension(meta: Params): Params {
  const capabilities = (meta[META.clientCapabilities] ?? {}) as Params;
  const extensions = (capabilities.extensions ?? {}) as Params;
  return {
    ...meta,
    [META.clientCapabilities]: { ...capabilities, extensions: { ...extensions, [TASKS_EXTENSION]: {} } },
  };
}

/** A notification without the stream id a modern server tagged it with. */
function withoutSubscriptionId(notification: JsonRpcNotification): JsonRpcNotification {
  const meta = notification.params?._meta as Params | undefined;
  if (meta === undefined || !Object.hasOwn(meta, META.subscriptionId)) return notification;
  const { [META.subscriptionId]: _id, ...rest } = meta;
  const { _meta: _old, ...params } = notification.params!;
  return {
    ...notification,
    params: Object.keys(rest).length === 0 ? params : { ...params, _meta: rest },
  };
}

/** A host's declared capabilities less the requests the config refuses this server. */
function allowedCapabilities(declared: Params, config: ServerConfig): Params {
  const requests = config.clientRequests;
  const allowed: Params = { ...declared };
  for (const name of ['sampling', 'elicitation', 'roots'] as const)
    if (requests[name] === false) delete allowed[name];
  return allowed;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`;
}

function delayValue<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms).unref());
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
