import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { CatalogConfig, CatalogMode, ProfileConfig } from '../../config/types.js';
import { UnknownToolError } from '../../core/errors.js';
import type { Params } from '../../core/protocol/jsonRpc.js';
import type { ListScope, ToolView, ToolViewContext, ViewedCall } from '../../core/routing/toolView.js';
import { didYouMean } from '../../lib/didYouMean.js';
import { matchesGlob } from '../../lib/glob.js';
import { sha256Hex } from '../../lib/hash.js';
import {
  CALL_TOOL,
  callToolDefinition,
  DEFAULT_LIMIT,
  MAX_LIMIT,
  SEARCH_TOOL,
  searchToolDefinition,
} from './gatewayTools.js';
import type { ProfileScopes } from './profileScope.js';
import type { ListingSnapshot, Snapshots, ToolSubset, VisibleTool } from './snapshot.js';

/** The `_meta` key by which Claude Code keeps a tool loaded rather than deferring it behind its own search. */
export const ALWAYS_LOAD_META = 'anthropic/alwaysLoad';

/** Claude Code's longest tool name: `mcp__<server>__<tool>` must fit it. */
const CLAUDE_CODE_NAME_LIMIT = 64;
/** What Claude Code puts around the tool name: `mcp__` and `__`. */
const CLAUDE_CODE_PREFIX = 'mcp__'.length + '__'.length;

/** Whether a host is Claude Code, which defers MCP tools behind a search of its own. */
export function isClaudeCode(clientName: string | undefined): boolean {
  return clientName !== undefined && /^claude[-_ ]?code$/i.test(clientName);
}

/** What every connection's view shares. */
export interface ViewSettings {
  readonly catalog: CatalogConfig;
  readonly profiles: readonly ProfileConfig[];
  readonly snapshots: Snapshots;
  readonly scopes: ProfileScopes;
}

/**
 * What one host connection sees of the catalogue: all of it, or (search mode) a search tool, a
 * call tool and the tools always loaded, with what its searches found added on a connection
 * that lasts; within its profile; with names fitted to Claude Code's budget for Claude Code.
 */
export class CatalogView implements ToolView {
  /** Tools this connection's searches found, listed from then on (never on a stateless connection). */
  private readonly found = new Set<string>();

  constructor(
    private readonly settings: ViewSettings,
    private readonly context: ToolViewContext,
  ) {}

  listJson(): string {
    const snapshot = this.settings.snapshots.of(this.context.tools);
    const profile = this.profile();
    const claude = this.claude();
    // The common case parses nothing: the whole catalogue, as the catalogue serialized it.
    if (profile === undefined && !claude && this.wholeMode(profile, claude, snapshot) === 'all')
      return snapshot.json;
    const { subset, mode } = this.facts();
    const shown =
      mode === 'all'
        ? subset.tools
        : subset.tools.filter((t) => this.alwaysLoaded(t.tool.name) || this.found.has(t.tool.name));
    const tools = shown.map((t) => this.forHost(t.tool, claude));
    if (mode === 'search') tools.unshift(this.searchTool(subset), callToolDefinition());
    return JSON.stringify({ tools });
  }

  call(name: string, args: Params | undefined): ViewedCall {
    const gatewayTool = name === SEARCH_TOOL || name === CALL_TOOL;
    // The common case costs nothing: all of the catalogue, no renamed tools.
    if (!gatewayTool && this.settings.profiles.length === 0 && !this.claude()) return undefined;
    const { subset, claude } = this.facts();
    if (subset.byName.has(name)) return undefined;
    if (name === SEARCH_TOOL) return this.search(subset, args, claude);
    if (name === CALL_TOOL) return this.callThrough(subset, args, claude);
    if (claude) {
      const renamed = this.claudeNames(subset).real.get(name);
      if (renamed !== undefined) return { route: renamed, arguments: args };
    }
    // A name the whole catalogue has but this connection's profile leaves out: as unknown.
    const whole = this.settings.snapshots.of(this.context.tools).all;
    if (whole.byName.has(name) || this.context.tools.resolve(name) !== undefined)
      return {
        unknown: new UnknownToolError(name, 'it is not in the tools this host may use (its profile)'),
      };
    return undefined;
  }

  scope(): ListScope | undefined {
    const profile = this.profile();
    return profile === undefined ? undefined : this.settings.scopes.of(profile);
  }

  instructions(): readonly string[] {
    const profile = this.profile();
    const claude = this.claude();
    // As for the listing, a whole catalogue served whole is never parsed for this.
    if (profile === undefined && !claude) {
      const snapshot = this.settings.snapshots.of(this.context.tools);
      if (this.wholeMode(profile, claude, snapshot) === 'all') return [];
    }
    const { subset, mode } = this.facts();
    if (mode === 'all') return [];
    const hidden = subset.tools.filter((t) => !this.alwaysLoaded(t.tool.name));
    return [searchInstructions(hidden, subset.tools.length - hidden.length)];
  }

