import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { AuthorizationServerMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { HttpServerConfig } from '../../config/types.js';
import { describeError } from '../../lib/describeError.js';
import { AuthorizationServerError, type Fetch } from './guardedFetch.js';

/**
 * Where one HTTP server's sign-in happens: its challenge (RFC 9728 §5.1), its protected resource
 * metadata and its authorization server's metadata (RFC 8414 / OpenID discovery, on any origin),
 * found through the SDK and checked, and kept for the life of the process.
 */
export class Discovery {
  /** What the last discovery found (the SDK's providers read and write it too). */
  state: OAuthDiscoveryState | undefined;
  private readonly metadata = new Map<string, Promise<AuthorizationServerMetadata | undefined>>();

  constructor(
    private readonly config: HttpServerConfig,
    private readonly fetchFn: Fetch,
  ) {}

  /** The metadata of `authorizationServer`, fetched once (a failed fetch is tried again later). */
  metadataOf(authorizationServer: string): Promise<AuthorizationServerMetadata | undefined> {
    const known = this.state;
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
  async challenge(): Promise<{ resourceMetadataUrl?: URL; scope?: string }> {
    const { response } = await this.ping(undefined);
    if (response.status !== 401) return {};
    const { extractWWWAuthenticateParams } = await sdkAuth();
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(response);
    return { ...(resourceMetadataUrl && { resourceMetadataUrl }), ...(scope && { scope }) };
  }

  /**
   * Asks the server with `accessToken` whether it takes it for more than a 401: the scope it asks
   * for when it refuses the token for want of scope (403 `insufficient_scope`, RFC 6750 §3.1; an
   * empty string when it names none), else undefined.
   */
  async missingScope(accessToken: string): Promise<string | undefined> {
    const { response } = await this.ping(accessToken);
    if (response.status !== 403) return undefined;
    const { extractWWWAuthenticateParams } = await sdkAuth();
    const { error, scope } = extractWWWAuthenticateParams(response);
    return error === 'insufficient_scope' ? (scope ?? '') : undefined;
  }

  /** A ping to the server, with `accessToken` when given; the body is not read. */
  private async ping(accessToken: string | undefined): Promise<{ response: Response }> {
    const response = await fetch(this.config.url, {
      method: 'POST',
      headers: {
        ...this.config.headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(accessToken !== undefined && { authorization: `Bearer ${accessToken}` }),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
      redirect: 'manual',
      signal: AbortSignal.timeout(30_000),
    }).catch((error: unknown) => {
      throw new Error(`cannot reach ${this.config.url}: ${describeError(error)}`);
    });
    await response.body?.cancel();
    return { response };
  }

  /** Discovery through the SDK, with the issuer check RFC 8414 §3.3 asks of a client. */
  async discover(resourceMetadataUrl: URL | undefined): Promise<OAuthDiscoveryState> {
    const server = this.config.name;
    const { discoverOAuthServerInfo } = await sdkAuth();
    const info = await discoverOAuthServerInfo(this.config.url, {
      ...(resourceMetadataUrl && { resourceMetadataUrl }),
      fetchFn: this.fetchFn,
    });
    const asUrl = String(info.authorizationServerUrl);
    const metadata = info.authorizationServerMetadata;
    if (metadata === undefined)
      throw new AuthorizationServerError(
        `${server}: no authorization server metadata found for ${asUrl} (RFC 8414 or OpenID discovery)`,
      );
    if (!sameIssuer(metadata.issuer, asUrl))
      throw new AuthorizationServerError(
        `${server}: the authorization server metadata fetched for ${asUrl} names another issuer ` +
          `(${metadata.issuer}); refused`,
      );
    const state: OAuthDiscoveryState = {
      ...info,
      authorizationServerUrl: asUrl,
      ...(resourceMetadataUrl && { resourceMetadataUrl: resourceMetadataUrl.href }),
    };
    this.state = state;
    return state;
  }
}

/** Issuer identifiers compared as URLs, a trailing slash aside (as the SDK compares them). */
export function sameIssuer(a: string, b: string): boolean {
  const norm = (s: string) => (URL.canParse(s) ? new URL(s).href : s).replace(/\/$/, '');
  return norm(a) === norm(b);
}

/** A metadata field the SDK's types leave out (its schemas keep every field the server sent). */
export function field(metadata: AuthorizationServerMetadata | undefined, key: string): unknown {
  return (metadata as Record<string, unknown> | undefined)?.[key];
}

/**
 * The SDK's OAuth client and its error classes, loaded on first use: they bring the SDK's schema
 * library, which a gateway whose servers never ask for a sign-in should not pay for at start.
 */
export function sdkAuth() {
  return import('@modelcontextprotocol/sdk/client/auth.js');
}

export function sdkAuthErrors() {
  return import('@modelcontextprotocol/sdk/server/auth/errors.js');
}
