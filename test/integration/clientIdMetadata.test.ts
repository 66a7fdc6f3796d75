/**
 * Client registration in the spec's order, for a server configured with
 * `oauth.clientMetadataUrl`: an authorization server that supports Client ID Metadata Documents
 * gets the document's URL as client_id (and fetches and checks the document), with no
 * registration; one that does not gets a Dynamic Client Registration instead. The authorization
 * server is a fixture following the draft (test/fixtures/cimd-authorization-server.mjs), the
 * protected server signin-http-server.mjs, the sign-in `mcp-warden auth login` with a stand-in
 * browser.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  startCimdAuthorizationServer,
  type CimdAuthorizationServer,
} from '../fixtures/cimd-authorization-server.mjs';
import { startSignInFixture, type SignInFixture } from '../fixtures/signin-http-server.mjs';
import { NODE, ROOT, runCli, tempDir, writeConfig } from './harness.js';

const BROWSER = `${NODE} ${path.join(ROOT, 'test/fixtures/oauth-browser.mjs')}`;

let authorizationServer: CimdAuthorizationServer | undefined;
let resource: SignInFixture | undefined;
afterEach(async () => {
  await resource?.close();
  await authorizationServer?.close();
  resource = authorizationServer = undefined;
});

async function login(cimd: boolean) {
  authorizationServer = await startCimdAuthorizationServer({ cimd });
  resource = await startSignInFixture({ authorizationServer: authorizationServer.issuer });
  const dir = tempDir('warden-cimd-');
  const config = writeConfig(
    {
      servers: {
        remote: { url: `${resource.url}/mcp`, oauth: { clientMetadataUrl: authorizationServer.documentUrl } },
      },
    },
    dir,
  );
  const env = {
    MCP_WARDEN_CREDENTIALS: 'file',
    MCP_WARDEN_CREDENTIALS_FILE: path.join(dir, 'credentials.json'),
    BROWSER,
  };
  return runCli(['auth', 'login', 'remote', '--config', config], env);
}

describe('oauth.clientMetadataUrl', () => {
  it('is the client_id where the authorization server supports metadata documents: no registration', async () => {
    const result = await login(true);
    expect(result.stdout).toContain('Signed in to remote as alice');
    expect(result.code).toBe(0);
    const { seen } = authorizationServer!;
    expect(seen.clientIds).toEqual([authorizationServer!.documentUrl]);
    expect(seen.refusals).toEqual([]);
    expect(seen.registrations).toBe(0);
  });

  it('gives way to Dynamic Client Registration where it does not', async () => {
    const result = await login(false);
    expect(result.stdout).toContain('Signed in to remote as alice');
    const { seen } = authorizationServer!;
    expect(seen.registrations).toBe(1);
    expect(seen.clientIds).toEqual(['dcr-1']);
  });
});
