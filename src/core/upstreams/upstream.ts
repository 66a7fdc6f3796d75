import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { HttpServerConfig, ServerConfig } from '../../config/types.js';
import { isLasting, UpstreamFailedError, UpstreamUnavailableError } from '../errors.js';
import { describeError } from '../../lib/describeError.js';
import type { Logger } from '../logger.js';
import type { JsonRpcNotification, Params } from '../protocol/jsonRpc.js';
import type { CacheHint } from '../protocol/envelope.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest, OutgoingOptions } from '../rpc/peer.js';
import type { MessageTransport } from '../rpc/transport.js';
import type { ChildHandle } from '../transports/childProcess.js';
import type { HttpAuthorization } from '../transports/httpTransport.js';
import type { Principal } from '../principal.js';
import { Supervision, type UpstreamLifecycleEvent } from './supervision.js';
import { close, Connector, type Live, type UpstreamParts } from './connector.js';
import { Dozing } from './dozing.js';
import type { Handshaken, HandshakeOptions } from './handshake.js';
import { LIST_KINDS, type ListKind } from './listSync.js';
import { startsLazily, type ListingStore, type ServerListing } from './startPolicy.js';
import { ResourceSubscriptions, restoreSubscriptions, subscribable } from './subscriptions.js';
import { authorizeTool, needsSignIn, type UpstreamSignIn } from './signIn.js';
import { SignInWait } from './signInWait.js';
import { TrackedState } from './trackedState.js';
import type { UpstreamDialect } from './upstreamDialect.js';
import type { UpstreamEra } from './upstreamEra.js';

export type { UpstreamParts } from './connector.js';
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
  /** Called after each change of `state` (for a live view of the servers; keep it cheap). */
  readonly onStateChange?: (upstream: Upstream) => void;
}

export type { UpstreamLifecycleEvent } from './supervision.js';

/**
 * One upstream server, supervised: connects (through its connector: the connection factory, the
 * handshake and the listing), restarts with backoff when it dies, and marks itself failed when it
 * keeps dying. A server that runs on demand dozes until a request wants it (see `Dozing`); one
 * whose server wants a sign-in waits for it (see `SignInWait`). Calls in flight fail when the
 * connection ends. A failure here never reaches another upstream: every error is caught at this
 * boundary and logged with the name.
 */
/** What an upstream lists besides its tools (which give way to `authorize` while it needs a sign-in). */
export interface Listed {
  readonly prompts: readonly Prompt[];
  readonly resources: readonly Resource[];
  readonly resourceTemplates: readonly ResourceTemplate[];
}

export class Upstream {
  readonly name: string;
  readonly config: ServerConfig;
  private readonly log: Logger;
  private readonly tracked = new TrackedState<UpstreamState>('idle', () =>
    this.options.onStateChange?.(this),
  );
  private _lastError: string | undefined;
  private live: Live | undefined;
  private readonly stopController = new AbortController();
  /** Records each start and end, and decides after an unexpected end when to try again, or to give up. */
  private readonly record: Supervision;
  /** What the host subscribed to here; outlives each process so a restart can restore it. */
  private readonly subscriptions = new ResourceSubscriptions();
  private firstAttemptDone!: () => void;
  /** Settles once the first connection attempt has succeeded or failed. */
  readonly firstAttempt: Promise<void>;
  private running: Promise<void> | undefined;
  /** The listing kept from an earlier run: what it offers until its first handshake is done. */
  private kept: ServerListing | undefined;
  /** Makes each connection, and remembers what the server said in its last handshake. */
  private readonly connector: Connector;
  /** Whether its process runs: started when a request needs it, stopped when idle. */
  private readonly dozing: Dozing;
  /** The wait for a sign-in, while its server wants one. */
  private readonly signInWait: SignInWait;

  constructor(
    private readonly options: UpstreamOptions,
    private readonly parts: UpstreamParts,
  ) {
    this.config = options.config;
    this.name = options.config.name;
    this.log = options.logger.child(this.name);
    const { config, gateway, principal, authorizationFor, onLifecycle } = options;
    this.record = new Supervision({
      ...{ server: this.name, transport: config.transport, restart: gateway.restart, log: this.log },
      ...{ onLifecycle, lists: () => parts.lists.describe() },
    });
    this.firstAttempt = new Promise((resolve) => (this.firstAttemptDone = resolve));
    const stop = this.stopController.signal;
    this.connector = new Connector(
      {
        ...{ config, gateway, principal, authorizationFor, log: this.log },
        stopSignal: stop,
        onNotification: (notification) => {
          if (notification.method === 'notifications/tasks/status') this.dozing.noteTask(notification.params);
          this.options.onNotification?.(this, notification);
        },
        onRefreshed: (kinds) => {
          this.keepListing();
          this.options.onListsChanged(this, kinds);
        },
        ...(options.onRequest && { onRequest: (request) => options.onRequest!(this, request) }),
        isCurrent: (live) => this.live === live,
      },
      parts,
    );
    const quietMs = gateway.restart.maxDelayMs;
    this.signInWait = new SignInWait({ server: this.name, log: this.log, quietMs, stop });
    this.dozing = new Dozing({
      idleMs: this.config.idleTimeoutMs,
      keptAwake: () => this.subscriptions.uris.length > 0,
      onIdle: () => this.sleep(),
    });
    const never = neverStarted(this.config);
    if (never !== undefined) {
      this.tracked.set(never.state);
      this._lastError = never.error;
      this.firstAttemptDone();
    }
  }

