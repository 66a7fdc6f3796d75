import { sameServer } from '../../config/configDiff.js';
import type { ServerConfig, WardenConfig } from '../../config/types.js';
import type { ChildHandle, CommandWrapper } from '../transports/childProcess.js';
import type { EarlyStart } from './earlySpawn.js';
import type { ListKind, Upstream, UpstreamOptions } from './upstream.js';
import { createUpstream } from './createUpstream.js';
import type { UpstreamSignIn } from './signIn.js';
import { osPrincipal } from '../principal.js';
import { forPrincipal, principalHomes } from './principalServers.js';

/** What every upstream shares: the router's hooks and the gateway's identity. */
export type UpstreamPoolOptions = {
  readonly config: WardenConfig;
  /** Processes spawned ahead for this config (`spawnEarly`): the upstreams take them over. */
  readonly early?: EarlyStart;
  /** Where live child processes are kept (shared by several pools for the last-resort kill). */
  readonly children?: Set<ChildHandle>;
  /** How the user signs in to `server`, when it may ask for it (see `UpstreamOptions.signIn`). */
  readonly signInFor?: (server: ServerConfig) => UpstreamSignIn | undefined;
  /** What runs `server`'s command confined, when its entry asks for a sandbox. */
  readonly wrapFor?: (server: ServerConfig) => CommandWrapper | undefined;
  /**
   * Where each principal's own folder (`${principal.home}`) is made; default `principalHomes()`.
   * An entry that names the principal is filled in for `principal` (else the local user).
   */
  readonly homes?: string;
  /**
   * `onListsChanged` in two halves, for lists that change while the pool starts many upstreams
   * at once (lazy servers listed from their kept listings): each upstream's lists are reviewed
   * as they come, and the host's lists are rebuilt once, after the last. Without it, each
   * change goes to `onListsChanged`.
   */
  readonly batchLists?: {
    readonly review: (upstream: Upstream, kinds: readonly ListKind[]) => void;
    readonly relist: (kinds: readonly ListKind[]) => void;
  };
} & Pick<
  UpstreamOptions,
  | 'logger'
  | 'clientInfo'
  | 'onReady'
  | 'onListsChanged'
  | 'clientCapabilities'
  | 'onNotification'
  | 'onRequest'
  | 'connect'
  | 'onLifecycle'
  | 'prefersModern'
  | 'principal'
  | 'authorizationFor'
  | 'listings'
  | 'onStateChange'
>;

/** What a host connection's router reads of the upstreams: the pool, or a principal's view of it. */
export interface PoolView {
  /** In config order, which is the order that decides name collisions. */
  readonly upstreams: readonly Upstream[];
  readonly byName: ReadonlyMap<string, Upstream>;
  /** Starts what is not running; settles as `UpstreamPool.start` does. */
  start(): Promise<void>;
}

/** Every configured upstream, started together and stopped together. */
export class UpstreamPool implements PoolView {
  /** Live child processes, for the last-resort synchronous kill on process exit. */
  readonly children: Set<ChildHandle>;
  private startup: Promise<void> | undefined;
  private settleStartedUp!: () => void;
  /**
   * Settles when the first `start` has settled, however long it is before something starts the
   * pool (a stdio host's first request, an HTTP host's first session).
   */
  readonly startedUp = new Promise<void>((resolve) => (this.settleStartedUp = resolve));
  private list: Upstream[];
  private index: Map<string, Upstream>;
  /** The kinds of list changed while a batch of upstreams starts; undefined outside one. */
  private batched: Set<ListKind> | undefined;

  constructor(private readonly options: UpstreamPoolOptions) {
    const { early, children } = options;
    this.children = early?.children ?? children ?? new Set();
    this.list = options.config.servers.map((server) => this.make(server, early?.spawned.get(server.name)));
    this.index = new Map(this.list.map((u) => [u.name, u]));
  }

  /** In config order, which is the order that decides name collisions. */
  get upstreams(): readonly Upstream[] {
    return this.list;
  }

  get byName(): ReadonlyMap<string, Upstream> {
    return this.index;
  }

  /**
   * `server` as this pool runs it: an entry naming the principal filled in for the pool's
   * principal (see principalServers.ts). Others are returned as they are.
   */
  private resolve(server: ServerConfig): ServerConfig {
    if (server.transport !== 'stdio' || server.perPrincipal === undefined) return server;
    const { principal, homes } = this.options;
    return forPrincipal(server, principal ?? osPrincipal(), homes ?? principalHomes());
  }

  /** An upstream of this pool for `entry`, taking over the process spawned ahead for it if any. */
  private make(entry: ServerConfig, spawned?: Promise<ChildHandle>): Upstream {
    const {
      config,
      early: _early,
      children: _children,
      signInFor,
      wrapFor,
      batchLists: _b,
      homes: _homes,
      ...shared
    } = this.options;
    const server = this.resolve(entry);
    const signIn = signInFor?.(server);
    const wrap = wrapFor?.(server);
    return createUpstream(
      {
        ...shared,
        onListsChanged: (upstream, kinds) => this.listsChanged(upstream, kinds),
        ...(signIn && { signIn }),
        config: server,
        gateway: config.gateway,
        children: this.children,
        ...(spawned && { spawned }),
      },
      wrap === undefined ? {} : { wrap },
    );
  }

