import {
  createRemoteJWKSet,
  decodeJwt,
  errors as joseErrors,
  jwtVerify,
  type CryptoKey,
  type JWTPayload,
} from 'jose';
import type { AuthConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import { tokenPrincipal, type Principal } from '../core/principal.js';

/** Why a request was refused, as the HTTP answer says it (RFC 6750 error codes). */
export class AuthRefusal extends Error {
  constructor(
    /** 401: no usable token; 403: a valid token without a required scope; 503: keys unavailable. */
    readonly status: 401 | 403 | 503,
    /** `invalid_token`, `insufficient_scope`, or undefined when no token was sent at all. */
    readonly error: 'invalid_token' | 'insufficient_scope' | 'temporarily_unavailable' | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'AuthRefusal';
  }
}

/** Signature algorithms accepted: asymmetric ones only, so `none` and shared-secret tokens never pass. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** A JWKS fetch takes at most this long; a slow identity provider must not hold requests without bound. */
const FETCH_TIMEOUT_MS = 5000;

/**
 * How long a token, once verified, is taken on its exact text without checking its signature
 * again (never past its `exp`). A host sends the same token with every POST, and the signature
 * check (RSA or ECDSA) is the largest single cost of a stateless request. The window is short
 * so that a key the issuer withdraws stops admitting its tokens within a minute.
 */
const VERIFIED_TOKEN_TTL_MS = 60_000;
/** Verified tokens remembered at once; the oldest is forgotten first. */
const MAX_VERIFIED_TOKENS = 1024;

/**
 * The gateway's own tokens (the front door's): accepted beside the identity provider's, checked
 * against the gateway's own key, their principal read by the front door.
 */
export interface OwnTokens {
  readonly issuer: string;
  readonly key: CryptoKey;
  readonly alg: string;
  principalOf(payload: JWTPayload): Principal;
}

export interface TokenVerifier {
  /** The principal of a request's `Authorization` header, or an `AuthRefusal`. */
  verify(authorization: string | undefined): Promise<Principal>;
  /**
   * The principal of an `Authorization` header of the plain form `Bearer <token>` whose token
   * passed `verify` and is still within its memory (never past its `exp`); undefined for any
   * other header, which `verify` then judges. Answers at once, so that a host's second and
   * later requests neither scan the header with the bearer pattern nor wait for a promise.
   * `connection` (the request's socket): the header last known on it is compared as it is, so
   * a kept-alive connection's next request with the same header skips hashing the token.
   */
  known(authorization: string | undefined, connection?: object): Principal | undefined;
}

const BEARER_PREFIX = 'Bearer ';

interface VerifiedToken {
  readonly principal: Principal;
  readonly until: number;
}

/**
 * Tokens that passed every check, by their exact text, each until `until`: the earlier of its
 * expiry (plus the allowed skew, as the check itself allows) and a short while after it was
 * checked. Only tokens that passed are kept, so a forged or altered token (another text) is
 * always checked in full; bounded, oldest first.
 */
class VerifiedTokens {
  readonly #entries = new Map<string, VerifiedToken>();

  get(token: string, now: number): Principal | undefined {
    return this.entry(token, now)?.principal;
  }

  entry(token: string, now: number): VerifiedToken | undefined {
    const entry = this.#entries.get(token);
    if (entry === undefined) return undefined;
    if (now < entry.until) return entry;
    this.#entries.delete(token);
    return undefined;
  }

  add(token: string, principal: Principal, until: number): void {
    if (this.#entries.size >= MAX_VERIFIED_TOKENS && !this.#entries.has(token)) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(token, { principal, until });
  }
}

/**
 * Validates bearer JWTs as an OAuth 2.1 resource server: the signature against the issuer's
 * JWKS (cached; an unknown kid refetches once, rate-limited, which is how key rotation is
 * followed), `iss`, `aud`, `exp` and `nbf` with `clockSkewMs`, and the required scopes. The
 * JWKS location comes from `jwksUri`, else from the issuer's metadata (RFC 8414, then OpenID
 * discovery), looked up on first use and again after a failure.
 */
export function createTokenVerifier(
  config: AuthConfig,
  options: { readonly logger: Logger; readonly own?: OwnTokens },
): TokenVerifier {
  let keys: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
  const keySet = () => {
    keys ??= discoverJwksUri(config).then((uri) =>
      createRemoteJWKSet(new URL(uri), {
        timeoutDuration: FETCH_TIMEOUT_MS,
        // A token naming a key id the cached set lacks (a key rotation) refetches the set, at most
        // once per interval: a flood of made-up kids costs the issuer one fetch, not one each.
        cooldownDuration: config.jwksCooldownMs,
        cacheMaxAge: 10 * 60_000,
      }),
    );
    keys.catch(() => (keys = undefined));
    return keys;
  };

  /** The identity provider's key set, or a 503 refusal when it cannot be found. */
  const providerKeys = async () => {
    try {
      return await keySet();
    } catch (error) {
      options.logger.error(`cannot find the signing keys of ${config.issuer}: ${(error as Error).message}`);
      throw new AuthRefusal(503, 'temporarily_unavailable', 'the identity provider cannot be reached');
    }
  };
  const verified = new VerifiedTokens();
  /**
   * The header each connection's last known request carried, with its token's memory: a host
   * sends the same header on every request of a kept-alive connection, and comparing two texts
   * costs far less than hashing a token of several hundred characters for the memory's lookup.
   * Only a header `known` found in the memory is kept, with the same `until`, so it is taken
   * exactly as long as the memory itself would take it.
   */
  const lastOnConnection = new WeakMap<object, { readonly header: string } & VerifiedToken>();
  // jose takes the tolerance in whole seconds; the memory above uses the same figure.
  const toleranceSeconds = Math.round(config.clockSkewMs / 1000);

  return {
    known(authorization, connection) {
      if (authorization === undefined) return undefined;
      const now = Date.now();
      const last = connection === undefined ? undefined : lastOnConnection.get(connection);
      if (last !== undefined && now < last.until && last.header === authorization) return last.principal;
      // Every token kept matched the bearer pattern in full, so a header that is the prefix and
      // a kept token is one `verify` would take with that token.
      if (!authorization.startsWith(BEARER_PREFIX)) return undefined;
      const entry = verified.entry(authorization.slice(BEARER_PREFIX.length), now);
      if (entry !== undefined && connection !== undefined)
        lastOnConnection.set(connection, { header: authorization, ...entry });
      return entry?.principal;
    },
    async verify(authorization) {
      const match = /^Bearer\s+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(authorization ?? '');
      if (authorization === undefined || authorization === '')
        throw new AuthRefusal(401, undefined, 'this gateway requires a bearer token');
      if (match === null)
        throw new AuthRefusal(401, 'invalid_token', 'the Authorization header is not a bearer token');
      const token = match[1]!;
      const known = verified.get(token, Date.now());
      if (known !== undefined) return known;
      const own =
        options.own !== undefined && issuerOf(token) === options.own.issuer ? options.own : undefined;
      let payload: JWTPayload;
      try {
        const checks = {
          issuer: own?.issuer ?? config.issuer,
          audience: config.audience,
          clockTolerance: toleranceSeconds,
          algorithms: own === undefined ? ALGORITHMS : [own.alg],
          // `sub` is checked below, with a message of its own.
          requiredClaims: ['exp'],
        };
        ({ payload } =
          own === undefined
            ? await jwtVerify(token, await providerKeys(), checks)
            : await jwtVerify(token, own.key, checks));
      } catch (error) {
        if (error instanceof AuthRefusal) throw error;
        if (error instanceof joseErrors.JWKSTimeout)
          throw new AuthRefusal(503, 'temporarily_unavailable', 'the identity provider cannot be reached');
        const why = describeTokenError(error, {
          audience: config.audience,
          issuer: own?.issuer ?? config.issuer,
        });
        options.logger.info(`refused a bearer token: ${why}`);
        throw new AuthRefusal(401, 'invalid_token', why);
      }
      const unusable = subjectProblem(payload.sub);
      // The listener logs the refusal with this reason.
      if (unusable !== undefined) throw new AuthRefusal(401, 'invalid_token', unusable);
      const scopes = scopesOf(payload);
      const missing = config.requiredScopes.filter((scope) => !scopes.has(scope));
      if (missing.length > 0)
        throw new AuthRefusal(
          403,
          'insufficient_scope',
          `the token lacks the scope ${missing.join(' ')} (auth.requiredScopes); it carries ${scopes.size === 0 ? 'none' : [...scopes].join(' ')}`,
        );
      const principal = own?.principalOf(payload) ?? tokenPrincipal(payload, config.claims);
      // `exp` is a required claim, so this is a number; tested again for the type's sake.
      if (typeof payload.exp === 'number') {
        const now = Date.now();
        const until = Math.min((payload.exp + toleranceSeconds) * 1000, now + VERIFIED_TOKEN_TTL_MS);
        if (until > now) verified.add(token, principal, until);
      }
      return principal;
    },
  };
}

/**
 * Why a token's `sub` cannot name its principal, or undefined when it can. The subject keys
 * everything kept apart between users (sessions, processes, confirmations, tasks), so a token
 * without a usable one must not pass as some shared stand-in principal.
 */
function subjectProblem(sub: unknown): string | undefined {
  if (sub === undefined) return 'the token has no sub claim: it names no principal';
  if (typeof sub !== 'string')
    return `the token's sub claim is ${sub === null ? 'null' : `a ${typeof sub}`}, not a string: it names no principal`;
  if (sub.trim() === '') return "the token's sub claim is empty: it names no principal";
  return undefined;
}

/** The token's scopes: `scope` (space-separated, RFC 8693/9068) or `scp` (a list, some providers). */
function scopesOf(payload: JWTPayload): Set<string> {
  const scope = payload.scope;
  const scp = payload.scp;
  const list = typeof scope === 'string' ? scope.split(' ') : Array.isArray(scp) ? scp.map(String) : [];
  return new Set(list.filter((s) => s !== ''));
}

/** The unchecked `iss` of a JWT, to pick the keys it is checked with; undefined when unreadable. */
function issuerOf(token: string): string | undefined {
  try {
    const { iss } = decodeJwt(token);
    return iss;
  } catch {
    return undefined;
  }
}

/**
 * What was wrong with a token, in words a client's developer can act on: for the issuer and
 * audience, what came and what this gateway expects (neither is a secret, and a mismatch there
 * is the usual mistake in setting up an identity provider).
 */
function describeTokenError(
  error: unknown,
  expected: { readonly audience: string; readonly issuer: string },
): string {
  if (error instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    const { payload } = error;
    if (error.claim === 'iss')
      return `the token was issued by ${JSON.stringify(payload.iss ?? null)}; this gateway accepts tokens from ${expected.issuer} (auth.issuer)`;
    if (error.claim === 'aud')
      return `the token is for the audience ${JSON.stringify(payload.aud ?? null)}; this gateway expects ${expected.audience} (auth.audience): ask the identity provider for a token for this resource`;
    if (error.claim === 'nbf') return 'the token is not valid yet';
    return `the token's ${error.claim} claim is not acceptable (${error.reason})`;
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed)
    return 'the token is not signed with an accepted algorithm';
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return 'the token is signed with a key the issuer does not publish';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return 'the token signature does not verify';
  if (error instanceof joseErrors.JOSEError) return `the token is not valid (${error.code})`;
  return 'the token is not valid';
}

/** The JWKS URL: configured, or from the issuer's metadata. */
async function discoverJwksUri(config: AuthConfig): Promise<string> {
  if (config.jwksUri !== undefined) return config.jwksUri;
  const issuer = new URL(config.issuer);
  const suffix = issuer.pathname === '/' ? '' : issuer.pathname.replace(/\/$/, '');
  const candidates = [
    `${issuer.origin}/.well-known/oauth-authorization-server${suffix}`,
    `${config.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
  ];
  const problems: string[] = [];
  for (const url of candidates) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      if (!response.ok) {
        problems.push(`${url}: HTTP ${response.status}`);
        continue;
      }
      const metadata = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
      // RFC 8414: metadata for another issuer must not be used (a mix-up attack otherwise).
      if (metadata.issuer !== config.issuer) {
        problems.push(`${url}: its issuer is ${JSON.stringify(metadata.issuer)}, not ${config.issuer}`);
        continue;
      }
      if (typeof metadata.jwks_uri !== 'string') {
        problems.push(`${url}: no jwks_uri`);
        continue;
      }
      return metadata.jwks_uri;
    } catch (error) {
      problems.push(`${url}: ${(error as Error).message}`);
    }
  }
  throw new Error(`no usable issuer metadata (${problems.join('; ')})`);
}
