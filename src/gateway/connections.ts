import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ServerConfig, WardenConfig } from '../config/types.js';
import { rebuildCatalogs, type Catalogs, type ListedItem } from '../core/catalog/catalogs.js';
import { NamedCatalog } from '../core/catalog/namedCatalog.js';
import { ResourceCatalog } from '../core/catalog/resourceCatalog.js';
import type { Logger } from '../core/logger.js';
import type { Principal } from '../core/principal.js';
import type { CommandWrapper } from '../core/transports/childProcess.js';
import type { EarlyStart } from '../core/upstreams/earlySpawn.js';
import type { ListingStore } from '../core/upstreams/startPolicy.js';
import {
  isolatedServers,
  loggerFor,
  PrincipalPools,
  sharedServers,
  type PrincipalView,
} from '../core/upstreams/principalPools.js';
import type { ListKind } from '../core/upstreams/upstream.js';
import { UpstreamPool } from '../core/upstreams/upstreamPool.js';
import type { Connection, Scope } from './hosts.js';
import { upstreamHooks, type UpstreamHookDeps } from './upstreamHooks.js';

/** What a reload may change: every list the host sees. */
export const ALL_LISTS = ['tools', 'prompts', 'resources', 'resourceTemplates'] as const;

export interface UpstreamConnectionsOptions {
  readonly config: WardenConfig;
  readonly logger: Logger;
  /** Upstream processes already spawned for this config (`spawnEarly`), to be taken over. */
  readonly early?: EarlyStart;
  /** Every host connection the gateway serves. */
  readonly connections: Set<Connection>;
  /** Who the shared pool's lifecycle records are written for. */
  readonly principal: Principal;
  readonly hooks: UpstreamHookDeps;
  /** What the host's lists show, and the definitions served for an upstream's tools. */
  readonly lists: {
    readonly listed: (item: ListedItem) => boolean;
    readonly served: (server: string, tools: readonly Tool[], runsTasks: boolean) => readonly Tool[];
  };
  /** Every configured server as the managed settings in force let it run or block it. */
  readonly servers: () => readonly ServerConfig[];
  /** Where the shared servers' listings are kept between runs (when some server starts lazily). */
  readonly listings?: ListingStore;
  /**
   * Where one principal's own servers keep their listings, so a lazy one is listed without
   * starting it for that principal too; each principal's apart (see `principalListingCache`).
   */
  readonly principalListings?: (principal: Principal) => ListingStore;
  /** What starts a server that asks for a sandbox confined (see features/sandbox). */
  readonly wrapFor?: (server: ServerConfig) => CommandWrapper | undefined;
}

/**
 * The upstreams the gateway runs and the lists made from them: one pool every principal shares
 * and, with an HTTP listener, each principal's own processes of the isolated servers (see
 * principalPools.ts), each with the lists its principal's connections see.
 */
export class UpstreamConnections {
  readonly pool: UpstreamPool;
  readonly principalPools: PrincipalPools | undefined;
  /**
   * Every connection's view of the upstreams and its lists, when no server is per principal.
   * Otherwise no connection uses it (each has its principal's), and its lists hold the shared
   * servers only.
   */
  readonly main: Scope;
  private readonly scopes = new WeakMap<PrincipalView, Scope>();
  /** Whether users sign in to a server themselves: behind the listener each has their own. */
  private readonly signsIn = (server: ServerConfig): boolean =>
    this.options.hooks.signInFor?.(server) !== undefined;

  constructor(private readonly options: UpstreamConnectionsOptions) {
    const { config } = options;
    const isolated = config.listen === undefined ? [] : isolatedServers(config.servers, this.signsIn);
    this.pool = new UpstreamPool({
      config: isolated.length === 0 ? config : { ...config, servers: sharedServers(config, this.signsIn) },
      ...(options.early && { early: options.early }),
      ...(options.listings && { listings: options.listings }),
      ...(options.wrapFor && { wrapFor: options.wrapFor }),
      ...upstreamHooks(options.hooks, {
        connections: () => options.connections,
        relist: (kinds) => this.relistAll(kinds),
        principal: options.principal,
      }),
    });
    this.main = {
      view: this.pool,
      catalogs: this.newCatalogs(),
      connections: isolated.length === 0 ? options.connections : new Set(),
    };
    this.principalPools =
      isolated.length === 0
        ? undefined
        : new PrincipalPools({
            servers: config.servers,
            shared: this.pool,
            limits: config.listen!.perPrincipal,
            logger: options.logger,
            makePool: (view) => this.principalPool(view),
            signsIn: this.signsIn,
          });
  }

