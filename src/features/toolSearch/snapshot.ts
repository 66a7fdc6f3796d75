import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ProfileConfig } from '../../config/types.js';
import type { NamedCatalog } from '../../core/catalog/namedCatalog.js';
import { matchesGlob } from '../../lib/glob.js';
import { profileHasServer } from './profileScope.js';
import { rankTools, type ToolRanking } from './ranking.js';

/** One tool a host may see: its definition as listed (exposed name) and its server. */
export interface VisibleTool {
  readonly tool: Tool;
  readonly server: string;
}

/** The tools one profile (or no profile) leaves visible, and what is derived from them on demand. */
export class ToolSubset {
  readonly byName: ReadonlyMap<string, VisibleTool>;
  private ranking: ToolRanking | undefined;
  private tokenCount: number | undefined;

  constructor(
    readonly tools: readonly VisibleTool[],
    /** The listing's text when this subset is the whole listing (its tokens are then read from it). */
    private readonly whole?: string,
  ) {
    this.byName = new Map(tools.map((t) => [t.tool.name, t]));
  }

  /** The listing's size in tokens, estimated as a quarter of its JSON text's length. */
  get tokens(): number {
    this.tokenCount ??= Math.ceil((this.whole ?? JSON.stringify(this.tools.map((t) => t.tool))).length / 4);
    return this.tokenCount;
  }

  /** The search index over these tools, built on first use. */
  get ranked(): ToolRanking {
    this.ranking ??= rankTools(
      this.tools.map(({ tool, server }) => ({
        name: tool.name,
        server,
        ...(tool.title !== undefined && { title: tool.title }),
        ...(tool.description !== undefined && { description: tool.description }),
        inputSchema: tool.inputSchema,
      })),
    );
    return this.ranking;
  }
}

/**
 * The host-visible tool listing of one catalogue as it is now, remade once per change of the
 * listing's text (the catalogue keeps that text, already filtered by policy and the other
 * visibility rules), with a subset per profile made on first use.
 */
export class ListingSnapshot {
  private whole: ToolSubset | undefined;
  private readonly profiles = new Map<string, ToolSubset>();

  constructor(
    /** The listing's text (the latest copy of it, so later comparisons are of one string). */
    public json: string,
    private readonly catalog: NamedCatalog<Tool>,
  ) {}

  /** The whole listing's estimated tokens, known without parsing it. */
  get tokens(): number {
    return Math.ceil(this.json.length / 4);
  }

  /**
   * Every listed tool, made on first use, since a large listing served whole never needs it.
   * Each is the upstream's own definition under its listed name, as the listing's text holds it:
   * shared with the catalogue, not parsed from the text (with 10,000 tools a parsed copy held
   * about 9 MB more for as long as the listing was searched).
   */
  get all(): ToolSubset {
    if (this.whole !== undefined) return this.whole;
    const tools = this.catalog.listedEntries().map(({ exposed, server, item }): VisibleTool => ({
      tool: exposed === item.name ? item : { ...item, name: exposed },
      server,
    }));
    return (this.whole = new ToolSubset(tools, this.json));
  }

  /** The tools `profile` leaves visible; every tool without one. */
  subset(profile: ProfileConfig | undefined): ToolSubset {
    if (profile === undefined) return this.all;
    let subset = this.profiles.get(profile.name);
    if (subset === undefined) {
      subset = new ToolSubset(this.all.tools.filter((t) => inProfile(profile, t)));
      this.profiles.set(profile.name, subset);
    }
    return subset;
  }
}

/** Whether `profile` lets its hosts see `tool`. */
function inProfile(profile: ProfileConfig, { tool, server }: VisibleTool): boolean {
  if (!profileHasServer(profile, server)) return false;
  return profile.tools.length === 0 || profile.tools.some((glob) => matchesGlob(glob, tool.name));
}

/** The last snapshot of each catalogue, remade when its listing's text changes. */
export class Snapshots {
  private readonly last = new WeakMap<NamedCatalog<Tool>, ListingSnapshot>();

  of(catalog: NamedCatalog<Tool>): ListingSnapshot {
    const json = catalog.listResultJson();
    const known = this.last.get(catalog);
    if (known !== undefined && known.json === json) {
      known.json = json;
      return known;
    }
    const made = new ListingSnapshot(json, catalog);
    this.last.set(catalog, made);
    return made;
  }
}