  /**
   * Puts a fresh upstream made from `server` in place of the one of that name (when the managed
   * settings now block it, or now let it run): the old one is stopped, failing its calls in
   * flight with `reason`, and the new one starts when the pool has been started. Resolves once
   * the old one has stopped.
   */
  async replace(server: ServerConfig, reason: string): Promise<void> {
    const at = this.list.findIndex((u) => u.name === server.name);
    const old = this.list[at];
    if (old === undefined) return;
    // A process spawned ahead belonged to the first upstream of that name only.
    const fresh = this.make(server);
    this.list = this.list.map((u) => (u === old ? fresh : u));
    this.index = new Map(this.list.map((u) => [u.name, u]));
    if (this.startup !== undefined) fresh.start();
    await old.stop(reason);
  }

  /**
   * Takes the servers of an edited config, in its order. An upstream whose entry is the same is
   * kept as it is (running, its subscriptions with it); one whose entry changed is replaced by a
   * fresh one, and one no longer configured is stopped. Calls in flight on an upstream stopped
   * this way fail with `why.changed` or `why.removed`. The fresh upstreams start at once when
   * the pool has been started (else with it). Resolves once the old ones have stopped.
   */
  async apply(
    servers: readonly ServerConfig[],
    why: { readonly changed: string; readonly removed: string },
  ): Promise<void> {
    const before = this.list;
    const kept = new Set<Upstream>();
    this.list = servers.map((server) => {
      const was = this.index.get(server.name);
      if (was !== undefined && sameServer(was.config, this.resolve(server))) {
        kept.add(was);
        return was;
      }
      return this.make(server);
    });
    this.index = new Map(this.list.map((u) => [u.name, u]));
    if (this.startup !== undefined) this.startBatch(this.list.filter((u) => !kept.has(u)));
    await Promise.all(
      before
        .filter((u) => !kept.has(u))
        .map((u) => u.stop(this.index.has(u.name) ? why.changed : why.removed)),
    );
  }

  /**
   * Starts every upstream at once. The returned promise (also `startupSettled`) settles when each
   * has connected or failed its first attempt, or when the startup deadline passes, whichever is
   * first: slow servers then join later through `notifications/tools/list_changed`.
   */
  start(): Promise<void> {
    if (this.startup !== undefined) return this.startup;
    this.startBatch(this.upstreams);
    const deadline = this.options.config.gateway.startupTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.all(this.upstreams.map((u) => u.firstAttempt)).then(() => clearTimeout(timer));
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        const waiting = this.upstreams.filter((u) => u.state === 'connecting').map((u) => u.name);
        if (waiting.length > 0)
          this.options.logger.warn(
            `startup deadline of ${deadline} ms passed; serving without ${waiting.join(', ')} for now ` +
              `(they will appear when ready)`,
          );
        resolve();
      }, deadline);
    });
    this.startup = Promise.race([all, late]);
    void this.startup.then(this.settleStartedUp);
    return this.startup;
  }

  /**
   * Starts every upstream at once, as `start` does, for a command that lists them and stops them
   * (`tools`, `check --live`, `pins`): settles when each has connected or failed its first
   * attempt, or when its own `startupTimeout` has passed, whichever is first. A launcher then
   * gets its whole window to install (the gateway-wide window would leave it mid-install when
   * the command stops the servers), and the others no more than before.
   */
  startEach(): Promise<void> {
    if (this.startup !== undefined) return this.startup;
    this.startBatch(this.upstreams);
    const timers: NodeJS.Timeout[] = [];
    const each = this.upstreams.map((u) =>
      Promise.race([
        u.firstAttempt,
        new Promise<void>((resolve) => timers.push(setTimeout(resolve, u.config.startupTimeoutMs))),
      ]),
    );
    this.startup = Promise.all(each).then(() => timers.forEach(clearTimeout));
    void this.startup.then(this.settleStartedUp);
    return this.startup;
  }

  /**
   * Starts `upstreams` together: the lists they change as they start (a lazy server is listed
   * from its kept listing at once) make one rebuild of the host's lists, not one each.
   */
  private startBatch(upstreams: readonly Upstream[]): void {
    this.batched = new Set();
    try {
      for (const u of upstreams) u.start();
    } finally {
      const kinds = [...this.batched];
      this.batched = undefined;
      if (kinds.length > 0) this.options.batchLists?.relist(kinds);
    }
  }

  private listsChanged(upstream: Upstream, kinds: readonly ListKind[]): void {
    const { batchLists } = this.options;
    if (this.batched === undefined || batchLists === undefined)
      return this.options.onListsChanged(upstream, kinds);
    batchLists.review(upstream, kinds);
    for (const kind of kinds) this.batched.add(kind);
  }

  /** Settles as described in `start`; resolves at once when the pool was never started. */
  get startupSettled(): Promise<void> {
    return this.startup ?? Promise.resolve();
  }

  async stop(): Promise<void> {
    await Promise.all(this.upstreams.map((u) => u.stop()));
  }

  /** Synchronous last resort for `process.on('exit')`: no child may outlive the gateway. */
  killAllNow(): void {
    for (const child of this.children) child.killNow();
  }
}
