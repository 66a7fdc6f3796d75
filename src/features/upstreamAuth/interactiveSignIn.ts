import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { HttpServerConfig } from '../../config/types.js';
import type { SignInFlow } from '../../core/upstreams/signIn.js';
import { field, sameIssuer, sdkAuth, type Discovery } from './discovery.js';
import { AuthorizationServerError, type Fetch } from './guardedFetch.js';
import { listenForRedirect, loopbackPort } from './loopback.js';
import {
  accounts,
  readJson,
  writeJson,
  type PendingRecord,
  type SecretStore,
  type TokenRecord,
} from './records.js';
import { recordOf } from './refresh.js';

export interface InteractiveSignInDeps {
  readonly config: HttpServerConfig;
  readonly store: () => Promise<SecretStore>;
  readonly discovery: Discovery;
  readonly fetchFn: Fetch;
  readonly now: () => number;
  /** How long a sign-in waits for the browser to come back. */
  readonly timeoutMs: number;
  /** The scope to ask for beyond the configured or challenged one (a step-up), if any. */
  readonly wantedScope: (who: string) => Promise<string | undefined>;
  /** The sign-in is done: its record is to be kept (and audited). */
  readonly signedIn: (who: string, record: TokenRecord) => Promise<void>;
}

/**
 * One browser round trip to sign a principal in to one server: discovery, the client identity
 * in the spec's order, the SDK's authorization code grant with PKCE and `resource` on a loopback
 * redirect, and our own checks of the answer (`state`, and `iss` per RFC 9207).
 */
export async function signInWithBrowser(deps: InteractiveSignInDeps, who: string): Promise<SignInFlow> {
  const { config } = deps;
  const store = await deps.store();
  const challenge = await deps.discovery.challenge();
  const discovered = await deps.discovery.discover(challenge.resourceMetadataUrl);
  const asUrl = discovered.authorizationServerUrl;
  const registered = await readJson<OAuthClientInformationMixed & { redirect_uris?: string[] }>(
    store,
    accounts.client(asUrl),
  );
  const preferredPort = loopbackPort(registered?.redirect_uris?.[0]);
  const loopback = await listenForRedirect({
    timeoutMs: deps.timeoutMs,
    ...(preferredPort !== undefined && { preferredPort }),
    page: (query) =>
      query.has('error')
        ? `Signing in to ${config.name} failed: ${query.get('error')}. You can close this window.\n`
        : `Signed in to ${config.name}: you can close this window and go back to mcp-warden.\n`,
  });
  try {
    const pending = new SignInProvider(deps, store, asUrl, loopback.redirectUrl);
    // A step-up widens what the config asks for; it never narrows it.
    const wanted = await deps.wantedScope(who);
    const scope = joinScopes(config.oauth?.scopes, wanted) ?? challenge.scope;
    const options = {
      serverUrl: config.url,
      ...(scope && { scope }),
      ...(challenge.resourceMetadataUrl && { resourceMetadataUrl: challenge.resourceMetadataUrl }),
      fetchFn: deps.fetchFn,
    };
    const { auth } = await sdkAuth();
    const started = await auth(pending, options);
    const url = pending.authorizationUrl;
    if (started !== 'REDIRECT' || url === undefined)
      throw new Error(`${config.name}: the authorization server gave no authorization URL`);
    const record: PendingRecord = {
      codeVerifier: pending.codeVerifier(),
      state: pending.stateValue,
      redirectUrl: loopback.redirectUrl,
    };
    await writeJson(store, accounts.pending(who, config.url), record);
    const completed = loopback.answer
      .then(async (query) => {
        const code = checkAnswer(
          config.name,
          query,
          pending.stateValue,
          discovered.authorizationServerMetadata,
        );
        await auth(pending, { ...options, authorizationCode: code });
        const signedIn = tokenRecordOf(deps, pending, discovered, url);
        await deps.signedIn(who, signedIn);
        return {
          ...(signedIn.subject !== undefined && { subject: signedIn.subject }),
          scopes: signedIn.scopes,
          ...(signedIn.expiresAt !== undefined && { expiresAt: signedIn.expiresAt }),
        };
      })
      .finally(async () => {
        loopback.close();
        await store.delete(accounts.pending(who, config.url)).catch(() => false);
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
function checkAnswer(
  server: string,
  query: URLSearchParams,
  state: string,
  metadata: AuthorizationServerMetadata | undefined,
): string {
  const refused = (why: string) => new AuthorizationServerError(`${server}: sign-in refused: ${why}`);
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

/** The record of a completed sign-in; the scopes asked for when the answer names none. */
function tokenRecordOf(
  deps: InteractiveSignInDeps,
  pending: SignInProvider,
  discovered: OAuthDiscoveryState,
  url: URL,
): TokenRecord {
  const tokens = pending.tokensReceived;
  const client = pending.client;
  if (tokens === undefined || client === undefined)
    throw new Error(`${deps.config.name}: the authorization server gave no tokens`);
  const resource = url.searchParams.get('resource');
  return recordOf(
    {
      server: deps.config.name,
      url: deps.config.url,
      authorizationServer: discovered.authorizationServerUrl,
      ...(resource !== null && { resource }),
      client,
    },
    { ...tokens, scope: tokens.scope ?? url.searchParams.get('scope') ?? undefined },
    deps.now,
  );
}

/** The client identity in the spec's order, before registration (which `auth()` does). */
async function clientFor(
  config: HttpServerConfig,
  store: SecretStore,
  asUrl: string,
  redirectUrl: string,
): Promise<OAuthClientInformationMixed | undefined> {
  const { oauth } = config;
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

/** The provider of one interactive sign-in: the SDK's `auth()` drives it twice (start, finish). */
class SignInProvider implements OAuthClientProvider {
  readonly stateValue = randomBytes(24).toString('base64url');
  authorizationUrl: URL | undefined;
  tokensReceived: OAuthTokens | undefined;
  client: OAuthClientInformationMixed | undefined;
  private verifier: string | undefined;

  constructor(
    private readonly deps: InteractiveSignInDeps,
    private readonly store: SecretStore,
    private readonly asUrl: string,
    readonly redirectUrl: string,
  ) {}

  get clientMetadataUrl(): string | undefined {
    return this.deps.config.oauth?.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return clientMetadata(this.redirectUrl);
  }

  state(): string {
    return this.stateValue;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    this.client ??= await clientFor(this.deps.config, this.store, this.asUrl, this.redirectUrl);
    return this.client;
  }

  async saveClientInformation(information: OAuthClientInformationMixed): Promise<void> {
    this.client = information;
    // A pre-registered client lives in the config; only registered ones are remembered.
    if (this.deps.config.oauth?.clientId === undefined)
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
    if ((scope === 'all' || scope === 'client') && this.deps.config.oauth?.clientId === undefined) {
      this.client = undefined;
      await this.store.delete(accounts.client(this.asUrl));
    }
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.deps.discovery.state;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.deps.discovery.state = state;
  }
}

/** The scopes of `configured` and of `wanted` (space-separated), each once; undefined for none. */
function joinScopes(
  configured: readonly string[] | undefined,
  wanted: string | undefined,
): string | undefined {
  const all = [...(configured ?? []), ...(wanted?.split(' ') ?? [])].filter((s) => s !== '');
  return all.length === 0 ? undefined : [...new Set(all)].join(' ');
}

/** What the gateway registers as (Dynamic Client Registration): a public client on loopback. */
export function clientMetadata(redirectUrl: string): OAuthClientMetadata {
  return {
    client_name: 'mcp-warden',
    redirect_uris: [redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}
