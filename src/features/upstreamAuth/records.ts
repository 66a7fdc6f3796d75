import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Principal } from '../../core/principal.js';
import type { CredentialStore } from '../../lib/credentials/store.js';

/** Where secrets are kept (see lib/credentials): values are JSON texts of the records below. */
export type SecretStore = Pick<CredentialStore, 'get' | 'set' | 'delete' | 'list' | 'exclusive'>;

/**
 * One principal's sign-in to one server: the tokens, and everything a refresh needs without
 * asking anyone (the authorization server, the resource, the client the tokens were issued to).
 * The client travels with the tokens so that registering a new one later (another redirect
 * port) does not strand a refresh token issued to the old one.
 */
export interface TokenRecord {
  readonly server: string;
  readonly url: string;
  readonly authorizationServer: string;
  readonly resource?: string;
  readonly client: OAuthClientInformationMixed;
  readonly tokens: OAuthTokens;
  /** When the tokens were received, milliseconds since the epoch. */
  readonly obtainedAt?: number;
  /** Milliseconds since the epoch; absent when the server did not say (`expires_in`). */
  readonly expiresAt?: number;
  /** Who the authorization server says signed in, when it said (an ID token's or a JWT's `sub`). */
  readonly subject?: string;
  readonly scopes: readonly string[];
  /**
   * A scope the server asked for beyond these (403 `insufficient_scope`): the next sign-in asks
   * for it at once. Kept across refreshes, gone with a new sign-in.
   */
  readonly wantedScope?: string;
}

/** A sign-in under way: the PKCE verifier and `state` wait here until the redirect comes back. */
export interface PendingRecord {
  readonly codeVerifier: string;
  readonly state: string;
  readonly redirectUrl: string;
}

/** Account names. None starts with a dot or holds a control character (the store's rule). */
export const accounts = {
  tokensPrefix: 'oauth:tokens:',
  tokens: (who: string, url: string) => `oauth:tokens:${who}:${url}`,
  pending: (who: string, url: string) => `oauth:pending:${who}:${url}`,
  /** A registered client (Dynamic Client Registration), remembered per authorization server. */
  client: (authorizationServer: string) => `oauth:client:${authorizationServer}`,
};

/**
 * The principal part of an account name. The local user (no listener, or a stdio host, or the
 * CLI) is one account whatever the process; a listener's principals each have their own.
 */
export function principalAccount(principal: Principal | undefined): string {
  if (principal === undefined || principal.source === 'os') return 'local';
  if (principal.source === 'anonymous') return 'anonymous';
  return `token:${principal.subject}@${principal.issuer ?? ''}`;
}

export async function readJson<T>(store: SecretStore, account: string): Promise<T | undefined> {
  const text = await store.get(account);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    // Not ours to interpret: treated as nothing stored, and overwritten on the next save.
    return undefined;
  }
}

export function writeJson(store: SecretStore, account: string, value: unknown): Promise<void> {
  return store.set(account, JSON.stringify(value));
}

/** The scopes a token answer grants, else those asked for. */
export function scopesOf(tokens: OAuthTokens, asked: string | undefined): string[] {
  const text = tokens.scope ?? asked ?? '';
  return text.split(' ').filter((s) => s !== '');
}

/**
 * Who signed in, for messages only: the `sub` (or `email`, `preferred_username`) of the ID token
 * when the server sent one, else of the access token when it is a JWT. Not verified: it names
 * the account to the user and the audit trail and decides nothing.
 */
export function subjectOf(tokens: OAuthTokens): string | undefined {
  for (const jwt of [tokens.id_token, tokens.access_token]) {
    const payload = jwt?.split('.')[1];
    if (payload === undefined) continue;
    try {
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<
        string,
        unknown
      >;
      for (const key of ['email', 'preferred_username', 'sub'])
        if (typeof claims[key] === 'string') return claims[key];
    } catch {
      // Not a JWT: nothing to read.
    }
  }
  return undefined;
}
