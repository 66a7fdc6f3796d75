import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { HttpServerConfig } from '../../config/types.js';
import { SignInRequiredError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { Principal } from '../../core/principal.js';
import type { HttpAuthorization } from '../../core/transports/httpTransport.js';
import type { SignedIn, SignInFlow, UpstreamSignIn } from '../../core/upstreams/signIn.js';
import { describeError } from '../../lib/describeError.js';
import { AuthorizationServerError, guardedFetch, type Fetch } from './guardedFetch.js';
import { listenForRedirect, loopbackPort } from './loopback.js';
import {
  accounts,
  principalAccount,
  readJson,
  scopesOf,
  subjectOf,
  writeJson,
  type PendingRecord,
  type SecretStore,
  type TokenRecord,
} from './records.js';

/** The audit records a sign-in writes (see core/events.ts); never a token. */
export type UpstreamAuthEvent =
  | { type: 'upstream_sign_in'; server: string; scopes: string[]; subject?: string }
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
 * tokens one refresh at a time (the SDK refreshes on every 401 it sees, so concurrent calls
 * would each spend the same rotating refresh token), and never starting a browser sign-in from
 * inside a connection: there the provider fails the request with `SignInRequiredError`.
 */
export class ServerOAuth implements UpstreamSignIn {
  readonly server: string;
  private readonly fetchFn: Fetch;
  private readonly now: () => number;
  /** One refresh at a time per principal: concurrent callers share the one under way. */
  private readonly refreshing = new Map<string, Promise<TokenRecord | undefined>>();
  /** One browser round trip at a time per principal. */
  private readonly flows = new Map<string, Promise<SignInFlow>>();
  /** Scopes a server asked for beyond a sign-in's (403 insufficient_scope), per principal. */
  private readonly wantedScope = new Map<string, string>();
  private discovered: OAuthDiscoveryState | undefined;
  /**
   * Whether the server has asked for a token (answered 401) in this process. Until it has, no
   * token is sent and the credential store is not opened: most HTTP servers never ask.
   */
  challenged = false;
  private readonly metadata = new Map<string, Promise<AuthorizationServerMetadata | undefined>>();

  constructor(
    readonly config: HttpServerConfig,
    private readonly deps: ServerOAuthDeps,
  ) {
    this.server = config.name;
    this.fetchFn = guardedFetch(deps.fetch);
    this.now = deps.now ?? Date.now;
  }

  describe(): string {
    const issuer = this.discovered?.authorizationServerMetadata?.issuer;
    return `server "${this.server}" (${this.config.url})${issuer ? ` through ${issuer}` : ''}`;
  }

  /** What the transport of a connection made for `principal` signs its requests with. */
  authorizationFor(principal: Principal | undefined): HttpAuthorization {
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
    const record = await this.read(who);
    if (record === undefined) return { signedIn: false, revoked: false };
    let revoked = false;
    try {
      revoked = await this.revoke(record);
    } catch (error) {
      this.deps.log.warn(`${this.server}: could not revoke the tokens: ${describeError(error)}`);
    }
    const store = await this.deps.store();
    await store.delete(accounts.tokens(who, this.config.url));
    this.deps.record?.({ type: 'upstream_sign_out', server: this.server, revoked }, principal);
    return { signedIn: true, revoked };
  }

  /** The stored sign-in of `who`, renewed first when its access token is about to expire. */
  async currentTokens(who: string, principal: Principal | undefined): Promise<TokenRecord | undefined> {
    const record = await this.read(who);
    if (record === undefined) return undefined;
    if (record.expiresAt === undefined) return record;
    // Renewed a minute ahead, or halfway through a lifetime shorter than two minutes.
    const lifetime = record.expiresAt - (record.obtainedAt ?? record.expiresAt);
    const ahead = Math.min(this.deps.refreshAheadMs ?? 60_000, lifetime / 2);
    if (record.expiresAt - this.now() > ahead) return record;
    return this.refresh(who, principal);
  }

  /** The error a connection fails with when only a new sign-in can help. */
  signInRequired(who: string, scope: string | null, signedIn: boolean): SignInRequiredError {
    const how = `run "mcp-warden auth login ${this.server}" or call its authorize tool`;
    if (scope !== null && signedIn) {
      this.wantedScope.set(who, scope);
      return new SignInRequiredError(
        this.server,
        `the server asks for more access (scope "${scope}") than the sign-in granted: sign in again (${how})`,
      );
    }
    return new SignInRequiredError(this.server, `not signed in: ${how}`);
  }

  get discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovered;
  }

  set discoveryState(state: OAuthDiscoveryState | undefined) {
    this.discovered = state;
  }

  async read(who: string): Promise<TokenRecord | undefined> {
    const store = await this.deps.store();
    return readJson<TokenRecord>(store, accounts.tokens(who, this.config.url));
  }

  /**
   * Renews `who`'s tokens with the refresh token, once however many ask at the same time. With
   * `rejected` (a token the server refused), a record whose token already differs is returned
   * as it is: someone renewed it meanwhile. Resolves undefined when only a sign-in can help; a
   * refresh token the authorization server refuses is forgotten, and that is audited.
   */
  refresh(
    who: string,
    principal: Principal | undefined,
    rejected?: string,
  ): Promise<TokenRecord | undefined> {
    const under = this.refreshing.get(who);
    if (under !== undefined) return under;
    const renewing = this.renew(who, principal, rejected).finally(() => this.refreshing.delete(who));
    this.refreshing.set(who, renewing);
    return renewing;
  }

  private async renew(
    who: string,
    principal: Principal | undefined,
    rejected: string | undefined,
  ): Promise<TokenRecord | undefined> {
    const record = await this.read(who);
    if (record === undefined) return undefined;
    if (rejected !== undefined && record.tokens.access_token !== rejected) return record;
    const refreshToken = record.tokens.refresh_token;
    if (refreshToken === undefined) return undefined;
    const store = await this.deps.store();
    try {
      const metadata = await this.metadataOf(record.authorizationServer);
      const { refreshAuthorization } = await sdkAuth();
      const fresh = await refreshAuthorization(record.authorizationServer, {
        ...(metadata && { metadata }),
        clientInformation: record.client,
        refreshToken,
        ...(record.resource !== undefined && { resource: new URL(record.resource) }),
        fetchFn: this.fetchFn,
      });
      // Rotation: a new refresh token replaces the old one, which the server no longer takes.
      const next = this.recordOf(record, {
        ...fresh,
        refresh_token: fresh.refresh_token ?? refreshToken,
      });
      await writeJson(store, accounts.tokens(who, this.config.url), next);
      this.deps.log.debug(`${this.server}: access token renewed`);
      return next;
    } catch (error) {
      const { InvalidGrantError, InvalidClientError, UnauthorizedClientError } = await sdkAuthErrors();
      const refused =
        error instanceof InvalidGrantError ||
        error instanceof InvalidClientError ||
        error instanceof UnauthorizedClientError;
      const message = describeError(error);
      if (refused) await store.delete(accounts.tokens(who, this.config.url));
      this.deps.log.warn(
        `${this.server}: renewing the access token failed: ${message}` +
          (refused ? `; signed out, sign in again with "mcp-warden auth login ${this.server}"` : ''),
      );
      this.deps.record?.(
        { type: 'upstream_refresh_failed', server: this.server, error: message, signedOut: refused },
        principal,
      );
      return undefined;
    }
  }

  /** The next record after a token answer: the rest (server, client, resource) carried over. */
  private recordOf(
    base: Omit<TokenRecord, 'tokens' | 'scopes' | 'expiresAt' | 'subject'>,
    tokens: OAuthTokens,
  ): TokenRecord {
    const subject = subjectOf(tokens) ?? (base as Partial<TokenRecord>).subject;
    return {
      server: base.server,
      url: base.url,
      authorizationServer: base.authorizationServer,
      ...(base.resource !== undefined && { resource: base.resource }),
      client: base.client,
      tokens,
      obtainedAt: this.now(),
      ...(tokens.expires_in !== undefined && { expiresAt: this.now() + tokens.expires_in * 1000 }),
      ...(subject !== undefined && { subject }),
      scopes: scopesOf(tokens, (base as Partial<TokenRecord>).scopes?.join(' ')),
    };
  }

  private metadataOf(authorizationServer: string): Promise<AuthorizationServerMetadata | undefined> {
    const known = this.discovered;
    if (known !== undefined && known.authorizationServerUrl === authorizationServer)
      return Promise.resolve(known.authorizationServerMetadata);
    let metadata = this.metadata.get(authorizationServer);
    if (metadata === undefined) {
      const fetchFn = this.fetchFn;
      metadata = sdkAuth().then(({ discoverAuthorizationServerMetadata }) =>
        discoverAuthorizationServerMetadata(authorizationServer, { fetchFn }),
      );
      metadata.catch(() => this.metadata.delete(authorizationServer));
      this.metadata.set(authorizationServer, metadata);
    }
    return metadata;
  }

  /**
   * Asks the server without a token, to read its challenge (RFC 9728 §5.1): where its protected
   * resource metadata is and which scope it wants.
   */
  private async challenge(): Promise<{ resourceMetadataUrl?: URL; scope?: string }> {
    const response = await fetch(this.config.url, {
      method: 'POST',
      headers: {
        ...this.config.headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
      redirect: 'manual',
      signal: AbortSignal.timeout(30_000),
    }).catch((error: unknown) => {
      throw new Error(`cannot reach ${this.config.url}: ${describeError(error)}`);
    });
    await response.body?.cancel();
    if (response.status !== 401) return {};
    const { extractWWWAuthenticateParams } = await sdkAuth();
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
    return { ...(resourceMetadataUrl && { resourceMetadataUrl }), ...(scope && { scope }) };
  }

  /** Discovery through the SDK, with the issuer check RFC 8414 §3.3 asks of a client. */
  private async discover(resourceMetadataUrl: URL | undefined): Promise<OAuthDiscoveryState> {
    const { discoverOAuthServerInfo } = await sdkAuth();
    const info = await discoverOAuthServerInfo(this.config.url, {
      ...(resourceMetadataUrl && { resourceMetadataUrl }),
      fetchFn: this.fetchFn,
    });
    const asUrl = String(info.authorizationServerUrl);
    const metadata = info.authorizationServerMetadata;
    if (metadata === undefined)
      throw new AuthorizationServerError(
        `${this.server}: no authorization server metadata found for ${asUrl} (RFC 8414 or OpenID discovery)`,
      );
    if (!sameIssuer(metadata.issuer, asUrl))
      throw new AuthorizationServerError(
        `${this.server}: the authorization server metadata fetched for ${asUrl} names another issuer ` +
          `(${metadata.issuer}); refused`,
      );
    const state: OAuthDiscoveryState = {
      ...info,
      authorizationServerUrl: asUrl,
      ...(resourceMetadataUrl && { resourceMetadataUrl: resourceMetadataUrl.href }),
    };
    this.discovered = state;
    return state;
  }

  private async startFlow(who: string, principal: Principal | undefined): Promise<SignInFlow> {
    const store = await this.deps.store();
    const challenge = await this.challenge();
    const discovered = await this.discover(challenge.resourceMetadataUrl);
    const asUrl = discovered.authorizationServerUrl;
    const registered = await readJson<OAuthClientInformationMixed & { redirect_uris?: string[] }>(
      store,
      accounts.client(asUrl),
    );
    const loopback = await listenForRedirect({
      timeoutMs: this.deps.signInTimeoutMs ?? 5 * 60_000,
      ...(loopbackPort(registered?.redirect_uris?.[0]) !== undefined && {
        preferredPort: loopbackPort(registered?.redirect_uris?.[0])!,
      }),
      page: (query) =>
        query.has('error')
          ? `Signing in to ${this.server} failed: ${query.get('error')}. You can close this window.\n`
          : `Signed in to ${this.server}: you can close this window and go back to mcp-warden.\n`,
    });
    try {
      const pending = new SignInProvider(this, store, asUrl, loopback.redirectUrl);
      const scope = this.config.oauth?.scopes?.join(' ') ?? this.wantedScope.get(who) ?? challenge.scope;
      const options = {
        serverUrl: this.config.url,
        ...(scope && { scope }),
        ...(challenge.resourceMetadataUrl && { resourceMetadataUrl: challenge.resourceMetadataUrl }),
        fetchFn: this.fetchFn,
      };
      const { auth } = await sdkAuth();
      const started = await auth(pending, options);
      const url = pending.authorizationUrl;
      if (started !== 'REDIRECT' || url === undefined)
        throw new Error(`${this.server}: the authorization server gave no authorization URL`);
      const record: PendingRecord = {
        codeVerifier: pending.codeVerifier(),
        state: pending.stateValue,
        redirectUrl: loopback.redirectUrl,
      };
      await writeJson(store, accounts.pending(who, this.config.url), record);
      const completed = loopback.answer
        .then(async (query) => {
          const code = this.checkAnswer(query, pending.stateValue, discovered.authorizationServerMetadata);
          await auth(pending, { ...options, authorizationCode: code });
          return this.signedIn(who, principal, pending, discovered, url);
        })
        .finally(async () => {
          loopback.close();
          await store.delete(accounts.pending(who, this.config.url)).catch(() => false);
        });
      return { url: url.href, completed, cancel: (reason) => loopback.close(reason) };
    } catch (error) {
      loopback.close();
      throw error;
    }
  }

  /**
   * The authorization server's answer on the redirect, checked: its error if it sent one, the
   * `state` this sign-in sent (else the answer belongs to another sign-in, or a forged link),
   * and `iss` (RFC 9207) when the server sends it or says it does. Returns the code.
   */
  private checkAnswer(
    query: URLSearchParams,
    state: string,
    metadata: AuthorizationServerMetadata | undefined,
  ): string {
    const refused = (why: string) => new AuthorizationServerError(`${this.server}: sign-in refused: ${why}`);
    if (query.get('state') !== state)
      throw refused(
        'the answer does not carry the state this sign-in sent (another sign-in, or a forged link)',
      );
    const iss = query.get('iss');
    const issuer = metadata?.issuer;
    if (iss !== null && issuer !== undefined && !sameIssuer(iss, issuer))
      throw refused(`the answer comes from issuer ${iss}, not ${issuer} (a mix-up: RFC 9207)`);
    if (iss === null && field(metadata, 'authorization_response_iss_parameter_supported') === true)
      throw refused(`the answer carries no iss although ${issuer} says it sends one (RFC 9207)`);
    const error = query.get('error');
    if (error !== null)
      throw refused(
        `the authorization server answered ${error}` +
          (query.get('error_description') ? `: ${query.get('error_description')}` : ''),
      );
    const code = query.get('code');
    if (code === null || code === '') throw refused('the answer carries no authorization code');
    return code;
  }

  private async signedIn(
    who: string,
    principal: Principal | undefined,
    pending: SignInProvider,
    discovered: OAuthDiscoveryState,
    url: URL,
  ): Promise<SignedIn> {
    const tokens = pending.tokensReceived;
    const client = pending.client;
    if (tokens === undefined || client === undefined)
      throw new Error(`${this.server}: the authorization server gave no tokens`);
    const resource = url.searchParams.get('resource');
    const record = this.recordOf(
      {
        server: this.server,
        url: this.config.url,
        authorizationServer: discovered.authorizationServerUrl,
        ...(resource !== null && { resource }),
        client,
      },
      { ...tokens, scope: tokens.scope ?? url.searchParams.get('scope') ?? undefined },
    );
    const store = await this.deps.store();
    await writeJson(store, accounts.tokens(who, this.config.url), record);
    this.wantedScope.delete(who);
    this.deps.record?.(
      {
        type: 'upstream_sign_in',
        server: this.server,
        scopes: [...record.scopes],
        ...(record.subject !== undefined && { subject: record.subject }),
      },
      principal,
    );
    return {
      ...(record.subject !== undefined && { subject: record.subject }),
      scopes: record.scopes,
      ...(record.expiresAt !== undefined && { expiresAt: record.expiresAt }),
    };
  }

  /** RFC 7009: the refresh token (which ends the grant on most servers), then the access token. */
  private async revoke(record: TokenRecord): Promise<boolean> {
    const metadata = await this.metadataOf(record.authorizationServer);
    const endpoint = field(metadata, 'revocation_endpoint');
    if (typeof endpoint !== 'string') return false;
    const tokens: [string, string][] = [
      ...(record.tokens.refresh_token
        ? [[record.tokens.refresh_token, 'refresh_token'] as [string, string]]
        : []),
      [record.tokens.access_token, 'access_token'],
    ];
    let ok = true;
    for (const [token, hint] of tokens) {
      const body = new URLSearchParams({ token, token_type_hint: hint });
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
      const { client_id: id } = record.client;
      const secret = 'client_secret' in record.client ? record.client.client_secret : undefined;
      if (secret !== undefined)
        headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
      else body.set('client_id', id);
      const response = await this.fetchFn(endpoint, { method: 'POST', headers, body });
      await response.body?.cancel();
      ok &&= response.ok;
    }
    return ok;
  }

  /** The client identity in the spec's order, before registration (which `auth()` does). */
  async clientFor(
    store: SecretStore,
    asUrl: string,
    redirectUrl: string,
  ): Promise<OAuthClientInformationMixed | undefined> {
    const { oauth } = this.config;
    if (oauth?.clientId !== undefined)
      return { client_id: oauth.clientId, ...(oauth.clientSecret && { client_secret: oauth.clientSecret }) };
    const registered = await readJson<OAuthClientInformationMixed & { redirect_uris?: string[] }>(
      store,
      accounts.client(asUrl),
    );
    if (registered === undefined) return undefined;
    // A registration is kept while it names this redirect (the same port); else a new one is made.
    if (registered.client_id === oauth?.clientMetadataUrl || registered.redirect_uris?.includes(redirectUrl))
      return registered;
    return undefined;
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

/** The provider of one interactive sign-in: the SDK's `auth()` drives it twice (start, finish). */
class SignInProvider implements OAuthClientProvider {
  readonly stateValue = randomBytes(24).toString('base64url');
  authorizationUrl: URL | undefined;
  tokensReceived: OAuthTokens | undefined;
  client: OAuthClientInformationMixed | undefined;
  private verifier: string | undefined;

  constructor(
    private readonly owner: ServerOAuth,
    private readonly store: SecretStore,
    private readonly asUrl: string,
    readonly redirectUrl: string,
  ) {}

  get clientMetadataUrl(): string | undefined {
    return this.owner.config.oauth?.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return clientMetadata(this.redirectUrl);
  }

  state(): string {
    return this.stateValue;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    this.client ??= await this.owner.clientFor(this.store, this.asUrl, this.redirectUrl);
    return this.client;
  }

  async saveClientInformation(information: OAuthClientInformationMixed): Promise<void> {
    this.client = information;
    // A pre-registered client lives in the config; only registered ones are remembered.
    if (this.owner.config.oauth?.clientId === undefined)
      await writeJson(this.store, accounts.client(this.asUrl), information);
  }

  tokens(): undefined {
    // A sign-in always goes to the browser: stored tokens are renewed by refresh, not here.
    return undefined;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.tokensReceived = tokens;
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    this.authorizationUrl = authorizationUrl;
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    if (this.verifier === undefined) throw new Error('no sign-in is under way');
    return this.verifier;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    // The authorization server no longer knows the registered client: register again.
    if ((scope === 'all' || scope === 'client') && this.owner.config.oauth?.clientId === undefined) {
      this.client = undefined;
      await this.store.delete(accounts.client(this.asUrl));
    }
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.owner.discoveryState;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.owner.discoveryState = state;
  }
}

/** What the gateway registers as (Dynamic Client Registration): a public client on loopback. */
function clientMetadata(redirectUrl: string): OAuthClientMetadata {
  return {
    client_name: 'mcp-warden',
    redirect_uris: [redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

/** Issuer identifiers compared as URLs, a trailing slash aside (as the SDK compares them). */
function sameIssuer(a: string, b: string): boolean {
  const norm = (s: string) => (URL.canParse(s) ? new URL(s).href : s).replace(/\/$/, '');
  return norm(a) === norm(b);
}

/** A metadata field the SDK's types leave out (its schemas keep every field the server sent). */
function field(metadata: AuthorizationServerMetadata | undefined, key: string): unknown {
  return (metadata as Record<string, unknown> | undefined)?.[key];
}

/**
 * The SDK's OAuth client and its error classes, loaded on first use: they bring the SDK's schema
 * library, which a gateway whose servers never ask for a sign-in should not pay for at start.
 */
function sdkAuth() {
  return import('@modelcontextprotocol/sdk/client/auth.js');
}

function sdkAuthErrors() {
  return import('@modelcontextprotocol/sdk/server/auth/errors.js');
}
