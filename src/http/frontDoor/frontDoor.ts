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
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SignJWT, type JWTPayload } from 'jose';
import type { AuthConfig, FrontDoorConfig } from '../../config/types.js';
import type { HostSignInEvent } from '../../core/events.js';
import type { Logger } from '../../core/logger.js';
import { ANONYMOUS, tokenPrincipal, type Principal } from '../../core/principal.js';
import type { OwnTokens } from '../auth.js';
import { sendJson } from '../replies.js';
import { keptHere, keptInStore, type Kept } from './bounded.js';
import { StoreError, type SharedStore } from '../../lib/store/sharedStore.js';
import { identityProvider, SignInError } from './idp.js';
import type { SigningKey } from './keys.js';

/** A sign-in record, without what the gateway's recorder adds. */
export type SignInRecord = Omit<HostSignInEvent, 'session' | 'principal'>;

export interface FrontDoorOptions {
  readonly auth: AuthConfig;
  readonly door: FrontDoorConfig;
  readonly key: SigningKey;
  readonly logger: Logger;
  /** Audits a sign-in step; `principal` is who, once the ID token named them. */
  readonly record?: (event: SignInRecord, principal: Principal) => void;
  /** Reads a request body, bounded (the listener's reader). */
  readonly readBody: (req: IncomingMessage, max: number) => Promise<string | undefined>;
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
  handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void>;
  /** How the listener's verifier checks the tokens the front door issues. */
  readonly tokens: OwnTokens;
}

/** Sign-ins under way, codes and refresh tokens held at once, each. */
const MAX_PENDING = 1000;
const MAX_CODES = 1000;
const MAX_REFRESH_TOKENS = 10_000;
/** How long the user has to sign in at the identity provider. */
const PENDING_MS = 10 * 60_000;
/** How long a host has to trade its code. */
const CODE_MS = 60_000;
/** The most of a registration or token request read. */
const MAX_BODY = 16 * 1024;
/** Bounds on what a host registers. */
const MAX_REDIRECTS = 8;
const MAX_TEXT = 512;

/** The claim naming the identity provider that vouched for the subject of a gateway token. */
const IDP_ISSUER_CLAIM = 'idp_iss';

/**
 * A registered host. Its client id is its registration itself, sealed with the gateway's key:
 * nothing is kept per host, so registrations cost no memory, outlive a restart and are known to
 * every replica that shares the key.
 */
interface Client {
  /** The client id the host was given (the sealed registration). */
  readonly id: string;
  /** A short name for it in logs, audit records and tokens (from its seal). */
  readonly tag: string;
  readonly name?: string;
  readonly redirectUris: readonly string[];
}

interface Pending {
  readonly client: Client;
  readonly redirectUri: string;
  readonly challenge: string;
  readonly hostState?: string;
  readonly verifier: string;
  readonly nonce: string;
}

/** Who signed in, as the gateway's tokens carry it. */
interface Subject {
  readonly sub: string;
  readonly idpIssuer: string;
  readonly claims: Readonly<Record<string, unknown>>;
}

interface Code {
  readonly client: Client;
  readonly redirectUri: string;
  readonly challenge: string;
  readonly subject: Subject;
}

interface Refresh {
  readonly client: Client;
  readonly subject: Subject;
  /** The sign-in's end: rotation never extends it. */
  readonly until: number;
}

const random = (bytes = 32) => randomBytes(bytes).toString('base64url');
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');
const digest = (token: string) => createHash('sha256').update(token).digest('base64url');

/** An OAuth error answer: the code and a description that says what to fix. */
class OAuthError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

