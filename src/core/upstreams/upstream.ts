import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import type {
  UpstreamExitEvent,
  UpstreamFailedEvent,
  UpstreamRestartEvent,
  UpstreamStartEvent,
} from '../events.js';
import type { HttpServerConfig, ServerConfig } from '../../config/types.js';
import { UpstreamFailedError, UpstreamRpcError, UpstreamUnavailableError } from '../errors.js';
import { describeError } from '../../lib/describeError.js';
import type { Logger } from '../logger.js';
import { RpcErrorCode, type JsonRpcNotification, type Params } from '../protocol/jsonRpc.js';
import type { CacheHint } from '../protocol/envelope.js';
import { Outcome } from '../rpc/outcome.js';
import { RpcPeer, type IncomingRequest, type OutgoingOptions } from '../rpc/peer.js';
import type { MessageTransport } from '../rpc/transport.js';
import type { ChildHandle } from '../transports/childProcess.js';
import type { HttpAuthorization } from '../transports/httpTransport.js';
import type { Principal } from '../principal.js';
import { CrashLoopDetector, RepeatedFailures, restartDelay } from './backoff.js';
import type { ConnectionFactory, UpstreamConnection } from './connection.js';
import { startupDeadline, type Handshake, type Handshaken, type HandshakeOptions } from './handshake.js';
import { LIST_KINDS, type ListKind, type ListSync } from './listSync.js';
import { IdleWatch, startsLazily, type ListingStore, type ServerListing } from './startPolicy.js';
import { ResourceSubscriptions, restoreSubscriptions } from './subscriptions.js';
import { authorizeTool, needsSignIn, type UpstreamSignIn } from './signIn.js';
import { receivedPlainly, type ModernMemory, type UpstreamDialect } from './upstreamDialect.js';
import type { UpstreamEra } from './upstreamEra.js';

export type { ListKind } from './listSync.js';

/**
 * `asleep`: not running, listed from its last listing, started on the first request that needs
 * it (a lazy server before its first use, or any server its idle timeout stopped).
 */
export type UpstreamState =
  | 'idle'
  | 'connecting'
  | 'ready'
  | 'restarting'
  | 'failed'
  | 'stopped'
  | 'disabled'
  // Stopped while idle, or not yet started (lazy): a request that needs it starts it.
  | 'asleep'
  // Its server wants the user to sign in: it waits for `retryNow` instead of restarting.
  | 'needs-sign-in';

export interface UpstreamOptions extends Omit<HandshakeOptions, 'log'> {
  readonly logger: Logger;
  /** Called each time a connection is ready, before its lists are announced. */
  readonly onReady?: (upstream: Upstream) => void;
  /** Called whenever this upstream's lists may have changed (connected, refreshed). */
  readonly onListsChanged: (upstream: Upstream, kinds: readonly ListKind[]) => void;
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
   * How its user signs in, when the server may ask for it (OAuth): while it waits for a sign-in
   * it lists one `authorize` tool in place of its own.
   */
  readonly signIn?: UpstreamSignIn;
  /**
   * Whose connection this is, when it serves one principal only: the connection is made with
   * that principal's credentials (their own sign-in). Undefined: the local user's.
   */
  readonly principal?: Principal;
  /** OAuth for an HTTP server that may ask for a sign-in, with `principal`'s tokens. */
  readonly authorizationFor?: (
    server: HttpServerConfig,
    principal: Principal | undefined,
  ) => HttpAuthorization | undefined;
  /** Where listings are kept between runs, so a lazy server is listed without starting it. */
  readonly listings?: ListingStore;
}

/** What an upstream is made of besides its options (see createUpstream.ts). */
export interface UpstreamParts {
  /** Opens each connection, by the server entry's transport. */
  readonly connections: ConnectionFactory;
  /** Learns each connection's era and what the server offers. */
  readonly handshake: Handshake;
  /** Fetches and keeps the server's lists. */
  readonly lists: ListSync;
}

