import type { NamingConfig, ToolFilter } from '../../config/types.js';
import { matchesGlob } from '../../lib/glob.js';
import { assignExposedNames, type ToolOrigin } from './naming.js';

/** Anything exposed under a namespaced name: tools and prompts. */
export interface Named {
  readonly name: string;
}

/** What the catalog needs to know of one upstream. */
export interface CatalogSource<T extends Named> {
  readonly server: string;
  readonly namespace: string | null;
  /** Which of its items are exposed (by the upstream's own name); absent means all. */
  readonly include?: (name: string) => boolean;
  readonly items: readonly T[];
}

export interface CatalogEntry<T extends Named> {
  /** The name the host sees. */
  readonly exposed: string;
  readonly server: string;
  /** The upstream's own definition, untouched; requests are routed with its `name`. */
  readonly item: T;
}

export interface BuiltCatalog<T extends Named> {
  readonly entries: readonly CatalogEntry<T>[];
  readonly byName: ReadonlyMap<string, CatalogEntry<T>>;
  readonly warnings: readonly string[];
}

/** A server's `tools:` include/exclude filter, as a predicate on the upstream's tool name. */
export function toolFilter(filter: ToolFilter): (name: string) => boolean {
  return (name) => {
    if (filter.include.length > 0 && !filter.include.some((g) => matchesGlob(g, name))) return false;
    return !filter.exclude.some((g) => matchesGlob(g, name));
  };
}

/**
 * Merges the upstreams' items into one namespaced list. Pure and deterministic: sources come in
 * config order, items in each upstream's own order, and that order decides collisions, so the
 * same inputs always give the same names.
 */
export function buildCatalog<T extends Named>(
  sources: readonly CatalogSource<T>[],
  naming: NamingConfig,
): BuiltCatalog<T> {
  const origins: ToolOrigin[] = [];
  const items: T[] = [];
  for (const source of sources) {
    for (const item of source.items) {
      if (source.include !== undefined && !source.include(item.name)) continue;
      origins.push({ server: source.server, namespace: source.namespace, tool: item.name });
      items.push(item);
    }
  }
  const { names, warnings } = assignExposedNames(origins, naming);
  const entries = names.map((n, i): CatalogEntry<T> => {
    const item = items[i]!;
    return { exposed: n.exposed, server: n.origin.server, item };
  });
  return { entries, byName: new Map(entries.map((e) => [e.exposed, e])), warnings };
}

/**
 * The current catalog of one kind (tools or prompts), rebuilt when an upstream's list changes.
 * Keeps the serialized list answer so repeated listings (hosts list often) cost one string copy.
 * That text is all it keeps of what the host sees: no renamed copy of each definition, and no
 * second string to compare rebuilds with (with 10,000 tools each would cost megabytes, measured).
 */
export class NamedCatalog<T extends Named> {
  private built: BuiltCatalog<T> = { entries: [], byName: new Map(), warnings: [] };
  /** The list answer (`{"tools":[...]}`); undefined until the first rebuild. */
  private listJson: string | undefined;
  /** The entries that list answer holds, in its order. */
  private shown: readonly CatalogEntry<T>[] = [];
  private readonly reported = new Set<string>();
  private upstreamNames: { built: BuiltCatalog<T>; index: Map<string, CatalogEntry<T>[]> } | undefined;

  /** `listKey`: the key of the list in the answer (`tools`, `prompts`). */
  constructor(
    private readonly listKey: string,
    private readonly naming: NamingConfig,
    private readonly onWarning: (message: string) => void,
  ) {}

  /** Whether `name` is in the namespace `namespace` (as exposed names are made: see naming.ts). */
  inNamespace(name: string, namespace: string | null): boolean {
    return namespace !== null && name.startsWith(namespace + this.naming.separator);
  }

  /** The plain exposed name of `item` in `namespace`, before any collision or length rule. */
  exposedIn(namespace: string | null, item: string): string {
    return namespace === null ? item : namespace + this.naming.separator + item;
  }

  /**
   * Rebuilds from `sources`; true when what the host sees changed. Entries `listed` rejects stay
   * resolvable but are left out of the list: a policy-hidden tool called anyway gets the policy's
   * answer, and hiding never shifts other tools' names.
   */
  rebuild(sources: readonly CatalogSource<T>[], listed?: (entry: CatalogEntry<T>) => boolean): boolean {
    const next = buildCatalog(sources, this.naming);
    for (const w of next.warnings) {
      // Say each problem once, not on every rebuild.
      if (!this.reported.has(w)) this.onWarning(w);
      this.reported.add(w);
    }
    this.built = next;
    const shown = listed === undefined ? next.entries : next.entries.filter(listed);
    this.shown = shown;
    // The definition the host sees: the upstream's, with only the name replaced.
    const items = shown.map((e) => ({ ...e.item, name: e.exposed }));
    const listJson = `{${JSON.stringify(this.listKey)}:${JSON.stringify(items)}}`;
    const changed = listJson !== this.listJson;
    this.listJson = listJson;
    return changed;
  }

  /** What joins a namespace and an upstream's own name in exposed names. */
  get separator(): string {
    return this.naming.separator;
  }

  get entries(): readonly CatalogEntry<T>[] {
    return this.built.entries;
  }

  resolve(exposed: string): CatalogEntry<T> | undefined {
    return this.built.byName.get(exposed);
  }

  /**
   * The entries whose upstream's own name is `name`, in config order: how a name without its
   * namespace is looked up (an MCP App calls its server's tools by their own names). Indexed on
   * first use after each rebuild, since most sessions never need it.
   */
  byUpstreamName(name: string): readonly CatalogEntry<T>[] {
    if (this.upstreamNames?.built !== this.built) {
      const index = new Map<string, CatalogEntry<T>[]>();
      for (const entry of this.built.entries) {
        const same = index.get(entry.item.name);
        if (same === undefined) index.set(entry.item.name, [entry]);
        else same.push(entry);
      }
      this.upstreamNames = { built: this.built, index };
    }
    return this.upstreamNames.index.get(name) ?? [];
  }

  /** The list result (`{"tools":[...]}`) as JSON text. */
  listResultJson(): string {
    return this.listJson ?? `{${JSON.stringify(this.listKey)}:[]}`;
  }

  /**
   * The entries `listResultJson` lists, in its order: what it holds is each one's `item` named
   * `exposed`, so a reader of the listing can share the upstream's definitions instead of parsing
   * the text into a copy of them.
   */
  listedEntries(): readonly CatalogEntry<T>[] {
    return this.shown;
  }
}
