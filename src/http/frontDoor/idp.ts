/**
 * The front door's side of the company identity provider: its metadata, the code exchange with
 * the one client registered there, and the ID token that names who signed in. Each failure
 * says what was wrong and which config key it is about.
 */
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { AuthConfig, FrontDoorConfig } from '../../config/types.js';

/** A fetch to the identity provider takes at most this long. */
const FETCH_TIMEOUT_MS = 10_000;
/** The most of an identity provider's answer read. */
const MAX_ANSWER_BYTES = 256 * 1024;

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** A sign-in that cannot go on, with words the user and the log both get. */
export class SignInError extends Error {
  constructor(
    /** The OAuth error code the host is sent. */
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'SignInError';
  }
}

interface Endpoints {
  readonly authorization: string;
  readonly token: string;
  readonly jwks: ReturnType<typeof createRemoteJWKSet>;
  /** Whether the token endpoint takes the secret in the Authorization header (else in the body). */
  readonly basicAuth: boolean;
}

export interface IdentityProvider {
  /** Where to send the browser to sign in. */
  authorizationUrl(params: {
    readonly state: string;
    readonly nonce: string;
    readonly challenge: string;
  }): Promise<string>;
  /** The claims of the ID token the code is exchanged for, checked; or a `SignInError`. */
  redeem(params: {
    readonly code: string;
    readonly verifier: string;
    readonly nonce: string;
  }): Promise<JWTPayload>;
}

export function identityProvider(auth: AuthConfig, door: FrontDoorConfig): IdentityProvider {
  const redirectUri = `${door.baseUrl}/oauth/callback`;
  let endpoints: Promise<Endpoints> | undefined;
  const found = () => {
    endpoints ??= discover(auth.issuer, auth.jwksUri);
    endpoints.catch(() => (endpoints = undefined));
    return endpoints;
  };
  return {
    async authorizationUrl({ state, nonce, challenge }) {
      const url = new URL((await found()).authorization);
      const params = {
        response_type: 'code',
        client_id: door.clientId,
        redirect_uri: redirectUri,
        scope: door.scopes.join(' '),
        state,
        nonce,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      };
      for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
      return url.href;
    },

    async redeem({ code, verifier, nonce }) {
      const { token, jwks, basicAuth } = await found();
      const body = new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      });
      const headers: Record<string, string> = {
        'Content-Type': 'application/x-www-form-urlencoded',
        Accept: 'application/json',
      };
      if (door.clientSecret !== undefined && basicAuth) {
        const encode = (s: string) => encodeURIComponent(s);
        headers['Authorization'] =
          `Basic ${Buffer.from(`${encode(door.clientId)}:${encode(door.clientSecret)}`).toString('base64')}`;
      } else {
        body.set('client_id', door.clientId);
        if (door.clientSecret !== undefined) body.set('client_secret', door.clientSecret);
      }
      const answer = await getJson(token, { method: 'POST', headers, body: body.toString() });
      if (answer.status !== 200) {
        const error =
          typeof answer.json['error'] === 'string' ? answer.json['error'] : `HTTP ${answer.status}`;
        const why =
          typeof answer.json['error_description'] === 'string' ? `: ${answer.json['error_description']}` : '';
        const hint =
          error === 'invalid_client' || error === 'unauthorized_client'
            ? ' (check auth.frontDoor.clientId and clientSecret against the client registered there)'
            : error === 'invalid_grant'
              ? ` (is ${redirectUri} the redirect URI registered for the client?)`
              : '';
        throw new SignInError(
          'server_error',
          `the identity provider refused the code: ${error}${why}${hint}`,
        );
      }
      const idToken = answer.json['id_token'];
      if (typeof idToken !== 'string')
        throw new SignInError(
          'server_error',
          `the identity provider answered without an ID token: is openid among auth.frontDoor.scopes (${door.scopes.join(' ')}), and is the client an OpenID Connect one?`,
        );
      return checkIdToken(idToken, {
        jwks,
        issuer: auth.issuer,
        clientId: door.clientId,
        nonce,
        skewMs: auth.clockSkewMs,
      });
    },
  };
}

