import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/**
 * MCP Apps (the `io.modelcontextprotocol/ui` extension) behind one gateway.
 *
 * A server names its App's HTML with a `ui://` URI and points its tools at it from
 * `_meta.ui.resourceUri` (older servers: the flat `_meta["ui/resourceUri"]`). Different servers
 * pick the same URIs (every official example serves `ui://get-time/mcp-app.html`), so the gateway
 * gives every `ui://` URI it serves its server's name as the first path part, whether or not
 * another server uses it today: `ui://get-time/mcp-app.html` of server `vanilla` is served as
 * `ui://vanilla/get-time/mcp-app.html`. Always, not only on a collision, so that the URI a host
 * caches never changes when another server is added, starts late or goes away. The server name
 * is percent-encoded, so any configured name makes a URI that reads back to it.
 */

export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
const UI_SCHEME = 'ui://';
const FLAT_KEY = 'ui/resourceUri';

/** Whether `uri` is an MCP Apps resource URI. */
export function isUiUri(uri: string): boolean {
  return uri.startsWith(UI_SCHEME);
}

/** The URI the host is given for `server`'s `ui://` resource `uri`. */
export function exposedUiUri(server: string, uri: string): string {
  return `${UI_SCHEME}${encodeURIComponent(server)}/${uri.slice(UI_SCHEME.length)}`;
}

/**
 * The server and its own URI for a namespaced `ui://` URI; undefined when the URI does not
 * start with a server `isServer` knows.
 */
export function originalUiUri(
  uri: string,
  isServer: (name: string) => boolean,
): { readonly server: string; readonly uri: string } | undefined {
  if (!isUiUri(uri)) return undefined;
  const rest = uri.slice(UI_SCHEME.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return undefined;
  let server: string;
  try {
    server = decodeURIComponent(rest.slice(0, slash));
  } catch {
    return undefined;
  }
  return isServer(server) ? { server, uri: UI_SCHEME + rest.slice(slash + 1) } : undefined;
}

/** `tool` with its App resource URIs in namespaced form (the same object when it has none). */
export function withExposedUi(server: string, tool: Tool): Tool {
  const meta = tool._meta;
  if (meta === undefined) return tool;
  const ui = meta.ui;
  const flat = meta[FLAT_KEY];
  const nested =
    typeof ui === 'object' && ui !== null && typeof (ui as Record<string, unknown>).resourceUri === 'string'
      ? ((ui as Record<string, unknown>).resourceUri as string)
      : undefined;
  const rewriteNested = nested !== undefined && isUiUri(nested);
  const rewriteFlat = typeof flat === 'string' && isUiUri(flat);
  if (!rewriteNested && !rewriteFlat) return tool;
  return {
    ...tool,
    _meta: {
      ...meta,
      ...(rewriteNested && { ui: { ...(ui as object), resourceUri: exposedUiUri(server, nested) } }),
      ...(rewriteFlat && { [FLAT_KEY]: exposedUiUri(server, flat) }),
    },
  };
}

/**
 * Who may call a tool, from its `_meta.ui.visibility`: `model` (the agent) and/or `app` (an App
 * of the same server). Absent or malformed: both, the extension's default.
 */
export function toolVisibility(tool: Tool): { readonly model: boolean; readonly app: boolean } {
  const ui = tool._meta?.ui;
  const visibility =
    typeof ui === 'object' && ui !== null ? (ui as Record<string, unknown>).visibility : undefined;
  if (!Array.isArray(visibility)) return { model: true, app: true };
  return { model: visibility.includes('model'), app: visibility.includes('app') };
}
