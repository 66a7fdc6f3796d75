/**
 * The token endpoint: a code with its PKCE verifier, or a refresh token (rotated). Each is
 * taken from the sign-in state before anything else is checked, so a code or refresh token
 * buys tokens at most once, on whichever replica it is presented first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SignJWT } from 'jose';
import { tokenPrincipal, type Principal } from '../../core/principal.js';
import {
  describeClient,
  digest,
  OAuthError,
  random,
  readForm,
  s256,
  sendTokens,
  targetProblem,
  type Client,
  type Door,
  type Subject,
} from './signIn.js';

/** The claim naming the identity provider that vouched for the subject of a gateway token. */
export const IDP_ISSUER_CLAIM = 'idp_iss';

export async function token(door: Door, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'POST') throw new OAuthError('invalid_request', 'the token endpoint takes a POST', 405);
  const form = await readForm(door, req);
  const grant = form.get('grant_type');
  if (grant === 'authorization_code') return sendTokens(res, await codeGrant(door, form));
  if (grant === 'refresh_token') return sendTokens(res, await refreshGrant(door, form));
  throw new OAuthError(
    'unsupported_grant_type',
    `grant_type must be authorization_code or refresh_token, got ${JSON.stringify(grant)}`,
  );
}

async function codeGrant(door: Door, form: URLSearchParams): Promise<object> {
  const clientId = form.get('client_id') ?? '';
  const code = await door.state.codes.take(form.get('code') ?? '');
  if (code === undefined)
    throw failure(
      door,
      undefined,
      'invalid_grant',
      'the code is unknown, expired or already used: sign in again',
    );
  const principal = principalOfSubject(door, code.subject, code.client.tag);
  const refuse = (error: string, why: string) => failure(door, code.client, error, why, principal);
  if (code.client.id !== clientId)
    throw refuse(
      'invalid_grant',
      `the code was issued to another client than ${clientId || 'the one named'}`,
    );
  if (form.get('redirect_uri') !== null && form.get('redirect_uri') !== code.redirectUri)
    throw refuse('invalid_grant', 'the redirect_uri is not the one the authorization request named');
  const verifier = form.get('code_verifier') ?? '';
  if (verifier === '' || s256(verifier) !== code.challenge)
    throw refuse(
      'invalid_grant',
      'the code_verifier does not match the code_challenge of the authorization request (PKCE)',
    );
  const resourceProblem = targetProblem(door.auth, form.get('resource'));
  if (resourceProblem !== undefined) throw refuse('invalid_target', resourceProblem);
  const answer = await issue(door, code.client, code.subject, Date.now() + door.door.refreshTokenMs);
  door.logger.info(`host ${describeClient(code.client)} signed in as ${principal.subject}`);
  door.record(
    {
      type: 'host_sign_in',
      client: code.client.tag,
      ...(code.client.name !== undefined && { clientName: code.client.name }),
    },
    principal,
  );
  return answer;
}

async function refreshGrant(door: Door, form: URLSearchParams): Promise<object> {
  const stored = await door.state.refreshTokens.take(digest(form.get('refresh_token') ?? ''));
  if (stored === undefined)
    throw new OAuthError(
      'invalid_grant',
      'the refresh token is unknown, expired, revoked or already used: sign in again',
    );
  if (stored.client.id !== (form.get('client_id') ?? ''))
    throw new OAuthError('invalid_grant', 'the refresh token was issued to another client');
  const resourceProblem = targetProblem(door.auth, form.get('resource'));
  if (resourceProblem !== undefined) throw new OAuthError('invalid_target', resourceProblem);
  return issue(door, stored.client, stored.subject, stored.until);
}

function principalOfSubject(door: Door, subject: Subject, clientId: string): Principal {
  return tokenPrincipal(
    { ...subject.claims, sub: subject.sub, iss: subject.idpIssuer, client_id: clientId },
    door.auth.claims,
  );
}

function failure(
  door: Door,
  client: Client | undefined,
  code: string,
  why: string,
  principal?: Principal,
): OAuthError {
  door.failed(client, why, principal);
  return new OAuthError(code, why);
}

/** A signed access token and a new refresh token, good until `until` at the latest. */
async function issue(door: Door, client: Client, subject: Subject, until: number) {
  const { auth, key } = door;
  const scope = auth.requiredScopes.join(' ');
  const now = Date.now();
  const accessToken = await new SignJWT({
    ...subject.claims,
    client_id: client.tag,
    [IDP_ISSUER_CLAIM]: subject.idpIssuer,
    ...(scope !== '' && { scope }),
  })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(door.issuer)
    .setSubject(subject.sub)
    .setAudience(auth.audience)
    .setIssuedAt()
    .setExpirationTime(Math.floor((now + door.door.accessTokenMs) / 1000))
    .setJti(random(16))
    .sign(key.privateKey);
  const refreshToken = random();
  await door.state.refreshTokens.set(digest(refreshToken), { client, subject, until }, until);
  return {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: Math.floor(door.door.accessTokenMs / 1000),
    refresh_token: refreshToken,
    ...(scope !== '' && { scope }),
  };
}
