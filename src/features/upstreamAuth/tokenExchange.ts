import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { TokenExchangeConfig } from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import { describePrincipal, principalKey, type Principal } from '../../core/principal.js';
import type { SubjectTokens } from '../../core/subjectTokens.js';
import type { HttpAuthorization } from '../../core/transports/httpTransport.js';
import { describeError } from '../../lib/describeError.js';
import type { Fetch } from './guardedFetch.js';
import { clientMetadata } from './interactiveSignIn.js';
import { renewalOf, type TokenLife } from './renewal.js';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';

/** Exchanged tokens held per server at once; the one obtained longest ago goes first. */
export const MAX_EXCHANGED_TOKENS = 1_000;
/** How long an exchanged token whose lifetime nobody said is used before it is exchanged again. */
const UNKNOWN_LIFETIME_MS = 5 * 60_000;
/** The longest answer of a token endpoint read; anything longer is not a token answer. */
const MAX_ANSWER_CHARS = 64 * 1024;
/** Error codes with which an identity provider refuses this exchange (RFC 6749 §5.2, RFC 8693 §2.2.2). */
const REFUSALS = new Set([
  'invalid_grant',
  'unauthorized_client',
  'invalid_client',
  'invalid_target',
  'invalid_scope',
  'invalid_request',
  'access_denied',
  'unsupported_grant_type',
]);

/**
 * A token exchange did not give a token. `refused`: the identity provider said no for this
 * principal (or there was nothing to exchange), which trying again at once cannot change; else it
 * could not be asked (unreachable, an unexpected answer).
 */
export class TokenExchangeError extends Error {
  /**
   * Whether no later attempt can succeed without a change of config: the gateway's callers bring
   * no token at all. Its server is then failed at once instead of restarted (see core `isLasting`).
   */
  readonly lasting: boolean;

  constructor(
    message: string,
    readonly refused: boolean,
    options: { readonly lasting?: boolean } = {},
  ) {
    super(message);
    this.name = 'TokenExchangeError';
    this.lasting = options.lasting ?? false;
  }
}

/** What an exchange writes to the audit trail (see core/events.ts); never a token. */
export interface TokenExchangeRecord {
  readonly type: 'upstream_token_exchange';
  readonly server: string;
  readonly outcome: 'success' | 'failure';
  readonly expiresAt?: string;
  readonly scopes?: string[];
  readonly error?: string;
}

export interface TokenExchangeDeps {
  readonly server: string;
  readonly config: TokenExchangeConfig;
  /** The tokens principals authenticated with at the listener; absent: no listener, nothing to exchange. */
  readonly subjectTokens?: SubjectTokens;
  /** How the identity provider is reached (redirects refused, each request bounded in time). */
  readonly fetchFn: Fetch;
  /** The token endpoint when the config names none: the server's authorization server's. */
  readonly discoverEndpoint: () => Promise<string>;
  readonly now: () => number;
  readonly log: Logger;
  readonly record?: (event: TokenExchangeRecord, principal: Principal) => void;
  /** An exchanged token this close to expiry is exchanged again before it is sent. Default 60 s. */
  readonly aheadMs?: number;
}

interface Exchanged {
  readonly token: string;
  /** When it expires and how long it lived; unknown lifetimes are taken as UNKNOWN_LIFETIME_MS. */
  readonly life: TokenLife;
}

/**
 * Token exchange (RFC 8693) for one HTTP server: each principal's own bearer token, as the
 * listener last verified it, is exchanged at the identity provider for an access token meant
 * for this server (`resource`, RFC 8707, and `audience`), which is kept in memory for that
 * principal alone until shortly before it expires. One exchange at a time per principal:
 * concurrent calls share the one under way. The principal's own token is only ever sent to the
 * identity provider's token endpoint.
 */
export class TokenExchange {
  readonly #held = new Map<string, Exchanged>();
  readonly #exchanging = new Map<string, Promise<string>>();
  #endpoint: Promise<string> | undefined;

  constructor(private readonly deps: TokenExchangeDeps) {}

