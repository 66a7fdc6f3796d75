import type { PerPrincipalConfig, ServerConfig } from '../../config/types.js';
import { PrincipalLimitError } from '../errors.js';
import type { Logger } from '../logger.js';
import { describePrincipal, principalKey, type Principal } from '../principal.js';
import type { Upstream } from './upstream.js';
import type { PoolView, UpstreamPool } from './upstreamPool.js';

/**
 * The servers each principal gets their own of once hosts connect over HTTP: a stdio server may
 * read files or run commands as whoever calls it, so two users never share one process unless
 * its entry says `shared: true`. An HTTP upstream is one service whatever the caller, unless its
 * users sign in to it (`signsIn`): then each principal has their own connection carrying their
 * own tokens, so one user's sign-in never serves another's call.
 */
export function isolatedServers(
  servers: readonly ServerConfig[],
  signsIn: (server: ServerConfig) => boolean = () => false,
): ServerConfig[] {
  return servers.filter(
    (s) => (s.transport === 'stdio' && !s.shared) || (s.transport === 'http' && signsIn(s)),
  );
}

/**
 * The servers one process serves for everyone: all of them without a listener, and with one
 * those not in `isolatedServers`. Only these are worth starting before any principal comes.
 */
export function sharedServers(
  config: {
    readonly servers: readonly ServerConfig[];
    readonly listen?: unknown;
  },
  signsIn?: (server: ServerConfig) => boolean,
): ServerConfig[] {
  if (config.listen === undefined) return [...config.servers];
  const isolated = isolatedServers(config.servers, signsIn);
  return config.servers.filter((s) => !isolated.includes(s));
}

export interface PrincipalPoolsOptions {
  /** Every configured server, in config order (the order that decides name collisions). */
  readonly servers: readonly ServerConfig[];
  /** The one pool of the servers every principal shares. */
  readonly shared: UpstreamPool;
  readonly limits: Pick<PerPrincipalConfig, 'idleMs' | 'maxProcesses'>;
  /** Makes a fresh, unstarted pool of one principal's own servers (its hooks know the view). */
  readonly makePool: (view: PrincipalView) => UpstreamPool;
  readonly logger: Logger;
  /** The clock idleness is measured on; tests pass their own. */
  readonly now?: () => number;
  /** Whether users sign in to an HTTP server themselves: each principal then has their own. */
  readonly signsIn?: (server: ServerConfig) => boolean;
}

/**
 * Gives each principal a view of the upstreams: the shared pool's servers, and its own
 * processes of the isolated ones. A principal's processes start on its first list or call and
 * stop after `idleMs` without one; at most `maxProcesses` run for all principals together, the
 * least recently used idle principal's being stopped to make room.
 */
export class PrincipalPools {
  private readonly views = new Map<string, PrincipalView>();
  private readonly sweeper: NodeJS.Timeout;
  /** How many processes each principal's own servers run (their own HTTP connections are none). */
  private processCount: number;
  /** Every configured server, as the managed settings now let it run or block it. */
  servers: readonly ServerConfig[];
  readonly now: () => number;

  /** How many processes each principal's own servers run (their own HTTP connections are none). */
  get processesPerPrincipal(): number {
    return this.processCount;
  }

  constructor(readonly options: PrincipalPoolsOptions) {
    this.now = options.now ?? Date.now;
    this.servers = options.servers;
    // Only processes count against the bound: a principal's own HTTP connection is not one.
    this.processCount = isolatedServers(options.servers).length;
    // Checked a few times per idle period, so a process outlives its idle time by a quarter of it.
    const every = Math.min(Math.max(options.limits.idleMs / 4, 25), 60_000);
    this.sweeper = setInterval(() => this.sweep(), every).unref();
  }

  /** The view of one principal (the same object for every connection of that principal). */
  view(principal: Principal): PrincipalView {
    const key = principalKey(principal);
    let view = this.views.get(key);
    if (view === undefined) {
      view = new PrincipalView(this, key, principal);
      this.views.set(key, view);
    }
    return view;
  }

