import type { HttpServerConfig, ServerConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import type { Principal } from '../../core/principal.js';
import type { HttpAuthorization } from '../../core/transports/httpTransport.js';
import type { UpstreamSignIn } from '../../core/upstreams/signIn.js';
import { ServerOAuth, type ServerOAuthDeps } from './serverOAuth.js';

export { ServerOAuth, type SignInStatus, type UpstreamAuthEvent } from './serverOAuth.js';
export { openBrowser } from './browser.js';

/**
 * Upstream OAuth: one OAuth client per HTTP server, shared by every connection to it (so a
 * refresh or a sign-in under way is one for all of them).
 */
export interface UpstreamAuth {
  /** What a connection to `server` for `principal` signs its requests with. */
  authorizationFor(server: HttpServerConfig, principal: Principal | undefined): HttpAuthorization | undefined;
  /** How the user signs in to `server`; undefined for a server that never asks. */
  signInFor(server: ServerConfig): UpstreamSignIn | undefined;
  /** The OAuth client of `server`, for the CLI's `auth` commands. */
  client(server: HttpServerConfig): ServerOAuth;
}

export type UpstreamAuthOptions = Omit<ServerOAuthDeps, 'log'> & { readonly logger: Logger };

/**
 * Every HTTP server may ask for a sign-in (it answers 401) unless its entry sends its own
 * `Authorization` header: that is a static credential the user chose, and is left alone.
 */
export function signsIn(server: ServerConfig): server is HttpServerConfig {
  return (
    server.transport === 'http' &&
    !Object.keys(server.headers).some((name) => name.toLowerCase() === 'authorization')
  );
}

export function createUpstreamAuth(options: UpstreamAuthOptions): UpstreamAuth {
  const clients = new Map<string, ServerOAuth>();
  const { logger, ...deps } = options;
  const client = (server: HttpServerConfig): ServerOAuth => {
    let found = clients.get(server.name);
    // A reload may change the entry (its URL, its client): a changed entry gets a new client.
    if (found === undefined || found.config !== server) {
      found = new ServerOAuth(server, { ...deps, log: logger });
      clients.set(server.name, found);
    }
    return found;
  };
  return {
    authorizationFor: (server, principal) =>
      signsIn(server) ? client(server).authorizationFor(principal) : undefined,
    signInFor: (server) => (signsIn(server) ? client(server) : undefined),
    client,
  };
}
