import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ListKind, Upstream } from '../upstreams/upstream.js';
import { toolFilter, type CatalogEntry, type NamedCatalog } from './namedCatalog.js';
import type { ResourceCatalog } from './resourceCatalog.js';
import { declaresTasks } from '../protocol/taskMessages.js';

export interface Catalogs {
  readonly tools: NamedCatalog<Tool>;
  readonly prompts: NamedCatalog<Prompt>;
  readonly resources: ResourceCatalog;
}

type UpstreamView = Pick<Upstream, 'name' | 'config' | 'tools' | 'listed' | 'capabilities'>;

/** One item of a list the host sees, as a visibility rule is asked about it. */
export type ListedItem =
  | { readonly list: 'tools'; readonly server: string; readonly item: Tool }
  | { readonly list: 'prompts'; readonly server: string; readonly item: Prompt }
  | { readonly list: 'resources'; readonly server: string; readonly item: Resource }
  | { readonly list: 'resourceTemplates'; readonly server: string; readonly item: ResourceTemplate };

/**
 * Rebuilds the catalogs an upstream change touched, from every upstream in config order (the
 * order that decides collisions). What `listed` rejects (or, for tools, `hidden` accepts) stays
 * resolvable but unlisted. Returns the kinds whose host-visible list changed.
 */
export function rebuildCatalogs(
  catalogs: Partial<Catalogs>,
  upstreams: readonly UpstreamView[],
  kinds: readonly ListKind[],
  options: {
    readonly hidden?: (server: string, tool: Tool) => boolean;
    readonly listed?: (item: ListedItem) => boolean;
    /**
     * The definitions served for one upstream's tools (checked, repaired; see
     * servedDefinitions.ts); `runsTasks`: the upstream declares the 2026-07-28 tasks extension.
     */
    readonly served?: (server: string, tools: readonly Tool[], runsTasks: boolean) => readonly Tool[];
  } = {},
): ListKind[] {
  const changed: ListKind[] = [];
  if (catalogs.tools && kinds.includes('tools')) {
    const sources = upstreams.map((u) => ({
      server: u.name,
      namespace: u.config.namespace,
      include: toolFilter(u.config.tools),
      items:
        options.served === undefined
          ? u.tools
          : options.served(u.name, u.tools, declaresTasks(u.capabilities)),
    }));
    // Tools the policy denies whatever the arguments are not listed.
    const { hidden, listed } = options;
    const shown =
      hidden !== undefined
        ? (e: CatalogEntry<Tool>) => !hidden(e.server, e.item)
        : listed !== undefined
          ? (e: CatalogEntry<Tool>) => listed({ list: 'tools', server: e.server, item: e.item })
          : undefined;
    if (catalogs.tools.rebuild(sources, shown)) changed.push('tools');
  }
  if (catalogs.prompts && kinds.includes('prompts')) {
    const sources = upstreams.map((u) => ({
      server: u.name,
      namespace: u.config.namespace,
      items: u.listed.prompts,
    }));
    const { listed } = options;
    const shown =
      listed === undefined
        ? undefined
        : (e: CatalogEntry<Prompt>) => listed({ list: 'prompts', server: e.server, item: e.item });
    if (catalogs.prompts.rebuild(sources, shown)) changed.push('prompts');
  }
  if (catalogs.resources && (kinds.includes('resources') || kinds.includes('resourceTemplates'))) {
    const sources = upstreams.map((u) => ({
      server: u.name,
      offersResources: u.capabilities.resources !== undefined,
      resources: u.listed.resources,
      templates: u.listed.resourceTemplates,
    }));
    const { listed } = options;
    const listing =
      listed === undefined
        ? undefined
        : {
            resource: (server: string, item: Resource) => listed({ list: 'resources', server, item }),
            template: (server: string, item: ResourceTemplate) =>
              listed({ list: 'resourceTemplates', server, item }),
          };
    if (catalogs.resources.rebuild(sources, listing)) changed.push('resources');
  }
  return changed;
}