  /** Every principal's view that exists now. */
  get all(): readonly PrincipalView[] {
    return [...this.views.values()];
  }

  /** Per-principal processes running now, all principals together. */
  get running(): number {
    let n = 0;
    for (const view of this.views.values()) n += view.running;
    return n;
  }

  /**
   * Makes room for one more principal's processes, stopping the least recently used idle ones;
   * throws when the bound would be passed and every principal with processes is busy.
   */
  admit(view: PrincipalView): void {
    const { maxProcesses } = this.options.limits;
    const need = this.processesPerPrincipal;
    const candidates = [...this.views.values()]
      .filter((v) => v !== view && v.running > 0 && v.busy === 0 && !v.starting)
      .sort((a, b) => a.lastUsed - b.lastUsed);
    while (this.running + need > maxProcesses) {
      const evicted = candidates.shift();
      if (evicted === undefined)
        throw new PrincipalLimitError(
          'maxProcesses',
          maxProcesses,
          `mcp-warden cannot start ${describePrincipal(view.principal)}'s own server processes: ` +
            `${this.running} per-principal processes are running and every principal that has them is busy; try again later`,
        );
      this.options.logger.info(
        `stopping ${describePrincipal(evicted.principal)}'s server processes to make room (listen.perPrincipal.maxProcesses: ${maxProcesses})`,
      );
      evicted.retire();
    }
  }

  /** Stops the processes of principals idle for `idleMs`; forgets principals with nothing left. */
  private sweep(): void {
    const cutoff = this.now() - this.options.limits.idleMs;
    for (const [key, view] of this.views) {
      if (view.busy > 0 || view.starting || view.lastUsed > cutoff) continue;
      if (view.running > 0) {
        this.options.logger.info(
          `stopping ${describePrincipal(view.principal)}'s server processes: unused for ${this.options.limits.idleMs} ms`,
        );
        view.retire();
      }
      if (view.connections === 0) this.views.delete(key);
    }
  }

  /**
   * The managed settings changed which servers may run (`servers`, in the same order): every
   * principal's own processes are stopped and made afresh from them on next use, and every view
   * takes the shared pool's upstreams as they are now.
   */
  reset(servers: readonly ServerConfig[]): void {
    this.servers = servers;
    for (const view of this.views.values()) view.renew();
  }

  /**
   * An edit of the config while serving (`servers`, every configured server in the new order):
   * each principal's own processes follow it as `UpstreamPool.apply` says (unchanged ones keep
   * running, subscriptions and all), and every view takes the shared pool's upstreams as they
   * are now. Resolves once the replaced processes have stopped.
   */
  async apply(
    servers: readonly ServerConfig[],
    why: { readonly changed: string; readonly removed: string },
  ): Promise<void> {
    this.servers = servers;
    this.processCount = isolatedServers(servers).length;
    const isolated = isolatedServers(servers, this.options.signsIn);
    await Promise.all([...this.views.values()].map((view) => view.apply(isolated, why)));
  }

  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.views.values()].map((v) => v.stop()));
  }
}

/** One principal's upstreams: the shared ones and its own processes, in config order. */
export class PrincipalView implements PoolView {
  /** Requests of this principal in flight now: a busy principal's processes are never stopped. */
  busy = 0;
  /** Host connections of this principal open now. */
  connections = 0;
  lastUsed: number;
  private own: UpstreamPool;
  private started: Promise<void> | undefined;
  /** Whether this principal's processes are starting now: never idle meanwhile. */
  private startingNow = false;
  private merged!: { upstreams: readonly Upstream[]; byName: ReadonlyMap<string, Upstream> };
  private stopping: Promise<void> = Promise.resolve();

  constructor(
    private readonly pools: PrincipalPools,
    readonly key: string,
    readonly principal: Principal,
  ) {
    this.lastUsed = pools.now();
    this.own = pools.options.makePool(this);
    this.merge();
  }