export function createFrontDoor(options: FrontDoorOptions): FrontDoor {
  const { auth, door, key, logger } = options;
  const issuer = door.baseUrl;
  const idp = identityProvider(auth, door);
  const { store } = options;
  const pending: Kept<Pending> = store ? keptInStore(store, 'pending') : keptHere(MAX_PENDING);
  const codes: Kept<Code> = store ? keptInStore(store, 'code') : keptHere(MAX_CODES);
  const refreshTokens: Kept<Refresh> = store ? keptInStore(store, 'refresh') : keptHere(MAX_REFRESH_TOKENS);
  const scope = auth.requiredScopes.join(' ');

  const record = (event: SignInRecord, principal: Principal = ANONYMOUS) =>
    options.record?.(event, principal);
  const principalOfSubject = (subject: Subject, clientId: string) =>
    tokenPrincipal(
      { ...subject.claims, sub: subject.sub, iss: subject.idpIssuer, client_id: clientId },
      auth.claims,
    );
  const failed = (client: Client | undefined, why: string, principal?: Principal) => {
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
  };

  /** The host a client id names, if the gateway's key sealed it; undefined otherwise. */
  function openClient(clientId: string): Client | undefined {
    const dot = clientId.lastIndexOf('.');
    if (dot <= 0) return undefined;
    const registration = clientId.slice(0, dot);
    const seal = Buffer.from(clientId.slice(dot + 1));
    const expected = Buffer.from(key.mac(registration));
    if (seal.length !== expected.length || !timingSafeEqual(seal, expected)) return undefined;
    const { r, n } = JSON.parse(Buffer.from(registration, 'base64url').toString('utf8')) as {
      r: string[];
      n?: string;
    };
    return {
      id: clientId,
      tag: expected.toString().slice(0, 16),
      redirectUris: r,
      ...(n !== undefined && { name: n }),
    };
  }

  const routes: Record<string, (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>> = {
    '/.well-known/oauth-authorization-server': async (_req, res) => metadata(res),
    '/.well-known/openid-configuration': async (_req, res) => metadata(res),
    '/oauth/jwks': async (_req, res) => sendJson(res, 200, { keys: [key.publicJwk] }),
    '/oauth/register': register,
    '/oauth/authorize': authorize,
    '/oauth/callback': callback,
    '/oauth/token': token,
    '/oauth/revoke': revoke,
  };

  function metadata(res: ServerResponse): void {
    sendJson(res, 200, {
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      jwks_uri: `${issuer}/oauth/jwks`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      ...(auth.requiredScopes.length > 0 && { scopes_supported: auth.requiredScopes }),
      authorization_response_iss_parameter_supported: true,
    });
  }

  /** RFC 7591: a public client, its redirect URIs checked. */
  async function register(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST')
      throw new OAuthError('invalid_request', 'register with a POST of JSON client metadata', 405);
    const text = await options.readBody(req, MAX_BODY);
    if (text === undefined)
      throw new OAuthError('invalid_client_metadata', `the registration is over ${MAX_BODY} bytes`);
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      throw new OAuthError('invalid_client_metadata', 'the registration is not a JSON object');
    }
    const uris = body['redirect_uris'];
    if (!Array.isArray(uris) || uris.length === 0 || !uris.every((u) => typeof u === 'string'))
      throw new OAuthError('invalid_redirect_uri', 'redirect_uris must be a list of one or more URLs');
    if (uris.length > MAX_REDIRECTS)
      throw new OAuthError(
        'invalid_redirect_uri',
        `at most ${MAX_REDIRECTS} redirect_uris, got ${uris.length}`,
      );
    for (const uri of uris as string[]) {
      const problem = redirectProblem(uri);
      if (problem !== undefined) throw new OAuthError('invalid_redirect_uri', problem);
    }
    const grants = body['grant_types'];
    if (Array.isArray(grants) && grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token'))
      throw new OAuthError(
        'invalid_client_metadata',
        `this gateway grants authorization_code and refresh_token only, not ${grants.filter((g) => g !== 'authorization_code' && g !== 'refresh_token').join(', ')}`,
      );
    const name = typeof body['client_name'] === 'string' ? body['client_name'].slice(0, 100) : undefined;
    const registration = Buffer.from(
      JSON.stringify({ r: uris, ...(name !== undefined && { n: name }) }),
    ).toString('base64url');
    const seal = key.mac(registration);
    const client: Client = {
      id: `${registration}.${seal}`,
      tag: seal.slice(0, 16),
      redirectUris: uris as string[],
      ...(name !== undefined && { name }),
    };
    logger.info(
      `host registered as ${describeClient(client)} (redirects to ${client.redirectUris.join(', ')})`,
    );
    sendJson(res, 201, {
      client_id: client.id,
      client_id_issued_at: Math.floor(Date.now() / 1000),
      redirect_uris: client.redirectUris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(name !== undefined && { client_name: name }),
    });
  }

  /** The host's authorization request: checked, then the browser goes on to the identity provider. */
  async function authorize(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const q = url.searchParams;
    const clientId = q.get('client_id') ?? '';
    const client = openClient(clientId);
    // Until the client and its redirect are known good, errors are shown to the user, never
    // sent on to a redirect URI that may not be the host's (RFC 6749 §4.1.2.1).
    if (client === undefined) {
      const why =
        clientId === ''
          ? 'the request names no client_id'
          : 'the client_id was not issued by this gateway (or by one with another signing key): the host should register again';
      failed(undefined, why);
      return page(res, 400, why);
    }
    const redirectUri = q.get('redirect_uri') ?? '';
    if (!client.redirectUris.some((registered) => sameRedirect(registered, redirectUri))) {
      const why = `the redirect_uri ${JSON.stringify(redirectUri)} is not registered for this client (registered: ${client.redirectUris.join(', ')})`;
      failed(client, why);
      return page(res, 400, why);
    }
    const hostState = q.get('state') ?? undefined;
    const refuse = (code: string, why: string) => {
      failed(client, why);
      redirectBack(res, redirectUri, {
        error: code,
        error_description: why,
        ...(hostState !== undefined && { state: hostState }),
      });
    };
    if (q.get('response_type') !== 'code')
      return refuse(
        'unsupported_response_type',
        `response_type must be code, got ${JSON.stringify(q.get('response_type'))}`,
      );
    const challenge = q.get('code_challenge') ?? '';
    if (challenge === '' || q.get('code_challenge_method') !== 'S256')
      return refuse(
        'invalid_request',
        'PKCE is required: send code_challenge with code_challenge_method=S256',
      );
    if (!/^[A-Za-z0-9_-]{43}$/.test(challenge))
      return refuse(
        'invalid_request',
        'the code_challenge is not an S256 challenge (43 base64url characters)',
      );
    const resourceProblem = targetProblem(q.get('resource'));
    if (resourceProblem !== undefined) return refuse('invalid_target', resourceProblem);
    const state = random();
    const entry: Pending = {
      client,
      redirectUri,
      challenge,
      ...(hostState !== undefined && { hostState }),
      verifier: random(),
      nonce: random(),
    };
    let location: string;
    try {
      location = await idp.authorizationUrl({ state, nonce: entry.nonce, challenge: s256(entry.verifier) });
    } catch (error) {
      const why =
        error instanceof SignInError
          ? error.message
          : `the identity provider cannot be reached: ${(error as Error).message}`;
      return refuse('temporarily_unavailable', why);
    }
    await pending.set(state, entry, Date.now() + PENDING_MS);
    record({
      type: 'host_sign_in_start',
      client: client.tag,
      ...(client.name !== undefined && { clientName: client.name }),
    });
    res.writeHead(302, { Location: location, 'Cache-Control': 'no-store' }).end();
  }

  /** The identity provider sends the browser back here, with its code and our state. */
  async function callback(_req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const q = url.searchParams;
    const entry = await pending.take(q.get('state') ?? '');
    if (entry === undefined) {
      const why =
        'this sign-in is unknown or has expired (its state does not match one this gateway started, or it was already used): start the sign-in again from the host';
      failed(undefined, why);
      return page(res, 400, why);
    }
    const { client } = entry;
    const back = (params: Record<string, string>) =>
      redirectBack(res, entry.redirectUri, {
        ...params,
        ...(entry.hostState !== undefined && { state: entry.hostState }),
        iss: issuer,
      });
    const idpError = q.get('error');
    if (idpError !== null) {
      const described = q.get('error_description');
      const why = `the identity provider refused the sign-in: ${idpError}${described === null ? '' : `: ${described}`}`;
      failed(client, why);
      return back({
        error: idpError === 'access_denied' ? 'access_denied' : 'server_error',
        error_description: why,
      });
    }
    let claims: JWTPayload;
    try {
      claims = await idp.redeem({ code: q.get('code') ?? '', verifier: entry.verifier, nonce: entry.nonce });
    } catch (error) {
      const why =
        error instanceof SignInError
          ? error.message
          : `the identity provider cannot be reached: ${(error as Error).message}`;
      failed(client, why);
      return back({
        error: error instanceof SignInError ? error.code : 'temporarily_unavailable',
        error_description: why,
      });
    }
    const kept: Record<string, unknown> = {};
    for (const name of auth.claims) if (claims[name] !== undefined) kept[name] = claims[name];
    const subject: Subject = { sub: claims.sub!, idpIssuer: claims.iss!, claims: kept };
    const code = random();
    await codes.set(
      code,
      { client, redirectUri: entry.redirectUri, challenge: entry.challenge, subject },
      Date.now() + CODE_MS,
    );
    back({ code });
  }

  /** The token endpoint: a code with its PKCE verifier, or a refresh token (rotated). */
  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST')
      throw new OAuthError('invalid_request', 'the token endpoint takes a POST', 405);
    const form = await readForm(req);
    const clientId = form.get('client_id') ?? '';
    const grant = form.get('grant_type');
    const resourceProblem = targetProblem(form.get('resource'));
    if (grant === 'authorization_code') {
      const code = await codes.take(form.get('code') ?? '');
      if (code === undefined)
        throw tokenFailure(
          undefined,
          'invalid_grant',
          'the code is unknown, expired or already used: sign in again',
        );
      const principal = principalOfSubject(code.subject, code.client.tag);
      if (code.client.id !== clientId)
        throw tokenFailure(
          code.client,
          'invalid_grant',
          `the code was issued to another client than ${clientId || 'the one named'}`,
          principal,
        );
      if (form.get('redirect_uri') !== null && form.get('redirect_uri') !== code.redirectUri)
        throw tokenFailure(
          code.client,
          'invalid_grant',
          'the redirect_uri is not the one the authorization request named',
          principal,
        );
      const verifier = form.get('code_verifier') ?? '';
      if (verifier === '' || s256(verifier) !== code.challenge)
        throw tokenFailure(
          code.client,
          'invalid_grant',
          'the code_verifier does not match the code_challenge of the authorization request (PKCE)',
          principal,
        );
      if (resourceProblem !== undefined)
        throw tokenFailure(code.client, 'invalid_target', resourceProblem, principal);
      const answer = await issue(code.client, code.subject, Date.now() + door.refreshTokenMs);
      logger.info(`host ${describeClient(code.client)} signed in as ${principal.subject}`);
      record(
        {
          type: 'host_sign_in',
          client: code.client.tag,
          ...(code.client.name !== undefined && { clientName: code.client.name }),
        },
        principal,
      );
      return sendTokens(res, answer);
    }
    if (grant === 'refresh_token') {
      const stored = await refreshTokens.take(digest(form.get('refresh_token') ?? ''));
      if (stored === undefined)
        throw new OAuthError(
          'invalid_grant',
          'the refresh token is unknown, expired, revoked or already used: sign in again',
        );
      if (stored.client.id !== clientId)
        throw new OAuthError('invalid_grant', 'the refresh token was issued to another client');
      if (resourceProblem !== undefined) throw new OAuthError('invalid_target', resourceProblem);
      return sendTokens(res, await issue(stored.client, stored.subject, stored.until));
    }
    throw new OAuthError(
      'unsupported_grant_type',
      `grant_type must be authorization_code or refresh_token, got ${JSON.stringify(grant)}`,
    );
  }

  /** RFC 7009: a refresh token is forgotten (access tokens expire on their own, soon). */
  async function revoke(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST')
      throw new OAuthError('invalid_request', 'the revocation endpoint takes a POST', 405);
    const form = await readForm(req);
    await refreshTokens.delete(digest(form.get('token') ?? ''));
    res.writeHead(200, { 'Cache-Control': 'no-store' }).end();
  }

  function tokenFailure(
    client: Client | undefined,
    code: string,
    why: string,
    principal?: Principal,
  ): OAuthError {
    failed(client, why, principal);
    return new OAuthError(code, why);
  }

  async function issue(client: Client, subject: Subject, until: number) {
    const now = Date.now();
    const accessToken = await new SignJWT({
      ...subject.claims,
      client_id: client.tag,
      [IDP_ISSUER_CLAIM]: subject.idpIssuer,
      ...(scope !== '' && { scope }),
    })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
      .setIssuer(issuer)
      .setSubject(subject.sub)
      .setAudience(auth.audience)
      .setIssuedAt()
      .setExpirationTime(Math.floor((now + door.accessTokenMs) / 1000))
      .setJti(random(16))
      .sign(key.privateKey);
    const refreshToken = random();
    await refreshTokens.set(digest(refreshToken), { client, subject, until }, until);
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: Math.floor(door.accessTokenMs / 1000),
      refresh_token: refreshToken,
      ...(scope !== '' && { scope }),
    };
  }

  async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
    const text = await options.readBody(req, MAX_BODY);
    if (text === undefined) throw new OAuthError('invalid_request', `the request is over ${MAX_BODY} bytes`);
    return new URLSearchParams(text);
  }

  function targetProblem(resource: string | null): string | undefined {
    if (resource === null || resource === auth.audience) return undefined;
    return `this gateway issues tokens for the resource ${auth.audience} (auth.audience), not ${resource}: connect the host to ${auth.audience}`;
  }

  return {
    issuer,
    serves: (pathname) => Object.hasOwn(routes, pathname),
    async handle(req, res, pathname) {
      const url = new URL(req.url ?? '/', issuer);
      try {
        await routes[pathname]!(req, res, url);
      } catch (error) {
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
    },
    tokens: {
      issuer,
      key: key.publicKey,
      alg: key.alg,
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

function sendTokens(res: ServerResponse, answer: object): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  sendJson(res, 200, answer);
}

/** A page for the user's browser, when there is no host redirect to send an error to. */
function page(res: ServerResponse, status: number, message: string): void {
  const text = `Sign-in to mcp-warden failed: ${message}\n`;
  res
    .writeHead(status, {
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    })
    .end(text);
}

function redirectBack(res: ServerResponse, redirectUri: string, params: Record<string, string>): void {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  res.writeHead(302, { Location: url.href, 'Cache-Control': 'no-store' }).end();
}

function describeClient(client: Client): string {
  return client.name === undefined ? client.tag : `${client.tag} (${client.name})`;
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Schemes a redirect may never use: ones a browser runs or reads itself (script, data, files),
 * and the network ones other than https (a code sent there travels in the clear, or not to an app).
 */
const FORBIDDEN_SCHEMES = new Set([
  'javascript:',
  'data:',
  'file:',
  'blob:',
  'vbscript:',
  'about:',
  'ftp:',
  'ws:',
  'wss:',
]);

/**
 * Why a host may not register this redirect URI, or undefined when it may: https, http to a
 * loopback address (a desktop host's own listener), or an app's private-use scheme (RFC 8252
 * §7.1, as Cursor's `cursor://…` is); never http elsewhere, a browser's own schemes, or a
 * fragment. A code sent to any of these is still useless without the host's PKCE verifier.
 */
export function redirectProblem(uri: string): string | undefined {
  if (uri.length > MAX_TEXT) return `a redirect URI may be at most ${MAX_TEXT} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `the redirect URI ${JSON.stringify(uri)} is not a URL`;
  }
  if (url.hash !== '') return `the redirect URI ${uri} has a #fragment, which OAuth forbids`;
  if (url.username !== '' || url.password !== '') return `the redirect URI ${uri} carries credentials`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) return undefined;
  if (url.protocol !== 'http:' && !FORBIDDEN_SCHEMES.has(url.protocol)) return undefined;
  return `the redirect URI ${uri} is not https, http to a loopback address (127.0.0.1, [::1], localhost) or an app's own scheme: this gateway sends codes only there`;
}

/**
 * Whether a host's redirect URI is one it registered: the same text, or for loopback http the
 * same but for the port, which a desktop host picks anew each time (RFC 8252 §7.3).
 */
export function sameRedirect(registered: string, asked: string): boolean {
  if (registered === asked) return true;
  let a: URL;
  let b: URL;
  try {
    a = new URL(registered);
    b = new URL(asked);
  } catch {
    return false;
  }
  return (
    a.protocol === 'http:' &&
    b.protocol === 'http:' &&
    LOOPBACK.has(a.hostname) &&
    a.hostname === b.hostname &&
    a.pathname === b.pathname &&
    a.search === b.search
  );
}
