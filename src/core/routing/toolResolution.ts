import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { originalUiUri, toolVisibility, UI_EXTENSION } from '../catalog/appUi.js';
import type { ListedItem } from '../catalog/catalogs.js';
import type { CatalogEntry, NamedCatalog } from '../catalog/namedCatalog.js';
import { InvalidParamsError } from '../errors.js';
import type { Params } from '../protocol/jsonRpc.js';

/**
 * Which tool a `tools/call` names, and whether the caller may call it.
 *
 * The host's model knows tools by their exposed (namespaced) names. An MCP App knows its own
 * server's tools by the server's names (its HTML was written for that server alone), so a name
 * that is no exposed name is looked up among the upstreams' own names: used when exactly one
 * server has it, refused with the candidates' exposed names when several do.
 *
 * On the wire a call from an App looks like any other call: the extension gives the host no
 * field to say where a call came from. mcp-warden reads one optional marker a host may add, the
 * App's resource in the call's `_meta["io.modelcontextprotocol/ui"].resourceUri` (as the gateway
 * served it, namespaced by its server). With that marker, the call is held to what the extension
 * asks of a host: only the App's own server's tools, and only tools whose visibility includes
 * "app"; an un-namespaced name is looked up on the App's own server only.
 */

/** The App a call says it comes from. */
export interface AppOrigin {
  /** The server whose App it is. */
  readonly server: string;
  /** The App's resource URI as the call gave it. */
  readonly resourceUri: string;
}

export type ToolLookup =
  { readonly entry: CatalogEntry<Tool> } | { readonly ambiguous: readonly CatalogEntry<Tool>[] };

/**
 * The App a call's `_meta` names, undefined when it names none. Throws when it carries the
 * marker but the marker names no configured server's App (a call cannot be judged then).
 */
export function appOrigin(
  meta: Params | undefined,
  isServer: (name: string) => boolean,
): AppOrigin | undefined {
  const marker = meta?.[UI_EXTENSION];
  if (marker === undefined) return undefined;
  const resourceUri =
    typeof marker === 'object' && marker !== null ? (marker as Params).resourceUri : undefined;
  const app = typeof resourceUri === 'string' ? originalUiUri(resourceUri, isServer) : undefined;
  if (app === undefined)
    throw new InvalidParamsError(
      `tools/call: _meta["${UI_EXTENSION}"].resourceUri must be an App resource URI as mcp-warden lists it ` +
        `(ui://<server>/...); got ${JSON.stringify(resourceUri ?? marker).slice(0, 200)}`,
    );
  return { server: app.server, resourceUri: resourceUri as string };
}

/** The tool `name` means for this caller; undefined when none (yet). */
export function lookUpTool(
  tools: NamedCatalog<Tool>,
  name: string,
  app: AppOrigin | undefined,
): ToolLookup | undefined {
  const exact = tools.resolve(name);
  if (exact !== undefined) return { entry: exact };
  const own = tools.byUpstreamName(name).filter((e) => app === undefined || e.server === app.server);
  if (own.length === 0) return undefined;
  return own.length === 1 ? { entry: own[0]! } : { ambiguous: own };
}

/** The error for a name several servers have. */
export function ambiguousName(name: string, candidates: readonly CatalogEntry<Tool>[]): InvalidParamsError {
  const names = candidates.map((c) => JSON.stringify(c.exposed)).join(', ');
  return new InvalidParamsError(
    `Unknown tool: ${name}; ${candidates.length} servers have a tool of that name, call one of: ${names}`,
  );
}

/**
 * Why this call must be refused under the MCP Apps rules, undefined when it may go.
 * `hostHasApps`: whether the host declared the extension (without it, no App can exist, so any
 * call of an app-only tool comes from somewhere the tool's server did not allow).
 */
export function appRefusal(
  entry: CatalogEntry<Tool>,
  app: AppOrigin | undefined,
  hostHasApps: boolean,
): InvalidParamsError | undefined {
  // Most tools say nothing of Apps: they are callable by the model, and no App is calling.
  if (app === undefined && entry.item._meta?.ui === undefined) return undefined;
  const visibility = toolVisibility(entry.item);
  const tool = JSON.stringify(entry.exposed);
  if (app !== undefined) {
    if (entry.server !== app.server)
      return new InvalidParamsError(
        `tools/call ${tool}: an App may call only its own server's tools; this App is server ` +
          `"${app.server}"'s (${app.resourceUri}) and the tool is server "${entry.server}"'s`,
      );
    if (!visibility.app)
      return new InvalidParamsError(
        `tools/call ${tool}: server "${entry.server}" does not let its App call this tool (its _meta.ui.visibility has no "app")`,
      );
    return undefined;
  }
  if (!visibility.model && !hostHasApps)
    return new InvalidParamsError(
      `tools/call ${tool}: server "${entry.server}" lets only its App call this tool (_meta.ui.visibility ["app"]), ` +
        `and the host did not declare the MCP Apps extension (${UI_EXTENSION}), so no App can be calling`,
    );
  return undefined;
}

/**
 * Whether the host's tool list shows `tool`: an app-only tool is left out for a host without
 * the MCP Apps extension, which would otherwise give it to the model. A host with the
 * extension is given it, since it must know the tool to serve its App, and hides it from its
 * model itself, as the extension requires of it.
 */
export function withAppVisibility(
  listed: (item: ListedItem) => boolean,
  hostHasApps: () => boolean,
): (item: ListedItem) => boolean {
  return (item) =>
    listed(item) && (item.list !== 'tools' || toolVisibility(item.item).model || hostHasApps());
}
