import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { NamingConfig, ToolFilter } from '../config/types.js';
import { matchesGlob } from '../util/glob.js';
import { assignExposedNames, type ToolOrigin } from './naming.js';

/** What the catalog needs to know of one upstream. */
export interface CatalogSource {
  readonly server: string;
  readonly namespace: string | null;
  readonly filter: ToolFilter;
  readonly tools: readonly Tool[];
}

export interface CatalogEntry {
  /** The name the host sees. */
  readonly exposed: string;
  readonly server: string;
  /** The upstream's own definition, untouched; `tools/call` is routed with its `name`. */
  readonly tool: Tool;
  /** The definition the host sees: the upstream's, with only the name replaced. */
  readonly exposedTool: Tool;
}

export interface BuiltCatalog {
  readonly entries: readonly CatalogEntry[];
  readonly byName: ReadonlyMap<string, CatalogEntry>;
  readonly warnings: readonly string[];
}

/** The catalog's view of live upstreams (structural, so tests can pass plain objects). */
export function catalogSources(
  upstreams: readonly {
    readonly name: string;
    readonly config: { readonly namespace: string | null; readonly tools: ToolFilter };
    readonly tools: readonly Tool[];
  }[],
): CatalogSource[] {
  return upstreams.map((u) => ({
    server: u.name,
    namespace: u.config.namespace,
    filter: u.config.tools,
    tools: u.tools,
  }));
}

export function isToolIncluded(filter: ToolFilter, tool: string): boolean {
  if (filter.include.length > 0 && !filter.include.some((g) => matchesGlob(g, tool))) return false;
  return !filter.exclude.some((g) => matchesGlob(g, tool));
}

/**
 * Merges the upstreams' tools into one namespaced list. Pure and deterministic: sources come in
 * config order, tools in each upstream's own order, and that order decides collisions, so the
 * same inputs always give the same names (FIELD_NOTES "Tool names").
 */
export function buildCatalog(sources: readonly CatalogSource[], naming: NamingConfig): BuiltCatalog {
  const origins: ToolOrigin[] = [];
  const tools: Tool[] = [];
  for (const source of sources) {
    for (const tool of source.tools) {
      if (!isToolIncluded(source.filter, tool.name)) continue;
      origins.push({ server: source.server, namespace: source.namespace, tool: tool.name });
      tools.push(tool);
    }
  }
  const { names, warnings } = assignExposedNames(origins, naming);
  const entries: CatalogEntry[] = names.map((n, i) => {
    const tool = tools[i]!;
    return { exposed: n.exposed, server: n.origin.server, tool, exposedTool: { ...tool, name: n.exposed } };
  });
  return { entries, byName: new Map(entries.map((e) => [e.exposed, e])), warnings };
}

/**
 * The current catalog, rebuilt when an upstream's tools change. Keeps the serialized
 * `tools/list` answer so repeated listings (hosts list often) cost one string copy.
 */
export class ToolCatalog {
  private built: BuiltCatalog = { entries: [], byName: new Map(), warnings: [] };
  private listJson: string | undefined;
  private fingerprint = '';
  private readonly reported = new Set<string>();

  constructor(
    private readonly naming: NamingConfig,
    private readonly onWarning: (message: string) => void,
  ) {}

  /** Rebuilds from `sources`; true when what the host sees changed. */
  rebuild(sources: readonly CatalogSource[]): boolean {
    const next = buildCatalog(sources, this.naming);
    for (const w of next.warnings) {
      // Say each problem once, not on every rebuild.
      if (!this.reported.has(w)) this.onWarning(w);
      this.reported.add(w);
    }
    this.built = next;
    this.listJson = undefined;
    const fingerprint = JSON.stringify(next.entries.map((e) => e.exposedTool));
    const changed = fingerprint !== this.fingerprint;
    this.fingerprint = fingerprint;
    return changed;
  }

  get entries(): readonly CatalogEntry[] {
    return this.built.entries;
  }

  resolve(exposed: string): CatalogEntry | undefined {
    return this.built.byName.get(exposed);
  }

  /** The `tools/list` result as JSON text. */
  listResultJson(): string {
    this.listJson ??= `{"tools":${this.fingerprint === '' ? '[]' : this.fingerprint}}`;
    return this.listJson;
  }
}