  /** The scope of a connection made by `principal`, and its principal's view when it has one. */
  scopeFor(principal: Principal): { readonly scope: Scope; readonly view: PrincipalView | undefined } {
    const view = this.principalPools?.view(principal);
    return { scope: view === undefined ? this.main : this.scopeOf(view), view };
  }

  /** Every scope: the shared one and each principal's. */
  all(): Scope[] {
    return [this.main, ...(this.principalPools?.all.map((view) => this.scopeOf(view)) ?? [])];
  }

  /** Rebuilds `kinds` of every scope's lists, telling each connection whose lists changed. */
  relistAll(kinds: readonly ListKind[]): void {
    for (const scope of this.all()) this.relist(scope, kinds);
  }

  relist(scope: Scope, kinds: readonly ListKind[]): void {
    const changed = rebuildCatalogs(scope.catalogs, scope.view.upstreams, kinds, this.options.lists);
    if (changed.length > 0) for (const c of scope.connections) c.router.listsChanged(changed);
  }

  /**
   * Whether `servers` can be run by these pools: a server that must run once per principal
   * needs the per-principal pools, which exist only when the gateway started with such a
   * server. Undefined when they can; else why not.
   */
  cannotRun(servers: readonly ServerConfig[]): string | undefined {
    if (this.options.config.listen === undefined || this.principalPools !== undefined) return undefined;
    const isolated = isolatedServers(servers, this.signsIn).map((s) => s.name);
    return isolated.length === 0
      ? undefined
      : `${isolated.map((n) => `"${n}"`).join(', ')} would run one process per principal behind the HTTP listener, which this gateway did not set up at start (it had no such server); restart mcp-warden, or give the entry "shared: true"`;
  }

  /**
   * Puts the servers of an edited config in force (every configured server, in the new order):
   * the shared pool and each principal's follow it (see `UpstreamPool.apply`), and every
   * connection whose lists changed is told so. Resolves once the replaced upstreams stopped.
   */
  async apply(
    servers: readonly ServerConfig[],
    why: { readonly changed: string; readonly removed: string },
  ): Promise<void> {
    const { listen } = this.options.config;
    const stopping = [
      this.pool.apply(sharedServers({ servers, ...(listen && { listen }) }, this.signsIn), why),
      this.principalPools?.apply(servers, why),
    ];
    this.relistAll(ALL_LISTS);
    await Promise.all(stopping);
  }

  async stop(): Promise<void> {
    await Promise.all([this.pool.stop(), this.principalPools?.stop()]);
  }

  /** The connections, view and lists of one principal (its own processes' tools among them). */
  private scopeOf(view: PrincipalView): Scope {
    let scope = this.scopes.get(view);
    if (scope === undefined) {
      scope = { view, catalogs: this.newCatalogs(), connections: new Set() };
      this.scopes.set(view, scope);
      rebuildCatalogs(scope.catalogs, view.upstreams, ALL_LISTS, this.options.lists);
    }
    return scope;
  }

  private newCatalogs(): Catalogs {
    const { naming } = this.options.config.gateway;
    const warn = (warning: string) => this.options.logger.warn(warning);
    return {
      tools: new NamedCatalog<Tool>('tools', naming, warn),
      prompts: new NamedCatalog<Prompt>('prompts', naming, warn),
      resources: new ResourceCatalog(warn),
    };
  }

  /**
   * One principal's own processes of the isolated servers: what they send reaches only that
   * principal's connections, and their lifecycle records name that principal.
   */
  private principalPool(view: PrincipalView): UpstreamPool {
    return new UpstreamPool({
      config: { ...this.options.config, servers: isolatedServers(this.options.servers(), this.signsIn) },
      children: this.pool.children,
      ...(this.options.wrapFor && { wrapFor: this.options.wrapFor }),
      ...(this.options.principalListings && { listings: this.options.principalListings(view.principal) }),
      ...upstreamHooks(this.options.hooks, {
        view,
        logger: loggerFor(this.options.logger, view.principal),
        connections: () => this.scopeOf(view).connections,
        relist: (kinds) => this.relist(this.scopeOf(view), kinds),
        principal: view.principal,
      }),
    });
  }
}