  /** A token for `principal`'s requests to the server: the one held, or a fresh exchange. */
  tokenFor(principal: Principal | undefined): Promise<string> {
    if (principal === undefined || principal.source !== 'token')
      return Promise.reject(
        new TokenExchangeError(
          `token exchange needs the bearer token of the principal making the call, and ${principal === undefined ? 'the local user' : describePrincipal(principal)} has none: only hosts that connect through the HTTP listener of a config with an auth: section bring one. Add an auth: section and serve over HTTP, or remove oauth.tokenExchange from this server`,
          true,
          // A caller without a token of its own never gets one: retrying cannot help.
          { lasting: true },
        ),
      );
    const key = principalKey(principal);
    const held = this.#held.get(key);
    if (held === undefined) return this.exchangeOnce(key, principal);
    const renewal = renewalOf(held.life, this.deps.now());
    if (renewal === 'first') return this.exchangeOnce(key, principal);
    // A failed exchange is audited where it fails; the next request tries again.
    if (renewal === 'beside') this.exchangeOnce(key, principal).catch(() => {});
    return Promise.resolve(held.token);
  }

  /**
   * The server refused `token` (401): it is dropped and a fresh one exchanged, unless another
   * request has already put a different one in its place (then that one is tried).
   */
  rejected(principal: Principal | undefined, token: string | undefined): Promise<string> {
    if (principal !== undefined && principal.source === 'token') {
      const key = principalKey(principal);
      const held = this.#held.get(key);
      if (held !== undefined && held.token === token) this.#held.delete(key);
    }
    return this.tokenFor(principal);
  }

  /** The error a connection fails with when the server refuses even a freshly exchanged token. */
  refusedByServer(): TokenExchangeError {
    return new TokenExchangeError(
      'the server refused the token the identity provider issued in exchange: check that oauth.tokenExchange names the audience, resource and scopes the server expects',
      true,
    );
  }

