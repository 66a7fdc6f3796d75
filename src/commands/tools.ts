import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { createSandboxes, type PolicyRules } from '../features/sandbox/index.js';
import { rebuildCatalogs, type ListedItem } from '../core/catalog/catalogs.js';
import { NamedCatalog, type CatalogEntry } from '../core/catalog/namedCatalog.js';
import { ServedDefinitions } from '../core/catalog/servedDefinitions.js';
import type { GatewayConfig, ServerConfig, WardenConfig } from '../config/types.js';
import { formatDuration } from '../config/duration.js';
import { plural } from '../lib/plural.js';
import { paletteFor, type Palette } from '../lib/colour.js';
import type { Logger } from '../core/logger.js';
import { UpstreamPool } from '../core/upstreams/upstreamPool.js';
import type { Upstream } from '../core/upstreams/upstream.js';
import type { ListingStore } from '../core/upstreams/startPolicy.js';
import { agoOf } from '../lib/age.js';
import type { Feature } from '../core/routing/feature.js';
import { visible } from '../gateway/features.js';
import { announceStart, progressHooks, type StartupProgress } from './progress.js';

export interface CatalogListing {
  readonly tools: readonly {
    readonly name: string;
    readonly server: string;
    readonly tool: string;
    readonly description: string;
  }[];
  readonly servers: readonly {
    readonly name: string;
    /**
     * `unavailable`: still connecting or restarting when the startup deadline passed. `cached`:
     * a lazy server listed from its cached listing, not started.
     */
    readonly state: 'ready' | 'failed' | 'disabled' | 'unavailable' | 'cached';
    readonly tools: number;
    /** For a `cached` server: when its listing was kept (ISO 8601). */
    readonly cachedAt?: string;
    readonly error?: string;
    /** The protocol era the server speaks (known once it connected), and its version. */
    readonly era?: 'legacy' | 'modern';
    readonly protocolVersion?: string;
    /** The server's own name for itself and its version, as it reported them. */
    readonly serverInfo?: { readonly name: string; readonly version: string };
    /** True when its process runs in a sandbox (`sandbox:`; see the Sandboxed servers guide). */
    readonly sandboxed?: boolean;
  }[];
  /** Tools the upstreams list that the policy files hide from the host (always denied). */
  readonly hiddenByPolicy?: number;
  /** Definitions a strict host would reject, repaired (served repaired) or left out. */
  readonly definitions?: DefinitionFindings;
}

/** What the definition check found, per server and tool (the upstream's own tool names). */
export interface DefinitionFindings {
  readonly repaired: readonly {
    readonly server: string;
    readonly tool: string;
    readonly repairs: readonly string[];
  }[];
  readonly leftOut: readonly { readonly server: string; readonly tool: string; readonly reason: string }[];
}

function summarize(upstream: Upstream): CatalogListing['servers'][number]['state'] {
  const { state } = upstream;
  if (state === 'ready' || state === 'disabled' || state === 'failed') return state;
  if (state === 'asleep' && upstream.cachedListingAt !== undefined) return 'cached';
  return 'unavailable';
}

export interface CollectedTools {
  /** As the host would see them: what `listed` rejects left out, when it is given. */
  readonly entries: readonly CatalogEntry<Tool>[];
  readonly servers: CatalogListing['servers'];
  readonly definitions: DefinitionFindings;
}

/**
 * Starts the upstreams exactly as serving would, waits for the startup deadline, collects the
 * merged tool catalog with each server's fate, and stops them.
 */
