import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ServerConfig } from '../../config/types.js';
import type { ListedItem } from '../../core/catalog/catalogs.js';
import type { PolicyEngine } from './engine.js';
import { normalizeResourceUri } from './resourceUri.js';

/**
 * Whether `tools/list` should leave a tool out because the policy denies it whatever the
 * arguments: the adapter from a listed tool to the engine's question, shared by the gateway
 * and `mcp-warden tools` so both show the host the same list. `engine` is a getter because
 * the gateway swaps engines on reload.
 */
export function hiddenByPolicy(
  engine: () => PolicyEngine,
  servers: readonly Pick<ServerConfig, 'name' | 'trusted'>[],
): (server: string, tool: Tool) => boolean {
  const trusted = new Map(servers.map((s) => [s.name, s.trusted]));
  return (server, tool) =>
    engine().isHiddenFromList({
      server,
      tool: tool.name,
      annotations: tool.annotations,
      trusted: trusted.get(server) ?? false,
    });
}

/**
 * Whether the host's lists show an item: not when the policy denies every request about it
 * (a tool's every call, a prompt's every fetch, every read of a resource, every URI of a
 * template). Shared by the gateway and `mcp-warden tools`.
 */
export function shownByPolicy(
  engine: () => PolicyEngine,
  servers: readonly Pick<ServerConfig, 'name' | 'trusted'>[],
): (item: ListedItem) => boolean {
  const trustedBy = new Map(servers.map((s) => [s.name, s.trusted]));
  const hiddenTool = hiddenByPolicy(engine, servers);
  return (listed) => {
    const { server } = listed;
    const trusted = trustedBy.get(server) ?? false;
    switch (listed.list) {
      case 'tools':
        return !hiddenTool(server, listed.item);
      case 'prompts':
        return !engine().isHiddenFromList({ kind: 'prompt', server, prompt: listed.item.name, trusted });
      case 'resources':
        return !engine().isHiddenFromList({
          kind: 'resource',
          server,
          resource: normalizeResourceUri(listed.item.uri),
          trusted,
        });
      case 'resourceTemplates':
        return !engine().isHiddenFromList({ kind: 'resource', server, trusted });
    }
  };
}
