import { pathToFileURL } from 'node:url';
import type { ServerConfig } from '../../config/types.js';
import type { RoutedMessage } from '../pipeline/types.js';
import { Outcome } from '../rpc/outcome.js';
import { CAPABILITY_FOR } from '../host/hostSession.js';

/**
 * What the config says about the requests a server makes of the host (`sampling`, `elicitation`
 * and `roots` on a server): refusals, and fixed roots answered without asking the host.
 */

/** Why the config refuses this request; undefined when it does not. */
export function refusedByConfig(
  message: RoutedMessage,
  servers: ReadonlyMap<string, Pick<ServerConfig, 'clientRequests'>>,
): string | undefined {
  if (message.direction !== 'host') return undefined;
  const key = CAPABILITY_FOR.get(message.kind);
  const requests = servers.get(message.server)?.clientRequests;
  if (key === undefined || requests === undefined || requests[key] !== false) return undefined;
  return `Server "${message.server}" may not make ${key} requests (servers.${message.server}.${key}: false in the config).`;
}

/** The answer to a `roots/list` from a server whose config fixes its roots; undefined otherwise. */
export function fixedRoots(
  message: RoutedMessage,
  servers: ReadonlyMap<string, Pick<ServerConfig, 'clientRequests'>>,
): Outcome | undefined {
  if (message.kind !== 'roots/list' || message.direction !== 'host') return undefined;
  const roots = servers.get(message.server)?.clientRequests.roots;
  if (!Array.isArray(roots)) return undefined;
  return Outcome.of({
    roots: roots.map((folder: string) => ({ uri: pathToFileURL(folder).href, name: folder })),
  });
}

/** Whether a server is told when the host's roots change: not when the config fixes or refuses them. */
export function followsHostRoots(server: Pick<ServerConfig, 'clientRequests'>): boolean {
  return server.clientRequests.roots === true;
}