export async function collectTools(options: {
  config: WardenConfig;
  logger: Logger;
  version: string;
  /** What the host's tool list shows (see `visible` in gateway/features.ts); default everything. */
  listed?: (item: ListedItem) => boolean;
  progress?: StartupProgress;
  /**
   * `upstream` (default): each server's definitions as it sends them (what pins hold).
   * `served`: as the host is served them, checked and repaired (see servedDefinitions.ts).
   */
  definitions?: 'upstream' | 'served';
  /** The policies in force, which `sandbox: auto` derives grants from. */
  policies?: PolicyRules;
  /**
   * The listings kept between runs: a lazy server with one is listed from it and not started
   * (reported `cached`), and a server that starts keeps its listing there. Without it, every
   * server starts.
   */
  listings?: ListingStore;
}): Promise<CollectedTools> {
  const { config, logger, listed, progress } = options;
  // Servers are started as serving would start them: a sandboxed one in its sandbox.
  const sandboxes = createSandboxes({
    policies: () => options.policies,
    warn: (server, message) => logger.child(server).warn(message),
  });
  const catalog = new NamedCatalog<Tool>('tools', config.gateway.naming, (w) => logger.warn(w));
  const definitions = {
    repaired: [] as DefinitionFindings['repaired'][number][],
    leftOut: [] as DefinitionFindings['leftOut'][number][],
  };
  const served = new ServedDefinitions({
    repaired: (server, r) => definitions.repaired.push({ server, ...r }),
    leftOut: (server, l) => definitions.leftOut.push({ server, ...l }),
  });
  const pool = new UpstreamPool({
    config,
    logger,
    clientInfo: { name: 'mcp-warden', version: options.version },
    ...(progress && progressHooks(progress)),
    wrapFor: sandboxes.wrapFor,
    ...(options.listings && { listings: options.listings }),
    onListsChanged: () =>
      void rebuildCatalogs({ tools: catalog }, pool.upstreams, ['tools'], {
        ...(listed !== undefined && { listed }),
        ...(options.definitions === 'served' && {
          served: (server: string, tools: readonly Tool[]) => served.tools(server, tools),
        }),
      }),
  });
  try {
    const started = pool.startEach();
    // After the start began: a lazy server listed from its cached listing is not starting.
    if (progress !== undefined) announceStart(pool.upstreams, progress);
    await started;
    progress?.done();
    return {
      entries:
        listed === undefined
          ? catalog.entries
          : catalog.entries.filter((e) => listed({ list: 'tools', server: e.server, item: e.item })),
      servers: pool.upstreams.map((u) => serverFate(u, config.gateway)),
      definitions,
    };
  } finally {
    await pool.stop();
    await sandboxes.close();
  }
}

/** One server's line in the listing: how it ended up, what it speaks, and why it is missing. */
function serverFate(u: Upstream, gateway: GatewayConfig): CatalogListing['servers'][number] {
  const state = summarize(u);
  return {
    name: u.name,
    state,
    tools: u.tools.length,
    ...(state === 'cached' && { cachedAt: u.cachedListingAt! }),
    ...(u.era !== undefined && { era: u.era }),
    ...(u.spoken !== undefined && { protocolVersion: u.spoken.protocolVersion }),
    ...(u.spoken?.serverInfo !== undefined && { serverInfo: u.spoken.serverInfo }),
    ...(u.config.transport === 'stdio' && u.config.sandbox !== undefined && { sandboxed: true }),
    ...(u.state !== 'ready' &&
      u.state !== 'disabled' &&
      state !== 'cached' && {
        error: u.lastError ?? (u.state === 'failed' ? 'failed' : late(u.config, gateway)),
      }),
  };
}

/** Why a server that was still starting is left out: it has no error of its own yet. */
function late(server: ServerConfig, gateway: GatewayConfig): string {
  const ms = server.startupTimeoutMs;
  return ms === gateway.startupTimeoutMs
    ? `still starting when gateway.startupTimeout (${formatDuration(ms)}) passed`
    : `still starting when its startupTimeout (${formatDuration(ms)}) passed`;
}

