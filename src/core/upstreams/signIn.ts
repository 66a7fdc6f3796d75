import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { SignInRequiredError } from '../errors.js';
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

/** The name of the one tool a server that needs sign-in lists in place of its own (namespaced as usual). */
export const AUTHORIZE_TOOL = 'authorize';

/**
 * Whether a connection failed because its server needs the user to sign in first: the error
 * itself, or any error it was wrapped in on the way up (a transport's failed send, the peer's
 * failed request).
 */
export function needsSignIn(error: unknown): error is Error {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++)
    if (e instanceof SignInRequiredError) return true;
  return false;
}

/** The tool listed in place of a server's own while it waits for a sign-in. */
export function authorizeTool(server: string, signIn: UpstreamSignIn): Tool {
  return {
    name: AUTHORIZE_TOOL,
    description:
      `Sign in to ${signIn.describe()}. Server "${server}" needs its user to sign in before its ` +
      'tools can be used; calling this asks the user to open the sign-in page, and once they ' +
      "have signed in, the server's own tools are listed in place of this one.",
    inputSchema: { type: 'object', properties: {} },
    annotations: { title: `Sign in to ${server}`, readOnlyHint: false, openWorldHint: true },
  };
}
