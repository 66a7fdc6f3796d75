/**
 * The listener's OAuth front door (`auth.frontDoor`): an authorization server of its own for
 * hosts, in front of a company identity provider that offers no Dynamic Client Registration.
 *
 * A host registers here (RFC 7591) and signs in with PKCE as it would anywhere. The gateway
 * sends the browser on to the identity provider with the one client registered there (with its
 * own PKCE, state and nonce), checks the ID token that comes back, and gives the host a code
 * bound to the host's PKCE challenge. The host trades it for short-lived access tokens the
 * gateway signs (for its own resource URL) and a refresh token that rotates on each use.
 *
 * Everything kept between requests is bounded and expires; every failure is answered with an
 * OAuth error whose description says what is wrong, and logged and audited the same way.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthConfig, FrontDoorConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import { ANONYMOUS, tokenPrincipal, type Principal } from '../../core/principal.js';
import { StoreError, type SharedStore } from '../../lib/store/sharedStore.js';
import type { OwnTokens } from '../auth.js';
import type { ReadBody } from '../bodyReads.js';
import { sendJson } from '../replies.js';
import { authorize } from './authorize.js';
import { callback } from './callback.js';
import { identityProvider } from './idp.js';
import type { SigningKey } from './keys.js';
import { metadata } from './metadata.js';
import { register } from './register.js';
import { revoke } from './revoke.js';
import { describeClient, OAuthError, signInState, type Door, type SignInRecord } from './signIn.js';
import { IDP_ISSUER_CLAIM, token } from './token.js';

export { redirectProblem, sameRedirect } from './clients.js';
export type { SignInRecord } from './signIn.js';

export interface FrontDoorOptions {
  readonly auth: AuthConfig;
  readonly door: FrontDoorConfig;
  readonly key: SigningKey;
  readonly logger: Logger;
  /** Audits a sign-in step; `principal` is who, once the ID token named them. */
  readonly record?: (event: SignInRecord, principal: Principal) => void;
  /**
   * The store replicas share (`store:`): sign-ins under way, codes and refresh tokens are kept
   * there, so any replica continues what another started. Absent: in this process's memory.
   */
  readonly store?: SharedStore;
}

export interface FrontDoor {
  /** The gateway's issuer: hosts find it in the resource metadata. */
  readonly issuer: string;
  /** Whether `pathname` is one of the front door's (it then answers with `handle`). */
  serves(pathname: string): boolean;
  /** Answers a request to one of its paths; `readBody`: the listener's reader of request bodies. */
  handle(req: IncomingMessage, res: ServerResponse, pathname: string, readBody: ReadBody): Promise<void>;
  /** How the listener's verifier checks the tokens the front door issues. */
  readonly tokens: OwnTokens;
}

type Endpoint = (door: Door, req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> | void;

/** Each path the front door answers, and its endpoint (one module each). */
const ROUTES: Readonly<Record<string, Endpoint>> = {
  '/.well-known/oauth-authorization-server': (door, _req, res) => metadata(door, res),
  '/.well-known/openid-configuration': (door, _req, res) => metadata(door, res),
  '/oauth/jwks': (door, _req, res) => sendJson(res, 200, { keys: [door.key.publicJwk] }),
  '/oauth/register': (door, req, res) => register(door, req, res),
  '/oauth/authorize': (door, _req, res, url) => authorize(door, res, url),
  '/oauth/callback': (door, _req, res, url) => callback(door, res, url),
  '/oauth/token': (door, req, res) => token(door, req, res),
  '/oauth/revoke': (door, req, res) => revoke(door, req, res),
};

export function createFrontDoor(options: FrontDoorOptions): FrontDoor {
  const { auth, logger } = options;
  const door = doorOf(options);
  const { issuer } = door;
  return {
    issuer,
    serves: (pathname) => Object.hasOwn(ROUTES, pathname),
    async handle(req, res, pathname, readBody) {
      const url = new URL(req.url ?? '/', issuer);
      try {
        // The body reader is the listener's, which the front door is made before; a sign-in
        // request is rare enough that lending it for each is no cost worth avoiding.
        await ROUTES[pathname]!({ ...door, readBody }, req, res, url);
      } catch (error) {
        answerFailure(logger, res, pathname, error);
      }
    },
    tokens: {
      issuer,
      key: options.key.publicKey,
      alg: options.key.alg,
      principalOf(payload) {
        const idpIssuer = payload[IDP_ISSUER_CLAIM];
        return tokenPrincipal(
          { ...payload, ...(typeof idpIssuer === 'string' && { iss: idpIssuer }) },
          auth.claims,
        );
      },
    },
  };
}

/** What the endpoints share: the configuration, the identity provider and the sign-in state. */
function doorOf(options: FrontDoorOptions): Omit<Door, 'readBody'> {
  const { auth, door, key, logger } = options;
  const record = (event: SignInRecord, principal: Principal = ANONYMOUS) =>
    options.record?.(event, principal);
  return {
    auth,
    door,
    key,
    logger,
    issuer: door.baseUrl,
    idp: identityProvider(auth, door),
    state: signInState(options.store),
    record,
    failed(client, why, principal) {
      logger.warn(
        `host sign-in failed${client === undefined ? '' : ` (client ${describeClient(client)})`}: ${why}`,
      );
      record(
        {
          type: 'host_sign_in_failed',
          client: client?.tag ?? 'unknown',
          ...(client?.name !== undefined && { clientName: client.name }),
          error: why,
        },
        principal,
      );
    },
  };
}

/** An endpoint's failure as the host sees it: an OAuth error, or 503 when the store failed. */
function answerFailure(logger: Logger, res: ServerResponse, pathname: string, error: unknown): void {
  if (error instanceof StoreError) {
    // Nothing is continued or handed out that the other replicas could not see.
    logger.warn(`${pathname}: ${error.message}`);
    res.setHeader('Cache-Control', 'no-store');
    sendJson(res, 503, {
      error: 'temporarily_unavailable',
      error_description: `the sign-in cannot go on: ${error.message}; try again shortly`,
    });
    return;
  }
  if (!(error instanceof OAuthError)) throw error;
  logger.info(`${pathname}: ${error.code}: ${error.message}`);
  res.setHeader('Cache-Control', 'no-store');
  sendJson(res, error.status, { error: error.code, error_description: error.message });
}
