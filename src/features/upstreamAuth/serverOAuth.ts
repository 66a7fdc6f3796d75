import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { HttpServerConfig } from '../../config/types.js';
import { SignInRequiredError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { Principal } from '../../core/principal.js';
import type { SubjectTokens } from '../../core/subjectTokens.js';
import type { HttpAuthorization } from '../../core/transports/httpTransport.js';
import type { SignInFlow, UpstreamSignIn } from '../../core/upstreams/signIn.js';
import { describeError } from '../../lib/describeError.js';
import { Discovery } from './discovery.js';
import { guardedFetch, type Fetch } from './guardedFetch.js';
import { clientMetadata, signInWithBrowser } from './interactiveSignIn.js';
import { accounts, principalAccount, type SecretStore, type TokenRecord } from './records.js';
import { revokeTokens, TokenRefresh } from './refresh.js';
import { renewalOf } from './renewal.js';
import { TokenCache } from './tokenCache.js';
import { TokenExchange, type TokenExchangeRecord } from './tokenExchange.js';

/** The audit records a sign-in writes (see core/events.ts); never a token. */
export type UpstreamAuthEvent =
  | { type: 'upstream_sign_in'; server: string; scopes: string[]; subject?: string }
  | TokenExchangeRecord
  | { type: 'upstream_refresh_failed'; server: string; error: string; signedOut: boolean }
  | { type: 'upstream_sign_out'; server: string; revoked: boolean };

export interface ServerOAuthDeps {
  /** Opened on first use: a gateway whose servers never ask for a sign-in never touches it. */
  readonly store: () => Promise<SecretStore>;
  readonly log: Logger;
  /** Writes an audit record for `principal` (the local user when undefined). */
  readonly record?: (event: UpstreamAuthEvent, principal: Principal | undefined) => void;
  /** How requests reach the authorization server; redirects are refused on top of it. */
  readonly fetch?: Fetch;
  readonly now?: () => number;
  /** How long a sign-in waits for the browser to come back. Default 5 minutes. */
  readonly signInTimeoutMs?: number;
  /** An access token this close to expiry is renewed before it is sent. Default 60 s. */
  readonly refreshAheadMs?: number;
  /**
   * The bearer tokens principals authenticated with at the HTTP listener: what a server with
   * `oauth.tokenExchange` exchanges. Absent (no listener): there is nothing to exchange.
   */
  readonly subjectTokens?: SubjectTokens;
}

/** What `auth status` shows of one sign-in: never a token. */
export interface SignInStatus {
  readonly server: string;
  readonly signedIn: boolean;
  readonly subject?: string;
  readonly scopes: readonly string[];
  readonly expiresAt?: number;
  readonly refreshable: boolean;
  readonly authorizationServer?: string;
}

/** How long a token exchange may take: the identity provider answers it without any user. */
const EXCHANGE_TIMEOUT_MS = 10_000;

/** What the loopback redirect is registered as before the port is known; never listened on. */
const NO_REDIRECT = 'http://127.0.0.1/callback';

/**
 * The OAuth 2.1 client of one HTTP upstream, after the MCP authorization spec: discovery from
 * the server's 401 (RFC 9728, then RFC 8414 / OpenID metadata, on any origin), a client
 * identity (pre-registered, a Client ID Metadata Document, else Dynamic Client Registration
 * remembered per authorization server), the authorization code grant with PKCE S256 and the
 * `resource` indicator, a loopback redirect, and tokens renewed silently.
 *
 * The SDK's `auth()` does discovery, registration, PKCE and the code exchange. What it does not
 * do is ours: checking `state` and the answer's `iss` (RFC 9207) on the redirect, refusing
 * authorization server metadata that names another issuer and endpoints that redirect, renewing
 * tokens one refresh at a time (see refresh.ts), and never starting a browser sign-in from
 * inside a connection: there the provider fails the request with `SignInRequiredError`. Its
 * parts: discovery.ts (where to sign in), interactiveSignIn.ts (the browser round trip),
 * refresh.ts (renewal and revocation), tokenCache.ts (the sign-ins in memory),
 * tokenExchange.ts (behind the listener, a token exchanged for the principal's own instead of a
 * sign-in).
 */
export class ServerOAuth implements UpstreamSignIn {
  readonly server: string;
  private readonly fetchFn: Fetch;
  private readonly now: () => number;
  private readonly discovery: Discovery;
  private readonly cache: TokenCache;
  private readonly refresher: TokenRefresh;
  /** Set when the entry has `oauth.tokenExchange`: principals' tokens are exchanged, not signed in. */
  private readonly exchange: TokenExchange | undefined;
  /** One browser round trip at a time per principal. */
  private readonly flows = new Map<string, Promise<SignInFlow>>();
  /** Scopes a server asked for beyond a sign-in's (403 insufficient_scope), per principal. */
  private readonly wantedScope = new Map<string, string>();
  /**
   * Whether the server has asked for a token (answered 401) in this process. Until it has, no
   * token is sent and the credential store is not opened: most HTTP servers never ask.
   */
  challenged = false;

  constructor(
    readonly config: HttpServerConfig,
    private readonly deps: ServerOAuthDeps,
  ) {
    this.server = config.name;
    this.fetchFn = guardedFetch(deps.fetch);
    this.now = deps.now ?? Date.now;
    this.discovery = new Discovery(config, this.fetchFn);
    this.cache = new TokenCache(deps.store, this.now);
    const { record } = deps;
    this.refresher = new TokenRefresh({
      server: this.server,
      url: config.url,
      cache: this.cache,
      log: deps.log,
      fetchFn: this.fetchFn,
      now: this.now,
      metadataOf: (as) => this.discovery.metadataOf(as),
      ...(record && {
        failed: (error, signedOut, principal) =>
          record({ type: 'upstream_refresh_failed', server: this.server, error, signedOut }, principal),
      }),
    });
    this.exchange = this.tokenExchange();
  }

  private tokenExchange(): TokenExchange | undefined {
    const config = this.config.oauth?.tokenExchange;
    if (config === undefined) return undefined;
    const { record } = this.deps;
    return new TokenExchange({
      server: this.server,
      config,
      ...(this.deps.subjectTokens && { subjectTokens: this.deps.subjectTokens }),
      // The principal's token goes out in this request: bounded tighter than discovery's.
      fetchFn: guardedFetch(this.deps.fetch, EXCHANGE_TIMEOUT_MS),
      discoverEndpoint: async () => {
        const state = this.discovery.state ?? (await this.discovery.discover(undefined));
        const endpoint = state.authorizationServerMetadata?.token_endpoint;
        if (endpoint === undefined)
          throw new Error(`${state.authorizationServerUrl} publishes no token_endpoint`);
        return endpoint;
      },
      now: this.now,
      log: this.deps.log,
      ...(this.deps.refreshAheadMs !== undefined && { aheadMs: this.deps.refreshAheadMs }),
      ...(record && { record }),
    });
  }

  describe(): string {
    const issuer = this.discovery.state?.authorizationServerMetadata?.issuer;
    return `server "${this.server}" (${this.config.url})${issuer ? ` through ${issuer}` : ''}`;
  }

  /** What the transport of a connection made for `principal` signs its requests with. */
  authorizationFor(principal: Principal | undefined): HttpAuthorization {
    const interactive = this.interactiveAuthorization(principal);
    if (this.exchange === undefined) return interactive;
    const fallsBack = this.config.oauth?.tokenExchange?.fallback === 'signIn';
    return this.exchange.authorization(
      principal,
      fallsBack ? { ...interactive, enter: () => (this.challenged = true) } : undefined,
    );
  }

  private interactiveAuthorization(principal: Principal | undefined): HttpAuthorization {
    const who = principalAccount(principal);
    return {
      provider: new ConnectionProvider(this, who, principal),
      refreshAfterRejection: async (accessToken) => {
        this.challenged = true;
        const record =
          accessToken === undefined
            ? await this.currentTokens(who, principal)
            : await this.refresh(who, principal, accessToken);
        return record?.tokens.access_token;
      },
    };
  }

  begin(principal: Principal | undefined): Promise<SignInFlow> {
    const who = principalAccount(principal);
    let flow = this.flows.get(who);
    if (flow === undefined) {
      flow = this.startFlow(who, principal);
      this.flows.set(who, flow);
      const forget = () => {
        if (this.flows.get(who) === flow) this.flows.delete(who);
      };
      flow.then((f) => f.completed.then(forget, forget), forget);
    }
    return flow;
  }

  async status(principal: Principal | undefined): Promise<SignInStatus> {
    const record = await this.read(principalAccount(principal));
    if (record === undefined) return { server: this.server, signedIn: false, scopes: [], refreshable: false };
    return {
      server: this.server,
      signedIn: true,
      ...(record.subject !== undefined && { subject: record.subject }),
      scopes: record.scopes,
      ...(record.expiresAt !== undefined && { expiresAt: record.expiresAt }),
      refreshable: record.tokens.refresh_token !== undefined,
      authorizationServer: record.authorizationServer,
    };
  }

  /**
   * Forgets `principal`'s tokens, after asking the authorization server to revoke them (RFC 7009)
   * when it offers that. Resolves whether there was a sign-in, and whether it was revoked.
   */
  async logout(principal: Principal | undefined): Promise<{ signedIn: boolean; revoked: boolean }> {
    const who = principalAccount(principal);
    const record = await this.cache.fresh(accounts.tokens(who, this.config.url));
    if (record === undefined) return { signedIn: false, revoked: false };
    let revoked = false;
    try {
      revoked = await revokeTokens(
        record,
        await this.discovery.metadataOf(record.authorizationServer),
        this.fetchFn,
      );
    } catch (error) {
      this.deps.log.warn(`${this.server}: could not revoke the tokens: ${describeError(error)}`);
    }
    await this.cache.delete(accounts.tokens(who, this.config.url));
    this.deps.record?.({ type: 'upstream_sign_out', server: this.server, revoked }, principal);
    return { signedIn: true, revoked };
  }

  /**
   * The stored sign-in of `who`. Near its access token's expiry it is renewed (see renewalOf):
   * beside the request while the token is still good, before it at the very end.
   */
  async currentTokens(who: string, principal: Principal | undefined): Promise<TokenRecord | undefined> {
    const record = await this.read(who);
    if (record === undefined) return undefined;
    if (record.expiresAt === undefined) return record;
    const life = {
      expiresAt: record.expiresAt,
      lifetime: record.expiresAt - (record.obtainedAt ?? record.expiresAt),
      ...(this.deps.refreshAheadMs !== undefined && { aheadMs: this.deps.refreshAheadMs }),
    };
    switch (renewalOf(life, this.now())) {
      case 'keep':
        return record;
      case 'beside':
        // A refresh that fails is audited and logged where it fails; the next request tries again.
        this.refresh(who, principal, record.tokens.access_token).catch(() => {});
        return record;
      case 'first':
        return this.refresh(who, principal, record.tokens.access_token);
    }
  }

  /** See `TokenRefresh.refresh`. */
  refresh(
    who: string,
    principal: Principal | undefined,
    rejected?: string,
  ): Promise<TokenRecord | undefined> {
    return this.refresher.refresh(who, principal, rejected);
  }

  /** The error a connection fails with when only a new sign-in can help. */
  signInRequired(who: string, scope: string | null, signedIn: boolean): SignInRequiredError {
    const how = `run "mcp-warden auth login ${this.server}" or call its authorize tool`;
    if (scope !== null && signedIn) {
      this.wantedScope.set(who, scope);
      void this.keepWantedScope(who, scope);
      return new SignInRequiredError(
        this.server,
        `the server asks for more access (scope "${scope}") than the sign-in granted: sign in again (${how})`,
      );
    }
    return new SignInRequiredError(this.server, `not signed in: ${how}`);
  }

  /**
   * Whether the server takes `principal`'s stored token: undefined when it does (or there is
   * none), else the scope it asks for beyond it (403 `insufficient_scope`), which the next
   * sign-in then asks for. For checking a sign-in at once, before any call meets the refusal.
   */
  async missingScope(principal: Principal | undefined): Promise<string | undefined> {
    const who = principalAccount(principal);
    const record = await this.read(who);
    if (record === undefined) return undefined;
    const scope = await this.discovery.missingScope(record.tokens.access_token);
    if (scope !== undefined && scope !== '') {
      this.wantedScope.set(who, scope);
      await this.keepWantedScope(who, scope);
    }
    return scope;
  }

  /**
   * A step-up scope is kept with the sign-in in the store, so the next sign-in asks for it at
   * once even after a restart (or from `mcp-warden auth login`), rather than meeting the
   * server's refusal again.
   */
  private async keepWantedScope(who: string, scope: string): Promise<void> {
    const account = accounts.tokens(who, this.config.url);
    try {
      const record = await this.cache.read(account);
      if (record !== undefined && record.wantedScope !== scope)
        await this.cache.write(account, { ...record, wantedScope: scope });
    } catch (error) {
      this.deps.log.warn(
        `${this.server}: could not keep the scope the server asks for: ${describeError(error)}`,
      );
    }
  }

  get discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery.state;
  }

  set discoveryState(state: OAuthDiscoveryState | undefined) {
    this.discovery.state = state;
  }

  /** `who`'s sign-in, from memory once read (see TokenCache). */
  read(who: string): Promise<TokenRecord | undefined> {
    return this.cache.read(accounts.tokens(who, this.config.url));
  }

  private startFlow(who: string, principal: Principal | undefined): Promise<SignInFlow> {
    return signInWithBrowser(
      {
        config: this.config,
        store: this.deps.store,
        discovery: this.discovery,
        fetchFn: this.fetchFn,
        now: this.now,
        timeoutMs: this.deps.signInTimeoutMs ?? 5 * 60_000,
        wantedScope: async (w) =>
          this.wantedScope.get(w) ?? (await this.read(w).catch(() => undefined))?.wantedScope,
        signedIn: async (w, record) => {
          await this.cache.write(accounts.tokens(w, this.config.url), record);
          this.wantedScope.delete(w);
          this.deps.record?.(
            {
              type: 'upstream_sign_in',
              server: this.server,
              scopes: [...record.scopes],
              ...(record.subject !== undefined && { subject: record.subject }),
            },
            principal,
          );
        },
      },
      who,
    );
  }
}

