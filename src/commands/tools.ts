import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { rebuildCatalogs } from '../core/catalog/catalogs.js';
import { NamedCatalog, type CatalogEntry } from '../core/catalog/namedCatalog.js';
import type { WardenConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import { UpstreamPool } from '../core/upstreams/upstreamPool.js';
import type { UpstreamState } from '../core/upstreams/upstream.js';

export interface CatalogListing {
  readonly tools: readonly {
    readonly name: string;
    readonly server: string;
    readonly tool: string;
    readonly description: string;
  }[];
  readonly servers: readonly {
    readonly name: string;
    /** `unavailable`: still connecting or restarting when the startup deadline passed. */
    readonly state: 'ready' | 'failed' | 'disabled' | 'unavailable';
    readonly tools: number;
    readonly error?: string;
  }[];
}

function summarize(state: UpstreamState): CatalogListing['servers'][number]['state'] {
  if (state === 'ready' || state === 'disabled' || state === 'failed') return state;
  return 'unavailable';
}

export interface CollectedTools {
  /** As the host would see them: policy-hidden tools left out when `hidden` is given. */
  readonly entries: readonly CatalogEntry<Tool>[];
  readonly servers: CatalogListing['servers'];
}

/**
 * Starts the upstreams exactly as serving would, waits for the startup deadline, collects the
 * merged tool catalog with each server's fate, and stops them.
 */
export async function collectTools(options: {
  config: WardenConfig;
  logger: Logger;
  version: string;
  hidden?: (server: string, tool: Tool) => boolean;
}): Promise<CollectedTools> {
  const { config, logger, hidden } = options;
  const catalog = new NamedCatalog<Tool>('tools', config.gateway.naming, (w) => logger.warn(w));
  const pool = new UpstreamPool({
    config,
    logger,
    clientInfo: { name: 'mcp-warden', version: options.version },
    onListsChanged: () =>
      void rebuildCatalogs(
        { tools: catalog },
        pool.upstreams,
        ['tools'],
        hidden === undefined ? {} : { hidden },
      ),
  });
  try {
    await pool.start();
    return {
      entries:
        hidden === undefined ? catalog.entries : catalog.entries.filter((e) => !hidden(e.server, e.item)),
      servers: pool.upstreams.map((u) => ({
        name: u.name,
        state: summarize(u.state),
        tools: u.tools.length,
        ...(u.lastError !== undefined && u.state !== 'ready' && { error: u.lastError }),
      })),
    };
  } finally {
    await pool.stop();
  }
}

/** `mcp-warden tools`: the merged catalog as rows for people (or JSON). */
export async function listCatalog(options: Parameters<typeof collectTools>[0]): Promise<CatalogListing> {
  const { entries, servers } = await collectTools(options);
  return {
    tools: entries.map((e) => ({
      name: e.exposed,
      server: e.server,
      tool: e.item.name,
      description: (e.item.description ?? '').split('\n')[0]!.trim(),
    })),
    servers,
  };
}

/** A plain table for people: exposed name, server, first line of the description. */
export function formatCatalog(listing: CatalogListing): string {
  const rows = listing.tools.map((t) => [t.name, t.server, t.description]);
  const header = ['TOOL', 'SERVER', 'DESCRIPTION'];
  const widths = [0, 1].map((i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `${r[0]!.padEnd(widths[0]!)}  ${r[1]!.padEnd(widths[1]!)}  ${r[2]}`.trimEnd();
  const out = [line(header), ...rows.map(line), ''];
  for (const s of listing.servers) {
    const detail = s.error !== undefined ? `: ${s.error}` : '';
    out.push(`server ${s.name}: ${s.state}, ${s.tools} tools${detail}`);
  }
  out.push(
    `${listing.tools.length} tools from ${listing.servers.filter((s) => s.state === 'ready').length}/${listing.servers.length} servers`,
  );
  return `${out.join('\n')}\n`;
}
