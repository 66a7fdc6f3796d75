import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ServerConfig } from '../../config/types.js';
import type { PolicyEngine } from './engine.js';

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