  private exchangeOnce(key: string, principal: Principal): Promise<string> {
    const under = this.#exchanging.get(key);
    if (under !== undefined) return under;
    const exchanging = this.exchange(key, principal).finally(() => this.#exchanging.delete(key));
    this.#exchanging.set(key, exchanging);
    return exchanging;
  }

  private async exchange(key: string, principal: Principal): Promise<string> {
    const { server, record } = this.deps;
    try {
      const answer = await this.ask(principal);
      const lifetime = lifetimeOf(answer);
      const now = this.deps.now();
      this.hold(key, {
        token: answer.access_token,
        life: {
          expiresAt: now + (lifetime ?? UNKNOWN_LIFETIME_MS),
          lifetime: lifetime ?? UNKNOWN_LIFETIME_MS,
          ...(this.deps.aheadMs !== undefined && { aheadMs: this.deps.aheadMs }),
        },
      });
      const scopes = (answer.scope ?? this.deps.config.scopes?.join(' ') ?? '').split(' ').filter(Boolean);
      record?.(
        {
          type: 'upstream_token_exchange',
          server,
          outcome: 'success',
          ...(lifetime !== undefined && { expiresAt: new Date(now + lifetime).toISOString() }),
          ...(scopes.length > 0 && { scopes }),
        },
        principal,
      );
      this.deps.log.debug(`exchanged ${describePrincipal(principal)}'s token`);
      return answer.access_token;
    } catch (error) {
      const failure =
        error instanceof TokenExchangeError
          ? error
          : new TokenExchangeError(`token exchange failed: ${describeError(error)}`, false);
      record?.(
        { type: 'upstream_token_exchange', server, outcome: 'failure', error: failure.message },
        principal,
      );
      this.deps.log.warn(`token exchange for ${describePrincipal(principal)} failed: ${failure.message}`);
      throw failure;
    }
  }

  /** One exchange request: the token answer, or a `TokenExchangeError` saying why not. */
  private async ask(principal: Principal): Promise<TokenAnswer> {
    const { config } = this.deps;
    const subject = this.deps.subjectTokens?.current(principal);
    if (subject === undefined)
      throw new TokenExchangeError(
        `the gateway holds no bearer token of ${describePrincipal(principal)} to exchange`,
        true,
      );
    if (subject.expired)
      throw new TokenExchangeError(
        `${describePrincipal(principal)}'s own token has expired, so it cannot be exchanged; the host sends a fresh one with its next request`,
        true,
      );
    const endpoint = await this.endpoint();
    const body = new URLSearchParams({
      grant_type: TOKEN_EXCHANGE_GRANT,
      subject_token: subject.token,
      subject_token_type: ACCESS_TOKEN_TYPE,
      requested_token_type: ACCESS_TOKEN_TYPE,
    });
    if (config.resource !== false) body.set('resource', config.resource);
    if (config.audience !== undefined) body.set('audience', config.audience);
    if (config.scopes !== undefined && config.scopes.length > 0) body.set('scope', config.scopes.join(' '));
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (config.clientSecret !== undefined && config.clientAuth === 'basic')
      headers.authorization = `Basic ${Buffer.from(`${formEncode(config.clientId)}:${formEncode(config.clientSecret)}`).toString('base64')}`;
    else {
      body.set('client_id', config.clientId);
      if (config.clientSecret !== undefined) body.set('client_secret', config.clientSecret);
    }
    const where = describeEndpoint(endpoint);
    let response: Response;
    let text: string;
    try {
      response = await this.deps.fetchFn(endpoint, { method: 'POST', headers, body });
      text = (await response.text()).slice(0, MAX_ANSWER_CHARS);
    } catch (error) {
      throw new TokenExchangeError(
        `the identity provider could not be reached at ${where}: ${describeError(error)}`,
        false,
      );
    }
    return readAnswer(response.status, text, where);
  }

  /** The token endpoint: configured, else discovered once (a failed discovery is tried again later). */
  private endpoint(): Promise<string> {
    const configured = this.deps.config.tokenEndpoint;
    if (configured !== undefined) return Promise.resolve(configured);
    if (this.#endpoint === undefined) {
      const found = this.deps.discoverEndpoint().catch((error: unknown) => {
        this.#endpoint = undefined;
        throw new TokenExchangeError(
          `could not find the identity provider's token endpoint (set oauth.tokenExchange.tokenEndpoint): ${describeError(error)}`,
          false,
        );
      });
      this.#endpoint = found;
    }
    return this.#endpoint;
  }

  private hold(key: string, exchanged: Exchanged): void {
    this.#held.delete(key);
    if (this.#held.size >= MAX_EXCHANGED_TOKENS) {
      const oldest = this.#held.keys().next();
      if (oldest.done !== true) this.#held.delete(oldest.value);
    }
    this.#held.set(key, exchanged);
  }

  /**
   * What a connection made for `principal` signs its requests with: exchanged tokens, or, once
   * the exchange is refused and `fallback` is given, the principal's interactive sign-in (the
   * connection stays with it until it is made again).
   */
  authorization(
    principal: Principal | undefined,
    fallback: (HttpAuthorization & { readonly enter: () => void }) | undefined,
  ): HttpAuthorization {
    const provider = new ExchangeProvider(this, principal, this.deps.log, fallback);
    return {
      provider,
      refreshAfterRejection: (token) => provider.afterRejection(token),
    };
  }
}

interface TokenAnswer {
  readonly access_token: string;
  readonly expires_in?: number;
  readonly scope?: string;
}

/** The token endpoint's answer, checked: a bearer access token, or why there is none. */
function readAnswer(status: number, text: string, where: string): TokenAnswer {
  let json: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      json = parsed as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  if (status < 200 || status > 299) {
    const code = typeof json?.error === 'string' ? json.error : undefined;
    if (code === undefined)
      throw new TokenExchangeError(`the identity provider at ${where} answered HTTP ${status}`, false);
    const description =
      typeof json?.error_description === 'string' ? ` (${json.error_description.slice(0, 300)})` : '';
    throw new TokenExchangeError(
      `the identity provider refused the exchange: ${code}${description}`,
      REFUSALS.has(code) || status < 500,
    );
  }
  if (json === undefined || typeof json.access_token !== 'string' || json.access_token === '')
    throw new TokenExchangeError(`the identity provider at ${where} answered without an access_token`, false);
  const issued = json.issued_token_type;
  if (issued !== undefined && issued !== ACCESS_TOKEN_TYPE && issued !== JWT_TOKEN_TYPE)
    throw new TokenExchangeError(
      `the identity provider issued a ${String(issued)}, not an access token the server can take`,
      false,
    );
  if (typeof json.token_type !== 'string' || json.token_type.toLowerCase() !== 'bearer')
    throw new TokenExchangeError(
      `the identity provider issued a token of type ${JSON.stringify(json.token_type)}; only bearer tokens are sent`,
      false,
    );
  return {
    access_token: json.access_token,
    ...(typeof json.expires_in === 'number' && json.expires_in > 0 && { expires_in: json.expires_in }),
    ...(typeof json.scope === 'string' && { scope: json.scope }),
  };
}

/** How long the token lives, in milliseconds: `expires_in`, else the JWT's own `exp`. */
function lifetimeOf(answer: TokenAnswer): number | undefined {
  if (answer.expires_in !== undefined) return answer.expires_in * 1000;
  const payload = answer.access_token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? Math.max(0, exp * 1000 - Date.now()) : undefined;
  } catch {
    return undefined;
  }
}

