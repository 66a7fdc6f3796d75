import { needsAuth, parseListenAddress, PER_PRINCIPAL_DEFAULTS } from '../config/team.js';
import type { ListenConfig, WardenConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import type { Gateway } from '../gateway.js';
import { startListener, type Listener } from './listener.js';
import { createStatelessDispatch } from './stateless.js';

/** What `listen:` holds when only `--http` was given. */
const LISTEN_DEFAULTS: Omit<ListenConfig, 'host' | 'port'> = {
  stdio: false,
  allowedHosts: [],
  allowedOrigins: [],
  maxSessions: 100,
  sessionIdleMs: 30 * 60_000,
  perPrincipal: PER_PRINCIPAL_DEFAULTS,
};

/**
 * The config with `--http HOST:PORT` applied over `listen.http`, or a message saying why the
 * flag cannot be used (a malformed address, a non-loopback address without `auth:`).
 */
export function listenFrom(config: WardenConfig, flag: string | undefined): WardenConfig | string {
  if (flag === undefined) return config;
  const address = parseListenAddress(flag);
  if (typeof address === 'string') return `--http: ${address}`;
  const refusal = needsAuth(address.host, config.auth);
  if (refusal !== undefined) return `--http: ${refusal} (${config.file})`;
  const listen: ListenConfig = { ...LISTEN_DEFAULTS, ...config.listen, ...address };
  return Object.freeze({ ...config, listen });
}

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
      connect: (transport, principal) => gateway.connect(transport, principal),
      logger,
    }),
  });
  logger.info(
    `listening on ${listener.url}${config.auth === undefined ? ' (no tokens asked: reachable from this machine only)' : ` (bearer tokens from ${config.auth.issuer})`}`,
  );
  return listener;
}