/** An upstream lifecycle record without the gateway's session id (the gateway adds it). */
export type UpstreamLifecycleEvent =
  | Omit<UpstreamStartEvent, 'session'>
  | Omit<UpstreamExitEvent, 'session'>
  | Omit<UpstreamRestartEvent, 'session'>
  | Omit<UpstreamFailedEvent, 'session'>;

/** One connection and the peer speaking over it. */
interface Live {
  readonly session: RpcPeer;
  readonly connection: UpstreamConnection;
  /** Known once the handshake is done. */
  dialect?: UpstreamDialect;
}

/**
 * One upstream server, supervised: connects (through its connection factory, then the handshake
 * and the listing), restarts with backoff when it dies, and marks itself failed when it keeps
 * dying. Calls in flight fail when the connection ends. A failure here never reaches another
 * upstream: every error is caught at this boundary and logged with the name.
 */
export class Upstream {
  readonly name: string;
  readonly config: ServerConfig;
  private readonly log: Logger;
  private readonly lists: ListSync;
  private _state: UpstreamState = 'idle';
  /**
   * What the server said in its last handshake, and its dialect; kept for the process's life, so
   * a restart skips the probe (and re-probes when the assumption fails).
   */
  private spoken: Handshaken | undefined;
  private readonly memory: ModernMemory = { logLevel: undefined };
  private _lastError: string | undefined;
  private live: Live | undefined;
  /** The connection being set up, so a stop during a slow start can still end it. */
  private connecting: Live | undefined;
  private readonly stopController = new AbortController();
  private readonly crashes: CrashLoopDetector;
  private readonly repeated = new RepeatedFailures();
  /** What the host subscribed to here; outlives each process so a restart can restore it. */
  private readonly subscriptions = new ResourceSubscriptions();
  private firstAttemptDone!: () => void;
  /** Settles once the first connection attempt has succeeded or failed. */
  readonly firstAttempt: Promise<void>;
  private running: Promise<void> | undefined;
  /** Ends the wait for a sign-in (see `retryNow`); set only while in `needs-sign-in`. */
  private signInWake: (() => void) | undefined;
  /** Told when the next connection attempt has settled, either way. */
  private attemptWaiters: (() => void)[] = [];
  /** The listing kept from an earlier run: what it offers until its first handshake is done. */
  private kept: ServerListing | undefined;
  /** Decides when the server has been idle long enough to stop (its `idleTimeout`). */
  private readonly idle: IdleWatch;
  /** Set when the process is stopped for idleness (or never started): supervision waits for `wake`. */
  private dozing = false;
  /** A request wants the server while it dozes; `wakeUp` is set while supervision waits. */
  private wanted = false;
  private wakeUp: (() => void) | undefined;
  /** Requests waiting for a start to succeed or fail. */
  private readonly startWaiters = new Set<() => void>();

  constructor(
    private readonly options: UpstreamOptions,
    private readonly parts: UpstreamParts,
  ) {
    this.config = options.config;
    this.name = options.config.name;
    this.log = options.logger.child(this.name);
    this.lists = parts.lists;
    this.crashes = new CrashLoopDetector(options.gateway.restart);
    this.firstAttempt = new Promise((resolve) => (this.firstAttemptDone = resolve));
    this.idle = new IdleWatch({
      idleMs: this.config.idleTimeoutMs,
      keptAwake: () => this.subscriptions.uris.length > 0,
      onIdle: () => this.sleep(),
    });
    const never = neverStarted(this.config);
    if (never !== undefined) {
      this._state = never.state;
      this._lastError = never.error;
      this.firstAttemptDone();
    }
  }

  get state(): UpstreamState {
    return this._state;
  }
  /** The upstream's own tool definitions, as last listed. Kept while it restarts so the surface stays stable. */
  get tools(): readonly Tool[] {
    if (this._state === 'needs-sign-in' && this.options.signIn !== undefined)
      return [authorizeTool(this.name, this.options.signIn)];
    return this.lists.lists.tools as unknown as readonly Tool[];
  }
  /** How its user signs in, when its server may ask for it. */
  get signIn(): UpstreamSignIn | undefined {
    return this.options.signIn;
  }

