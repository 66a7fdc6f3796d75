import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ListKind, Upstream } from '../upstreams/upstream.js';
import { toolFilter, type CatalogEntry, type NamedCatalog } from './namedCatalog.js';
import type { ResourceCatalog } from './resourceCatalog.js';

export interface Catalogs {
  readonly tools: NamedCatalog<Tool>;
  readonly prompts: NamedCatalog<Prompt>;
  readonly resources: ResourceCatalog;
}

type UpstreamView = Pick<
  Upstream,
  'name' | 'config' | 'tools' | 'prompts' | 'resources' | 'resourceTemplates' | 'capabilities'
>;

/**
 * Rebuilds the catalogs an upstream change touched, from every upstream in config order (the
 * order that decides collisions); tools `hidden` says to stay resolvable but unlisted. Returns
 * the kinds whose host-visible list changed.
 */
export function rebuildCatalogs(
  catalogs: Partial<Catalogs>,
  upstreams: readonly UpstreamView[],
  kinds: readonly ListKind[],
  options: { readonly hidden?: (server: string, tool: Tool) => boolean } = {},
): ListKind[] {
  const changed: ListKind[] = [];
  if (catalogs.tools && kinds.includes('tools')) {
    const sources = upstreams.map((u) => ({
      server: u.name,
      namespace: u.config.namespace,
      include: toolFilter(u.config.tools),
      items: u.tools,
    }));
    // Tools the policy denies whatever the arguments are not listed (issue 5).
    const { hidden } = options;
    const listed = hidden === undefined ? undefined : (e: CatalogEntry<Tool>) => !hidden(e.server, e.item);
    if (catalogs.tools.rebuild(sources, listed)) changed.push('tools');
  }
  if (catalogs.prompts && kinds.includes('prompts')) {
    const sources = upstreams.map((u) => ({
      server: u.name,
      namespace: u.config.namespace,
      items: u.prompts,
    }));
    if (catalogs.prompts.rebuild(sources)) changed.push('prompts');
  }
  if (catalogs.resources && (kinds.includes('resources') || kinds.includes('resourceTemplates'))) {
    const sources = upstreams.map((u) => ({
      server: u.name,
      offersResources: u.capabilities.resources !== undefined,
      resources: u.resources,
      templates: u.resourceTemplates,
    }));
    if (catalogs.resources.rebuild(sources)) changed.push('resources');
  }
  return changed;
}
