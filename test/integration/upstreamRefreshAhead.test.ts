/**
 * An upstream sign-in's access token is renewed beside the calls, not in front of them: in the
 * last stretch of its life (half of a short lifetime) the call goes on at once with the token
 * that is still good while the refresh runs, so a slow authorization server never holds a call.
 * Against `oidc-provider` (test/fixtures/oidc-fixture.mjs), whose token endpoint the test can hold.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  runCli,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from './harness.js';
import { OIDC_BROWSER, oidcServer, startOidcFixture } from './oidcFixture.js';
/** Long enough that "half its life left" is seconds away from "its last tenth" on a busy machine. */
const ACCESS_TTL_S = 12;

describe('upstream OAuth: the access token is renewed beside the calls', () => {
  let fixture: ChildProcess;
  let issuer: string;
  let credentialsFile: string;
  let host: HostSession;

  const get = async (what: string) =>
    (await fetch(`${issuer}/_test/${what}`)).json() as Promise<Record<string, number>>;
  const stored = () => {
    const { secrets } = JSON.parse(readFileSync(credentialsFile, 'utf8')) as {
      secrets: Record<string, string>;
    };
    const key = Object.keys(secrets).find((k) => k.startsWith('oauth:tokens:'))!;
    return JSON.parse(secrets[key]!) as { expiresAt: number; tokens: { access_token: string } };
  };
  const whoami = async () => textOf(await host.client.callTool({ name: 'oidc__whoami', arguments: {} }));

  beforeAll(async () => {
    const started = await startOidcFixture({ ACCESS_TTL: String(ACCESS_TTL_S) });
    fixture = started.process;
    issuer = started.issuer;
    const dir = tempDir('warden-refresh-ahead-');
    credentialsFile = path.join(dir, 'credentials.json');
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        servers: { oidc: oidcServer(started.resource) },
      },
      dir,
    );
    const env = {
      MCP_WARDEN_CREDENTIALS: 'file',
      MCP_WARDEN_CREDENTIALS_FILE: credentialsFile,
      BROWSER: OIDC_BROWSER,
    };
    const login = await runCli(['auth', 'login', 'oidc', '--config', config], env);
    expect(login.code).toBe(0);
    host = await connectHost(config, { env });
    await host.waitForStderr(/\[oidc\]: connected/, 20_000);
  }, 60_000);

  afterAll(async () => {
    await fetch(`${issuer}/_test/release`).catch(() => {});
    await host?.close();
    fixture?.kill();
  });

  it('answers a call in the token’s last stretch at once while the refresh waits on the authorization server', async () => {
    expect(await whoami()).toBe('alice');
    const first = stored();
    const { refreshes } = await get('refreshes');
    // From now on the authorization server takes token requests but answers none.
    await fetch(`${issuer}/_test/hold`);
    // Into the second half of the token's life, where it is renewed, but far from its last tenth.
    const renewFrom = first.expiresAt - (ACCESS_TTL_S * 1000) / 2;
    await expect.poll(() => Date.now() > renewFrom + 200, { timeout: 20_000, interval: 100 }).toBe(true);

    // The call is answered with the token that is still good; the refresh (started by it, or by
    // the gateway's own ping of the server just before) waits at the authorization server.
    expect(await whoami()).toBe('alice');
    await expect.poll(async () => (await get('held')).held, { timeout: 5_000 }).toBe(1);
    expect(await get('refreshes')).toMatchObject({ refreshes });
    // Other calls in the meantime neither wait nor start another refresh.
    expect(await whoami()).toBe('alice');
    expect((await get('held')).held).toBe(1);

    await fetch(`${issuer}/_test/release`);
    await expect.poll(() => stored().tokens.access_token).not.toBe(first.tokens.access_token);
    expect((await get('refreshes')).refreshes).toBe(refreshes! + 1);
    expect(stored().expiresAt).toBeGreaterThan(first.expiresAt);
    expect(await whoami()).toBe('alice');
  }, 45_000);
});