  /**
   * Connects again at once, when it waits for a sign-in (one just completed); resolves with the
   * state the attempt left it in. In any other state it changes nothing and resolves with it.
   */
  async retryNow(): Promise<UpstreamState> {
    // An attempt already under way may have started before the sign-in: then one more after it.
    for (let tries = 0; tries < 2 && this._state === 'needs-sign-in'; tries++) {
      const settled = new Promise<void>((resolve) => this.attemptWaiters.push(resolve));
      const wake = this.signInWake;
      this.signInWake = undefined;
      wake?.();
      await settled;
      if (wake !== undefined) break;
    }
    return this._state;
  }
  get prompts(): readonly Prompt[] {
    return this.lists.lists.prompts as unknown as readonly Prompt[];
  }
  get resources(): readonly Resource[] {
    return this.lists.lists.resources as unknown as readonly Resource[];
  }
  get resourceTemplates(): readonly ResourceTemplate[] {
    return this.lists.lists.resourceTemplates as unknown as readonly ResourceTemplate[];
  }
  /** What the server declared in its initialize or discover answer (last connection). */
  get capabilities(): Params {
    return this.spoken?.capabilities ?? this.kept?.capabilities ?? {};
  }
  /** The `instructions` of the server's initialize answer (last connection), if it gave any. */
  get instructions(): string | undefined {
    return this.spoken === undefined ? this.kept?.instructions : this.spoken.instructions;
  }
  get lastError(): string | undefined {
    return this._lastError;
  }
  /** How the last connection speaks its era; undefined before one. */
  get dialect(): UpstreamDialect | undefined {
    return this.spoken?.dialect;
  }
  /** The protocol era of the last connection, by name; undefined before one. */
  get era(): UpstreamEra | undefined {
    return this.spoken?.dialect.era;
  }
  /** The protocol version spoken on the last connection. */
  get protocolVersion(): string | undefined {
    return this.spoken?.protocolVersion;
  }
  /** The server's name and version as it reported them (initialize or server/discover). */
  get serverInfo(): { readonly name: string; readonly version: string } | undefined {
    return this.spoken?.serverInfo;
  }
  /** The caching hints this server gave for `method`'s results; undefined for a legacy server. */
  cacheHint(method: string): CacheHint | undefined {
    return this.lists.cacheHint(method);
  }

  /**
   * Starts supervising. A lazy server with a listing kept from an earlier run is listed from it
   * and left asleep until a request needs it; without one it starts now, to be listed. Any other
   * server with a kept listing offers that listing's capabilities until its handshake is done.
   */
  start(): void {
    if (this._state !== 'idle') return;
    this.kept = this.options.listings?.read(this.config);
    const lists = this.kept?.lists;
    if (lists !== undefined && startsLazily(this.config)) this.listFrom(lists);
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
    const dialect = this.ready();
    if (dialect !== undefined)
      return this.idle.track(method, dialect.request(method, params, options), (result) => result);
    if (!this.startsOnDemand()) return Promise.reject(this.unavailable());
    return this.afterStart().then(() => this.request(method, params, options));
  }