/**
 * The provider a connection's transport uses: the stored tokens (renewed ahead of expiry), and,
 * where the SDK would start a browser sign-in, a `SignInRequiredError` instead. It never hands
 * the SDK a refresh token, so every refresh goes through `ServerOAuth.refresh`, one at a time.
 */
class ConnectionProvider implements OAuthClientProvider {
  constructor(
    private readonly owner: ServerOAuth,
    private readonly who: string,
    private readonly principal: Principal | undefined,
  ) {}

  get redirectUrl(): string {
    return NO_REDIRECT;
  }

  get clientMetadata(): OAuthClientMetadata {
    return clientMetadata(NO_REDIRECT);
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const record = await this.owner.read(this.who);
    if (record === undefined) throw this.owner.signInRequired(this.who, null, false);
    return record.client;
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    if (!this.owner.challenged) return undefined;
    const record = await this.owner.currentTokens(this.who, this.principal);
    if (record === undefined) return undefined;
    const { refresh_token: _kept, ...tokens } = record.tokens;
    return tokens;
  }

  saveTokens(): void {
    // Tokens are only ever obtained by a sign-in or a refresh, which store them themselves.
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const signedIn = (await this.owner.read(this.who)) !== undefined;
    throw this.owner.signInRequired(this.who, authorizationUrl.searchParams.get('scope'), signedIn);
  }

  saveCodeVerifier(): void {
    // No browser round trip starts here: nothing to keep.
  }

  codeVerifier(): string {
    throw this.owner.signInRequired(this.who, null, false);
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.owner.discoveryState;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.owner.discoveryState = state;
  }
}
