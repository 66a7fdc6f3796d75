/** The registration endpoint (RFC 7591): a public client, its redirect URIs checked. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../replies.js';
import { redirectProblem, sealClient } from './clients.js';
import { describeClient, MAX_BODY, OAuthError, type Door } from './signIn.js';

/** The most redirect URIs a host registers. */
const MAX_REDIRECTS = 8;

const GRANTED = new Set(['authorization_code', 'refresh_token']);

export async function register(door: Door, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'POST')
    throw new OAuthError('invalid_request', 'register with a POST of JSON client metadata', 405);
  const body = await readRegistration(door, req);
  const uris = body['redirect_uris'];
  if (!Array.isArray(uris) || uris.length === 0 || !uris.every((u) => typeof u === 'string'))
    throw new OAuthError('invalid_redirect_uri', 'redirect_uris must be a list of one or more URLs');
  if (uris.length > MAX_REDIRECTS)
    throw new OAuthError(
      'invalid_redirect_uri',
      `at most ${MAX_REDIRECTS} redirect_uris, got ${uris.length}`,
    );
  for (const uri of uris as string[]) {
    const problem = redirectProblem(uri);
    if (problem !== undefined) throw new OAuthError('invalid_redirect_uri', problem);
  }
  const grants = body['grant_types'];
  if (Array.isArray(grants) && grants.some((g) => !GRANTED.has(g as string)))
    throw new OAuthError(
      'invalid_client_metadata',
      `this gateway grants authorization_code and refresh_token only, not ${grants.filter((g) => !GRANTED.has(g as string)).join(', ')}`,
    );
  const name = typeof body['client_name'] === 'string' ? body['client_name'].slice(0, 100) : undefined;
  const client = sealClient(door.key, uris as string[], name);
  door.logger.info(
    `host registered as ${describeClient(client)} (redirects to ${client.redirectUris.join(', ')})`,
  );
  sendJson(res, 201, {
    client_id: client.id,
    client_id_issued_at: Math.floor(Date.now() / 1000),
    redirect_uris: client.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...(name !== undefined && { client_name: name }),
  });
}

/** The registration's JSON object, bounded. */
async function readRegistration(door: Door, req: IncomingMessage): Promise<Record<string, unknown>> {
  const text = await door.readBody(req, MAX_BODY);
  if (text === undefined)
    throw new OAuthError('invalid_client_metadata', `the registration is over ${MAX_BODY} bytes`);
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new Error('not an object');
    return parsed as Record<string, unknown>;
  } catch {
    throw new OAuthError('invalid_client_metadata', 'the registration is not a JSON object');
  }
}