  get state(): UpstreamState {
    return this.tracked.value;
  }
  /** When `state` last changed (ms since the epoch). */
  get stateSince(): number {
    return this.tracked.since;
  }
  /** The process id of its server while one runs (a stdio server the gateway started). */
  get pid(): number | undefined {
    return this.live?.connection.child?.pid;
  }
  /**
   * When the listing it is listed from was kept (ISO 8601), while it has not run in this
   * process: a lazy server listed from the cache. Undefined once it has connected.
   */
  get cachedListingAt(): string | undefined {
    if (this.connector.spoken !== undefined || this.kept?.lists === undefined) return undefined;
    return this.kept.keptAt;
  }
  /** The upstream's own tool definitions, as last listed. Kept while it restarts so the surface stays stable. */
  get tools(): readonly Tool[] {
    if (this.tracked.value === 'needs-sign-in' && this.options.signIn !== undefined)
      return [authorizeTool(this.name, this.options.signIn)];
    return this.parts.lists.lists.tools as unknown as readonly Tool[];
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
    await this.signInWait.retryNow(() => this.tracked.value === 'needs-sign-in');
    return this.tracked.value;
  }
  /** Its prompts, resources and resource templates, as last listed. */
  get listed(): Listed {
    return this.parts.lists.lists as unknown as Listed;
  }
  /** What the server declared in its initialize or discover answer (last connection). */
  get capabilities(): Params {
    return this.connector.spoken?.capabilities ?? this.kept?.capabilities ?? {};
  }
  /** The `instructions` of the server's initialize answer (last connection), if it gave any. */
  get instructions(): string | undefined {
    const spoken = this.connector.spoken;
    return spoken === undefined ? this.kept?.instructions : spoken.instructions;
  }
  get lastError(): string | undefined {
    return this._lastError;
  }
  /** What the server said in its last handshake (its dialect, version, name); undefined before one. */
  get spoken(): Handshaken | undefined {
    return this.connector.spoken;
  }
  /** The protocol era of the last connection, by name; undefined before one. */
  get era(): UpstreamEra | undefined {
    return this.connector.spoken?.dialect.era;
  }
  /** The caching hints this server gave for `method`'s results; undefined for a legacy server. */
  cacheHint(method: string): CacheHint | undefined {
    return this.parts.lists.cacheHint(method);
  }

  /**
   * Starts supervising. A lazy server with a listing kept from an earlier run is listed from it
   * and left asleep until a request needs it; without one it starts now, to be listed. Any other
   * server with a kept listing offers that listing's capabilities until its handshake is done.
   */
  start(): void {
    if (this.tracked.value !== 'idle') return;
    this.kept = this.options.listings?.read(this.config);
    const lists = this.kept?.lists;
    if (lists !== undefined && startsLazily(this.config)) this.listFrom(lists);
    this.running = this.supervise().catch((error: unknown) => {
      // Supervision itself must never throw out of here; this is a bug if it happens.
      this.log.error(`supervisor stopped unexpectedly: ${describeError(error)}`);
      this.tracked.set('failed');
      this.firstAttemptDone();
    });
  }

  /** Sends a request of the gateway's own to the upstream; fails at once when it is not connected. */
  request(method: string, params: Params | undefined, options?: OutgoingOptions): Promise<Params> {
    return this.whenReady(method, (dialect) => dialect.request(method, params, options), itself);
  }

