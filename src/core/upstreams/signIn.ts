import type { Principal } from '../principal.js';

/**
 * The seam between an HTTP upstream that needs its user to sign in (OAuth) and the parts of the
 * gateway that ask the user: the CLI's `auth login`, and, while serving, the server's
 * `authorize` tool, which asks the host to open the URL. The OAuth client implements it; core
 * only knows that a connection may need a sign-in first and how to start one.
 */
export interface UpstreamSignIn {
  /** What a sign-in here is for, shown to the user and the model: the server, its issuer, the scopes. */
  describe(): string;
  /**
   * Starts an interactive sign-in for `principal` (the local user when there is no listener), or
   * joins the one already pending for them: one browser round trip at a time per server and principal.
   */
  begin(principal: Principal | undefined): Promise<SignInFlow>;
}

/** One interactive sign-in under way. */
export interface SignInFlow {
  /** The authorization URL the user opens in a browser. */
  readonly url: string;
  /** Settles when the redirect came back and the tokens are stored; rejects with the reason it failed. */
  readonly completed: Promise<SignedIn>;
  /** Gives up waiting (the host declined, or the call was cancelled); `completed` then rejects. */
  cancel(reason: string): void;
}

/** Who is signed in, as far as the authorization server said; never a token. */
export interface SignedIn {
  readonly subject?: string;
  readonly scopes: readonly string[];
  readonly expiresAt?: number;
}