  get upstreams(): readonly Upstream[] {
    return this.merged.upstreams;
  }

  get byName(): ReadonlyMap<string, Upstream> {
    return this.merged.byName;
  }

  /** Whether `server` runs as this principal's own process (not a shared server). */
  ownsServer(server: string): boolean {
    return this.own.byName.has(server);
  }

  /** Whether this principal's processes are still starting (they are not idle then). */
  get starting(): boolean {
    return this.startingNow;
  }

  /** Per-principal processes of this principal running (or starting) now. */
  get running(): number {
    return this.started === undefined ? 0 : this.pools.processesPerPrincipal;
  }

  /** Starts the shared servers and this principal's own (within the process bound). */
  start(): Promise<void> {
    this.lastUsed = this.pools.now();
    if (this.started === undefined) {
      try {
        this.pools.admit(this);
      } catch (error) {
        return Promise.reject(error);
      }
      const own = this.own;
      // A retired pool must have let go of its processes before the next one starts. Idleness
      // counts from the end of the start: a slow start (a loaded machine, a big server) is not
      // idle time, and stopping processes while they start would leave the host's first call
      // to a pool with no tools listed yet.
      this.startingNow = true;
      const started = this.stopping
        .then(() => Promise.all([this.pools.options.shared.start(), own.start()]))
        .then(() => {});
      const settled = (): void => {
        if (this.started !== started) return;
        this.startingNow = false;
        this.lastUsed = this.pools.now();
      };
      started.then(settled, settled);
      this.started = started;
    }
    return this.started;
  }

  /**
   * Runs one request of this principal: it counts as busy meanwhile (so its processes are not
   * stopped under it), and a request for one of its own servers starts them first.
   */
  async run<T>(server: string, request: () => Promise<T>): Promise<T> {
    this.busy++;
    this.lastUsed = this.pools.now();
    try {
      if (this.own.byName.has(server)) await this.start();
      return await request();
    } finally {
      this.busy--;
      this.lastUsed = this.pools.now();
    }
  }

  /** Stops this principal's own processes; the next list or call starts fresh ones. */
  retire(): void {
    if (this.started === undefined) return;
    this.renew();
  }

  /** A fresh, unstarted pool of this principal's own servers in place of the one it has. */
  renew(): void {
    const old = this.own;
    this.started = undefined;
    this.startingNow = false;
    this.own = this.pools.options.makePool(this);
    this.merge();
    // A pool retired just before must also have let go of its processes before the next starts.
    this.stopping = Promise.all([this.stopping, old.stop()]).then(() => {});
  }

  /** This principal's own servers as an edited config has them (see `PrincipalPools.apply`). */
  apply(
    servers: readonly ServerConfig[],
    why: { readonly changed: string; readonly removed: string },
  ): Promise<void> {
    const stopped = this.own.apply(servers, why);
    this.merge();
    return stopped;
  }

  async stop(): Promise<void> {
    this.started = undefined;
    await Promise.all([this.stopping, this.own.stop()]);
  }

  private merge(): void {
    const { shared } = this.pools.options;
    const upstreams = this.pools.servers.flatMap((s) => {
      const u = this.own.byName.get(s.name) ?? shared.byName.get(s.name);
      return u === undefined ? [] : [u];
    });
    this.merged = { upstreams, byName: new Map(upstreams.map((u) => [u.name, u])) };
  }
}

/**
 * The logger of one principal's own processes: their lines say whose process they are
 * (`[files for alice@https://idp.example]`), since every principal's copy has the same name.
 */
export function loggerFor(logger: Logger, principal: Principal): Logger {
  const who = describePrincipal(principal);
  return {
    error: (message, meta) => logger.error(message, meta),
    warn: (message, meta) => logger.warn(message, meta),
    info: (message, meta) => logger.info(message, meta),
    debug: (message, meta) => logger.debug(message, meta),
    child: (scope) => logger.child(`${scope} for ${who}`),
  };
}
