/** The fetch the OAuth client speaks to authorization servers (and metadata documents) with. */
export type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** An authorization server did something a client must not go along with. */
export class AuthorizationServerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthorizationServerError';
  }
}

/**
 * A fetch that never follows a redirect. A token request carries the authorization code and
 * the PKCE verifier (or a refresh token and the client secret): following a 307 to another
 * host would hand them to it. Discovery, registration, token and revocation endpoints have no
 * reason to redirect, so any redirect is refused with a message naming both places.
 */
export function guardedFetch(base: Fetch = fetch, timeoutMs = 30_000): Fetch {
  return async (url, init) => {
    const signal = init?.signal ?? AbortSignal.timeout(timeoutMs);
    const response = await base(url, { ...init, redirect: 'manual', signal });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel();
      const location = response.headers.get('location') ?? '(no location)';
      throw new AuthorizationServerError(
        `${new URL(String(url)).origin} answered ${new URL(String(url)).pathname} with a redirect to ` +
          `${safeOrigin(location, url)}; refused (an authorization server's endpoints are not followed elsewhere)`,
      );
    }
    return response;
  };
}

function safeOrigin(location: string, base: string | URL): string {
  try {
    return new URL(location, base).origin;
  } catch {
    return 'an invalid address';
  }
}