async function checkIdToken(
  idToken: string,
  expected: {
    readonly jwks: ReturnType<typeof createRemoteJWKSet>;
    readonly issuer: string;
    readonly clientId: string;
    readonly nonce: string;
    readonly skewMs: number;
  },
): Promise<JWTPayload> {
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(idToken, expected.jwks, {
      issuer: expected.issuer,
      audience: expected.clientId,
      algorithms: ALGORITHMS,
      clockTolerance: Math.round(expected.skewMs / 1000),
      requiredClaims: ['exp', 'sub'],
    }));
  } catch (error) {
    throw new SignInError('server_error', describeIdTokenError(error, expected));
  }
  if (payload['nonce'] !== expected.nonce)
    throw new SignInError(
      'server_error',
      "the identity provider's ID token does not carry this sign-in's nonce: it belongs to another sign-in",
    );
  if (typeof payload.sub !== 'string' || payload.sub.trim() === '')
    throw new SignInError('server_error', "the identity provider's ID token names no subject (sub)");
  return payload;
}

function describeIdTokenError(
  error: unknown,
  expected: { readonly issuer: string; readonly clientId: string },
): string {
  const prefix = "the identity provider's ID token";
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    const payload = error.payload;
    if (error.claim === 'iss')
      return `${prefix} was issued by ${JSON.stringify(payload.iss)}, but auth.issuer is ${expected.issuer}: set auth.issuer to the provider's issuer exactly as its metadata names it`;
    if (error.claim === 'aud')
      return `${prefix} is for audience ${JSON.stringify(payload.aud)}, but auth.frontDoor.clientId is ${expected.clientId}: the two must be the same client`;
    return `${prefix}'s ${error.claim} claim is not acceptable (${error.reason})`;
  }
  if (error instanceof joseErrors.JWTExpired) return `${prefix} has expired (are the clocks far apart?)`;
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return `${prefix} is signed with a key the provider does not publish`;
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return `${prefix}'s signature does not verify`;
  if (error instanceof joseErrors.JOSEAlgNotAllowed)
    return `${prefix} is not signed with an accepted algorithm`;
  if (error instanceof joseErrors.JOSEError) return `${prefix} is not valid (${error.code})`;
  return `${prefix} cannot be checked: ${(error as Error).message}`;
}

/** The provider's endpoints from its metadata: OpenID discovery, then RFC 8414. */
async function discover(issuer: string, jwksUri: string | undefined): Promise<Endpoints> {
  const base = issuer.replace(/\/$/, '');
  const origin = new URL(issuer).origin;
  const suffix = new URL(issuer).pathname.replace(/\/$/, '');
  const candidates = [
    `${base}/.well-known/openid-configuration`,
    `${origin}/.well-known/oauth-authorization-server${suffix}`,
  ];
  const problems: string[] = [];
  for (const url of candidates) {
    let answer;
    try {
      answer = await getJson(url, {});
    } catch (error) {
      problems.push(`${url}: ${(error as Error).message}`);
      continue;
    }
    if (answer.status !== 200) {
      problems.push(`${url}: HTTP ${answer.status}`);
      continue;
    }
    const m = answer.json;
    if (m['issuer'] !== issuer) {
      problems.push(
        `${url} names the issuer ${JSON.stringify(m['issuer'])}, not ${issuer} (auth.issuer must be exactly the provider's issuer)`,
      );
      continue;
    }
    const authorization = m['authorization_endpoint'];
    const token = m['token_endpoint'];
    const keys = jwksUri ?? m['jwks_uri'];
    if (typeof authorization !== 'string' || typeof token !== 'string' || typeof keys !== 'string') {
      problems.push(`${url} lacks authorization_endpoint, token_endpoint or jwks_uri`);
      continue;
    }
    const methods = m['token_endpoint_auth_methods_supported'];
    return {
      authorization,
      token,
      jwks: createRemoteJWKSet(new URL(keys), { timeoutDuration: FETCH_TIMEOUT_MS }),
      // RFC 8414: absent means client_secret_basic.
      basicAuth: !Array.isArray(methods) || methods.includes('client_secret_basic'),
    };
  }
  throw new SignInError(
    'temporarily_unavailable',
    `the identity provider's metadata cannot be used: ${problems.join('; ')}`,
  );
}

async function getJson(
  url: string,
  init: RequestInit,
): Promise<{ readonly status: number; readonly json: Readonly<Record<string, unknown>> }> {
  const response = await fetch(url, {
    ...init,
    redirect: 'error',
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
  });
  const text = await response.text();
  if (text.length > MAX_ANSWER_BYTES) throw new Error(`the answer is over ${MAX_ANSWER_BYTES} bytes`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = {};
  }
  return {
    status: response.status,
    json: typeof json === 'object' && json !== null ? (json as Record<string, unknown>) : {},
  };
}
