/** The identity provider sends the browser back here, with its code and the gateway's state. */
import type { ServerResponse } from 'node:http';
import type { JWTPayload } from 'jose';
import { SignInError } from './idp.js';
import { page, random, redirectBack, type Door, type Subject } from './signIn.js';

/** How long a host has to trade its code. */
const CODE_MS = 60_000;

export async function callback(door: Door, res: ServerResponse, url: URL): Promise<void> {
  const q = url.searchParams;
  // Taken, not read: a state answers one callback, on whichever replica it arrives.
  const entry = await door.state.pending.take(q.get('state') ?? '');
  if (entry === undefined) {
    const why =
      'this sign-in is unknown or has expired (its state does not match one this gateway started, or it was already used): start the sign-in again from the host';
    door.failed(undefined, why);
    return page(res, 400, why);
  }
  const { client } = entry;
  const back = (params: Record<string, string>) =>
    redirectBack(res, entry.redirectUri, {
      ...params,
      ...(entry.hostState !== undefined && { state: entry.hostState }),
      iss: door.issuer,
    });
  const idpError = q.get('error');
  if (idpError !== null) {
    const described = q.get('error_description');
    const why = `the identity provider refused the sign-in: ${idpError}${described === null ? '' : `: ${described}`}`;
    door.failed(client, why);
    return back({
      error: idpError === 'access_denied' ? 'access_denied' : 'server_error',
      error_description: why,
    });
  }
  let claims: JWTPayload;
  try {
    claims = await door.idp.redeem({
      code: q.get('code') ?? '',
      verifier: entry.verifier,
      nonce: entry.nonce,
    });
  } catch (error) {
    const why =
      error instanceof SignInError
        ? error.message
        : `the identity provider cannot be reached: ${(error as Error).message}`;
    door.failed(client, why);
    return back({
      error: error instanceof SignInError ? error.code : 'temporarily_unavailable',
      error_description: why,
    });
  }
  const kept: Record<string, unknown> = {};
  for (const name of door.auth.claims) if (claims[name] !== undefined) kept[name] = claims[name];
  const subject: Subject = { sub: claims.sub!, idpIssuer: claims.iss!, claims: kept };
  const code = random();
  await door.state.codes.set(
    code,
    { client, redirectUri: entry.redirectUri, challenge: entry.challenge, subject },
    Date.now() + CODE_MS,
  );
  back({ code });
}
