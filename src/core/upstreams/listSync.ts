import { UpstreamFailedError, UpstreamRpcError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { CacheHint } from '../protocol/envelope.js';
import { RpcErrorCode, truncateForEcho, type Params } from '../protocol/jsonRpc.js';
import { paramHeadersOf, type ParamHeader } from '../protocol/paramHeaders.js';
import type { OutgoingOptions } from '../rpc/peer.js';
import type { UpstreamDialect } from './upstreamDialect.js';

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
export const LIST_KINDS = Object.keys(LISTS) as ListKind[];
const LIST_CHANGED: Readonly<Record<string, readonly ListKind[]>> = {
  'notifications/tools/list_changed': ['tools'],
  'notifications/prompts/list_changed': ['prompts'],
  'notifications/resources/list_changed': ['resources', 'resourceTemplates'],
};

/** What a listing is fetched from: the connection's dialect and what the server declared. */
export interface ListSource {
  readonly dialect: UpstreamDialect;
  readonly capabilities: Params;
}

/**
 * One upstream's lists: fetched page by page when it connects and again when it says one
 * changed, kept while it restarts so the surface stays stable, with the server's caching hints.
 */
export class ListSync {
  readonly lists: Record<ListKind, readonly Record<string, unknown>[]> = {
    tools: [],
    prompts: [],
    resources: [],
    resourceTemplates: [],
  };
  /** The listed tools by name, rebuilt when the list is replaced (for mirrored arguments). */
  private toolIndex: { list: readonly unknown[]; byName: Map<string, Record<string, unknown>> } | undefined;
  /** A server's caching hints, by list method (first page of its last listing). */
  private readonly cacheHints = new Map<string, CacheHint>();
  /** Lists a list_changed marked stale and no refresh has fetched since (see refreshSoon). */
  private readonly staleLists = new Set<ListKind>();
  private refreshing = false;

  constructor(private readonly options: { readonly server: string; readonly log: Logger }) {}

  /** Takes lists kept from an earlier run (a lazy server listed before it starts). */
  restore(lists: Readonly<Record<ListKind, readonly Record<string, unknown>[]>>): void {
    for (const kind of LIST_KINDS) this.lists[kind] = lists[kind] ?? [];
  }

  /** A new connection: the hints of the last one no longer hold. */
  forgetHints(): void {
    this.cacheHints.clear();
  }

  cacheHint(method: string): CacheHint | undefined {
    return this.cacheHints.get(method);
  }

  /** Fetches `kinds` whole and keeps them; `deadline` bounds each request (while connecting). */
  async fetch(
    source: ListSource,
    kinds: readonly ListKind[],
    deadline?: (method: string) => OutgoingOptions,
  ): Promise<void> {
    for (const kind of kinds)
      this.lists[kind] = await this.listAll(source, kind, deadline?.(LISTS[kind].method));
  }

  /** The lists a notification says changed; undefined when it is no list_changed. */
  changedBy(method: string): readonly ListKind[] | undefined {
    // Own members only: a notification named "constructor" or "__proto__" must not find Object's.
    return Object.hasOwn(LIST_CHANGED, method) ? LIST_CHANGED[method] : undefined;
  }

  /**
   * A list changed. A storm of list_changed notifications must not become a storm of full
   * re-lists (each thousands of tools) and of notifications to the host: while one refresh runs,
   * later notifications only mark their lists stale, and one more refresh runs after it for all
   * of them. So at most one refresh runs and one waits, however many notifications arrive.
   */
  refreshSoon(kinds: readonly ListKind[], refresh: (stale: readonly ListKind[]) => Promise<void>): void {
    for (const kind of kinds) this.staleLists.add(kind);
    if (this.refreshing) return;
    this.refreshing = true;
    void (async () => {
      try {
        while (this.staleLists.size > 0) {
          const stale = LIST_KINDS.filter((kind) => this.staleLists.has(kind));
          this.staleLists.clear();
          await refresh(stale);
        }
      } finally {
        this.refreshing = false;
      }
    })();
  }

  /** The mirrored arguments of the server's tool `name`, as last listed. */
  paramHeaders(name: string): readonly ParamHeader[] {
    const tools = this.lists.tools;
    if (this.toolIndex?.list !== tools)
      this.toolIndex = { list: tools, byName: new Map(tools.map((t) => [t.name as string, t])) };
    const mirrored = paramHeadersOf(this.toolIndex.byName.get(name)?.inputSchema);
    return 'headers' in mirrored ? mirrored.headers : [];
  }

  describe(): string {
    const { tools, prompts, resources, resourceTemplates } = this.lists;
    const parts = [`${tools.length} tools`];
    if (prompts.length > 0) parts.push(`${prompts.length} prompts`);
    if (resources.length > 0) parts.push(`${resources.length} resources`);
    if (resourceTemplates.length > 0) parts.push(`${resourceTemplates.length} resource templates`);
    return parts.join(', ');
  }

  /** Every page of one list, or nothing when the server did not declare the capability. */
  private async listAll(
    source: ListSource,
    kind: ListKind,
    options?: OutgoingOptions,
  ): Promise<Record<string, unknown>[]> {
    const spec = LISTS[kind];
    if (source.capabilities[spec.capability] === undefined) return [];
    const items: Record<string, unknown>[] = [];
    let cursor: string | undefined;
    // A server that keeps handing out cursors must not loop us forever.
    for (let page = 0; page < 1000; page++) {
      const result = await this.page(source.dialect, spec, cursor, options);
      if (result === undefined) return [];
      if (page === 0) this.noteCacheHint(spec.method, result);
      const list = result[spec.key];
      if (!Array.isArray(list))
        throw new UpstreamFailedError(
          this.options.server,
          `${spec.method} answer has no "${spec.key}" array`,
        );
      for (const item of list as unknown[]) {
        if (typeof item === 'object' && item !== null && spec.valid(item as Record<string, unknown>)) {
          if (kind === 'tools' && !source.dialect.keepsTool(item as Record<string, unknown>)) continue;
          items.push(item as Record<string, unknown>);
        } else
          this.options.log.warn(
            `skipped a malformed entry of ${spec.method}: ${truncateForEcho(JSON.stringify(item))}`,
          );
      }
      const next = result.nextCursor;
      if (typeof next !== 'string' || next === '') return items;
      cursor = next;
    }
    throw new UpstreamFailedError(this.options.server, `${spec.method} returned more than 1000 pages`);
  }

  /** One page; undefined when an optional list is not implemented. */
  private async page(
    dialect: UpstreamDialect,
    spec: ListSpec,
    cursor: string | undefined,
    options: OutgoingOptions | undefined,
  ): Promise<Record<string, unknown> | undefined> {
    try {
      return await dialect.request(spec.method, cursor === undefined ? undefined : { cursor }, options);
    } catch (error) {
      if (spec.optional && error instanceof UpstreamRpcError && error.rpcCode === RpcErrorCode.MethodNotFound)
        return undefined;
      throw error;
    }
  }

  /** Keeps a server's caching hints for a list (a legacy server gives none). */
  private noteCacheHint(method: string, result: Record<string, unknown>): void {
    const { ttlMs, cacheScope } = result;
    if (typeof ttlMs !== 'number' || ttlMs < 0) return;
    this.cacheHints.set(method, { ttlMs, cacheScope: cacheScope === 'private' ? 'private' : 'public' });
  }
}
