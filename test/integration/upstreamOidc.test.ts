/**
 * The upstream OAuth client against `oidc-provider`, a certified OpenID provider, on another
 * origin than the protected server (test/fixtures/oidc-fixture.mjs): a pre-registered client,
 * access tokens that live 2 s, refresh tokens that rotate. Renewal is silent, concurrent calls
 * during a renewal make one refresh at the authorization server, and a revoked refresh token
 * ends in a clear "sign in again" rather than a hang.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectHost,
  FAST_GATEWAY,
  readAudit,
  runCli,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from './harness.js';
import { OIDC_BROWSER, oidcServer, startOidcFixture } from './oidcFixture.js';

describe('upstream OAuth against oidc-provider (refresh, rotation, revocation)', () => {
  let fixture: ChildProcess;
  let issuer: string;
  let config: string;
  let auditFile: string;
  let credentialsFile: string;
  let env: Record<string, string>;
  let host: HostSession;

  /** What the authorization server counted: refresh grants answered, and refused. */
  const counts = async () =>
    (await (await fetch(`${issuer}/_test/refreshes`)).json()) as { refreshes: number; refused: number };
  /** The stored sign-in, as the credential file holds it. */
  const stored = () => {
    const { secrets } = JSON.parse(readFileSync(credentialsFile, 'utf8')) as {
      secrets: Record<string, string>;
    };
    const key = Object.keys(secrets).find((k) => k.startsWith('oauth:tokens:'));
    return key === undefined
      ? undefined
      : (JSON.parse(secrets[key]!) as { expiresAt: number; tokens: { refresh_token: string } });
  };
  const whoami = async () => textOf(await host.client.callTool({ name: 'oidc__whoami', arguments: {} }));
  /** Resolves once the stored access token has expired (the server no longer takes it). */
  const expired = () =>
    expect.poll(() => (stored()?.expiresAt ?? 0) < Date.now(), { timeout: 10_000 }).toBe(true);

  beforeAll(async () => {
    const started = await startOidcFixture({ ACCESS_TTL: '2' });
    fixture = started.process;
    issuer = started.issuer;
    const dir = tempDir('warden-oidc-');
    auditFile = path.join(dir, 'audit.jsonl');
    credentialsFile = path.join(dir, 'credentials.json');
    config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: auditFile },
        servers: {
          oidc: oidcServer(started.resource),
        },
      },
      dir,
    );
    env = {
      MCP_WARDEN_CREDENTIALS: 'file',
      MCP_WARDEN_CREDENTIALS_FILE: credentialsFile,
      BROWSER: OIDC_BROWSER,
    };
    const login = await runCli(['auth', 'login', 'oidc', '--config', config], env);
    expect(login.stdout).toContain('Signed in to oidc as alice (scopes: mcp)');
    expect(login.code).toBe(0);
    host = await connectHost(config, { env });
    // The server joins when its connection is up, which a loaded machine may take a while for.
    await host.waitForStderr(/\[oidc\]: connected/, 20_000);
  }, 60_000);

  afterAll(async () => {
    await host?.close();
    fixture?.kill();
  });

  it('calls go on across expiries: the access token is renewed silently', async () => {
    expect(await whoami()).toBe('alice');
    const before = await counts();
    await expired();
    expect(await whoami()).toBe('alice');
    expect((await counts()).refreshes).toBe(before.refreshes + 1);
  }, 30_000);

  it('concurrent calls while the token is renewed make exactly one refresh', async () => {
    await expired();
    const before = await counts();
    const answers = await Promise.all(Array.from({ length: 6 }, () => whoami()));
    expect(answers).toEqual(Array(6).fill('alice'));
    expect(await counts()).toEqual({ refreshes: before.refreshes + 1, refused: before.refused });
  }, 30_000);

  it('two gateways sharing one credential store renew once: the second takes the token the first renewed', async () => {
    const second = await connectHost(config, { env });
    try {
      await second.waitForStderr(/\[oidc\]: connected/, 20_000);
      const whoamiOf = async (h: HostSession) =>
        textOf(await h.client.callTool({ name: 'oidc__whoami', arguments: {} }));
      expect(await whoamiOf(second)).toBe('alice');
      await expired();
      const before = await counts();
      const answers = await Promise.all(
        Array.from({ length: 3 }, () => [whoamiOf(host), whoamiOf(second)]).flat(),
      );
      expect(answers).toEqual(Array(6).fill('alice'));
      // A second refresh with the rotated-away refresh token would be refused, and sign out.
      expect(await counts()).toEqual({ refreshes: before.refreshes + 1, refused: before.refused });
    } finally {
      await second.close();
    }
  }, 45_000);

  it('a call the server refuses for want of scope (403 insufficient_scope) asks for a sign-in with the wider scope', async () => {
    const result = await host.client.callTool({ name: 'oidc__admin', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain(
      'needs sign-in: the server asks for more access (scope "mcp admin") than the sign-in granted',
    );
    // The sign-in itself is kept: the other tools still answer once the server is reconnected.
    await expect.poll(() => whoami(), { timeout: 10_000 }).toBe('alice');
    // The wider scope is kept with the sign-in, so the next sign-in (here from another process,
    // as after a restart) asks for it at once, beside the configured ones.
    await expect
      .poll(() => (stored() as { wantedScope?: string } | undefined)?.wantedScope)
      .toBe('mcp admin');
    const login = await runCli(['auth', 'login', 'oidc', '--config', config], env);
    expect(login.stdout).toContain('Signed in to oidc as alice (scopes: mcp admin)');
    expect((stored() as { wantedScope?: string } | undefined)?.wantedScope).toBeUndefined();
    // The running gateway sees the new sign-in in the store, and the call goes through.
    await expect
      .poll(async () => textOf(await host.client.callTool({ name: 'oidc__admin', arguments: {} })), {
        timeout: 15_000,
      })
      .toBe('admin');
  }, 45_000);

  it('a revoked refresh token signs the user out: the call says to sign in again, nothing hangs', async () => {
    const revoked = await fetch(`${issuer}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: stored()!.tokens.refresh_token, client_id: 'warden' }),
    });
    expect(revoked.status).toBe(200);
    await expired();
    const result = await host.client.callTool({ name: 'oidc__whoami', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('needs sign-in: not signed in: run "mcp-warden auth login oidc"');
    expect((await counts()).refused).toBe(1);

    const status = await runCli(['auth', 'status', '--config', config], env);
    expect(status.stdout).toBe('oidc: not signed in\n');
    expect(readAudit(auditFile).filter((r) => r.type === 'upstream_refresh_failed')).toEqual([
      expect.objectContaining({ server: 'oidc', signedOut: true }),
    ]);
  }, 30_000);
});
