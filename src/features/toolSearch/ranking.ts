import MiniSearch from 'minisearch';

/** One tool as the search sees it: its namespaced name, its server, and what describes it. */
export interface SearchableTool {
  /** The name the host calls it by (namespaced). */
  readonly name: string;
  readonly server: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema?: unknown;
}

export interface RankOptions {
  /** How many tools to return at most. */
  readonly limit: number;
  /** Only tools of these servers; absent: all. */
  readonly servers?: readonly string[];
}

export interface RankedTool {
  readonly name: string;
  readonly server: string;
  readonly score: number;
}

/** A built index over one catalogue; rebuild it when the catalogue changes. */
export interface ToolRanking {
  readonly size: number;
  search(query: string, options: RankOptions): readonly RankedTool[];
}

interface Doc {
  readonly id: number;
  readonly name: string;
  readonly server: string;
  readonly title: string;
  readonly description: string;
  readonly params: string;
}

/**
 * Ranks a catalogue's tools against a question in plain words. A maintained full-text library
 * (BM25-style scoring, prefix and fuzzy matching) does the ranking; what is ours is which parts
 * of a tool it reads and how much each counts.
 */
export function rankTools(tools: readonly SearchableTool[]): ToolRanking {
  const docs: Doc[] = tools.map((tool, id) => ({
    id,
    name: words(tool.name),
    server: tool.server,
    title: tool.title ?? '',
    description: tool.description ?? '',
    params: parameterText(tool.inputSchema),
  }));
  const index = new MiniSearch<Doc>({
    fields: ['name', 'title', 'description', 'params'],
    storeFields: [],
    searchOptions: { boost: { name: 3, title: 2, description: 1, params: 0.5 }, prefix: true, fuzzy: 0.2 },
  });
  index.addAll(docs);
  return {
    size: docs.length,
    search(query, options) {
      const servers = options.servers === undefined ? undefined : new Set(options.servers);
      const hits = index.search(query, {
        combineWith: 'OR',
        ...(servers === undefined
          ? {}
          : { filter: (hit) => servers.has(docs[hit.id as number]?.server ?? '') }),
      });
      const ranked: RankedTool[] = [];
      for (const hit of hits) {
        const tool = tools[hit.id as number];
        if (tool === undefined) continue;
        ranked.push({ name: tool.name, server: tool.server, score: hit.score });
        if (ranked.length >= options.limit) break;
      }
      return ranked;
    },
  };
}

/** `github__create_issue` and `createIssue` read as words: "github create issue". */
function words(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_\-.:/]+/g, ' ')
    .toLowerCase();
}

/** The names and descriptions of a tool's top-level parameters. */
function parameterText(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return '';
  const properties = (schema as { properties?: unknown }).properties;
  if (typeof properties !== 'object' || properties === null) return '';
  const parts: string[] = [];
  for (const [key, value] of Object.entries(properties)) {
    parts.push(words(key));
    const description = (value as { description?: unknown } | null)?.description;
    if (typeof description === 'string') parts.push(description);
  }
  return parts.join(' ');
}