  /**
   * Sends a routed request (the pipeline's terminal calls this): its answer comes back as an
   * outcome that still holds the upstream's bytes. Fails at once when it is not connected.
   */
  requestOutcome(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome> {
    // Every subscribe and unsubscribe for this server passes here, refused ones too (an
    // unsubscribe while it restarts still ends the subscription).
    return this.subscriptions.observe(method, params, this.sendOutcome(method, params, options));
  }

  /** `requestOutcome`'s request, sent now, or once a server that starts on demand has started. */
  private sendOutcome(
    method: string,
    params: Params | undefined,
    options: OutgoingOptions,
  ): Promise<Outcome> {
    const dialect = this.ready();
    if (dialect !== undefined)
      return this.idle.track(method, dialect.requestOutcome(method, params, options), (o) => o.result);
    if (!this.startsOnDemand()) return Promise.reject(this.unavailable());
    return this.afterStart().then(() => this.sendOutcome(method, params, options));
  }

  /**
   * Has the server push the status of its task `taskId` until `unwatchTask`, where its era and
   * capabilities allow; resolves whether it agreed (false at once when they do not).
   */
  watchTask(taskId: string): Promise<boolean> {
    const dialect = this.live?.dialect;
    if (dialect === undefined) return Promise.resolve(false);
    return dialect.watchTask(taskId, this.capabilities);
  }

  unwatchTask(taskId: string): void {
    this.live?.dialect?.unwatchTask(taskId);
  }

  /**
   * Stops (or starts again) reading what this server writes, while the host cannot take more:
   * its answers then wait in the pipe, and the server itself blocks writing, instead of piling up
   * in the gateway's memory. Only a server the gateway started has a pipe to leave them in.
   */
  setReading(reading: boolean): void {
    const stdout = this.live?.connection.child?.process.stdout;
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
    this.idle.stopped();
    this.stopController.abort();
    this.settleWaiters();
    if (wasDisabled) return;
    const wasLive = this.live !== undefined;
    const reason = new UpstreamFailedError(this.name, why);
    await Promise.all([
      this.teardown(reason),
      this.teardown(reason, this.connecting),
      this.parts.connections.release?.(),
    ]);
    await this.running;
    this.attemptSettled();
    if (wasLive) this.options.onLifecycle?.({ type: 'upstream_exit', server: this.name, expected: true });
  }

  /** The dialect to send with when connected and ready; undefined otherwise. */
  private ready(): UpstreamDialect | undefined {
    return this._state === 'ready' ? this.live?.dialect : undefined;
  }

  /** Why this server cannot take a request now, and what to do about it, as the model is told. */
  unavailable(): UpstreamUnavailableError {
    return new UpstreamUnavailableError(
      this.name,
      unavailableReason(this._state, this._lastError, this.config),
    );
  }

  /** Whether a request that finds the server not ready waits for it to start (then goes on). */
  private startsOnDemand(): boolean {
    return this._state === 'asleep' || this._state === 'connecting';
  }

  /**
   * Wakes the server when it dozes, and settles once its start succeeded or failed, or when the
   * start-up window (`gateway.startupTimeout`) has passed: a request never waits longer than that.
   */
  private afterStart(): Promise<void> {
    if (this._state === 'asleep') this.wake();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.startWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, this.options.gateway.startupTimeoutMs);
      timer.unref();
      this.startWaiters.add(done);
    }).then(() => {
      // Still starting when the window passed: the caller is told so, instead of waiting again.
      if (this.startsOnDemand()) throw this.unavailable();
    });
  }

  private settleWaiters(): void {
    for (const done of [...this.startWaiters]) done();
  }

  private wake(): void {
    this.wanted = true;
    this.wakeUp?.();
  }

  /** Resolves once a request wants the server (or it is stopped for good). */
  private untilWanted(signal: AbortSignal): Promise<void> {
    if (this.wanted || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.wakeUp = undefined;
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.wakeUp = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** A lazy server's listing from an earlier run: listed at once, started when first needed. */
  private listFrom(lists: NonNullable<ServerListing['lists']>): void {
    this.lists.restore(lists);
    this.dozing = true;
    this._state = 'asleep';
    this.log.info(`listed from its last listing (${this.lists.describe()}); it starts when first used`);
    this.firstAttemptDone();
    this.options.onListsChanged(this, LIST_KINDS);
  }

  /** Idle for its whole `idleTimeout`: the process is stopped, to be started again on demand. */
  private sleep(): void {
    const live = this.live;
    if (this._state !== 'ready' || live === undefined) return;
    this.dozing = true;
    this.wanted = false;
    this._state = 'asleep';
    this.idle.stopped();
    this.log.info(
      `stopped after ${this.config.idleTimeoutMs} ms without requests; it starts again when next needed`,
    );
    void this.teardown(new UpstreamFailedError(this.name, 'it was stopped while idle'), live);
  }

  /** Keeps what the server listed, for listing it lazily in a later run. */
  private keepListing(): void {
    this.options.listings?.write(this.config, {
      lists: this.lists.lists,
      capabilities: this.capabilities,
      ...(this.instructions !== undefined && { instructions: this.instructions }),
    });
  }

  private async supervise(): Promise<void> {
    const stopSignal = this.stopController.signal;
    while (!stopSignal.aborted) {
      const woken = this.dozing;
      if (woken) {
        await this.untilWanted(stopSignal);
        if (stopSignal.aborted) return;
        this.dozing = false;
        this.wanted = false;
        this.log.info('starting: a request needs it');
      }
      // While it waits for a sign-in, its quiet attempts leave it waiting (and `authorize` listed).
      if (this._state !== 'needs-sign-in')
        this._state =
          woken || (this.crashes.recent === 0 && this.tools.length === 0) ? 'connecting' : 'restarting';
      const attempt = await this.attempt();
      if (stopSignal.aborted) return;
      await this.teardown(attempt.endedWith);
      // Stopped for idleness: no failure, no backoff; it waits to be wanted again.
      if (this.dozing) {
        this.options.onLifecycle?.({ type: 'upstream_exit', server: this.name, expected: true });
        continue;
      }
      this.idle.stopped();
      if (needsSignIn(attempt.endedWith)) {
        await this.awaitSignIn(attempt.endedWith);
        continue;
      }
      this.recordEnd(attempt);
      if (this.crashLooping(attempt.connectedAt)) return;
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

  /** One connection, from its attempt to its end; resolves with what ended it. */
  private async attempt(): Promise<{ endedWith: Error; connectedAt?: number }> {
    const attemptStarted = Date.now();
    let connectedAt: number | undefined;
    try {
      const live = await this.connect();
      if (this.stopController.signal.aborted) {
        await this.teardown(new UpstreamFailedError(this.name, 'the gateway is shutting down'), live);
        return { endedWith: new UpstreamFailedError(this.name, 'the gateway is shutting down') };
      }
      this.live = live;
      this._state = 'ready';
      // In the same turn as becoming ready: the host's own messages for this server can only
      // follow these subscribes, so the server sees them in the host's order.
      void this.restoreSubscriptions(live);
      this._lastError = undefined;
      connectedAt = Date.now();
      this.log.info(`connected (${this.lists.describe()})`);
      this.options.onLifecycle?.({
        type: 'upstream_start',
        server: this.name,
        transport: this.config.transport,
        ...(live.connection.child && { pid: live.connection.child.pid }),
        ms: connectedAt - attemptStarted,
        tools: this.tools.length,
      });
      this.attemptSettled();
      this.idle.ready();
      this.keepListing();
      this.options.onReady?.(this);
      this.options.onListsChanged(this, LIST_KINDS);
      return { endedWith: await live.connection.ended, connectedAt };
    } catch (error) {
      return { endedWith: error instanceof Error ? error : new Error(String(error)), connectedAt };
    }
  }

  /**
   * The server wants its user to sign in: no restart loop and no backoff noise, since trying
   * again cannot help until someone signs in. Its tools give way to `authorize` until `retryNow`
   * (a sign-in through the host completed) or, quietly, after the slowest restart delay (a
   * sign-in made elsewhere, such as `mcp-warden auth login` in a terminal), or a stop.
   */
  private async awaitSignIn(why: Error): Promise<void> {
    const first = this._state !== 'needs-sign-in';
    this._state = 'needs-sign-in';
    this._lastError = why.message;
    this.crashes.reset();
    const stopSignal = this.stopController.signal;
    const woken = new Promise<void>((resolve) => {
      this.signInWake = resolve;
      const timer = setTimeout(resolve, this.options.gateway.restart.maxDelayMs).unref();
      stopSignal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
    if (first)
      this.log.info(
        `needs sign-in: call its authorize tool or run "mcp-warden auth login ${this.name}" (${why.message})`,
      );
    else this.log.debug(`still needs sign-in (${why.message})`);
    this.attemptSettled();
    if (first) this.options.onListsChanged(this, ['tools']);
    await woken;
    this.signInWake = undefined;
  }

  /** The attempt under way settled: whoever waits on `retryNow` learns how. */
  private attemptSettled(): void {
    this.firstAttemptDone();
    this.settleWaiters();
    const waiters = this.attemptWaiters;
    this.attemptWaiters = [];
    for (const told of waiters) told();
  }

  /** Records a connection's end (or a failed attempt). */
  private recordEnd({ endedWith, connectedAt }: { endedWith: Error; connectedAt?: number }): void {
    this._lastError = endedWith.message;
    this.log.error(this.repeated.line(endedWith.message, { connected: connectedAt !== undefined }));
    this.options.onLifecycle?.(
      connectedAt === undefined
        ? { type: 'upstream_failed', server: this.name, error: endedWith.message }
        : { type: 'upstream_exit', server: this.name, expected: false, error: endedWith.message },
    );
    this.attemptSettled();
  }

  /** Counts a failure; true (and marked failed) when there were too many too close together. */
  private crashLooping(connectedAt: number | undefined): boolean {
    const { restart } = this.options.gateway;
    // A connection that stayed up for a whole window was healthy: start counting afresh.
    const now = Date.now();
    if (connectedAt !== undefined && now - connectedAt >= restart.windowMs) this.crashes.reset();
    if (!this.crashes.record(now)) return false;
    this._state = 'failed';
    const message =
      `marked failed: more than ${restart.maxRestarts} failures within ` +
      `${restart.windowMs} ms; it will not be restarted until the gateway restarts`;
    this.log.error(message);
    this.options.onLifecycle?.({ type: 'upstream_failed', server: this.name, error: message });
    return true;
  }

  /** Subscribes a new process to what the host subscribed to on the ones before it. */
  private restoreSubscriptions(live: Live): Promise<void> {
    const resources = this.capabilities.resources as Params | undefined;
    const dialect = live.dialect!;
    return restoreSubscriptions({
      subscriptions: this.subscriptions,
      supported: typeof resources === 'object' && resources !== null && resources.subscribe === true,
      subscribe: (uri, signal) => dialect.subscribe(uri, signal),
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
    await live.connection.close();
  }

  /** One connection attempt. Rejects with a message that names the server and what went wrong. */
  private async connect(): Promise<Live> {
    const { config, gateway } = this.options;
    const authorization =
      config.transport === 'http'
        ? this.options.authorizationFor?.(config, this.options.principal)
        : undefined;
    const connection = await this.parts.connections.connect({
      config,
      gateway,
      ...(this.options.principal && { principal: this.options.principal }),
      log: this.log,
      paramHeaders: (name) => this.lists.paramHeaders(name),
      ...(authorization && { authorization }),
    });
    const { transport, what } = connection;
    transport.onerror = (error) => this.log.debug(`transport error: ${error.message}`);
    const live: Live = { session: this.peer(transport, () => live), connection };
    connection.attach(live.session);
    this.connecting = live;
    try {
      if (this.stopController.signal.aborted)
        throw new UpstreamFailedError(this.name, 'the gateway is shutting down');
      await transport.start();
      this.lists.forgetHints();
      const spoken = await this.parts.handshake.run({
        session: live.session,
        transport,
        what,
        known: this.spoken?.dialect,
        memory: this.memory,
      });
      this.spoken = spoken;
      live.dialect = spoken.dialect;
      await this.lists.fetch(spoken, LIST_KINDS, (method) => startupDeadline(this.options, method, what));
      spoken.dialect.listenForChanges(spoken.capabilities, () => this.live === live);
      connection.running();
      this.connecting = undefined;
      return live;
    } catch (error) {
      if (needsSignIn(error)) {
        // Not a failure of the server: kept as it is, so supervision knows to wait for a sign-in.
        this.connecting = undefined;
        await this.teardown(error, live);
        throw error;
      }
      // Every startup failure names what was started, whichever layer noticed it.
      const detail = error instanceof UpstreamFailedError ? error.detail : describeError(error);
      const wrapped = detail.includes(what)
        ? (error as Error)
        : new UpstreamFailedError(this.name, `${detail} (${what})`, { cause: error });
      // The child may have died: prefer the exit message, which carries its stderr.
      const exit = await Promise.race([connection.ended, delayValue(50, undefined)]);
      this.connecting = undefined;
      await this.teardown(exit ?? wrapped, live);
      throw exit ?? wrapped;
    }
  }

  /** The peer for a new connection; `live` gives the connection it serves once made. */
  private peer(transport: MessageTransport, live: () => Live): RpcPeer {
    return new RpcPeer({
      transport,
      errors: {
        remote: (e) => new UpstreamRpcError(this.name, e.code, e.message, e.data),
        failed: (detail, cause) => new UpstreamFailedError(this.name, detail, { cause }),
        cancelled: (reason) => new Error(`cancelled by the server: ${reason}`),
      },
      onNotification: (n) => this.handleNotification(n, live()),
      onRequest: (request) => this.handleRequest(request),
    });
  }

  private handleNotification(received: JsonRpcNotification, live: Live): void {
    const notification =
      live.dialect === undefined ? receivedPlainly(received) : live.dialect.received(received);
    if (notification === undefined) return;
    if (notification.method === 'notifications/tasks/status') this.idle.noteTask(notification.params);
    const kinds = this.lists.changedBy(notification.method);
    if (kinds !== undefined) return this.lists.refreshSoon(kinds, (stale) => this.refresh(stale));
    this.options.onNotification?.(this, notification);
  }

  private async refresh(kinds: readonly ListKind[]): Promise<void> {
    const live = this.live;
    if (live?.dialect === undefined) return;
    try {
      await this.lists.fetch({ dialect: live.dialect, capabilities: this.capabilities }, kinds);
      this.log.info(`list changed (${this.lists.describe()})`);
      this.keepListing();
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
}

/** Why a server entry is never started, if it is not: disabled, blocked, or unusable. */
function neverStarted(config: ServerConfig): { state: UpstreamState; error?: string } | undefined {
  if (config.disabled) return { state: 'disabled' };
  // The organisation's managed settings do not let it run: never started, reported as such.
  if (config.blockedByManaged !== undefined)
    return { state: 'failed', error: `blocked by managed settings: ${config.blockedByManaged}` };
  // Its config entry cannot be used: never started, reported failed with the reason.
  if (config.failedAtLoad !== undefined)
    return { state: 'failed', error: `its config entry has problems: ${config.failedAtLoad}` };
  return undefined;
}

/** Why a server in `state` takes no request, with what the user can do about it. */
function unavailableReason(
  state: UpstreamState,
  lastError: string | undefined,
  config: ServerConfig,
): string {
  const entry = `${config.source.file}:${config.source.line}`;
  switch (state) {
    case 'disabled':
      return `it is disabled in the config (${entry}); remove "disabled: true" there to use it`;
    case 'failed':
      if (config.blockedByManaged !== undefined)
        return `it is blocked by managed settings: ${config.blockedByManaged}; only an administrator of this machine can allow it`;
      if (config.failedAtLoad !== undefined)
        return `its config entry has problems: ${config.failedAtLoad}; fix the entry (${entry}) and restart the gateway`;
      return `it failed and will not be restarted until the gateway restarts (last error: ${lastError ?? 'unknown'}); fix the server, then restart the gateway (reconnect the host's MCP server)`;
    case 'restarting':
      return `it is restarting after: ${lastError ?? 'a failure'}; try again shortly`;
    case 'stopped':
      return 'the gateway is shutting down';
    case 'needs-sign-in':
      return `its user must sign in first: call its authorize tool (${lastError ?? 'sign-in required'})`;
    default:
      return 'it is still starting; try again shortly';
  }
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