  /** The profile, host kind, visible tools and mode of this connection now. */
  private facts(): { profile?: ProfileConfig; claude: boolean; subset: ToolSubset; mode: 'all' | 'search' } {
    const profile = this.profile();
    const claude = this.claude();
    const subset = this.settings.snapshots.of(this.context.tools).subset(profile);
    return { ...(profile && { profile }), claude, subset, mode: this.mode(profile, claude, subset) };
  }

  private claude(): boolean {
    return isClaudeCode(this.context.host().info?.name);
  }

  /** The listener path's profile, else the first whose principals match, else the first whose clients match. */
  private profile(): ProfileConfig | undefined {
    const { profiles } = this.settings;
    if (profiles.length === 0) return undefined;
    if (this.context.profile !== undefined) return profiles.find((p) => p.name === this.context.profile);
    const subject = this.context.principal.subject;
    const byPrincipal = profiles.find((p) => p.principals.some((glob) => matchesGlob(glob, subject)));
    if (byPrincipal !== undefined) return byPrincipal;
    const client = this.context.host().info?.name;
    return client === undefined
      ? undefined
      : profiles.find((p) => p.clients.some((glob) => matchesGlob(glob, client)));
  }

  private mode(profile: ProfileConfig | undefined, claude: boolean, subset: ToolSubset): 'all' | 'search' {
    const configured: CatalogMode = profile?.mode ?? this.settings.catalog.mode;
    if (configured !== 'auto') return configured;
    // Claude Code defers tools behind its own search; a second one in front would only hide them.
    if (claude) return 'all';
    const { maxTools, maxTokens } = this.settings.catalog.auto;
    return subset.tools.length > maxTools || subset.tokens > maxTokens ? 'search' : 'all';
  }

  /**
   * `mode` for the whole catalogue. The listing is parsed only when its mode depends on its count
   * of tools: a configured mode needs neither, and a listing too long in tokens is searched.
   */
  private wholeMode(profile: undefined, claude: false, snapshot: ListingSnapshot): 'all' | 'search' {
    const { catalog } = this.settings;
    if (catalog.mode !== 'auto') return catalog.mode;
    if (snapshot.tokens > catalog.auto.maxTokens) return 'search';
    return this.mode(profile, claude, snapshot.all);
  }

  private alwaysLoaded(name: string): boolean {
    return this.settings.catalog.alwaysLoad.some((glob) => matchesGlob(glob, name));
  }

  /** A tool as this host gets it: for Claude Code, within its name budget and marked when always loaded. */
  private forHost(tool: Tool, claude: boolean): Tool {
    if (!claude) return tool;
    const name = claudeCodeName(tool.name, this.settings.catalog.hostServerName);
    const pinned = this.alwaysLoaded(tool.name);
    if (name === tool.name && !pinned) return tool;
    return {
      ...tool,
      name,
      ...(pinned && { _meta: { ...tool._meta, [ALWAYS_LOAD_META]: true } }),
    };
  }

  private searchTool(subset: ToolSubset): Tool {
    const servers = [...new Set(subset.tools.map((t) => t.server))];
    return searchToolDefinition(subset.tools.length, servers);
  }

  /** The names shortened for Claude Code, both ways. */
  private claudeNames(subset: ToolSubset): { real: Map<string, string> } {
    const real = new Map<string, string>();
    for (const { tool } of subset.tools) {
      const shown = claudeCodeName(tool.name, this.settings.catalog.hostServerName);
      if (shown !== tool.name) real.set(shown, tool.name);
    }
    return { real };
  }

