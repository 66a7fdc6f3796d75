import type { AuthorizationServerMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Logger } from '../../core/logger.js';
import type { Principal } from '../../core/principal.js';
import { describeError } from '../../lib/describeError.js';
import { field, sdkAuth, sdkAuthErrors } from './discovery.js';
import type { Fetch } from './guardedFetch.js';
import { accounts, scopesOf, subjectOf, type TokenRecord } from './records.js';
import type { TokenCache } from './tokenCache.js';

export interface TokenRefreshDeps {
  readonly server: string;
  readonly url: string;
  readonly cache: TokenCache;
  readonly log: Logger;
  readonly fetchFn: Fetch;
  readonly now: () => number;
  readonly metadataOf: (authorizationServer: string) => Promise<AuthorizationServerMetadata | undefined>;
  /** Audits a refresh that failed (never a token). */
  readonly failed?: (error: string, signedOut: boolean, principal: Principal | undefined) => void;
}

/**
 * Renews one server's tokens with the refresh token, once however many ask at the same time
 * (the SDK refreshes on every 401 it sees, so concurrent calls would each spend the same
 * rotating refresh token).
 */
export class TokenRefresh {
  /** One refresh at a time per principal: concurrent callers share the one under way. */
  private readonly refreshing = new Map<string, Promise<TokenRecord | undefined>>();

  constructor(private readonly deps: TokenRefreshDeps) {}

  /**
   * Renews `who`'s tokens. With `rejected` (a token the server refused, or one about to expire),
   * a record whose token already differs is returned as it is: someone renewed it meanwhile, in
   * this process or another. Resolves undefined when only a sign-in can help; a refresh token the authorization
   * server refuses is forgotten, and that is audited.
   */
  refresh(
    who: string,
    principal: Principal | undefined,
    rejected?: string,
  ): Promise<TokenRecord | undefined> {
    const under = this.refreshing.get(who);
    if (under !== undefined) return under;
    // One refresh at a time across processes too: the store is read again under the lock, and a
    // token another process renewed meanwhile is taken rather than renewed twice.
    const account = accounts.tokens(who, this.deps.url);
    const renewing = this.deps.cache
      .exclusive(account, () => this.renew(who, principal, rejected))
      .finally(() => this.refreshing.delete(who));
    this.refreshing.set(who, renewing);
    return renewing;
  }

  private async renew(
    who: string,
    principal: Principal | undefined,
    rejected: string | undefined,
  ): Promise<TokenRecord | undefined> {
    const { cache, server } = this.deps;
    const account = accounts.tokens(who, this.deps.url);
    // Read again (under the lock): another process sharing the store may have renewed, and
    // rotated, the tokens already.
    const record = await cache.fresh(account);
    if (record === undefined) return undefined;
    if (rejected !== undefined && record.tokens.access_token !== rejected && !this.expiring(record))
      return record;
    const refreshToken = record.tokens.refresh_token;
    if (refreshToken === undefined) return undefined;
    try {
      const metadata = await this.deps.metadataOf(record.authorizationServer);
      const { refreshAuthorization } = await sdkAuth();
      const fresh = await refreshAuthorization(record.authorizationServer, {
        ...(metadata && { metadata }),
        clientInformation: record.client,
        refreshToken,
        ...(record.resource !== undefined && { resource: new URL(record.resource) }),
        fetchFn: this.deps.fetchFn,
      });
      // Rotation: a new refresh token replaces the old one, which the server no longer takes.
      const next = recordOf(
        record,
        { ...fresh, refresh_token: fresh.refresh_token ?? refreshToken },
        this.deps.now,
      );
      await cache.write(account, next);
      this.deps.log.debug(`${server}: access token renewed`);
      return next;
    } catch (error) {
      const { InvalidGrantError, InvalidClientError, UnauthorizedClientError } = await sdkAuthErrors();
      const refused =
        error instanceof InvalidGrantError ||
        error instanceof InvalidClientError ||
        error instanceof UnauthorizedClientError;
      const message = describeError(error);
      if (refused) await cache.delete(account);
      this.deps.log.warn(
        `${server}: renewing the access token failed: ${message}` +
          (refused ? `; signed out, sign in again with "mcp-warden auth login ${server}"` : ''),
      );
      this.deps.failed?.(message, refused, principal);
      return undefined;
    }
  }

  /** Whether a record's access token is past its expiry (then it is renewed whoever holds it). */
  private expiring(record: TokenRecord): boolean {
    return record.expiresAt !== undefined && record.expiresAt <= this.deps.now();
  }
}

/** The next record after a token answer: the rest (server, client, resource) carried over. */
export function recordOf(
  base: Omit<TokenRecord, 'tokens' | 'scopes' | 'expiresAt' | 'subject' | 'wantedScope'> &
    Pick<Partial<TokenRecord>, 'wantedScope'>,
  tokens: OAuthTokens,
  now: () => number,
): TokenRecord {
  const subject = subjectOf(tokens) ?? (base as Partial<TokenRecord>).subject;
  return {
    server: base.server,
    url: base.url,
    authorizationServer: base.authorizationServer,
    ...(base.resource !== undefined && { resource: base.resource }),
    client: base.client,
    tokens,
    obtainedAt: now(),
    ...(tokens.expires_in !== undefined && { expiresAt: now() + tokens.expires_in * 1000 }),
    ...(subject !== undefined && { subject }),
    scopes: scopesOf(tokens, (base as Partial<TokenRecord>).scopes?.join(' ')),
    ...(base.wantedScope !== undefined && { wantedScope: base.wantedScope }),
  };
}

/** RFC 7009: the refresh token (which ends the grant on most servers), then the access token. */
export async function revokeTokens(
  record: TokenRecord,
  metadata: AuthorizationServerMetadata | undefined,
  fetchFn: Fetch,
): Promise<boolean> {
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
    const response = await fetchFn(endpoint, { method: 'POST', headers, body });
    await response.body?.cancel();
    ok &&= response.ok;
  }
  return ok;
}