/** RFC 6749 §2.3.1: the client id and secret are form-encoded before they are joined for Basic. */
function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+');
}

/** The endpoint as messages name it: origin and path, never a query. */
function describeEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.origin}${url.pathname}`;
  } catch {
    return 'its token endpoint';
  }
}

/** What the loopback redirect is registered as; a connection never starts a browser sign-in. */
const NO_REDIRECT = 'http://127.0.0.1/callback';

/**
 * The provider a connection's transport uses when its server takes exchanged tokens: the SDK
 * asks it for the token of every request. Where the SDK would start a sign-in (the server
 * refused even a fresh token), it fails the request instead, unless the connection has fallen
 * back to the principal's interactive sign-in, whose provider then answers everything.
 */
class ExchangeProvider implements OAuthClientProvider {
  private interactive = false;
  private discovered: OAuthDiscoveryState | undefined;

  constructor(
    private readonly exchange: TokenExchange,
    private readonly principal: Principal | undefined,
    private readonly log: Logger,
    private readonly fallback: (HttpAuthorization & { readonly enter: () => void }) | undefined,
  ) {}

  get redirectUrl(): string {
    return NO_REDIRECT;
  }

  get clientMetadata(): OAuthClientMetadata {
    return clientMetadata(NO_REDIRECT);
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    if (this.interactive) return this.fallback!.provider.tokens();
    try {
      return { access_token: await this.exchange.tokenFor(this.principal), token_type: 'Bearer' };
    } catch (error) {
      if (!this.fallsBack(error)) throw error;
      return this.fallback!.provider.tokens();
    }
  }

  /** The server refused `token` (401): another exchange, or the interactive sign-in's renewal. */
  async afterRejection(token: string | undefined): Promise<string | undefined> {
    if (this.interactive) return this.fallback!.refreshAfterRejection(token);
    try {
      return await this.exchange.rejected(this.principal, token);
    } catch (error) {
      if (!this.fallsBack(error)) throw error;
      return this.fallback!.refreshAfterRejection(undefined);
    }
  }

  /** Whether `error` turns this connection to the interactive sign-in (and it now has). */
  private fallsBack(error: unknown): boolean {
    if (this.fallback === undefined || !(error instanceof TokenExchangeError) || !error.refused) return false;
    this.log.info(`token exchange refused (${error.message}); the principal signs in instead`);
    this.interactive = true;
    this.fallback.enter();
    return true;
  }

  clientInformation():
    Promise<OAuthClientInformationMixed | undefined> | OAuthClientInformationMixed | undefined {
    if (this.interactive) return this.fallback!.provider.clientInformation();
    throw this.exchange.refusedByServer();
  }

  saveTokens(): void {
    // Exchanged tokens are held by the exchange itself; interactive ones by the sign-in.
  }

  redirectToAuthorization(authorizationUrl: URL): void | Promise<void> {
    if (this.interactive) return this.fallback!.provider.redirectToAuthorization(authorizationUrl);
    throw this.exchange.refusedByServer();
  }

  saveCodeVerifier(): void {
    // No browser round trip starts here: nothing to keep.
  }

  codeVerifier(): string | Promise<string> {
    if (this.interactive) return this.fallback!.provider.codeVerifier();
    throw this.exchange.refusedByServer();
  }

  discoveryState(): OAuthDiscoveryState | undefined | Promise<OAuthDiscoveryState | undefined> {
    return this.interactive ? this.fallback!.provider.discoveryState?.() : this.discovered;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void | Promise<void> {
    if (this.interactive) return this.fallback!.provider.saveDiscoveryState?.(state);
    this.discovered = state;
  }
}
