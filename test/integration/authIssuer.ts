/**
 * What the HTTP auth scenarios share, on the binary and in-process alike: a real OAuth issuer
 * (oauth2-mock-server, signing with a key it publishes at its JWKS endpoint), a config whose
 * `auth` section trusts it, and a policy that decides by a principal's claims.
 */
import path from 'node:path';
import { OAuth2Server } from 'oauth2-mock-server';
import { FAST_GATEWAY, fixture, tempDir, writeConfig } from './harness.js';

/** The resource the gateway's tokens are for. */
export const AUDIENCE = 'https://warden.test/mcp';

/** A policy that denies `echo` to a principal in the `contractors` group. */
export const PRINCIPAL_POLICY = [
  'default: allow',
  'rules:',
  '  - id: contractors-no-echo',
  '    match: { tool: echo, principal: { claims: { groups: contractors } } }',
  '    action: deny',
  '    reason: Contractors may not echo.',
  '',
].join('\n');

/** Starts an issuer on a free local port with one RS256 key published. */
export async function startIssuer(): Promise<{ readonly server: OAuth2Server; readonly url: string }> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  await server.start(0, '127.0.0.1');
  return { server, url: server.issuer.url! };
}

/**
 * A config in a folder of its own: the fixture upstream recording what reaches it, an audit
 * trail, and `auth` trusting `issuerUrl` (with `auth` and `extra` laid over the defaults).
 */
export function authConfig(
  issuerUrl: string,
  auth: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
) {
  const dir = tempDir();
  const auditFile = path.join(dir, 'audit.jsonl');
  const record = path.join(dir, 'upstream.jsonl');
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: auditFile },
      auth: {
        issuer: issuerUrl,
        audience: AUDIENCE,
        requiredScopes: ['mcp'],
        claims: ['email', 'groups'],
        ...auth,
      },
      servers: { up: fixture(['--record', record]) },
      ...extra,
    },
    dir,
  );
  return { config, auditFile, record, dir };
}