  private search(subset: ToolSubset, args: Params | undefined, claude: boolean): ViewedCall {
    const query = args?.query;
    if (typeof query !== 'string' || query.trim() === '')
      return { refuse: `${SEARCH_TOOL} needs "query": what you want to do, in plain words` };
    const limit =
      typeof args?.limit === 'number' && Number.isInteger(args.limit) ? args.limit : DEFAULT_LIMIT;
    const servers = Array.isArray(args?.servers)
      ? args.servers.filter((s): s is string => typeof s === 'string')
      : undefined;
    const ranked = subset.ranked.search(query, {
      limit: Math.min(Math.max(limit, 1), MAX_LIMIT),
      ...(servers !== undefined && servers.length > 0 && { servers }),
    });
    const tools = ranked.flatMap((hit) => {
      const found = subset.byName.get(hit.name);
      return found === undefined ? [] : [found];
    });
    const listing = !this.context.stateless && this.facts().mode === 'search';
    const added = listing ? tools.filter((t) => !this.found.has(t.tool.name)) : [];
    const how = listing
      ? `Call one with ${CALL_TOOL} {"name", "arguments"}, or directly by its name: found tools are now in your tool list.`
      : `Call one with ${CALL_TOOL} {"name", "arguments"}.`;
    const text = JSON.stringify({
      tools: tools.map((t) => definition(t, this.forHost(t.tool, claude))),
      note: tools.length === 0 ? `No tool matches "${query}"; try other words.` : how,
    });
    return {
      answer: { content: [{ type: 'text', text }] },
      // Found tools join the list only once the answer is given: asking the view changes nothing.
      ...(added.length > 0 && {
        after: () => {
          for (const t of added) this.found.add(t.tool.name);
          this.context.toolsChanged();
        },
      }),
    };
  }

  private callThrough(subset: ToolSubset, args: Params | undefined, claude: boolean): ViewedCall {
    const name = args?.name;
    const inner = args?.arguments;
    if (typeof name !== 'string' || name === '')
      return { refuse: `${CALL_TOOL} needs "name": the name of a tool ${SEARCH_TOOL} found` };
    if (inner !== undefined && (typeof inner !== 'object' || inner === null || Array.isArray(inner)))
      return { refuse: `${CALL_TOOL} ${name}: "arguments" must be an object` };
    const real = claude ? (this.claudeNames(subset).real.get(name) ?? name) : name;
    if (subset.byName.has(real)) return { route: real, arguments: inner as Params | undefined };
    return { refuse: unknownName(name, subset) };
  }
}

/**
 * What a host in search mode is told at the start: the tools are not in its list, how to find
 * and call them, and how many there are on which servers.
 */
function searchInstructions(hidden: readonly VisibleTool[], listed: number): string {
  const servers = [...new Set(hidden.map((t) => t.server))];
  const tools = `${hidden.length} ${hidden.length === 1 ? 'tool' : 'tools'}`;
  const of = `${servers.length === 1 ? 'server' : 'servers'} ${servers.join(', ')}`;
  // Servers slower than the initialize answer have listed nothing yet: their tools will be found
  // the same way, so the host is told how even before any is known.
  const what = hidden.length === 0 ? "The servers' tools are" : `${tools} of ${of} are`;
  return (
    `## mcp-warden\n${what} not in your tool list. ` +
    `Find them with ${SEARCH_TOOL} (describe the task in plain words) and call them with ` +
    `${CALL_TOOL} {"name", "arguments"}` +
    (listed === 0 ? '.' : `; the ${listed} listed ${listed === 1 ? 'tool is' : 'tools are'} called directly.`)
  );
}

/** A found tool as the search answers it: its full definition, and the server it is of. */
function definition(visible: VisibleTool, shown: Tool): Params {
  const { tool } = visible;
  return {
    name: shown.name,
    server: visible.server,
    ...(tool.title !== undefined && { title: tool.title }),
    ...(tool.description !== undefined && { description: tool.description }),
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
    ...(tool.annotations !== undefined && { annotations: tool.annotations }),
  };
}

/**
 * What the call tool says of a name it cannot call: the same whether no server has the tool or
 * the host may not see it, so a hidden tool's existence is not given away, with the nearest names.
 */
function unknownName(name: string, subset: ToolSubset): string {
  const names = subset.tools.map((t) => t.tool.name);
  const close = didYouMean(name, names);
  const related = subset.ranked
    .search(name, { limit: 3 })
    .map((hit) => hit.name)
    .filter((n) => n !== close);
  const suggestions = [...(close === undefined ? [] : [close]), ...related].slice(0, 3);
  return (
    `${CALL_TOOL}: no tool named "${name}" is available` +
    (suggestions.length === 0
      ? `. Use ${SEARCH_TOOL} to find one.`
      : `. Did you mean ${suggestions.map((s) => `"${s}"`).join(', ')}? Use ${SEARCH_TOOL} to find others.`)
  );
}

/**
 * `name` as Claude Code can take it: unchanged when `mcp__<server>__<name>` fits 64 characters,
 * else its start and a stable hash of the whole, so the same tool always gets the same name.
 */
export function claudeCodeName(name: string, hostServerName: string): string {
  const budget = CLAUDE_CODE_NAME_LIMIT - CLAUDE_CODE_PREFIX - hostServerName.length;
  if (name.length <= budget) return name;
  const hash = sha256Hex(name).slice(0, 8);
  return `${name.slice(0, Math.max(0, budget - hash.length - 1))}_${hash}`;
}
