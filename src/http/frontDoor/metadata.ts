/** The authorization server's metadata (RFC 8414), also served as OpenID configuration. */
import type { ServerResponse } from 'node:http';
import { sendJson } from '../replies.js';
import type { Door } from './signIn.js';

export function metadata(door: Door, res: ServerResponse): void {
  const { issuer, auth } = door;
  sendJson(res, 200, {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    jwks_uri: `${issuer}/oauth/jwks`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    ...(auth.requiredScopes.length > 0 && { scopes_supported: auth.requiredScopes }),
    authorization_response_iss_parameter_supported: true,
  });
}