  /**
   * Sends a routed request (the pipeline's terminal calls this): its answer comes back as an
   * outcome that still holds the upstream's bytes. Fails at once when it is not connected.
   */
  requestOutcome(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome> {
    // An asleep server holds no subscription (it has no process): an unsubscribe only ends the
    // host's, and must not start it.
    const answer =
      method === 'resources/unsubscribe' && this.tracked.value === 'asleep'
        ? Promise.resolve(Outcome.of({}))
        : this.whenReady(method, (dialect) => dialect.requestOutcome(method, params, options), resultOf);
    // Every subscribe and unsubscribe for this server passes here, refused ones too (an
    // unsubscribe while it restarts still ends the subscription).
    return this.subscriptions.observe(method, params, answer);
  }

  /**
   * `send`s through the connection when it is ready. A server that starts on demand is woken (or
   * its start under way awaited) first, for no longer than the start-up window
   * (`gateway.startupTimeout`); any other state, or a start that failed, fails it at once.
   */
  private whenReady<T>(
    method: string,
    send: (dialect: UpstreamDialect) => Promise<T>,
    result: (value: T) => Params | undefined,
  ): Promise<T> {
    const dialect = this.tracked.value === 'ready' ? this.live?.dialect : undefined;
    if (dialect !== undefined) return this.dozing.track(method, send(dialect), result);
    if (!this.startsOnDemand()) return Promise.reject(this.unavailable());
    if (this.tracked.value === 'asleep') this.dozing.wake();
    return this.dozing.started(this.options.gateway.startupTimeoutMs).then(() => {
      // Still starting when the window passed: the caller is told so, instead of waiting again.
      if (this.startsOnDemand()) throw this.unavailable();
      return this.whenReady(method, send, result);
    });
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
    if (this.tracked.value === 'ready') this.live?.session.notify(method, params);
  }

  /** Stops it for good; calls in flight fail with `why` (default: the gateway is shutting down). */
  async stop(why = 'the gateway is shutting down'): Promise<void> {
    if (this.tracked.value === 'stopped') return;
    const wasDisabled = this.tracked.value === 'disabled';
    this.tracked.set('stopped');
    this.dozing.stopped();
    this.stopController.abort();
    this.dozing.settled();
    if (wasDisabled) return;
    const wasLive = this.live !== undefined;
    const reason = new UpstreamFailedError(this.name, why);
    await Promise.all([
      this.teardown(reason),
      this.connector.abandon(reason),
      this.parts.connections.release?.(),
    ]);
    await this.running;
    this.attemptSettled();
    if (wasLive) this.record.stopped();
  }

  /** Why this server cannot take a request now, and what to do about it, as the model is told. */
  unavailable(): UpstreamUnavailableError {
    return new UpstreamUnavailableError(this.name, unavailableReason(this));
  }

  /** Whether a request that finds the server not ready waits for it to start (then goes on). */
  private startsOnDemand(): boolean {
    return this.tracked.value === 'asleep' || this.tracked.value === 'connecting';
  }

  /** A lazy server's listing from an earlier run: listed at once, started when first needed. */
  private listFrom(lists: NonNullable<ServerListing['lists']>): void {
    this.parts.lists.restore(lists);
    this.doze(`listed from its last listing (${this.parts.lists.describe()}); it starts when first used`);
    this.firstAttemptDone();
    this.options.onListsChanged(this, LIST_KINDS);
  }

  /** Idle for its whole `idleTimeout`: the process is stopped, to be started again on demand. */
  private sleep(): void {
    const live = this.live;
    if (this.tracked.value !== 'ready' || live === undefined) return;
    this.doze(
      `stopped after ${this.config.idleTimeoutMs} ms without requests; it starts again when next needed`,
    );
    void this.teardown(new UpstreamFailedError(this.name, 'it was stopped while idle'), live);
  }

  /** Leaves it without a process until a request needs it. */
  private doze(why: string): void {
    this.dozing.doze();
    this.tracked.set('asleep');
    this.log.info(why);
  }

  /** Keeps what the server listed, for listing it lazily in a later run. */
  private keepListing(): void {
    this.options.listings?.write(this.config, {
      lists: this.parts.lists.lists,
      capabilities: this.capabilities,
      ...(this.instructions !== undefined && { instructions: this.instructions }),
    });
  }

  private async supervise(): Promise<void> {
    const stopSignal = this.stopController.signal;
    while (!stopSignal.aborted) {
      const woken = this.dozing.dozing;
      if (woken) {
        if (!(await this.dozing.untilWanted(stopSignal))) return;
        this.log.info('starting: a request needs it');
      }
      // While it waits for a sign-in, its quiet attempts leave it waiting (and `authorize` listed).
      if (this.tracked.value !== 'needs-sign-in')
        this.tracked.set(
          woken || (this.record.recent === 0 && this.tools.length === 0) ? 'connecting' : 'restarting',
        );
      const attempt = await this.attempt();
      if (stopSignal.aborted) return;
      await this.teardown(attempt.endedWith);
      // Stopped for idleness: no failure, no backoff; it waits to be wanted again.
      if (this.dozing.dozing) {
        this.record.stopped();
        continue;
      }
      this.dozing.stopped();
      this._lastError = attempt.endedWith.message;
      if (needsSignIn(attempt.endedWith)) {
        await this.awaitSignIn(attempt.endedWith);
        continue;
      }
      const delay = isLasting(attempt.endedWith)
        ? this.record.failedForGood(attempt)
        : this.record.ended(attempt);
      this.tracked.set(delay === undefined ? 'failed' : 'restarting');
      this.attemptSettled();
      if (delay === undefined) return;
      await sleep(delay, stopSignal);
    }
  }

  /** One connection, from its attempt to its end; resolves with what ended it. */
  private async attempt(): Promise<{ endedWith: Error; connectedAt?: number }> {
    const attemptStarted = Date.now();
    let connectedAt: number | undefined;
    try {
      const live = await this.connector.open();
      if (this.stopController.signal.aborted) {
        await this.teardown(new UpstreamFailedError(this.name, 'the gateway is shutting down'), live);
        return { endedWith: new UpstreamFailedError(this.name, 'the gateway is shutting down') };
      }
      this.live = live;
      this.tracked.set('ready');
      // In the same turn as becoming ready: the host's own messages for this server can only
      // follow these subscribes, so the server sees them in the host's order.
      void restoreSubscriptions({
        ...{ subscriptions: this.subscriptions, supported: subscribable(this.capabilities) },
        ...{ timeoutMs: this.options.gateway.connectTimeoutMs, server: this.name, log: this.log },
        subscribe: (uri, signal) => live.dialect!.subscribe(uri, signal),
        ended: () => this.stopController.signal.aborted || this.live !== live,
      });
      this._lastError = undefined;
      connectedAt = Date.now();
      const ms = connectedAt - attemptStarted;
      this.record.connected({ pid: live.connection.child?.pid, tools: this.tools.length, ms });
      this.attemptSettled();
      this.dozing.ready();
      this.keepListing();
      this.options.onReady?.(this);
      this.options.onListsChanged(this, LIST_KINDS);
      return { endedWith: await live.connection.ended, connectedAt };
    } catch (error) {
      return { endedWith: error instanceof Error ? error : new Error(String(error)), connectedAt };
    }
  }

  /** The server wants its user to sign in: its tools give way to `authorize` until it has. */
  private async awaitSignIn(why: Error): Promise<void> {
    const first = this.tracked.value !== 'needs-sign-in';
    this.tracked.set('needs-sign-in');
    this.record.reset();
    const waited = this.signInWait.wait(why, { first });
    this.attemptSettled();
    if (first) this.options.onListsChanged(this, ['tools']);
    await waited;
  }

  /** The attempt under way settled: whoever waits for it (a request, `retryNow`) learns how. */
  private attemptSettled(): void {
    this.firstAttemptDone();
    this.dozing.settled();
    this.signInWait.attemptSettled();
  }

  private async teardown(reason: Error, live: Live | undefined = this.live): Promise<void> {
    if (live === undefined) return;
    if (this.live === live) this.live = undefined;
    await close(reason, live);
  }
}

const itself = (result: Params): Params => result;
const resultOf = (outcome: Outcome): Params | undefined => outcome.result;

/** Why a server entry is never started, if it is not: disabled, blocked, or unusable. */
function neverStarted(config: ServerConfig): { state: UpstreamState; error?: string } | undefined {
  if (config.disabled) return { state: 'disabled' };
  // The organisation's managed settings do not let it run: never started, reported as such.
  if (config.blockedByManaged !== undefined)
    return { state: 'failed', error: `blocked by managed settings: ${config.blockedByManaged}` };
  // Its config entry cannot be used: never started, reported failed with the reason.
  if (config.failedAtLoad !== undefined)
    return { state: 'failed', error: `its config entry has problems: ${config.failedAtLoad}` };
  // Its entry cannot be filled in for the principal it would run for (a missing or unsafe claim).
  if (config.cannotStart !== undefined) return { state: 'failed', error: config.cannotStart };
  return undefined;
}

/** Why a server in `state` takes no request, with what the user can do about it. */
function unavailableReason({ state, lastError, config }: Upstream): string {
  const entry = `${config.source.file}:${config.source.line}`;
  switch (state) {
    case 'disabled':
      return `it is disabled in the config (${entry}); remove "disabled: true" there to use it`;
    case 'failed':
      if (config.blockedByManaged !== undefined)
        return `it is blocked by managed settings: ${config.blockedByManaged}; only an administrator of this machine can allow it`;
      if (config.failedAtLoad !== undefined)
        return `its config entry has problems: ${config.failedAtLoad}; fix the entry (${entry}) and restart the gateway`;
      if (config.cannotStart !== undefined)
        return `${config.cannotStart}; the entry (${entry}) or the identity provider's claims must change for it to start`;
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
