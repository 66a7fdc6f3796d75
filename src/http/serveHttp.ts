import type { WardenConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import { principalKey } from '../core/principal.js';
import type { Gateway } from '../gateway.js';
import { startListener, type Listener } from './listener.js';
import { createStatelessDispatch } from './stateless.js';

/**
 * Starts the HTTP listener for a gateway: each session becomes one of its host connections. The
 * upstreams start now (an HTTP gateway serves many hosts; none of them should wait for the
 * first), and `/readyz` answers ready once that start has settled.
 */
export async function startHttp(options: {
  readonly config: WardenConfig;
  readonly gateway: Gateway;
  readonly logger: Logger;
}): Promise<Listener> {
  const { config, gateway, logger } = options;
  const listen = config.listen!;
  let settled = false;
  void gateway.pool.start().then(() => (settled = true));
  const listener = await startListener({
    listen,
    ...(config.auth && { auth: config.auth }),
    maxBodyBytes: config.gateway.maxMessageBytes,
    logger,
    connect: (transport, principal) => gateway.connect(transport, principal),
    ready: () => settled,
    stateless: createStatelessDispatch({
      // Each stateless request is a connection of its own, so its tasks are its principal's:
      // the next request of the same principal (and no one else's) can poll them.
      connect: (transport, principal) =>
        gateway.connect(transport, principal, { taskOwner: `principal\u0000${principalKey(principal)}` }),
      logger,
    }),
  });
  logger.info(
    `listening on ${listener.url}${config.auth === undefined ? ' (no tokens asked: reachable from this machine only)' : ` (bearer tokens from ${config.auth.issuer})`}`,
  );
  return listener;
}
