/** The revocation endpoint (RFC 7009): a refresh token is forgotten (access tokens expire on their own, soon). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { digest, OAuthError, readForm, type Door } from './signIn.js';

export async function revoke(door: Door, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'POST')
    throw new OAuthError('invalid_request', 'the revocation endpoint takes a POST', 405);
  const form = await readForm(door, req);
  await door.state.refreshTokens.delete(digest(form.get('token') ?? ''));
  res.writeHead(200, { 'Cache-Control': 'no-store' }).end();
}