/** `mcp-warden tools`: the merged catalog as rows for people (or JSON). */
export async function listCatalog(
  options: Omit<Parameters<typeof collectTools>[0], 'listed'> & {
    /** Says whether the policy hides a tool; those are left out, and counted. */
    readonly hiddenByPolicy?: (server: string, tool: Tool) => boolean;
    /** Says whether something else hides a tool (its pin blocks it); those are left out. */
    readonly hidden?: (server: string, tool: Tool) => boolean;
  },
): Promise<CatalogListing> {
  const { hiddenByPolicy, hidden, ...rest } = options;
  const byPolicy = new Set<string>();
  const rules: Feature[] = [
    {
      visible: toolsOnly((server, tool) => {
        if (hiddenByPolicy?.(server, tool) !== true) return false;
        byPolicy.add(`${server}/${tool.name}`);
        return true;
      }),
    },
    ...(hidden === undefined ? [] : [{ visible: toolsOnly(hidden) }]),
  ];
  const { entries, servers, definitions } = await collectTools({
    ...rest,
    definitions: 'served',
    // The gateway's own rule, as for a host that does not run MCP Apps: what this prints is what
    // such a host's tools/list holds.
    listed: visible(rules, () => undefined),
  });
  return {
    tools: entries.map((e) => ({
      name: e.exposed,
      server: e.server,
      tool: e.item.name,
      description: (e.item.description ?? '').split('\n')[0]!.trim(),
    })),
    servers,
    hiddenByPolicy: byPolicy.size,
    definitions,
  };
}

/** A feature's visibility rule from a rule that hides tools (and nothing else). */
function toolsOnly(hides: (server: string, tool: Tool) => boolean): Feature['visible'] {
  return (item) => item.list !== 'tools' || !hides(item.server, item.item);
}

/** What a ready server speaks, for its line: `, fixture 1.0.0, MCP 2025-11-25 (legacy)`. */
function speaks(server: CatalogListing['servers'][number]): string {
  if (server.state !== 'ready' || server.era === undefined) return '';
  const info =
    server.serverInfo === undefined
      ? ''
      : `, ${[server.serverInfo.name, server.serverInfo.version].filter((part) => part !== '').join(' ')}`;
  return `${info}, MCP ${server.protocolVersion ?? '?'} (${server.era})`;
}

/** A plain table for people: exposed name, server, first line of the description. */
export function formatCatalog(listing: CatalogListing, palette: Palette = paletteFor({}, {})): string {
  const rows = listing.tools.map((t) => [t.name, t.server, t.description]);
  const header = ['TOOL', 'SERVER', 'DESCRIPTION'];
  const widths = [0, 1].map((i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `${r[0]!.padEnd(widths[0]!)}  ${r[1]!.padEnd(widths[1]!)}  ${r[2]}`.trimEnd();
  const out = [line(header), ...rows.map(line), ''];
  for (const s of listing.servers) {
    const detail =
      s.error !== undefined
        ? `: ${s.error}`
        : s.cachedAt !== undefined
          ? ` (listed from its cached listing of ${agoOf(s.cachedAt)}, not started; --live starts it)`
          : speaks(s);
    const state =
      s.state === 'ready'
        ? s.state
        : s.state === 'disabled' || s.state === 'cached'
          ? palette.dim(s.state)
          : palette.red(s.state);
    const sandboxed = s.sandboxed === true ? ', sandboxed' : '';
    out.push(`server ${s.name}: ${state}, ${plural(s.tools, 'tool')}${sandboxed}${detail}`);
  }
  for (const r of listing.definitions?.repaired ?? [])
    out.push(`repaired: server ${r.server}, tool ${r.tool}: ${r.repairs.join('; ')}`);
  for (const l of listing.definitions?.leftOut ?? [])
    out.push(palette.red(`left out: server ${l.server}, tool ${l.tool}: ${l.reason}`));
  const hidden = listing.hiddenByPolicy ?? 0;
  out.push(
    `${plural(listing.tools.length, 'tool')} from ${listing.servers.filter((s) => s.state === 'ready' || s.state === 'cached').length}/${plural(listing.servers.length, 'server')}` +
      (hidden === 0 ? '' : `; ${hidden} hidden by policy (see mcp-warden policy explain)`),
  );
  return `${out.join('\n')}\n`;
}
