/** The host's authorization request: checked, then the browser goes on to the identity provider. */
import type { ServerResponse } from 'node:http';
import { openClient, sameRedirect } from './clients.js';
import { SignInError } from './idp.js';
import {
  page,
  random,
  redirectBack,
  s256,
  targetProblem,
  type Client,
  type Door,
  type Pending,
} from './signIn.js';

/** How long the user has to sign in at the identity provider. */
const PENDING_MS = 10 * 60_000;

export async function authorize(door: Door, res: ServerResponse, url: URL): Promise<void> {
  const q = url.searchParams;
  const known = knownClient(door, res, q);
  if (known === undefined) return;
  const { client, redirectUri } = known;
  const hostState = q.get('state') ?? undefined;
  const refuse = (code: string, why: string) => {
    door.failed(client, why);
    redirectBack(res, redirectUri, {
      error: code,
      error_description: why,
      ...(hostState !== undefined && { state: hostState }),
    });
  };
  const problem = requestProblem(door, q);
  if (problem !== undefined) return refuse(problem.code, problem.why);
  const state = random();
  const entry: Pending = {
    client,
    redirectUri,
    challenge: q.get('code_challenge')!,
    ...(hostState !== undefined && { hostState }),
    verifier: random(),
    nonce: random(),
  };
  let location: string;
  try {
    location = await door.idp.authorizationUrl({
      state,
      nonce: entry.nonce,
      challenge: s256(entry.verifier),
    });
  } catch (error) {
    const why =
      error instanceof SignInError
        ? error.message
        : `the identity provider cannot be reached: ${(error as Error).message}`;
    return refuse('temporarily_unavailable', why);
  }
  await door.state.pending.set(state, entry, Date.now() + PENDING_MS);
  door.record({
    type: 'host_sign_in_start',
    client: client.tag,
    ...(client.name !== undefined && { clientName: client.name }),
  });
  res.writeHead(302, { Location: location, 'Cache-Control': 'no-store' }).end();
}

/**
 * The client and the redirect URI it registered, or undefined once the user was shown why not.
 * Until both are known good, errors are shown to the user, never sent on to a redirect URI that
 * may not be the host's (RFC 6749 §4.1.2.1).
 */
function knownClient(
  door: Door,
  res: ServerResponse,
  q: URLSearchParams,
): { client: Client; redirectUri: string } | undefined {
  const clientId = q.get('client_id') ?? '';
  const client = openClient(door.key, clientId);
  if (client === undefined) {
    const why =
      clientId === ''
        ? 'the request names no client_id'
        : 'the client_id was not issued by this gateway (or by one with another signing key): the host should register again';
    door.failed(undefined, why);
    page(res, 400, why);
    return undefined;
  }
  const redirectUri = q.get('redirect_uri') ?? '';
  if (!client.redirectUris.some((registered) => sameRedirect(registered, redirectUri))) {
    const why = `the redirect_uri ${JSON.stringify(redirectUri)} is not registered for this client (registered: ${client.redirectUris.join(', ')})`;
    door.failed(client, why);
    page(res, 400, why);
    return undefined;
  }
  return { client, redirectUri };
}

/** What is wrong with the rest of the request (sent back to the host's redirect), if anything. */
function requestProblem(door: Door, q: URLSearchParams): { code: string; why: string } | undefined {
  if (q.get('response_type') !== 'code')
    return {
      code: 'unsupported_response_type',
      why: `response_type must be code, got ${JSON.stringify(q.get('response_type'))}`,
    };
  const challenge = q.get('code_challenge') ?? '';
  if (challenge === '' || q.get('code_challenge_method') !== 'S256')
    return {
      code: 'invalid_request',
      why: 'PKCE is required: send code_challenge with code_challenge_method=S256',
    };
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge))
    return {
      code: 'invalid_request',
      why: 'the code_challenge is not an S256 challenge (43 base64url characters)',
    };
  const resourceProblem = targetProblem(door.auth, q.get('resource'));
  return resourceProblem === undefined ? undefined : { code: 'invalid_target', why: resourceProblem };
}
